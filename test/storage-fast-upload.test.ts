// `POST /storage/workspace/{ws}/api/v1/upload` is answered by the fast lane (storage/FastUpload.ts) when the body is
// multipart with a declared length and the URL has no query string; with one (here `lane=stack`, which the endpoint
// ignores) the ordinary HttpApi handler answers. Both must answer alike, byte for byte the same body sent to each:
// a file with folder, name and metadata, a sniffed type, an empty file, every bad body (no file part, two, a bad
// folder or name, metadata that is no object, an unknown part, too many parts, a field too large, a file over the
// limit, a truncated body, garbage, a file part without a filename), the quota (429 QUOTA_EXCEEDED), a bad token, a
// token without write:storage. Only accepted files are left, on disk and in the usage; the lane's are counted as
// writes (TROUPE_LIMIT_WRITES), and a chunked body goes to the stack. PGlite and (with DATABASE_URL) PostgreSQL.
import * as Fs from "node:fs"
import * as Http from "node:http"
import * as Os from "node:os"
import * as Path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { answeredByLane } from "./support/lanes.ts"
import { client, createServiceAccountClient } from "./support/records.ts"
import { startServer, type TestServer } from "./support/TestServer.ts"
import { eventually } from "./support/wait.ts"

const MAX_FILE = 256 * 1024
const QUOTA = 2 * 1024 * 1024
const WRITES = 100
const METRICS_TOKEN = "scrape-secret"
const UPLOAD_ROUTE = "/storage/workspace/:workspace/api/v1/upload"
const onPg = process.env.DATABASE_URL !== undefined && process.env.DATABASE_URL !== ""
const dataDir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "troupe-fast-upload-"))
let server: TestServer
let token: string

beforeAll(async () => {
  server = await startServer({
    env: {
      TROUPE_STORAGE_MAX_FILE_BYTES: String(MAX_FILE),
      TROUPE_STORAGE_QUOTA_BYTES: String(QUOTA),
      TROUPE_LIMIT_WRITES: String(WRITES),
      TROUPE_LIMIT_WINDOW_SECONDS: "3600",
      TROUPE_METRICS_TOKEN: METRICS_TOKEN,
      ...(onPg ? {} : { TROUPE_DATA_DIR: dataDir })
    }
  })
  token = await server.adminToken()
}, 300_000)

afterAll(async () => {
  await server?.close()
  Fs.rmSync(dataDir, { recursive: true, force: true })
})

const BOUNDARY = "LaneBoundary42"
type Part = readonly [name: string, value: string | Buffer, filename?: string, contentType?: string]

/** A multipart body of `parts` in order (a part with a filename is a file part). */
const multipart = (parts: ReadonlyArray<Part>, end = `--${BOUNDARY}--\r\n`) =>
  Buffer.concat([
    ...parts.flatMap(([name, value, filename, type]) => [
      Buffer.from(
        `--${BOUNDARY}\r\nContent-Disposition: form-data; name="${name}"${filename === undefined ? "" : `; filename="${filename}"`}\r\n` +
          `${type === undefined ? "" : `Content-Type: ${type}\r\n`}\r\n`
      ),
      typeof value === "string" ? Buffer.from(value) : value,
      Buffer.from("\r\n")
    ]),
    Buffer.from(end)
  ])

interface Answer {
  readonly status: number
  readonly contentType: string | undefined
  readonly requestId: string | undefined
  readonly body: any
}

