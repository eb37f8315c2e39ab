// The storage service on the S3 store (TROUPE_STORAGE=s3://bucket/prefix), against a real S3-protocol server
// (@20minutes/s3rver) on 127.0.0.1 started here, path-style, with the SDK's credential variables: upload (one PUT
// and a multipart upload past 8 MiB), download whole and by range, a signed URL, delete; a file over the limit
// and a client gone mid-upload leave no object in the bucket. Metadata stays in the node's database.
import { HeadObjectCommand, type S3Client } from "@aws-sdk/client-s3"
import * as Crypto from "node:crypto"
import * as Fs from "node:fs"
import * as Http from "node:http"
import * as Path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { startS3 } from "./support/S3Server.ts"
import { startServer, type TestServer } from "./support/TestServer.ts"
import { sleep } from "./support/wait.ts"

const BUCKET = "troupe-files"
const PREFIX = "nodes/test"
const MAX_FILE = 12 * 1024 * 1024
let s3: Awaited<ReturnType<typeof startS3>>
let client: S3Client
let dir: string
let server: TestServer
let token: string
const base = "/storage/workspace/default/api/v1"

beforeAll(async () => {
  s3 = await startS3(BUCKET, PREFIX)
  client = s3.client
  dir = s3.dir
  server = await startServer({ env: { ...s3.env, TROUPE_STORAGE_MAX_FILE_BYTES: String(MAX_FILE) } })
  token = await server.adminToken()
}, 300_000)

afterAll(async () => {
  await server?.close()
  await s3?.close()
})

const random = (n: number) => Crypto.randomBytes(n)

const upload = async (bytes: Uint8Array, name: string) => {
  const form = new FormData()
  form.append("file", new Blob([bytes as Uint8Array<ArrayBuffer>]), name)
  const res = await fetch(`${server.baseUrl}${base}/upload`, { method: "POST", headers: { authorization: `Bearer ${token}` }, body: form })
  return { status: res.status, body: (await res.json()) as any }
}

const download = async (id: string, headers: Record<string, string> = {}) => {
  const res = await fetch(`${server.baseUrl}${base}/files/${id}`, { headers: { authorization: `Bearer ${token}`, ...headers } })
  return { status: res.status, headers: res.headers, bytes: Buffer.from(await res.arrayBuffer()) }
}

/**
 * The bucket's objects under the prefix, read from s3rver's directory (its List handlers refuse this SDK's
 * signatures, while every call the node makes is checked; so the test reads the files).
 */
const objects = async () => {
  const root = Path.join(dir, BUCKET)
  const found: Array<string> = []
  const walk = (at: string) => {
    if (!Fs.existsSync(at)) return
    for (const entry of Fs.readdirSync(at, { withFileTypes: true })) {
      const full = Path.join(at, entry.name)
      if (entry.isDirectory()) walk(full)
      else if (entry.name.endsWith("._S3rver_object")) found.push(Path.relative(root, full).slice(0, -"._S3rver_object".length))
    }
  }
  walk(Path.join(root, PREFIX))
  return found
}

describe("storage on an S3-compatible store", () => {
  it("stores small and multipart files under the prefix, serves them whole and by range, deletes them", async () => {
    const small = random(5000)
    const large = random(9 * 1024 * 1024 + 123)
    const a = await upload(small, "small.bin")
    const b = await upload(large, "large.bin")
    expect(a.status).toBe(201)
    expect(b.status).toBe(201)
    expect(b.body.size).toBe(large.length)
    expect(b.body.checksum).toBe(`sha256:${Crypto.createHash("sha256").update(large).digest("hex")}`)
    const head = await client.send(new HeadObjectCommand({ Bucket: BUCKET, Key: `${PREFIX}/${b.body.id}` }))
    expect(Number(head.ContentLength)).toBe(large.length)
    expect((await objects()).sort()).toEqual([`${PREFIX}/${a.body.id}`, `${PREFIX}/${b.body.id}`].sort())

    expect((await download(a.body.id)).bytes.equals(small)).toBe(true)
    const whole = await download(b.body.id)
    expect(whole.status).toBe(200)
    expect(whole.bytes.equals(large)).toBe(true)
    const part = await download(b.body.id, { range: "bytes=8388600-8388700" })
    expect(part.status).toBe(206)
    expect(part.bytes.equals(large.subarray(8388600, 8388701))).toBe(true)

    const signed = await server.request("POST", `${base}/files/${a.body.id}/signed-url`, { token, body: { expiresIn: 30 } })
    const viaUrl = await fetch(signed.body.url)
    expect(Buffer.from(await viaUrl.arrayBuffer()).equals(small)).toBe(true)

    for (const id of [a.body.id, b.body.id]) expect((await server.request("DELETE", `${base}/files/${id}`, { token })).status).toBe(200)
    expect(await objects()).toEqual([])
  })

  it("a file over the limit and a client gone mid-upload leave no object behind", async () => {
    const before = await objects()
    const big = await upload(random(MAX_FILE + 10), "too-big.bin")
    expect(big.status).toBe(413)
    const boundary = "S3cut"
    const head = Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="half.bin"\r\n\r\n`)
    await new Promise<void>((resolve) => {
      const req = Http.request(`${server.baseUrl}${base}/upload`, {
        method: "POST",
        headers: {
          authorization: `Bearer ${token}`,
          "content-type": `multipart/form-data; boundary=${boundary}`,
          "content-length": head.length + 11_000_000
        }
      })
      req.on("error", () => resolve())
      req.write(head)
      req.write(random(9_000_000))
      setTimeout(() => {
        req.destroy()
        resolve()
      }, 1500)
    })
    await sleep(1500)
    expect(await objects()).toEqual(before)
    const usage = await server.request("GET", `${base}/usage`, { token })
    expect(usage.body).toMatchObject({ files: 0, bytes: 0 })
  })
})
