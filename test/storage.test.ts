// The storage service end to end (CONTRACT §8.1, docs/storage.md) through HTTP, on the node's default store: disk
// under TROUPE_DATA_DIR on PGlite, chunked rows on PostgreSQL (DATABASE_URL). Every route; every bad input of issue
// 28 (a 4xx with the contract body, nothing stored); the per-file limit and a client that disconnects mid-upload
// leaving nothing behind (no row, no usage, no bytes on disk); uploads racing for the quota never passing it;
// file.* events to webhooks; permissions. test/storage-s3.test.ts runs the same routes against a real S3 server.
import { execFile } from "node:child_process"
import * as Fs from "node:fs"
import * as Http from "node:http"
import * as Os from "node:os"
import * as Path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { downloadFile, signedUrl, StorageError, uploadFile } from "../packages/client-fetch/src/Storage.ts"
import { alteredSignature } from "./support/SignedUrls.ts"
import { computeClient, fn } from "./support/compute.ts"
import { createUser } from "./support/IdentityHelpers.ts"
import { startServer, type TestServer } from "./support/TestServer.ts"
import { eventually, sleep } from "./support/wait.ts"
import { startReceiver } from "./support/WebhookReceiver.ts"

const MAX_FILE = 2 * 1024 * 1024
const QUOTA = 3 * 1024 * 1024
const onPg = process.env.DATABASE_URL !== undefined && process.env.DATABASE_URL !== ""
const dataDir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "troupe-storage-test-"))
let server: TestServer

beforeAll(async () => {
  server = await startServer({
    env: {
      TROUPE_STORAGE_MAX_FILE_BYTES: String(MAX_FILE),
      TROUPE_STORAGE_QUOTA_BYTES: String(QUOTA),
      TROUPE_WEBHOOK_RETRY_DELAYS: "1,1,1",
      ...(onPg ? {} : { TROUPE_DATA_DIR: dataDir })
    }
  })
}, 300_000)

afterAll(async () => {
  await server?.close()
  Fs.rmSync(dataDir, { recursive: true, force: true })
})

let counter = 0
/** A fresh workspace (the admin owns it; the quota is per workspace) and calls on its storage base. */
const workspace = async (prefix = "files") => {
  const slug = `${prefix}-${++counter}`
  const root = await server.adminToken()
  const created = await server.request("POST", "/workspace/api/v1/workspaces", { token: root, body: { slug } })
  expect(created.status).toBe(201)
  const token = await server.userToken("admin", server.adminPassword, slug)
  const base = `/storage/workspace/${slug}/api/v1`
  const call = (method: string, path: string, body?: unknown, headers: Record<string, string> = {}, as = token) =>
    server.request(method, `${base}${path}`, { token: as, ...(body === undefined ? {} : { body }), headers })
  /** POST /upload with a FormData: [name, value, filename?] parts in order. */
  const upload = async (parts: ReadonlyArray<readonly [string, string | Blob, string?]>, as = token) => {
    const form = new FormData()
    for (const [key, value, filename] of parts) {
      if (filename !== undefined) form.append(key, value as Blob, filename)
      else form.append(key, value)
    }
    const res = await fetch(`${server.baseUrl}${base}/upload`, { method: "POST", headers: { authorization: `Bearer ${as}` }, body: form })
    const text = await res.text()
    return { status: res.status, body: text.length > 0 ? JSON.parse(text) : undefined, text }
  }
  /** GET the bytes of a file. */
  const download = async (id: string, headers: Record<string, string> = {}, query = "") => {
    const res = await fetch(`${server.baseUrl}${base}/files/${id}${query}`, { headers: { authorization: `Bearer ${token}`, ...headers } })
    return { status: res.status, headers: res.headers, bytes: Buffer.from(await res.arrayBuffer()) }
  }
  return { slug, token, base, call, upload, download }
}

const blob = (content: string | Uint8Array, type = "") => new Blob([content as Uint8Array<ArrayBuffer>], type === "" ? {} : { type })
const random = (n: number) => Buffer.from(Array.from({ length: n }, (_, i) => (i * 7919 + (i >> 8)) & 0xff))