/** POSTs `body` to the upload route of `workspace` (with `?lane=stack`: the ordinary handler), length declared. */
const post = (body: Buffer, options: { stack?: boolean; as?: string; workspace?: string; chunked?: boolean } = {}) =>
  new Promise<Answer>((resolve, reject) => {
    const path = `/storage/workspace/${options.workspace ?? server.workspace}/api/v1/upload${options.stack ? "?lane=stack" : ""}`
    const req = Http.request(
      `${server.baseUrl}${path}`,
      {
        method: "POST",
        headers: {
          authorization: `Bearer ${options.as ?? token}`,
          "content-type": `multipart/form-data; boundary=${BOUNDARY}`,
          ...(options.chunked ? { "transfer-encoding": "chunked" } : { "content-length": body.length })
        }
      },
      (res) => {
        let text = ""
        res.on("data", (d) => (text += d))
        res.on("end", () =>
          resolve({
            status: res.statusCode ?? 0,
            contentType: res.headers["content-type"],
            requestId: res.headers["x-request-id"] as string | undefined,
            body: text.length > 0 ? JSON.parse(text) : undefined
          })
        )
      }
    )
    req.on("error", reject)
    req.end(body)
  })

/** Uploads answered so far by each lane. */
const answeredBy = () => answeredByLane(server, METRICS_TOKEN, UPLOAD_ROUTE, "POST")

/** The same body through both lanes: equal status, type and body (but for the new file's id and time, the request id). */
const both = async (body: Buffer, options: { as?: string; workspace?: string } = {}) => {
  const fast = await post(body, options)
  const ordinary = await post(body, { ...options, stack: true })
  expect(fast.status).toBe(ordinary.status)
  expect(fast.contentType).toBe(ordinary.contentType)
  const comparable = (answer: Answer) => ({ ...answer.body, id: undefined, createdAt: undefined, requestId: undefined })
  expect(comparable(fast)).toEqual(comparable(ordinary))
  if (fast.status >= 400) expect(fast.body.requestId).toBe(fast.requestId)
  return { fast, ordinary }
}

const files = (ws = server.workspace) => `/storage/workspace/${ws}/api/v1`
const bytes = (n: number) => Buffer.from(Array.from({ length: n }, (_, i) => (i * 7919 + (i >> 8)) & 0xff))
const PNG = Buffer.from(
  "89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c4890000000d4944415478da63f8ffff3f0005fe02fea7d6a4c40000000049454e44ae426082",
  "hex"
)

