// The bare HTTP layer both raw servers of `npm run bench` share (scripts/bench/raw-baseline.ts and
// scripts/bench/raw-ceiling.ts): node:http, a JSON body read in full, a JSON answer, a list of (method, regexp,
// handler) routes tried in order. Nothing else: no framework, no validation, no auth.
import * as Http from "node:http"

export class HttpError extends Error {
  readonly status: number
  constructor(status: number, message: string) {
    super(message)
    this.status = status
  }
}

export type Handler = (req: Http.IncomingMessage, res: Http.ServerResponse, match: RegExpMatchArray) => Promise<void>
export type Route = [method: string, pattern: RegExp, handler: Handler]
export type Send = (res: Http.ServerResponse, status: number, body: unknown) => void

export const readBody = (req: Http.IncomingMessage): Promise<any> =>
  new Promise((resolve, reject) => {
    const chunks: Array<Buffer> = []
    req.on("data", (c) => chunks.push(c))
    req.on("end", () => {
      try {
        resolve(chunks.length ? JSON.parse(Buffer.concat(chunks).toString()) : undefined)
      } catch (e) {
        reject(new HttpError(400, String(e)))
      }
    })
  })

export const send: Send = (res, status, body) => {
  const text = JSON.stringify(body)
  res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(text) })
  res.end(text)
}

/** `GET /health`, answered by both servers without touching the database. */
export const healthRoute: Route = ["GET", /^\/health$/, async (_req, res) => send(res, 200, { status: "ok" })]

/** Listens on 127.0.0.1:`port` and writes `ready` on stdout once listening (bench.ts waits for it). */
export const serve = (port: number, routes: ReadonlyArray<Route>) =>
  Http.createServer((req, res) => {
    const path = (req.url ?? "/").split("?")[0]!
    for (const [method, pattern, handler] of routes) {
      const m = path.match(pattern)
      if (m && req.method === method) {
        handler(req, res, m).catch((e) =>
          e instanceof HttpError ? send(res, e.status, { error: e.message }) : send(res, 500, { error: String(e) })
        )
        return
      }
    }
    send(res, 404, { error: "not found" })
  }).listen(port, "127.0.0.1", () => process.stdout.write("ready\n"))
