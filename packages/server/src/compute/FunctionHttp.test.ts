import { describe, expect, it } from "@effect/vitest"
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
    hostname === "inward.test" ? callback(null, [{ address: "127.0.0.1", family: 4 }]) : actual.lookup(hostname, options, callback as never)
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
    Effect.promise(
      () =>
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
      Effect.promise(
        () =>
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
    expect(hostAllowed(["api.example.com"], "api.example.com")).toBe(true)
    expect(hostAllowed(["api.example.com"], "API.Example.COM")).toBe(true)
    expect(hostAllowed(["api.example.com"], new URL("https://api.example.com:8443/x").hostname)).toBe(true)
    expect(hostAllowed(["api.example.com"], "api.example.com.")).toBe(true)
    expect(hostAllowed(["api.example.com"], "example.com")).toBe(false)
    expect(hostAllowed(["api.example.com"], "api.example.com.evil.net")).toBe(false)
    expect(hostAllowed(["api.example.com"], "xapi.example.com")).toBe(false)
  })

  it("a *. entry matches every subdomain but not the domain itself", () => {
    expect(hostAllowed(["*.example.com"], "a.example.com")).toBe(true)
    expect(hostAllowed(["*.example.com"], "a.b.EXAMPLE.com")).toBe(true)
    expect(hostAllowed(["*.example.com"], "example.com")).toBe(false)
    expect(hostAllowed(["*.example.com"], "badexample.com")).toBe(false)
  })

  it("IP-literal entries match IP-literal hostnames; an empty allowlist allows nothing", () => {
    expect(hostAllowed(["127.0.0.1"], "127.0.0.1")).toBe(true)
    expect(hostAllowed(["::1"], new URL("http://[::1]:8080/").hostname)).toBe(true)
    expect(hostAllowed(["2001:db8::1"], new URL("http://[2001:0db8:0:0::1]/").hostname)).toBe(true)
    expect(hostAllowed(["127.0.0.1"], "127.0.0.2")).toBe(false)
    expect(hostAllowed([], "example.com")).toBe(false)
    expect(hostAllowed([""], "")).toBe(false)
  })
})