/** Sends a raw multipart body (and closes the request), answering status and parsed body. */
const rawUpload = (path: string, token: string, boundary: string, body: string | Buffer) =>
  new Promise<{ status: number; body: any }>((resolve, reject) => {
    const data = typeof body === "string" ? Buffer.from(body) : body
    const req = Http.request(
      `${server.baseUrl}${path}`,
      {
        method: "POST",
        headers: {
          authorization: `Bearer ${token}`,
          "content-type": `multipart/form-data; boundary=${boundary}`,
          "content-length": data.length
        }
      },
      (res) => {
        let text = ""
        res.on("data", (d) => (text += d))
        res.on("end", () => resolve({ status: res.statusCode ?? 0, body: text.length > 0 ? JSON.parse(text) : undefined }))
      }
    )
    req.on("error", reject)
    req.end(data)
  })

const expectContractError = (body: any, status: number) => {
  expect(body).toMatchObject({ statusCode: status, code: expect.any(String), message: expect.any(String), error: expect.any(String) })
  expect(Array.isArray(body.details)).toBe(true)
}

/** Files on disk under the data directory (PGlite runs only). */
const diskFiles = (sub: "blobs" | "tmp") => {
  const dir = Path.join(dataDir, "storage", sub)
  return Fs.existsSync(dir) ? Fs.readdirSync(dir) : []
}

