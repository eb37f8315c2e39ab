import { assert, describe, it } from "@effect/vitest"
import { Effect, Fiber } from "effect"
import * as Http from "node:http"
import type * as Net from "node:net"
import * as Zlib from "node:zlib"
import { vi } from "vitest"
import { functionHttp, hostAllowed } from "./FunctionHttp.ts"

// `inward.test` resolves to loopback, so the DNS-time guard is exercised on a name the literal check cannot see.
vi.mock("node:dns", async (importOriginal) => {
  const actual = await importOriginal<typeof import("node:dns")>()
  const lookup = (hostname: string, options: object, callback: (...args: Array<unknown>) => void) =>
    hostname === "inward.test"
      ? callback(null, [{ address: "127.0.0.1", family: 4 }])
      : actual.lookup(hostname, options, callback as never)
  return { ...actual, lookup, default: { ...actual, lookup } }
})

interface Seen {
  readonly method: string
  readonly url: string
  readonly headers: Http.IncomingHttpHeaders
  readonly body: string
}

interface TestServer {
  readonly port: number
  readonly url: (path: string) => string
  readonly seen: Array<Seen>
  readonly connections: () => number
  /** resolves when every request the server received has lost its connection */
  readonly allClosed: () => Promise<void>
}

// A node:http server on 127.0.0.1 for the test's scope; `handler` gets the request body read in full.
const serve = (handler: (req: Http.IncomingMessage, res: Http.ServerResponse, body: string) => void) =>
  Effect.acquireRelease(
    Effect.promise(() =>
      new Promise<{ server: Http.Server; test: TestServer }>((resolve) => {
        const seen: Array<Seen> = []
        const closings: Array<Promise<void>> = []
        let connections = 0
        const server = Http.createServer((req, res) => {
          closings.push(new Promise((r) => req.socket.once("close", () => r())))
          let body = ""
          req.setEncoding("utf8")
          req.on("data", (c: string) => (body += c))
          req.on("end", () => {
            seen.push({ method: req.method ?? "", url: req.url ?? "", headers: req.headers, body })
            handler(req, res, body)
          })
        })
        server.on("connection", () => connections++)
        server.listen(0, "127.0.0.1", () => {
          const port = (server.address() as Net.AddressInfo).port
          resolve({
            server,
            test: {
              port,
              url: (path) => `http://127.0.0.1:${port}${path}`,
              seen,
              connections: () => connections,
              allClosed: () => Promise.all(closings).then(() => undefined)
            }
          })
        })
      })
    ),
    ({ server }) =>
      Effect.promise(() =>
        new Promise<void>((r) => {
          server.closeAllConnections()
          server.close(() => r())
        })
      )
  ).pipe(Effect.map(({ test }) => test))

const dev = functionHttp({ allowlist: ["127.0.0.1", "localhost"], production: false })
const prod = functionHttp({ allowlist: ["127.0.0.1", "localhost", "inward.test"], production: true })

describe("hostAllowed", () => {
  it("matches exact names case-insensitively, ignoring the port", () => {
    assert.isTrue(hostAllowed(["api.example.com"], "api.example.com"))
    assert.isTrue(hostAllowed(["api.example.com"], "API.Example.COM"))
    assert.isTrue(hostAllowed(["api.example.com"], new URL("https://api.example.com:8443/x").hostname))
    assert.isTrue(hostAllowed(["api.example.com"], "api.example.com."))
    assert.isFalse(hostAllowed(["api.example.com"], "example.com"))
    assert.isFalse(hostAllowed(["api.example.com"], "api.example.com.evil.net"))
    assert.isFalse(hostAllowed(["api.example.com"], "xapi.example.com"))
  })

  it("a *. entry matches every subdomain but not the domain itself", () => {
    assert.isTrue(hostAllowed(["*.example.com"], "a.example.com"))
    assert.isTrue(hostAllowed(["*.example.com"], "a.b.EXAMPLE.com"))
    assert.isFalse(hostAllowed(["*.example.com"], "example.com"))
    assert.isFalse(hostAllowed(["*.example.com"], "badexample.com"))
  })

  it("IP-literal entries match IP-literal hostnames; an empty allowlist allows nothing", () => {
    assert.isTrue(hostAllowed(["127.0.0.1"], "127.0.0.1"))
    assert.isTrue(hostAllowed(["::1"], new URL("http://[::1]:8080/").hostname))
    assert.isTrue(hostAllowed(["2001:db8::1"], new URL("http://[2001:0db8:0:0::1]/").hostname))
    assert.isFalse(hostAllowed(["127.0.0.1"], "127.0.0.2"))
    assert.isFalse(hostAllowed([], "example.com"))
    assert.isFalse(hostAllowed([""], ""))
  })
})