describe("POST /upload: the fast lane answers as the ordinary handler", () => {
  it("stores files alike and refuses every bad body alike, each through its lane, leaving only the files", async () => {
    const before = await answeredBy()
    const stored = await both(
      multipart([
        ["folder", "reports/2026"],
        ["name", "Résumé final.txt"],
        ["metadata", '{"owner":"ada","tags":["x"]}'],
        ["file", "hello lanes", "ignored.txt", "text/plain"]
      ])
    )
    expect(stored.fast.status).toBe(201)
    expect(stored.fast.body).toMatchObject({ name: "Résumé final.txt", folder: "reports/2026", size: 11, contentType: "text/plain" })
    expect(stored.fast.body.id).not.toBe(stored.ordinary.body.id)
    const download = await server.request("GET", `${files()}/files/${stored.fast.body.id}`, { token })
    expect(download.text).toBe("hello lanes")
    expect((await both(multipart([["file", PNG, "dot", "application/octet-stream"]]))).fast.body.contentType).toBe("image/png")
    expect((await both(multipart([["file", "", "empty.txt"]]))).fast.body.size).toBe(0)
    // a file of many socket chunks, hashed alike; the limit itself is allowed (only a file over it is refused)
    const large = await both(multipart([["file", bytes(MAX_FILE - 4096), "large.bin", "application/x-test"]]))
    expect(large.fast.body.checksum).toBe(large.ordinary.body.checksum)
    const atLimit = await both(multipart([["file", bytes(MAX_FILE), "limit.bin", "application/x-test"]]))
    expect([atLimit.fast.status, atLimit.fast.body.size]).toEqual([201, MAX_FILE])

    const f: Part = ["file", "x", "x.txt"]
    const refused: ReadonlyArray<readonly [string, Buffer, number]> = [
      ["no file part", multipart([["folder", "a"]]), 400],
      ["two file parts", multipart([f, f]), 400],
      ["folder with ..", multipart([["folder", "a/../b"], f]), 400],
      ["name with /", multipart([["name", "a/b"], f]), 400],
      ["metadata an array", multipart([["metadata", "[1]"], f]), 400],
      ["an unknown part", multipart([["other", "x"], f]), 400],
      ["too many parts", multipart([...Array.from({ length: 17 }, (): Part => ["folder", "a"]), f]), 400],
      ["a field too large", multipart([["metadata", "x".repeat(81 * 1024)], f]), 400],
      ["a file over the limit", multipart([["file", bytes(MAX_FILE + 1), "big.bin"]]), 413],
      ["a truncated body", multipart([["file", "hello", "t.txt"]], ""), 400],
      ["garbage", Buffer.from("this is not multipart at all"), 400],
      ["a file part without a filename", multipart([["file", "hello"]]), 400]
    ]
    for (const [what, body, status] of refused) {
      const { fast } = await both(body)
      expect(fast.status, what).toBe(status)
      expect(fast.body.code, what).toMatch(/VALIDATION_ERROR|PAYLOAD_TOO_LARGE/)
    }
    // a bad token; a token without write:storage
    expect((await both(multipart([f]), { as: "not-a-token" })).fast.status).toBe(401)
    const reader = await createServiceAccountClient(server, client(server, token), { permissions: ["read:storage"] })
    expect((await both(multipart([f]), { as: reader.token })).fast.status).toBe(403)

    const after = await answeredBy()
    expect(after.fast - before.fast).toBe(5 + refused.length + 2)
    expect(after.stack - before.stack).toBe(5 + refused.length + 2)
    // only the accepted files are left: 2 of each kept body
    const usage = (await server.request("GET", `${files()}/usage`, { token })).body
    const keptBytes = 2 * (11 + PNG.length + 0 + (MAX_FILE - 4096) + MAX_FILE)
    expect(usage).toMatchObject({ files: 10, bytes: keptBytes })
    if (!onPg) await eventually(async () => (Fs.readdirSync(Path.join(dataDir, "storage", "tmp")).length === 0 ? true : undefined), 10_000)
    if (!onPg) expect(Fs.readdirSync(Path.join(dataDir, "storage", "blobs"))).toHaveLength(10)
  })

  it("refuses an upload over the quota alike (429 QUOTA_EXCEEDED); counts as a write; leaves chunked bodies to the stack", async () => {
    const root = await server.adminToken()
    const slug = `lanes-${Date.now()}`
    expect((await server.request("POST", "/workspace/api/v1/workspaces", { token: root, body: { slug } })).status).toBe(201)
    const as = await server.userToken("admin", server.adminPassword, slug)
    // fill the quota to within less than a file of it, then one file too many through each lane
    const size = MAX_FILE - 1024
    for (let i = 0; i < 8; i++) expect((await post(multipart([["file", bytes(size), `f${i}`]]), { as, workspace: slug })).status).toBe(201)
    const over = await both(multipart([["file", bytes(size), "over.bin"]]), { as, workspace: slug })
    expect(over.fast.status).toBe(429)
    expect(over.fast.body.code).toBe("QUOTA_EXCEEDED")
    expect((await server.request("GET", `${files(slug)}/usage`, { token: as })).body).toMatchObject({ files: 8, bytes: 8 * size })

    const before = await answeredBy()
    const chunked = await post(multipart([["file", "chunks", "c.txt"]]), { as, workspace: slug, chunked: true })
    expect(chunked.status).toBe(201)
    const after = await answeredBy()
    expect(after.stack - before.stack).toBe(1)
    expect(after.fast - before.fast).toBe(0)

    // the writes of this workspace so far (uploads of both lanes) count against TROUPE_LIMIT_WRITES
    let status = 0
    for (let i = 0; i < WRITES && status !== 429; i++)
      status = (
        await post(
          multipart([
            ["name", "a/b"],
            ["file", "x", "x"]
          ]),
          { as, workspace: slug }
        )
      ).status
    expect(status).toBe(429)
    const limited = await both(multipart([["file", "x", "x.txt"]]), { as, workspace: slug })
    expect(limited.fast.status).toBe(429)
  })
})
