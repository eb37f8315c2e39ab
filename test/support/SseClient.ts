// A minimal server-sent-events client over fetch, for end-to-end tests: parses `id:`/`data:`/`retry:` fields and
// comment lines as they stream in.
import { sleep } from "./wait.ts"

export interface SseMessage {
  readonly id: string | undefined
  readonly event: string | undefined
  readonly data: string
  readonly json: any
}

export interface SseConnection {
  readonly status: number
  readonly headers: Headers
  /** the body text when the status was not 200 */
  readonly errorBody: any
  readonly messages: Array<SseMessage>
  readonly comments: Array<string>
  readonly retry: () => number | undefined
  readonly ended: () => boolean
  readonly waitFor: (predicate: (messages: ReadonlyArray<SseMessage>) => boolean, timeoutMs?: number, what?: string) => Promise<void>
  readonly close: () => void
}

export const openSse = async (url: string, headers: Record<string, string> = {}): Promise<SseConnection> => {
  const controller = new AbortController()
  const res = await fetch(url, { headers: { accept: "text/event-stream", ...headers }, signal: controller.signal })
  const messages: Array<SseMessage> = []
  const comments: Array<string> = []
  let retry: number | undefined
  let ended = false
  let errorBody: any
  if (res.status !== 200 || !res.body) {
    const text = await res.text()
    try {
      errorBody = JSON.parse(text)
    } catch {
      errorBody = text
    }
    ended = true
  } else {
    const decoder = new TextDecoder()
    let buffer = ""
    const reader = res.body.getReader()
    void (async () => {
      try {
        while (true) {
          const { done, value } = await reader.read()
          if (done) break
          buffer += decoder.decode(value, { stream: true })
          let at: number
          while ((at = buffer.indexOf("\n\n")) >= 0) {
            const block = buffer.slice(0, at)
            buffer = buffer.slice(at + 2)
            let id: string | undefined
            let event: string | undefined
            const data: Array<string> = []
            for (const line of block.split("\n")) {
              if (line.startsWith(":")) comments.push(line.slice(1).trim())
              else if (line.startsWith("id:")) id = line.slice(3).trim()
              else if (line.startsWith("event:")) event = line.slice(6).trim()
              else if (line.startsWith("retry:")) retry = Number(line.slice(6).trim())
              else if (line.startsWith("data:")) data.push(line.slice(5).replace(/^ /, ""))
            }
            if (data.length > 0) {
              const text = data.join("\n")
              let json: any
              try {
                json = JSON.parse(text)
              } catch {
                json = undefined
              }
              messages.push({ id, event, data: text, json })
            }
          }
        }
      } catch {
        // aborted
      } finally {
        ended = true
      }
    })()
  }
  return {
    status: res.status,
    headers: res.headers,
    errorBody,
    messages,
    comments,
    retry: () => retry,
    ended: () => ended,
    waitFor: async (predicate, timeoutMs = 20_000, what = "SSE messages") => {
      const deadline = Date.now() + timeoutMs
      while (!predicate(messages)) {
        if (Date.now() > deadline) {
          throw new Error(`timed out waiting for ${what}; got ${messages.length}: ${JSON.stringify(messages.map((m) => m.json?.event))}`)
        }
        await sleep(25)
      }
    },
    close: () => controller.abort()
  }
}