describe("functionHttp", () => {
  it.live("refuses a host that is not allowed without connecting", () =>
    Effect.gen(function*() {
      const server = yield* serve((_req, res) => res.end("hi"))
      const error = yield* Effect.flip(
        functionHttp({ allowlist: ["example.com"], production: false })({ method: "GET", url: server.url("/") })
      )
      assert.strictEqual(error.code, "HOST_NOT_ALLOWED")
      assert.match(error.message, /127\.0\.0\.1/)
      const nothing = functionHttp({ allowlist: [], production: false })
      const empty = yield* Effect.flip(nothing({ method: "GET", url: server.url("/") }))
      assert.strictEqual(empty.code, "HOST_NOT_ALLOWED")
      assert.strictEqual(server.connections(), 0)
    }))

  it.live("production refuses loopback literals, localhost and names resolving inward; development allows them", () =>
    Effect.gen(function*() {
      const server = yield* serve((_req, res) => res.end("hi"))
      const literal = yield* Effect.flip(prod({ method: "GET", url: server.url("/") }))
      const named = yield* Effect.flip(prod({ method: "GET", url: `http://localhost:${server.port}/` }))
      const resolved = yield* Effect.flip(prod({ method: "GET", url: `http://inward.test:${server.port}/` }))
      assert.strictEqual(literal.code, "PRIVATE_ADDRESS")
      assert.strictEqual(named.code, "PRIVATE_ADDRESS")
      assert.strictEqual(resolved.code, "PRIVATE_ADDRESS")
      assert.match(resolved.message, /inward\.test resolves to a private address/)
      assert.strictEqual(server.connections(), 0)
      const allowed = yield* dev({ method: "GET", url: `http://localhost:${server.port}/` })
      assert.strictEqual(allowed.body, "hi")
    }))

  it.live("GET returns status, headers and text body; user headers are sent, forbidden ones stripped", () =>
    Effect.gen(function*() {
      const server = yield* serve((_req, res) => {
        res.writeHead(201, "Made", { "x-answer": "42", "set-cookie": ["a=1", "b=2"] }).end("héllo")
      })
      const response = yield* dev({
        method: "get",
        url: server.url("/path?q=1#frag"),
        headers: {
          "X-Custom": "yes",
          Host: "evil.example",
          Connection: "close",
          "Proxy-Authorization": "x",
          Upgrade: "h2c"
        }
      })
      assert.strictEqual(response.status, 201)
      assert.strictEqual(response.statusText, "Made")
      assert.strictEqual(response.headers["x-answer"], "42")
      assert.strictEqual(response.headers["set-cookie"], "a=1, b=2")
      assert.strictEqual(response.url, server.url("/path?q=1"))
      assert.strictEqual(response.body, "héllo")
      const seen = server.seen[0]!
      assert.strictEqual(seen.method, "GET")
      assert.strictEqual(seen.url, "/path?q=1")
      assert.strictEqual(seen.headers["x-custom"], "yes")
      assert.strictEqual(seen.headers["user-agent"], "troupe-functions/1")
      assert.strictEqual(seen.headers["host"], `127.0.0.1:${server.port}`)
      assert.notStrictEqual(seen.headers["connection"], "close")
      assert.isUndefined(seen.headers["proxy-authorization"])
      assert.isUndefined(seen.headers["upgrade"])
    }))

  it.live("POST sends a JSON body and reads a JSON answer; the user-agent can be overridden", () =>
    Effect.gen(function*() {
      const server = yield* serve((req, res, body) => {
        res.writeHead(200, { "content-type": "application/json" })
          .end(JSON.stringify({ echo: JSON.parse(body), type: req.headers["content-type"] }))
      })
      const payload = JSON.stringify({ name: "ünïcode", n: 1 })
      const response = yield* dev({
        method: "POST",
        url: server.url("/echo"),
        headers: { "content-type": "application/json", "user-agent": "mine/2", "content-length": "1" },
        body: payload
      })
      assert.deepStrictEqual(JSON.parse(response.body), { echo: { name: "ünïcode", n: 1 }, type: "application/json" })
      assert.strictEqual(response.headers["content-type"], "application/json")
      assert.strictEqual(server.seen[0]!.headers["content-length"], String(Buffer.byteLength(payload)))
      assert.strictEqual(server.seen[0]!.headers["user-agent"], "mine/2")
    }))

  it.live("decodes gzip answers; HEAD has an empty body", () =>
    Effect.gen(function*() {
      const server = yield* serve((req, res) => {
        res.writeHead(200, { "content-encoding": "gzip" })
        res.end(req.method === "HEAD" ? undefined : Zlib.gzipSync("zipped text"))
      })
      const got = yield* dev({ method: "GET", url: server.url("/"), headers: { "accept-encoding": "gzip" } })
      assert.strictEqual(got.body, "zipped text")
      const head = yield* dev({ method: "HEAD", url: server.url("/") })
      assert.strictEqual(head.status, 200)
      assert.strictEqual(head.body, "")
    }))

  it.live("a same-host 303 is followed as a GET without body; 307 keeps method and body", () =>
    Effect.gen(function*() {
      const server = yield* serve((req, res, body) => {
        if (req.url === "/see-other") res.writeHead(303, { location: "/result" }).end()
        else if (req.url === "/temporary") res.writeHead(307, { location: "/result" }).end()
        else res.end(`${req.method} ${body}`)
      })
      const seeOther = yield* dev({
        method: "POST",
        url: server.url("/see-other"),
        headers: { "content-type": "text/plain" },
        body: "payload"
      })
      assert.strictEqual(seeOther.status, 200)
      assert.strictEqual(seeOther.body, "GET ")
      assert.strictEqual(seeOther.url, server.url("/result"))
      assert.isUndefined(server.seen[1]!.headers["content-type"])
      const temporary = yield* dev({ method: "PUT", url: server.url("/temporary"), body: "kept" })
      assert.strictEqual(temporary.body, "PUT kept")
    }))

  it.live("a redirect to another port of the same host is followed", () =>
    Effect.gen(function*() {
      const target = yield* serve((_req, res) => res.end("arrived"))
      const origin = yield* serve((_req, res) => res.writeHead(302, { location: target.url("/there") }).end())
      const response = yield* dev({ method: "GET", url: origin.url("/") })
      assert.strictEqual(response.body, "arrived")
      assert.strictEqual(response.url, target.url("/there"))
    }))

  it.live("a redirect to another host is not followed: the 3xx is the answer", () =>
    Effect.gen(function*() {
      const server = yield* serve((req, res) => {
        if (req.url === "/away") res.writeHead(302, { location: `http://localhost:${server.port}/landed` }).end("moved")
        else res.end("landed")
      })
      const response = yield* dev({ method: "GET", url: server.url("/away") })
      assert.strictEqual(response.status, 302)
      assert.strictEqual(response.headers["location"], `http://localhost:${server.port}/landed`)
      assert.strictEqual(response.body, "moved")
      assert.strictEqual(response.url, server.url("/away"))
      assert.strictEqual(server.seen.length, 1)
    }))

  it.live("a redirect loop stops after 5 redirects", () =>
    Effect.gen(function*() {
      const server = yield* serve((_req, res) => res.writeHead(302, { location: "/loop" }).end())
      const error = yield* Effect.flip(dev({ method: "GET", url: server.url("/loop") }))
      assert.strictEqual(error.code, "TOO_MANY_REDIRECTS")
      assert.strictEqual(server.seen.length, 6)
    }))

  it.live("a server that never answers times out, and the request is aborted", () =>
    Effect.gen(function*() {
      const server = yield* serve(() => {})
      const error = yield* Effect.flip(dev({ method: "GET", url: server.url("/slow"), timeoutMs: 200 }))
      assert.strictEqual(error.code, "TIMEOUT")
      assert.match(error.message, /timed out after 200 ms/)
      yield* Effect.promise(server.allClosed).pipe(Effect.timeout("5 seconds"))
      const capped = functionHttp({ allowlist: ["127.0.0.1"], production: false, maxTimeoutMs: 200 })
      const cappedError = yield* Effect.flip(capped({ method: "GET", url: server.url("/slow") }))
      assert.strictEqual(cappedError.code, "TIMEOUT")
    }))

  it.live("interrupting the effect aborts the request", () =>
    Effect.gen(function*() {
      const server = yield* serve(() => {})
      const fiber = yield* Effect.forkChild(dev({ method: "GET", url: server.url("/slow") }))
      while (server.seen.length === 0) yield* Effect.sleep("10 millis")
      yield* Fiber.interrupt(fiber)
      yield* Effect.promise(server.allClosed).pipe(Effect.timeout("5 seconds"))
    }))

  it.live("an answer over the cap fails with RESPONSE_TOO_LARGE, announced or streamed", () =>
    Effect.gen(function*() {
      const big = Buffer.alloc(5 * 1024 * 1024 + 1, "a")
      const server = yield* serve((req, res) => {
        if (req.url === "/announced") return res.end(big)
        res.writeHead(200) // chunked: the size is only known while reading
        for (let i = 0; i < 6; i++) res.write(big.subarray(0, 1024 * 1024))
        res.end()
      })
      const announced = yield* Effect.flip(dev({ method: "GET", url: server.url("/announced") }))
      assert.strictEqual(announced.code, "RESPONSE_TOO_LARGE")
      assert.strictEqual(announced.message, "response body exceeds 5 MiB")
      const streamed = yield* Effect.flip(dev({ method: "GET", url: server.url("/streamed") }))
      assert.strictEqual(streamed.code, "RESPONSE_TOO_LARGE")
      const small = functionHttp({ allowlist: ["127.0.0.1"], production: false, maxResponseBytes: 1024 })
      const smallError = yield* Effect.flip(small({ method: "GET", url: server.url("/streamed") }))
      assert.strictEqual(smallError.message, "response body exceeds 1 KiB")
    }))

  it.live("refuses invalid URLs, other schemes, credentials, bad methods and oversized bodies", () =>
    Effect.gen(function*() {
      const codes = yield* Effect.forEach([
        { method: "GET", url: "not a url" },
        { method: "GET", url: "ftp://127.0.0.1/file" },
        { method: "GET", url: "http://user:pass@127.0.0.1/" },
        { method: "TRACE", url: "http://127.0.0.1/" },
        { method: "CONNECT", url: "http://127.0.0.1/" },
        { method: "POST", url: "http://127.0.0.1/", body: "x".repeat(10 * 1024 * 1024 + 1) },
        { method: "GET", url: "http://127.0.0.1/", headers: { "bad header": "x" } },
        { method: "GET", url: "http://127.0.0.1/", headers: { "x-split": "a\r\nb: c" } }
      ], (request) => Effect.flip(dev(request)).pipe(Effect.map((e) => e.code)))
      assert.deepStrictEqual(codes, [
        "INVALID_URL",
        "INVALID_URL",
        "INVALID_URL",
        "METHOD_NOT_ALLOWED",
        "METHOD_NOT_ALLOWED",
        "REQUEST_TOO_LARGE",
        "INVALID_HEADER",
        "INVALID_HEADER"
      ])
    }))

  it.live("a refused connection is a NETWORK_ERROR", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(dev({ method: "GET", url: "http://127.0.0.1:1/" }))
      assert.strictEqual(error.code, "NETWORK_ERROR")
      assert.match(error.message, /ECONNREFUSED/)
    }))
})
