// `GET /storage/workspace/{ws}/api/v1/files/{id}` is answered by the fast lane (storage/FastDownload.ts) when its
// only query parameter is `download`; with any other parameter (here `lane=stack`, which the endpoint ignores) the
// ordinary HttpApi handler answers. Both must answer byte for byte and header for header alike (the date, the
// request id and the connection's own headers aside): small and large files, text a compressor would take, HTML
// (attachment), an empty file, 304, 206, 416, a malformed Range, If-Range, 400 and 404 ids, another workspace's
// file, a bad token, a token without read:storage; the lane counts as a read; a signed URL answers the same bytes
// and headers.
import * as Crypto from "node:crypto"
import * as Http from "node:http"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { client, createServiceAccountClient } from "./support/records.ts"
import { answeredByLane } from "./support/lanes.ts"
import { startServer, type TestServer } from "./support/TestServer.ts"
import { sleep } from "./support/wait.ts"

const windowSeconds = 3
const METRICS_TOKEN = "scrape-secret"
const DOWNLOAD_ROUTE = "/storage/workspace/:workspace/api/v1/files/:id"
let server: TestServer
let token: string
let files: string

beforeAll(async () => {
  server = await startServer({
    env: { TROUPE_LIMIT_READS: "80", TROUPE_LIMIT_WINDOW_SECONDS: String(windowSeconds), TROUPE_METRICS_TOKEN: METRICS_TOKEN }
  })
  token = await server.adminToken()
  files = `/storage/workspace/${server.workspace}/api/v1`
}, 300_000)

afterAll(async () => {
  await server?.close()
})

/** A fresh window, so the reads limit never interferes with the comparisons. */
const nextWindow = () => sleep(windowSeconds * 1000 - (Date.now() % (windowSeconds * 1000)) + 50)

interface Answer {
  readonly status: number
  readonly headers: Record<string, string | Array<string> | undefined>
  readonly body: Buffer
}

/** Downloads answered so far by each lane. */
const answeredBy = () => answeredByLane(server, METRICS_TOKEN, DOWNLOAD_ROUTE, "GET")

/** A GET as sent on the wire (no decompression, every header kept), with gzip and brotli accepted. */
const get = (path: string, headers: Record<string, string> = {}, as: string | undefined = token) =>
  new Promise<Answer>((resolve, reject) => {
    Http.get(
      `${server.baseUrl}${path}`,
      { headers: { "accept-encoding": "gzip, br", ...(as === undefined ? {} : { authorization: `Bearer ${as}` }), ...headers } },
      (res) => {
        const chunks: Array<Buffer> = []
        res.on("data", (d: Buffer) => chunks.push(d))
        res.on("end", () => resolve({ status: res.statusCode!, headers: res.headers, body: Buffer.concat(chunks) }))
        res.on("error", reject)
      }
    ).on("error", reject)
  })

/** The headers that belong to the answer (not to the connection, the clock or the request id). */
const own = (headers: Answer["headers"]) => {
  const { date: _d, connection: _c, "keep-alive": _k, "x-request-id": _r, ...rest } = headers
  return rest
}

/** The same request through the fast lane and through the stack: equal status, headers and bytes. */
const both = async (id: string, query = "", headers: Record<string, string> = {}, as: string | undefined = token) => {
  const fast = await get(`${files}/files/${id}${query}`, headers, as)
  const ordinary = await get(`${files}/files/${id}${query === "" ? "?" : `${query}&`}lane=stack`, headers, as)
  expect(fast.status).toBe(ordinary.status)
  expect(own(fast.headers)).toEqual(own(ordinary.headers))
  expect(fast.headers["x-request-id"]).toMatch(/.+/)
  if (fast.status >= 400) {
    const [f, o] = [JSON.parse(fast.body.toString()), JSON.parse(ordinary.body.toString())]
    expect(f.requestId).toBe(fast.headers["x-request-id"])
    expect(o.requestId).toBe(ordinary.headers["x-request-id"])
    expect({ ...f, requestId: undefined }).toEqual({ ...o, requestId: undefined })
  } else {
    expect(fast.body.equals(ordinary.body)).toBe(true)
  }
  return fast
}