describe("storage routes", () => {
  it("uploads, lists, reads metadata and bytes, patches, signs and deletes a file", async () => {
    const ws = await workspace()
    const bytes = random(300_000)
    const up = await ws.upload([
      ["folder", "reports/2026"],
      ["metadata", JSON.stringify({ owner: "ana", tags: ["q1"] })],
      ["file", blob(bytes, "application/x-report"), "q1.bin"]
    ])
    expect(up.status).toBe(201)
    const file = up.body
    expect(file).toMatchObject({
      name: "q1.bin",
      folder: "reports/2026",
      contentType: "application/x-report",
      size: bytes.length,
      metadata: { owner: "ana", tags: ["q1"] },
      createdBy: expect.any(String)
    })
    const { createHash } = await import("node:crypto")
    expect(file.checksum).toBe(`sha256:${createHash("sha256").update(bytes).digest("hex")}`)
    expect(Number.isNaN(Date.parse(file.createdAt))).toBe(false)

    const meta = await ws.call("GET", `/files/${file.id}/metadata`)
    expect(meta.status).toBe(200)
    expect(meta.body).toEqual(file)

    const got = await ws.download(file.id)
    expect(got.status).toBe(200)
    expect(got.bytes.equals(bytes)).toBe(true)
    expect(got.headers.get("content-type")).toBe("application/x-report")
    expect(got.headers.get("content-length")).toBe(String(bytes.length))
    expect(got.headers.get("etag")).toBe(`"${file.checksum.slice(7)}"`)
    expect(got.headers.get("accept-ranges")).toBe("bytes")
    expect(got.headers.get("x-content-type-options")).toBe("nosniff")
    expect(got.headers.get("content-disposition")).toMatch(/^inline; filename="q1.bin"/)

    // ranges: a-b, a-, -n; past the end → 416; the ETag → 304
    const part = await ws.download(file.id, { range: "bytes=1000-263999" })
    expect(part.status).toBe(206)
    expect(part.headers.get("content-range")).toBe(`bytes 1000-263999/${bytes.length}`)
    expect(part.bytes.equals(bytes.subarray(1000, 264000))).toBe(true)
    const tail = await ws.download(file.id, { range: "bytes=-10" })
    expect(tail.status).toBe(206)
    expect(tail.bytes.equals(bytes.subarray(bytes.length - 10))).toBe(true)
    const open = await ws.download(file.id, { range: "bytes=299990-" })
    expect(open.bytes.equals(bytes.subarray(299990))).toBe(true)
    const beyond = await ws.download(file.id, { range: `bytes=${bytes.length}-` })
    expect(beyond.status).toBe(416)
    expect(beyond.headers.get("content-range")).toBe(`bytes */${bytes.length}`)
    expectContractError(JSON.parse(beyond.bytes.toString()), 416)
    const cached = await ws.download(file.id, { "if-none-match": got.headers.get("etag")! })
    expect(cached.status).toBe(304)
    expect(cached.bytes.length).toBe(0)
    const attachment = await ws.download(file.id, {}, "?download=true")
    expect(attachment.headers.get("content-disposition")).toMatch(/^attachment;/)

    // PATCH: name, folder, metadata (replaced); a non-ASCII name downloads under RFC 6266's filename*
    const patched = await ws.call("PATCH", `/files/${file.id}`, { name: "résumé 2026.bin", folder: "cv", metadata: { v: 2 } })
    expect(patched.status).toBe(200)
    expect(patched.body).toMatchObject({ id: file.id, name: "résumé 2026.bin", folder: "cv", metadata: { v: 2 } })
    const renamed = await ws.download(file.id)
    expect(renamed.headers.get("content-disposition")).toBe(
      `inline; filename="r_sum_ 2026.bin"; filename*=UTF-8''r%C3%A9sum%C3%A9%202026.bin`
    )

    // signed URL: no token needed; altered → 403
    const signed = await ws.call("POST", `/files/${file.id}/signed-url`, { expiresIn: 60 })
    expect(signed.status).toBe(200)
    expect(Date.parse(signed.body.expiresAt) - Date.now()).toBeGreaterThan(50_000)
    const viaUrl = await fetch(signed.body.url)
    expect(viaUrl.status).toBe(200)
    expect(Buffer.from(await viaUrl.arrayBuffer()).equals(bytes)).toBe(true)
    const ranged = await fetch(signed.body.url, { headers: { range: "bytes=0-9" } })
    expect(ranged.status).toBe(206)
    const altered = await fetch(alteredSignature(signed.body.url))
    expect(altered.status).toBe(403)
    expectContractError(await altered.json(), 403)
    const otherExpiry = await fetch(signed.body.url.replace(/expires=(\d+)/, (_: string, n: string) => `expires=${Number(n) + 1}`))
    expect(otherExpiry.status).toBe(403)
    const defaults = await ws.call("POST", `/files/${file.id}/signed-url`)
    expect(defaults.status).toBe(200)
    expect(Math.round((Date.parse(defaults.body.expiresAt) - Date.now()) / 1000)).toBeGreaterThan(3500)

    expect((await ws.call("GET", "/usage")).body).toEqual({ files: 1, bytes: bytes.length, quotaBytes: QUOTA })

    const deleted = await ws.call("DELETE", `/files/${file.id}`)
    expect(deleted.status).toBe(200)
    expect(deleted.body).toMatchObject({ success: true, message: expect.any(String) })
    expect((await ws.call("GET", `/files/${file.id}/metadata`)).status).toBe(404)
    expect((await ws.download(file.id)).status).toBe(404)
    expect((await fetch(signed.body.url)).status).toBe(404)
    expect((await ws.call("DELETE", `/files/${file.id}`)).status).toBe(404)
    expect((await ws.call("GET", "/usage")).body).toEqual({ files: 0, bytes: 0, quotaBytes: QUOTA })
    if (!onPg) expect(diskFiles("blobs")).not.toContain(file.id)
  })

  it("an expired signed URL answers 403", async () => {
    const ws = await workspace()
    const up = await ws.upload([["file", blob("short-lived"), "a.txt"]])
    const signed = await ws.call("POST", `/files/${up.body.id}/signed-url`, { expiresIn: 1 })
    expect(signed.status).toBe(200)
    await sleep(2100)
    const res = await fetch(signed.body.url)
    expect(res.status).toBe(403)
    expect(((await res.json()) as { message: string }).message).toMatch(/expired/)
  })

  it("lists with folder, prefix, contentType and search filters, newest first, paged", async () => {
    const ws = await workspace()
    const put = async (name: string, folder: string, type: string) => {
      const r = await ws.upload([
        ["folder", folder],
        ["file", blob(`content of ${name}`, type), name]
      ])
      expect(r.status).toBe(201)
      return r.body
    }
    const a = await put("alpha.png", "img", "image/png")
    const b = await put("beta.txt", "docs", "text/plain")
    const c = await put("alpine.jpg", "img/raw", "image/jpeg")
    const names = (res: any) => res.body.data.map((f: any) => f.name)
    const all = await ws.call("GET", "/files")
    expect(all.body).toMatchObject({ total: 3, page: 1, limit: 50 })
    expect(names(all)).toEqual([c.name, b.name, a.name])
    expect(names(await ws.call("GET", "/files?folder=img"))).toEqual(["alpha.png"])
    expect(names(await ws.call("GET", "/files?prefix=al"))).toEqual(["alpine.jpg", "alpha.png"])
    expect(names(await ws.call("GET", "/files?contentType=image/"))).toEqual(["alpine.jpg", "alpha.png"])
    expect(names(await ws.call("GET", "/files?contentType=text/plain"))).toEqual(["beta.txt"])
    expect(names(await ws.call("GET", "/files?search=RAW"))).toEqual(["alpine.jpg"])
    expect(names(await ws.call("GET", "/files?prefix=%25"))).toEqual([])
    const page2 = await ws.call("GET", "/files?limit=2&page=2")
    expect(page2.body).toMatchObject({ total: 3, page: 2, limit: 2 })
    expect(names(page2)).toEqual(["alpha.png"])
    expect((await ws.call("GET", "/files?limit=0")).status).toBe(400)
    expect((await ws.call("GET", "/files?limit=1001")).status).toBe(400)
    expect((await ws.call("GET", "/files?page=abc")).status).toBe(400)
  })

  it("sniffs the type when the client sends none or octet-stream; HTML, SVG and XML are attachments", async () => {
    const ws = await workspace()
    const png = Buffer.from("89504e470d0a1a0a0000000d4948445200000001000000010806000000", "hex")
    const sniffed = await ws.upload([["file", blob(png, "application/octet-stream"), "pixel"]])
    expect(sniffed.body.contentType).toBe("image/png")
    const none = await ws.upload([["file", blob(png), "pixel2"]])
    expect(none.body.contentType).toBe("image/png")
    const unknown = await ws.upload([["file", blob(random(64)), "x.dat"]])
    expect(unknown.body.contentType).toBe("application/octet-stream")
    for (const [type, content] of [
      ["text/html", "<script>alert(1)</script>"],
      ["image/svg+xml", '<svg xmlns="http://www.w3.org/2000/svg" onload="alert(1)"/>'],
      ["application/xml", "<a/>"],
      ["text/javascript", "alert(1)"]
    ] as const) {
      const up = await ws.upload([["file", blob(content, type), "evil"]])
      expect(up.status).toBe(201)
      const got = await ws.download(up.body.id)
      expect(got.headers.get("content-disposition")).toMatch(/^attachment;/)
      expect(got.headers.get("x-content-type-options")).toBe("nosniff")
    }
  })

  it("an empty file is stored and served", async () => {
    const ws = await workspace()
    const up = await ws.upload([["file", blob(""), "empty.txt"]])
    expect(up.status).toBe(201)
    expect(up.body.size).toBe(0)
    const got = await ws.download(up.body.id)
    expect(got.status).toBe(200)
    expect(got.bytes.length).toBe(0)
    expect((await ws.download(up.body.id, { range: "bytes=0-" })).status).toBe(416)
  })
})

