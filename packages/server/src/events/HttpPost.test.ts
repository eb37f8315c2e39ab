import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as Http from "node:http"
import type * as Net from "node:net"
import { post } from "./HttpPost.ts"

const withServer = <A>(handler: Http.RequestListener, f: (url: string) => Effect.Effect<A>): Effect.Effect<A> =>
  Effect.acquireUseRelease(
    Effect.promise(
      () =>
        new Promise<Http.Server>((resolve) => {
          const server = Http.createServer(handler)
          server.listen(0, "127.0.0.1", () => resolve(server))
        })
    ),
    (server) => f(`http://127.0.0.1:${(server.address() as Net.AddressInfo).port}/hook`),
    (server) => Effect.promise(() => new Promise<void>((r) => server.close(() => r())))
  )

describe("post", () => {
  it.live("sends the exact body and headers; 2xx is ok", () =>
    Effect.gen(function* () {
      const seen: Array<{ body: string; headers: Http.IncomingHttpHeaders }> = []
      const result = yield* withServer(
        (req, res) => {
          let body = ""
          req.on("data", (c) => (body += c))
          req.on("end", () => {
            seen.push({ body, headers: req.headers })
            res.writeHead(204).end()
          })
        },
        (url) => post(url, '{"a":1}', { "content-type": "application/json", "x-test": "yes" }, { timeoutMs: 5000, allowPrivate: true })
      )
      expect(result.ok).toBe(true)
      expect(result.status).toBe(204)
      expect(result.error).toBeNull()
      expect(seen[0]!.body).toBe('{"a":1}')
      expect(seen[0]!.headers["x-test"]).toBe("yes")
      expect(seen[0]!.headers["content-length"]).toBe("7")
    })
  )

  it.live("a non-2xx answer is a failure naming the status", () =>
    Effect.gen(function* () {
      const result = yield* withServer(
        (_req, res) => res.writeHead(503).end("busy"),
        (url) => post(url, "{}", {}, { timeoutMs: 5000, allowPrivate: true })
      )
      expect(result.ok).toBe(false)
      expect(result.status).toBe(503)
      expect(result.error!).toMatch(/HTTP 503/)
    })
  )

  it.live("an answer slower than the timeout is a failure with no status", () =>
    Effect.gen(function* () {
      const result = yield* withServer(
        (_req, res) => void setTimeout(() => res.writeHead(200).end(), 2000),
        (url) => post(url, "{}", {}, { timeoutMs: 200, allowPrivate: true })
      )
      expect(result.ok).toBe(false)
      expect(result.status).toBeNull()
      expect(result.error!).toMatch(/timed out/)
    })
  )

  it.live("a refused connection is a failure", () =>
    Effect.gen(function* () {
      const result = yield* post("http://127.0.0.1:1/hook", "{}", {}, { timeoutMs: 2000, allowPrivate: true })
      expect(result.ok).toBe(false)
      expect(result.status).toBeNull()
      expect(result.error).toBeTypeOf("string")
    })
  )

  it.live("private addresses are refused when not allowed, by literal and by resolved name", () =>
    Effect.gen(function* () {
      let hits = 0
      const [literal, named] = yield* withServer(
        (_req, res) => {
          hits++
          res.writeHead(200).end()
        },
        (url) =>
          Effect.all([
            post(url, "{}", {}, { timeoutMs: 2000, allowPrivate: false }),
            post(url.replace("127.0.0.1", "localhost"), "{}", {}, { timeoutMs: 2000, allowPrivate: false })
          ])
      )
      expect(literal.ok).toBe(false)
      expect(literal.error!).toMatch(/private/)
      expect(named.ok).toBe(false)
      expect(named.error!).toMatch(/private/)
      expect(hits).toBe(0)
    })
  )
})
