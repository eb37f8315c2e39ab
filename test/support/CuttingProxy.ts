// An HTTP proxy in front of a test node that cuts the first accepted (200) server-sent-events stream right after
// its first event, so clients must reconnect; it records every SSE request's Last-Event-ID header.
import * as Http from "node:http"
import type * as Net from "node:net"

export interface CuttingProxy {
  readonly baseUrl: string
  /** `last-event-id` of each SSE request, in order (undefined: none sent) */
  readonly lastEventIds: Array<string | undefined>
  readonly close: () => Promise<void>
}

export const startCuttingProxy = (upstream: string): Promise<CuttingProxy> => {
  const target = new URL(upstream)
  const lastEventIds: Array<string | undefined> = []
  let cutOne = false
  const sockets = new Set<Net.Socket>()
  const server = Http.createServer((req, res) => {
    const sse = (req.url ?? "").startsWith("/realtime/")
    if (sse) lastEventIds.push(req.headers["last-event-id"] as string | undefined)
    const forward = Http.request(
      {
        host: target.hostname,
        port: target.port,
        method: req.method,
        path: req.url,
        headers: { ...req.headers, host: target.host }
      },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers)
        const cut = sse && answer.statusCode === 200 && !cutOne
        if (cut) cutOne = true
        let seen = ""
        let dropped = false
        answer.on("data", (chunk: Buffer) => {
          if (dropped) return
          seen += chunk.toString("utf8")
          // after the first complete message carrying an id: drop the connection (once that message is out)
          const drop = cut && /(^|\n)id: [^\n]*\n(data: [^\n]*\n)+\n/.test(seen)
          res.write(chunk, () => {
            if (drop) setTimeout(() => res.destroy(), 50)
          })
          if (drop) {
            dropped = true
            answer.destroy()
          }
        })
        answer.on("end", () => res.end())
        answer.on("error", () => res.destroy())
      }
    )
    forward.on("error", () => res.destroy())
    req.pipe(forward)
  })
  server.on("connection", (s) => {
    sockets.add(s)
    s.on("close", () => sockets.delete(s))
  })
  return new Promise((resolve) => {
    server.listen(0, "127.0.0.1", () => {
      const port = (server.address() as Net.AddressInfo).port
      resolve({
        baseUrl: `http://127.0.0.1:${port}`,
        lastEventIds,
        close: () =>
          new Promise((done) => {
            for (const s of sockets) s.destroy()
            server.close(() => done())
          })
      })
    })
  })
}