describe("functionHttp", () => {
  it.live("refuses a host that is not allowed without connecting", () =>
    Effect.gen(function* () {
      const server = yield* serve((_req, res) => res.end("hi"))
      const error = yield* Effect.flip(
        functionHttp({ allowlist: ["example.com"], production: false })({ method: "GET", url: server.url("/") })
      )
      expect(error.code).toBe("HOST_NOT_ALLOWED")
      expect(error.message).toMatch(/127\.0\.0\.1/)
      const nothing = functionHttp({ allowlist: [], production: false })
      const empty = yield* Effect.flip(nothing({ method: "GET", url: server.url("/") }))
      expect(empty.code).toBe("HOST_NOT_ALLOWED")
      expect(server.connections()).toBe(0)
    })
  )

  it.live("production refuses loopback literals, localhost and names resolving inward; development allows them", () =>
    Effect.gen(function* () {
      const server = yield* serve((_req, res) => res.end("hi"))
      const literal = yield* Effect.flip(prod({ method: "GET", url: server.url("/") }))
      const named = yield* Effect.flip(prod({ method: "GET", url: `http://localhost:${server.port}/` }))
      const resolved = yield* Effect.flip(prod({ method: "GET", url: `http://inward.test:${server.port}/` }))
      expect(literal.code).toBe("PRIVATE_ADDRESS")
      expect(named.code).toBe("PRIVATE_ADDRESS")
      expect(resolved.code).toBe("PRIVATE_ADDRESS")
      expect(resolved.message).toMatch(/inward\.test resolves to a private address/)
      expect(server.connections()).toBe(0)
      const allowed = yield* dev({ method: "GET", url: `http://localhost:${server.port}/` })
      expect(allowed.body).toBe("hi")
    })
  )

  it.live("GET returns status, headers and text body; user headers are sent, forbidden ones stripped", () =>
    Effect.gen(function* () {
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
      expect(response.status).toBe(201)
      expect(response.statusText).toBe("Made")
      expect(response.headers["x-answer"]).toBe("42")
      expect(response.headers["set-cookie"]).toBe("a=1, b=2")
      expect(response.url).toBe(server.url("/path?q=1"))
      expect(response.body).toBe("héllo")
      const seen = server.seen[0]!
      expect(seen.method).toBe("GET")
      expect(seen.url).toBe("/path?q=1")
      expect(seen.headers["x-custom"]).toBe("yes")
      expect(seen.headers["user-agent"]).toBe("troupe-functions/1")
      expect(seen.headers.host).toBe(`127.0.0.1:${server.port}`)
      expect(seen.headers.connection).not.toBe("close")
      expect(seen.headers["proxy-authorization"]).toBeUndefined()
      expect(seen.headers.upgrade).toBeUndefined()
    })
  )

  it.live("POST sends a JSON body and reads a JSON answer; the user-agent can be overridden", () =>
    Effect.gen(function* () {
      const server = yield* serve((req, res, body) => {
        res
          .writeHead(200, { "content-type": "application/json" })
          .end(JSON.stringify({ echo: JSON.parse(body), type: req.headers["content-type"] }))
      })
      const payload = JSON.stringify({ name: "ünïcode", n: 1 })
      const response = yield* dev({
        method: "POST",
        url: server.url("/echo"),
        headers: { "content-type": "application/json", "user-agent": "mine/2", "content-length": "1" },
        body: payload
      })
      expect(JSON.parse(response.body)).toStrictEqual({ echo: { name: "ünïcode", n: 1 }, type: "application/json" })
      expect(response.headers["content-type"]).toBe("application/json")
      expect(server.seen[0]!.headers["content-length"]).toBe(String(Buffer.byteLength(payload)))
      expect(server.seen[0]!.headers["user-agent"]).toBe("mine/2")
    })
  )

  it.live("decodes gzip answers; HEAD has an empty body", () =>
    Effect.gen(function* () {
      const server = yield* serve((req, res) => {
        res.writeHead(200, { "content-encoding": "gzip" })
        res.end(req.method === "HEAD" ? undefined : Zlib.gzipSync("zipped text"))
      })
      const got = yield* dev({ method: "GET", url: server.url("/"), headers: { "accept-encoding": "gzip" } })
      expect(got.body).toBe("zipped text")
      const head = yield* dev({ method: "HEAD", url: server.url("/") })
      expect(head.status).toBe(200)
      expect(head.body).toBe("")
    })
  )

  it.live("a same-host 303 is followed as a GET without body; 307 keeps method and body", () =>
    Effect.gen(function* () {
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
      expect(seeOther.status).toBe(200)
      expect(seeOther.body).toBe("GET ")
      expect(seeOther.url).toBe(server.url("/result"))
      expect(server.seen[1]!.headers["content-type"]).toBeUndefined()
      const temporary = yield* dev({ method: "PUT", url: server.url("/temporary"), body: "kept" })
      expect(temporary.body).toBe("PUT kept")
    })
  )

  it.live("a redirect to another port of the same host is followed", () =>
    Effect.gen(function* () {
      const target = yield* serve((_req, res) => res.end("arrived"))
      const origin = yield* serve((_req, res) => res.writeHead(302, { location: target.url("/there") }).end())
      const response = yield* dev({ method: "GET", url: origin.url("/") })
      expect(response.body).toBe("arrived")
      expect(response.url).toBe(target.url("/there"))
    })
  )

  it.live("a redirect to another host is not followed: the 3xx is the answer", () =>
    Effect.gen(function* () {
      const server = yield* serve((req, res) => {
        if (req.url === "/away") res.writeHead(302, { location: `http://localhost:${server.port}/landed` }).end("moved")
        else res.end("landed")
      })
      const response = yield* dev({ method: "GET", url: server.url("/away") })
      expect(response.status).toBe(302)
      expect(response.headers.location).toBe(`http://localhost:${server.port}/landed`)
      expect(response.body).toBe("moved")
      expect(response.url).toBe(server.url("/away"))
      expect(server.seen.length).toBe(1)
    })
  )

  it.live("a redirect loop stops after 5 redirects", () =>
    Effect.gen(function* () {
      const server = yield* serve((_req, res) => res.writeHead(302, { location: "/loop" }).end())
      const error = yield* Effect.flip(dev({ method: "GET", url: server.url("/loop") }))
      expect(error.code).toBe("TOO_MANY_REDIRECTS")
      expect(server.seen.length).toBe(6)
    })
  )

  it.live("a server that never answers times out, and the request is aborted", () =>
    Effect.gen(function* () {
      const server = yield* serve(() => {})
      const error = yield* Effect.flip(dev({ method: "GET", url: server.url("/slow"), timeoutMs: 200 }))
      expect(error.code).toBe("TIMEOUT")
      expect(error.message).toMatch(/timed out after 200 ms/)
      yield* Effect.promise(server.allClosed).pipe(Effect.timeout("5 seconds"))
      const capped = functionHttp({ allowlist: ["127.0.0.1"], production: false, maxTimeoutMs: 200 })
      const cappedError = yield* Effect.flip(capped({ method: "GET", url: server.url("/slow") }))
      expect(cappedError.code).toBe("TIMEOUT")
    })
  )

  it.live("interrupting the effect aborts the request", () =>
    Effect.gen(function* () {
      const server = yield* serve(() => {})
      const fiber = yield* Effect.forkChild(dev({ method: "GET", url: server.url("/slow") }))
      while (server.seen.length === 0) yield* Effect.sleep("10 millis")
      yield* Fiber.interrupt(fiber)
      yield* Effect.promise(server.allClosed).pipe(Effect.timeout("5 seconds"))
    })
  )

  it.live("an answer over the cap fails with RESPONSE_TOO_LARGE, announced or streamed", () =>
    Effect.gen(function* () {
      const big = Buffer.alloc(5 * 1024 * 1024 + 1, "a")
      const server = yield* serve((req, res) => {
        if (req.url === "/announced") return res.end(big)
        res.writeHead(200) // chunked: the size is only known while reading
        for (let i = 0; i < 6; i++) res.write(big.subarray(0, 1024 * 1024))
        res.end()
      })
      const announced = yield* Effect.flip(dev({ method: "GET", url: server.url("/announced") }))
      expect(announced.code).toBe("RESPONSE_TOO_LARGE")
      expect(announced.message).toBe("response body exceeds 5 MiB")
      const streamed = yield* Effect.flip(dev({ method: "GET", url: server.url("/streamed") }))
      expect(streamed.code).toBe("RESPONSE_TOO_LARGE")
      const small = functionHttp({ allowlist: ["127.0.0.1"], production: false, maxResponseBytes: 1024 })
      const smallError = yield* Effect.flip(small({ method: "GET", url: server.url("/streamed") }))
      expect(smallError.message).toBe("response body exceeds 1 KiB")
    })
  )

  it.live("refuses invalid URLs, other schemes, credentials, bad methods and oversized bodies", () =>
    Effect.gen(function* () {
      const codes = yield* Effect.forEach(
        [
          { method: "GET", url: "not a url" },
          { method: "GET", url: "ftp://127.0.0.1/file" },
          { method: "GET", url: "http://user:pass@127.0.0.1/" },
          { method: "TRACE", url: "http://127.0.0.1/" },
          { method: "CONNECT", url: "http://127.0.0.1/" },
          { method: "POST", url: "http://127.0.0.1/", body: "x".repeat(10 * 1024 * 1024 + 1) },
          { method: "GET", url: "http://127.0.0.1/", headers: { "bad header": "x" } },
          { method: "GET", url: "http://127.0.0.1/", headers: { "x-split": "a\r\nb: c" } }
        ],
        (request) => Effect.flip(dev(request)).pipe(Effect.map((e) => e.code))
      )
      expect(codes).toStrictEqual([
        "INVALID_URL",
        "INVALID_URL",
        "INVALID_URL",
        "METHOD_NOT_ALLOWED",
        "METHOD_NOT_ALLOWED",
        "REQUEST_TOO_LARGE",
        "INVALID_HEADER",
        "INVALID_HEADER"
      ])
    })
  )

  it.live("a refused connection is a NETWORK_ERROR", () =>
    Effect.gen(function* () {
      const error = yield* Effect.flip(dev({ method: "GET", url: "http://127.0.0.1:1/" }))
      expect(error.code).toBe("NETWORK_ERROR")
      expect(error.message).toMatch(/ECONNREFUSED/)
    })
  )
})