const upload = async (name: string, bytes: Uint8Array, type: string, as = token, base = files) => {
  const form = new FormData()
  form.append("file", new Blob([bytes as Uint8Array<ArrayBuffer>], { type }), name)
  const res = await fetch(`${server.baseUrl}${base}/upload`, { method: "POST", headers: { authorization: `Bearer ${as}` }, body: form })
  expect(res.status).toBe(201)
  return (await res.json()) as { id: string; checksum: string; size: number }
}

describe("GET /files/{id}: the fast lane answers as the ordinary handler", () => {
  it("small and large files, text, HTML, an empty file, attachment: the same bytes and headers", async () => {
    await nextWindow()
    const small = Crypto.randomBytes(4096)
    const text = Buffer.from("a line of text a compressor would love to take\n".repeat(200))
    // random bytes may open like a known format (an MP3 frame) and be sniffed as one: a fixed text start rules it out
    const large = Crypto.randomBytes(300_000)
    large.write("troupe test bytes\n", 0)
    const cases = [
      { file: await upload("small.bin", small, "application/x-small"), bytes: small, type: "application/x-small" },
      { file: await upload("notes.txt", text, "text/plain"), bytes: text, type: "text/plain" },
      { file: await upload("large.bin", large, "application/octet-stream"), bytes: large, type: "application/octet-stream" },
      { file: await upload("page.html", Buffer.from("<h1>hi</h1>"), "text/html"), bytes: Buffer.from("<h1>hi</h1>"), type: "text/html" },
      { file: await upload("empty.txt", new Uint8Array(0), "text/plain"), bytes: Buffer.alloc(0), type: "text/plain" }
    ]
    const before = await answeredBy()
    for (const { file, bytes, type } of cases) {
      const fast = await both(file.id)
      expect(fast.status).toBe(200)
      expect(fast.body.equals(bytes)).toBe(true)
      expect(fast.headers["content-type"]).toBe(type)
      expect(fast.headers["content-length"]).toBe(String(bytes.length))
      expect(fast.headers["content-encoding"]).toBeUndefined()
      expect(fast.headers.etag).toBe(`"${file.checksum.slice("sha256:".length)}"`)
      expect(fast.headers["accept-ranges"]).toBe("bytes")
      expect(fast.headers["x-content-type-options"]).toBe("nosniff")
      expect(fast.headers["cache-control"]).toBe("private, no-cache")
      expect(fast.headers["content-disposition"]).toMatch(type === "text/html" ? /^attachment;/ : /^inline;/)
      const attached = await both(file.id, "?download=true")
      expect(attached.headers["content-disposition"]).toMatch(/^attachment;/)
      await both(file.id, "?download=0")
    }
    // each request above went once through each lane
    const after = await answeredBy()
    expect(after.fast - before.fast).toBe(cases.length * 3)
    expect(after.stack - before.stack).toBe(cases.length * 3)
  })

  it("If-None-Match → 304; Range → 206, 416 or 400; If-Range with another ETag → the whole file", async () => {
    await nextWindow()
    const bytes = Crypto.randomBytes(4096)
    const big = Crypto.randomBytes(300_000)
    const file = await upload("r.bin", bytes, "application/x-r")
    const bigFile = await upload("big.bin", big, "application/x-r")
    const etag = `"${file.checksum.slice("sha256:".length)}"`
    for (const inm of [etag, `W/${etag}`, `"other", ${etag}`, "*"]) {
      const cached = await both(file.id, "", { "if-none-match": inm })
      expect(cached.status).toBe(304)
      expect(cached.body.length).toBe(0)
      expect(cached.headers.etag).toBe(etag)
    }
    expect((await both(file.id, "", { "if-none-match": '"other"' })).status).toBe(200)
    const part = await both(file.id, "", { range: "bytes=10-99" })
    expect(part.status).toBe(206)
    expect(part.headers["content-range"]).toBe("bytes 10-99/4096")
    expect(part.body.equals(bytes.subarray(10, 100))).toBe(true)
    const tail = await both(bigFile.id, "", { range: "bytes=-70000" })
    expect(tail.status).toBe(206)
    expect(tail.body.equals(big.subarray(big.length - 70000))).toBe(true)
    const within = await both(bigFile.id, "", { range: "bytes=100000-100999" })
    expect(within.body.equals(big.subarray(100000, 101000))).toBe(true)
    // across the PostgreSQL store's first 256 KiB chunk
    const across = await both(bigFile.id, "", { range: "bytes=262000-262299" })
    expect(across.body.equals(big.subarray(262000, 262300))).toBe(true)
    const beyond = await both(file.id, "", { range: "bytes=5000-" })
    expect(beyond.status).toBe(416)
    expect(beyond.headers["content-range"]).toBe("bytes */4096")
    expect(JSON.parse(beyond.body.toString())).toMatchObject({ statusCode: 416, code: "RANGE_NOT_SATISFIABLE" })
    expect((await both(file.id, "", { range: "lines=1-2" })).status).toBe(400)
    const stale = await both(file.id, "", { range: "bytes=0-9", "if-range": '"other"' })
    expect(stale.status).toBe(200)
    expect(stale.body.equals(bytes)).toBe(true)
    expect((await both(file.id, "", { range: "bytes=0-9", "if-range": etag })).status).toBe(206)
  })

  it("bad and unknown ids, another workspace's file, a bad token, no read:storage: the same errors", async () => {
    await nextWindow()
    expect((await both("00000000-0000-4000-8000-000000000000")).status).toBe(404)
    expect((await both("not-a-uuid")).status).toBe(400)
    const root = await server.adminToken()
    const slug = `lane-${Date.now().toString(36)}`
    const created = await server.request("POST", "/workspace/api/v1/workspaces", { token: root, body: { slug } })
    expect(created.status).toBe(201)
    const otherToken = await server.userToken("admin", server.adminPassword, slug)
    const theirs = await upload("theirs.bin", Buffer.from("theirs"), "text/plain", otherToken, `/storage/workspace/${slug}/api/v1`)
    expect((await both(theirs.id)).status).toBe(404)
    const mine = await upload("mine.bin", Buffer.from("mine"), "text/plain")
    expect((await both(mine.id, "", {}, "not-a-token")).status).toBe(401)
    expect((await both(mine.id, "", {}, otherToken)).status).toBe(403)
    const admin = client(server, token)
    const recordsOnly = await createServiceAccountClient(server, admin, { permissions: ["read:records"] })
    const denied = await both(mine.id, "", {}, recordsOnly.token)
    expect(denied.status).toBe(403)
    const reader = await createServiceAccountClient(server, admin, { permissions: ["read:storage"] })
    expect((await both(mine.id, "", {}, reader.token)).body.toString()).toBe("mine")
  })

  it("a signed URL (no token, so the stack's) answers the lane's bytes and headers", async () => {
    await nextWindow()
    const bytes = Crypto.randomBytes(2048)
    const file = await upload("signed.bin", bytes, "application/x-signed")
    const signed = await server.request("POST", `${files}/files/${file.id}/signed-url`, { token, body: { expiresIn: 60 } })
    expect(signed.status).toBe(200)
    const url = new URL(signed.body.url)
    const viaUrl = await get(`${url.pathname}${url.search}`, {}, undefined)
    const fast = await get(`${files}/files/${file.id}`)
    expect(viaUrl.status).toBe(200)
    expect(viaUrl.body.equals(bytes)).toBe(true)
    expect(own(viaUrl.headers)).toEqual(own(fast.headers))
  })

  it("the lane counts against the reads limit: 429 with Retry-After past it", async () => {
    const file = await upload("counted.bin", Buffer.from("counted"), "text/plain")
    await nextWindow()
    // all at once, so they fall in one window however slow the machine
    const answers = await Promise.all(Array.from({ length: 100 }, () => get(`${files}/files/${file.id}`)))
    expect(answers.filter((a) => a.status !== 200 && a.status !== 429)).toEqual([])
    const limited = answers.find((a) => a.status === 429)
    expect(limited).toBeDefined()
    expect(JSON.parse(limited!.body.toString())).toMatchObject({ statusCode: 429, code: "QUOTA_EXCEEDED" })
    expect(Number(limited!.headers["retry-after"])).toBeGreaterThan(0)
  })
})
