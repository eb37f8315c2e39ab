import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as Http from "node:http"
import type * as Net from "node:net"
import { post } from "./HttpPost.ts"

const withServer = <A>(
  handler: Http.RequestListener,
  f: (url: string) => Effect.Effect<A>
): Effect.Effect<A> =>
  Effect.acquireUseRelease(
    Effect.promise(() =>
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
    Effect.gen(function*() {
      const seen: Array<{ body: string; headers: Http.IncomingHttpHeaders }> = []
      const result = yield* withServer((req, res) => {
        let body = ""
        req.on("data", (c) => (body += c))
        req.on("end", () => {
          seen.push({ body, headers: req.headers })
          res.writeHead(204).end()
        })
      }, (url) => post(url, "{\"a\":1}", { "content-type": "application/json", "x-test": "yes" }, { timeoutMs: 5000, allowPrivate: true }))
      assert.isTrue(result.ok)
      assert.strictEqual(result.status, 204)
      assert.isNull(result.error)
      assert.strictEqual(seen[0]!.body, "{\"a\":1}")
      assert.strictEqual(seen[0]!.headers["x-test"], "yes")
      assert.strictEqual(seen[0]!.headers["content-length"], "7")
    }))

  it.live("a non-2xx answer is a failure naming the status", () =>
    Effect.gen(function*() {
      const result = yield* withServer((_req, res) => res.writeHead(503).end("busy"), (url) =>
        post(url, "{}", {}, { timeoutMs: 5000, allowPrivate: true }))
      assert.isFalse(result.ok)
      assert.strictEqual(result.status, 503)
      assert.match(result.error!, /HTTP 503/)
    }))

  it.live("an answer slower than the timeout is a failure with no status", () =>
    Effect.gen(function*() {
      const result = yield* withServer((_req, res) => void setTimeout(() => res.writeHead(200).end(), 2000), (url) =>
        post(url, "{}", {}, { timeoutMs: 200, allowPrivate: true }))
      assert.isFalse(result.ok)
      assert.isNull(result.status)
      assert.match(result.error!, /timed out/)
    }))

  it.live("a refused connection is a failure", () =>
    Effect.gen(function*() {
      const result = yield* post("http://127.0.0.1:1/hook", "{}", {}, { timeoutMs: 2000, allowPrivate: true })
      assert.isFalse(result.ok)
      assert.isNull(result.status)
      assert.isString(result.error)
    }))

  it.live("private addresses are refused when not allowed, by literal and by resolved name", () =>
    Effect.gen(function*() {
      let hits = 0
      const [literal, named] = yield* withServer((_req, res) => {
        hits++
        res.writeHead(200).end()
      }, (url) =>
        Effect.all([
          post(url, "{}", {}, { timeoutMs: 2000, allowPrivate: false }),
          post(url.replace("127.0.0.1", "localhost"), "{}", {}, { timeoutMs: 2000, allowPrivate: false })
        ]))
      assert.isFalse(literal.ok)
      assert.match(literal.error!, /private/)
      assert.isFalse(named.ok)
      assert.match(named.error!, /private/)
      assert.strictEqual(hits, 0)
    }))
})
