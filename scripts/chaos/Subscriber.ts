// A resuming SSE subscriber: reads the realtime stream of one node and, when the stream ends or its connection
// drops (the node was killed or is draining), reconnects to the next node with `Last-Event-ID` set to the last event
// it received, as a browser's EventSource would. It keeps every record event it was sent, in order.
import * as Http from "node:http"
import type { NodeSlot } from "./Client.ts"

export interface Received {
  readonly eventId: string
  readonly type: string
  readonly recordId: string | undefined
  readonly version: number | undefined
}

export interface Subscriber {
  readonly name: string
  readonly received: Array<Received>
  /** reconnections after the first connection, and how long each took to get a 200 again (ms) */
  readonly resumes: Array<{ readonly from: string; readonly to: string; readonly ms: number }>
  readonly connected: () => boolean
  readonly lastEventId: () => string | undefined
  readonly stop: () => void
}

interface Stream {
  readonly opened: Promise<number>
  readonly ended: Promise<void>
  readonly close: () => void
}

const openStream = (
  slot: NodeSlot,
  path: string,
  token: string,
  lastEventId: string | undefined,
  onMessage: (id: string | undefined, data: string) => void
): Stream => {
  let close = () => {}
  let markEnded = () => {}
  const ended = new Promise<void>((resolve) => (markEnded = resolve))
  const opened = new Promise<number>((resolve) => {
    const url = new URL(slot.baseUrl + path)
    const req = Http.request(
      {
        host: url.hostname,
        port: url.port,
        path: url.pathname + url.search,
        headers: {
          accept: "text/event-stream",
          authorization: `Bearer ${token}`,
          ...(lastEventId !== undefined ? { "last-event-id": lastEventId } : {})
        },
        // its own connection: an SSE stream never shares a keep-alive socket
        agent: false
      },
      (res) => {
        resolve(res.statusCode ?? 0)
        if (res.statusCode !== 200) {
          res.resume()
          res.on("end", markEnded)
          return
        }
        res.setEncoding("utf8")
        let buffer = ""
        res.on("data", (chunk: string) => {
          buffer += chunk
          let at: number
          while ((at = buffer.indexOf("\n\n")) >= 0) {
            const block = buffer.slice(0, at)
            buffer = buffer.slice(at + 2)
            let id: string | undefined
            const data: Array<string> = []
            for (const line of block.split("\n")) {
              if (line.startsWith("id:")) id = line.slice(3).trim()
              else if (line.startsWith("data:")) data.push(line.slice(5).replace(/^ /, ""))
            }
            if (data.length > 0) onMessage(id, data.join("\n"))
          }
        })
        res.on("end", markEnded)
        res.on("error", markEnded)
        res.on("close", markEnded)
      }
    )
    req.on("error", () => {
      resolve(0)
      markEnded()
    })
    req.end()
    close = () => req.destroy()
  })
  return { opened, ended, close: () => close() }
}

export const startSubscriber = async (
  name: string,
  slots: ReadonlyArray<NodeSlot>,
  first: number,
  path: string,
  token: string
): Promise<Subscriber> => {
  const received: Array<Received> = []
  const resumes: Array<{ from: string; to: string; ms: number }> = []
  let last: string | undefined
  let stopped = false
  let live = false
  let current: Stream | undefined
  const onMessage = (id: string | undefined, data: string) => {
    let json: any
    try {
      json = JSON.parse(data)
    } catch {
      return
    }
    // a stream.closed notice has no id: it is no event
    if (id === undefined) return
    last = id
    const record = json?.data?.record
    received.push({
      eventId: id,
      type: String(json?.event),
      recordId: typeof record?.id === "string" ? record.id : undefined,
      version: typeof record?.version === "number" ? record.version : undefined
    })
  }
  let at = first
  const slotOf = (i: number) => slots[i % slots.length]!
  const connect = async (): Promise<boolean> => {
    const stream = openStream(slotOf(at), path, token, last, onMessage)
    const status = await stream.opened
    if (status !== 200) {
      stream.close()
      return false
    }
    current = stream
    live = true
    return true
  }
  if (!(await connect())) throw new Error(`${name}: the first SSE connection to ${slotOf(at).name} failed`)
  void (async () => {
    while (!stopped) {
      await current!.ended
      live = false
      if (stopped) return
      const from = slotOf(at).name
      const since = Date.now()
      // the next node first; keep trying every node until one answers 200
      for (;;) {
        if (stopped) return
        at++
        if (await connect()) break
        await new Promise((r) => setTimeout(r, 100))
      }
      resumes.push({ from, to: slotOf(at).name, ms: Date.now() - since })
    }
  })()
  return {
    name,
    received,
    resumes,
    connected: () => live,
    lastEventId: () => last,
    stop: () => {
      stopped = true
      current?.close()
    }
  }
}