describe("storage bad input: a 4xx with the contract body, nothing stored", () => {
  it("refuses each bad upload and keeps nothing", async () => {
    const ws = await workspace("bad")
    const f = () => ["file", blob("x"), "x.txt"] as const
    const cases: ReadonlyArray<readonly [string, ReadonlyArray<readonly [string, string | Blob, string?]>, number, RegExp]> = [
      ["no file part", [["folder", "a"]], 400, /file/],
      ["two file parts", [f(), f()], 400, /file/],
      ["folder with ..", [["folder", "a/../b"], f()], 400, /folder/],
      ["folder with //", [["folder", "a//b"], f()], 400, /folder/],
      ["folder with NUL", [["folder", "a\u0000b"], f()], 400, /folder|NUL/],
      ["folder over 512 bytes", [["folder", "é".repeat(257)], f()], 400, /folder/],
      ["folder with a leading /", [["folder", "/a"], f()], 400, /folder/],
      ["name with /", [["name", "a/b"], f()], 400, /name/],
      ["name with a control character", [["name", "a\u0007b"], f()], 400, /name/],
      ["metadata not JSON", [["metadata", "{oops"], f()], 400, /metadata/],
      ["metadata an array", [["metadata", "[1,2]"], f()], 400, /metadata/],
      ["metadata null", [["metadata", "null"], f()], 400, /metadata/],
      ["an unknown part", [["other", "x"], f()], 400, /other/],
      ["a file over TROUPE_STORAGE_MAX_FILE_BYTES", [["file", blob(random(MAX_FILE + 1)), "big.bin"]], 413, /TROUPE_STORAGE_MAX_FILE_BYTES/]
    ]
    for (const [what, parts, status, message] of cases) {
      const res = await ws.upload(parts)
      expect(res.status, what).toBe(status)
      expectContractError(res.body, status)
      expect(res.body.message, what).toMatch(message)
    }
    // not multipart at all
    const json = await ws.call("POST", "/upload", { file: "x" })
    expect(json.status).toBe(400)
    expectContractError(json.body, 400)
    // a truncated multipart body (no closing boundary), and one whose file part never ends
    const truncated = await rawUpload(
      `${ws.base}/upload`,
      ws.token,
      "XyZ",
      '--XyZ\r\nContent-Disposition: form-data; name="file"; filename="t.txt"\r\nContent-Type: text/plain\r\n\r\nhello'
    )
    expect(truncated.status).toBe(400)
    expectContractError(truncated.body, 400)
    const garbage = await rawUpload(`${ws.base}/upload`, ws.token, "XyZ", "this is not multipart at all")
    expect(garbage.status).toBe(400)
    // a part named "file" without a filename is a field, not a file
    const field = await rawUpload(
      `${ws.base}/upload`,
      ws.token,
      "XyZ",
      '--XyZ\r\nContent-Disposition: form-data; name="file"\r\n\r\nhello\r\n--XyZ--\r\n'
    )
    expect(field.status).toBe(400)

    expect((await ws.call("GET", "/files")).body.total).toBe(0)
    expect((await ws.call("GET", "/usage")).body).toMatchObject({ files: 0, bytes: 0 })
    if (!onPg) await eventually(async () => (diskFiles("tmp").length === 0 ? true : undefined), 10_000)
  })

  it("refuses bad ids, another workspace's id, bad ranges, bad patches and expiresIn out of range", async () => {
    const ws = await workspace("ids")
    const other = await workspace("other")
    const mine = (await ws.upload([["file", blob("mine"), "mine.txt"]])).body
    const theirs = (await other.upload([["file", blob("theirs"), "theirs.txt"]])).body
    const unknown = "00000000-0000-4000-8000-000000000000"
    for (const [method, suffix, body] of [
      ["GET", "", undefined],
      ["GET", "/metadata", undefined],
      ["PATCH", "", { name: "x" }],
      ["DELETE", "", undefined],
      ["POST", "/signed-url", { expiresIn: 10 }]
    ] as const) {
      const malformed = await ws.call(method, `/files/not-a-uuid${suffix}`, body)
      expect(malformed.status, `${method} malformed${suffix}`).toBe(400)
      expectContractError(malformed.body, 400)
      // as every resource's malformed id (docs/errors.md)
      expect(malformed.body.code, `${method} malformed${suffix}`).toBe("BAD_REQUEST")
      const missing = await ws.call(method, `/files/${unknown}${suffix}`, body)
      expect(missing.status, `${method} unknown${suffix}`).toBe(404)
      expectContractError(missing.body, 404)
      const foreign = await ws.call(method, `/files/${theirs.id}${suffix}`, body)
      expect(foreign.status, `${method} other workspace${suffix}`).toBe(404)
    }
    // the other workspace's file is untouched
    expect((await other.call("GET", `/files/${theirs.id}/metadata`)).status).toBe(200)

    for (const range of ["bytes=abc", "items=0-1", "bytes=5-2", "bytes=-", "bytes="]) {
      const res = await ws.download(mine.id, { range })
      expect(res.status, range).toBe(400)
      expectContractError(JSON.parse(res.bytes.toString()), 400)
    }
    for (const expiresIn of [0, -1, 604801, 1.5, "60"]) {
      const res = await ws.call("POST", `/files/${mine.id}/signed-url`, { expiresIn })
      expect(res.status, String(expiresIn)).toBe(400)
      expectContractError(res.body, 400)
    }
    for (const patch of [{ folder: "../x" }, { name: "a/b" }, { name: "" }, { metadata: [1] }, { metadata: "x" }, { folder: "a//b" }]) {
      const res = await ws.call("PATCH", `/files/${mine.id}`, patch)
      expect(res.status, JSON.stringify(patch)).toBe(400)
      expectContractError(res.body, 400)
    }
    expect((await ws.call("GET", `/files/${mine.id}/metadata`)).body).toEqual(mine)
    // a signed URL with junk parameters
    const junk = await fetch(`${server.baseUrl}${ws.base}/signed/${mine.id}?expires=soon&signature=x`)
    expect(junk.status).toBe(400)
    const noSig = await fetch(`${server.baseUrl}${ws.base}/signed/${mine.id}`)
    expect(noSig.status).toBe(400)
    const crossWs = await ws.call("POST", `/files/${mine.id}/signed-url`, { expiresIn: 60 })
    const moved = crossWs.body.url.replace(`/workspace/${ws.slug}/`, `/workspace/${other.slug}/`)
    expect((await fetch(moved)).status).toBe(403)
  })

  it("a client that disconnects mid-upload leaves nothing behind, counted as 499", async () => {
    const ws = await workspace("gone")
    const boundary = "CutCutCut"
    const head = Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="half.bin"\r\n\r\n`)
    await new Promise<void>((resolve) => {
      const req = Http.request(`${server.baseUrl}${ws.base}/upload`, {
        method: "POST",
        headers: {
          authorization: `Bearer ${ws.token}`,
          "content-type": `multipart/form-data; boundary=${boundary}`,
          "content-length": head.length + 1_500_000
        }
      })
      req.on("error", () => resolve())
      req.write(head)
      req.write(random(700_000))
      setTimeout(() => {
        req.destroy()
        resolve()
      }, 500)
    })
    await sleep(1000)
    expect((await ws.call("GET", "/files")).body.total).toBe(0)
    expect((await ws.call("GET", "/usage")).body).toMatchObject({ files: 0, bytes: 0 })
    if (!onPg) await eventually(async () => (diskFiles("tmp").length === 0 ? true : undefined), 10_000)
    // the upload lane counts the request as the stack counts an interrupted one: 499, not a client error of 400
    const metrics = await (await fetch(`${server.baseUrl}/metrics`)).text()
    const upload = metrics.split("\n").filter((line) => line.startsWith("troupe_http_requests_total{") && line.includes("/upload"))
    expect(upload.some((line) => line.includes('status="499"'))).toBe(true)
  })
})

describe("storage quota, permissions and events", () => {
  it("uploads racing for the quota never pass it together", async () => {
    const ws = await workspace("quota")
    const size = 700 * 1024
    const results = await Promise.all(Array.from({ length: 8 }, (_, i) => ws.upload([["file", blob(random(size)), `race-${i}.bin`]])))
    const ok = results.filter((r) => r.status === 201)
    const refused = results.filter((r) => r.status === 429)
    expect(ok.length + refused.length).toBe(8)
    expect(ok.length).toBe(Math.floor(QUOTA / size))
    for (const r of refused) {
      expectContractError(r.body, 429)
      expect(r.body.code).toBe("QUOTA_EXCEEDED")
    }
    const usage = (await ws.call("GET", "/usage")).body
    expect(usage).toEqual({ files: ok.length, bytes: ok.length * size, quotaBytes: QUOTA })
    expect(usage.bytes).toBeLessThanOrEqual(QUOTA)
    expect((await ws.call("GET", "/files")).body.total).toBe(ok.length)
    // deleting gives the bytes back
    expect((await ws.call("DELETE", `/files/${ok[0]!.body.id}`)).status).toBe(200)
    expect((await ws.upload([["file", blob(random(size)), "again.bin"]])).status).toBe(201)
  })

  it("viewers read, developers write, tokens of other workspaces are refused", async () => {
    const ws = await workspace("perm")
    const file = (await ws.upload([["file", blob("perm"), "p.txt"]])).body
    const viewer = await createUser(server, ws.token, "viewer", ws.slug)
    const developer = await createUser(server, ws.token, "developer", ws.slug)
    expect((await ws.call("GET", "/files", undefined, {}, viewer.token)).status).toBe(200)
    expect((await ws.call("GET", `/files/${file.id}`, undefined, {}, viewer.token)).status).toBe(200)
    expect((await ws.call("POST", `/files/${file.id}/signed-url`, {}, {}, viewer.token)).status).toBe(200)
    const denied = await ws.upload([["file", blob("no"), "no.txt"]], viewer.token)
    expect(denied.status).toBe(403)
    expect(denied.body.code).toBe("PERMISSION_DENIED")
    expect((await ws.call("DELETE", `/files/${file.id}`, undefined, {}, viewer.token)).status).toBe(403)
    expect((await ws.call("PATCH", `/files/${file.id}`, { name: "x" }, {}, viewer.token)).status).toBe(403)
    expect((await ws.upload([["file", blob("yes"), "yes.txt"]], developer.token)).status).toBe(201)
    const stranger = await server.adminToken() // the default workspace's token
    expect((await ws.call("GET", "/files", undefined, {}, stranger)).status).toBe(403)
    expect((await server.request("GET", `${ws.base}/files`)).status).toBe(401)
  })

  it("file.uploaded and file.deleted reach webhooks with the file object", async () => {
    const ws = await workspace("events")
    const hooks = await startReceiver()
    try {
      const hook = await server.request("POST", `/workspace/${ws.slug}/api/v1/webhooks`, {
        token: ws.token,
        body: { url: `${hooks.url}/files`, events: ["file.*"] }
      })
      expect(hook.status).toBe(201)
      const up = (await ws.upload([["file", blob("event"), "e.txt"]])).body
      await ws.call("DELETE", `/files/${up.id}`)
      await hooks.waitFor((hits) => hits.length >= 2, 30_000, "two file events")
      const events = hooks.hits.map((h) => h.json)
      expect(events.map((e) => e.event).sort()).toEqual(["file.deleted", "file.uploaded"])
      for (const e of events) expect(e.data).toEqual(up)
    } finally {
      await hooks.close()
    }
  })
})

describe("storage in functions", () => {
  it("api.storage.write, list, get, read and remove act as the run's principal; file_uploaded fires triggers", async () => {
    const ws = await workspace("fn")
    const c = computeClient(server, ws.token, ws.slug)
    // a file_uploaded trigger whose function records what it saw in a second file
    const relay = await c.createFunction(
      "on-upload",
      fn(`const f = executionParams.data
if (f.folder === "seen") return { skipped: true }
await api.storage.write({ name: "seen-" + f.name, folder: "seen", text: f.id })
return { ok: true }`)
    )
    const trigger = await c.createTrigger({
      name: "on-upload",
      functionId: relay.id,
      executionType: "event-driven",
      triggerMetadata: { event: "file.uploaded" }
    })
    expect(trigger.triggerMetadata.event).toBe("file_uploaded")

    const run = await c.runCode(
      fn(`const a = await api.storage.write({ name: "hello.txt", folder: "fn", text: "héllo from a function", metadata: { by: "fn" } })
const b = await api.storage.write({ name: "bin.dat", folder: "fn", base64: "AAECAw==", contentType: "application/x-bin" })
const listed = await api.storage.list({ folder: "fn" })
const meta = await api.storage.get(a.id)
const text = await api.storage.read(a.id)
const b64 = await api.storage.read(b.id, { encoding: "base64" })
let refused
try { await api.storage.write({ name: "a/b", text: "x" }) } catch (e) { refused = e.details[0].field }
let missing
try { await api.storage.get("00000000-0000-4000-8000-000000000000") } catch (e) { missing = e.statusCode }
const removed = await api.storage.remove(b.id)
return { a, total: listed.total, same: meta.id === a.id, text, b64, refused, missing, removed }`)
    )
    expect(run.status, JSON.stringify(run.error)).toBe("completed")
    expect(run.result).toMatchObject({
      a: { name: "hello.txt", folder: "fn", contentType: "text/plain; charset=utf-8", metadata: { by: "fn" } },
      total: 2,
      same: true,
      text: "héllo from a function",
      b64: "AAECAw==",
      refused: "name",
      missing: 404,
      removed: { success: true }
    })
    expect((await ws.download(run.result.a.id)).bytes.toString()).toBe("héllo from a function")
    const seen = await eventually(async () => {
      const list = await ws.call("GET", "/files?folder=seen")
      return list.body.total >= 1 ? list.body.data : undefined
    }, 60_000)
    expect(seen.map((f: any) => f.name)).toContain("seen-hello.txt")
  })
})

describe("storage through @troupe/client-fetch", () => {
  it("uploadFile, downloadFile (whole and a range) and signedUrl; failures reject with the contract's code", async () => {
    const ws = await workspace("client")
    const target = { baseUrl: server.baseUrl, workspace: ws.slug, token: ws.token }
    const bytes = random(50_000)
    const progress: Array<number> = []
    const file = await uploadFile({
      ...target,
      file: new Blob([bytes]),
      name: "from-client.bin",
      folder: "sdk",
      metadata: { via: "client-fetch" },
      onProgress: (p) => progress.push(p.loaded)
    })
    expect(file).toMatchObject({ name: "from-client.bin", folder: "sdk", size: bytes.length, metadata: { via: "client-fetch" } })
    expect(progress.at(-1)).toBe(bytes.length)
    const whole = await downloadFile({ ...target, id: file.id })
    expect(Buffer.from(await whole.arrayBuffer()).equals(bytes)).toBe(true)
    const part = await downloadFile({ ...target, id: file.id, range: "bytes=10-19" })
    expect(part.status).toBe(206)
    expect(Buffer.from(await part.arrayBuffer()).equals(bytes.subarray(10, 20))).toBe(true)
    const { url } = await signedUrl({ ...target, id: file.id, expiresIn: 30 })
    expect((await fetch(url)).status).toBe(200)
    const failure = await downloadFile({ ...target, id: "nope" }).catch((e) => e)
    expect(failure).toBeInstanceOf(StorageError)
    expect(failure).toMatchObject({ status: 400, code: "BAD_REQUEST" })
    const refused = await uploadFile({ ...target, file: new Blob(["x"]), folder: "../up" }).catch((e) => e)
    expect(refused).toMatchObject({ status: 400, code: "VALIDATION_ERROR" })
  })
})

describe("troupe files", () => {
  it("uploads, lists, downloads and removes through the CLI, streaming", { timeout: 120_000 }, async () => {
    const ws = await workspace("cli")
    const work = Fs.mkdtempSync(Path.join(Os.tmpdir(), "troupe-files-cli-"))
    const bin = Path.resolve(import.meta.dirname, "../packages/cli/bin/troupe.mjs")
    const env = {
      ...process.env,
      TROUPE_CONFIG: Path.join(work, "config.json"),
      TROUPE_URL: server.baseUrl,
      TROUPE_WORKSPACE: ws.slug,
      TROUPE_TOKEN: ws.token
    }
    const troupe = (args: ReadonlyArray<string>) =>
      new Promise<{ code: number; stdout: string; stderr: string }>((resolve) =>
        execFile(process.execPath, [bin, ...args], { env, cwd: work }, (error, stdout, stderr) =>
          resolve({ code: error === null ? 0 : Number((error as { code?: number }).code ?? 1), stdout, stderr })
        )
      )
    try {
      const source = Path.join(work, "rapport été.bin")
      const bytes = random(1_500_000)
      Fs.writeFileSync(source, bytes)
      const up = await troupe(["files", "upload", source, "--folder", "cli/in", "--metadata", '{"from":"cli"}', "--json"])
      expect(up.code, up.stderr).toBe(0)
      const file = JSON.parse(up.stdout)
      expect(file).toMatchObject({ name: "rapport été.bin", folder: "cli/in", size: bytes.length, metadata: { from: "cli" } })
      const ls = await troupe(["files", "ls", "--folder", "cli/in"])
      expect(ls.code, ls.stderr).toBe(0)
      expect(ls.stdout).toContain(file.id)
      const target = Path.join(work, "copy.bin")
      const down = await troupe(["files", "download", file.id, "-o", target])
      expect(down.code, down.stderr).toBe(0)
      expect(Fs.readFileSync(target).equals(bytes)).toBe(true)
      expect(Fs.existsSync(`${target}.part`)).toBe(false)
      const rm = await troupe(["files", "rm", file.id])
      expect(rm.code, rm.stderr).toBe(0)
      const gone = await troupe(["files", "download", file.id, "-o", target])
      expect(gone.code).toBe(1)
      expect(gone.stderr).toMatch(/404|NOT_FOUND/)
      const bad = await troupe(["files", "upload", source, "--folder", "../x"])
      expect(bad.code).toBe(1)
      expect(bad.stderr).toMatch(/folder/)
    } finally {
      Fs.rmSync(work, { recursive: true, force: true })
    }
  })
})
