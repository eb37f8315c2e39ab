// The orphan sweep on the S3 store (storage/S3Store.ts sweepS3, every TROUPE_STORAGE_SWEEP_SECONDS): objects under
// the node's prefix that no file or variant row names and older than an hour go (an upload or an image variant whose
// node died before its row committed); younger ones, a committed file's and keys that are not blob ids stay.
// s3rver here accepts mismatched signatures: it canonicalises a bucket-level path (`/bucket/`, as the SDK signs a
// path-style ListObjectsV2) as `/bucket`, which S3 and MinIO do not; test/storage-s3.test.ts checks every other call
// with signatures on. Objects are aged through s3rver's files (their mtime is the LastModified it answers).
import { PutObjectCommand } from "@aws-sdk/client-s3"
import * as Crypto from "node:crypto"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { startS3 } from "./support/S3Server.ts"
import { startServer, type TestServer } from "./support/TestServer.ts"
import { eventually, sleep } from "./support/wait.ts"

const BUCKET = "troupe-sweep"
const PREFIX = "nodes/sweep"
let s3: Awaited<ReturnType<typeof startS3>>
let server: TestServer
const base = "/storage/workspace/default/api/v1"

beforeAll(async () => {
  s3 = await startS3(BUCKET, PREFIX, { allowMismatchedSignatures: true })
  server = await startServer({ env: { ...s3.env, TROUPE_STORAGE_SWEEP_SECONDS: "1" } })
}, 300_000)

afterAll(async () => {
  await server?.close()
  await s3?.close()
})

const objectFile = (key: string) => Path.join(s3.dir, BUCKET, `${PREFIX}/${key}._S3rver_object`)
const exists = (key: string) => Fs.existsSync(objectFile(key))
const age = (key: string) => {
  const twoHoursAgo = new Date(Date.now() - 2 * 3600 * 1000)
  Fs.utimesSync(objectFile(key), twoHoursAgo, twoHoursAgo)
}
const put = (key: string) => s3.client.send(new PutObjectCommand({ Bucket: BUCKET, Key: `${PREFIX}/${key}`, Body: "orphan" }))

describe("the orphan sweep on S3", () => {
  it("removes old objects no row names, keeps young ones, committed files and foreign keys", async () => {
    const token = await server.adminToken()
    const form = new FormData()
    const bytes = Crypto.randomBytes(2048)
    form.append("file", new Blob([bytes]), "kept.bin")
    const uploaded = await fetch(`${server.baseUrl}${base}/upload`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}` },
      body: form
    })
    expect(uploaded.status).toBe(201)
    const file = ((await uploaded.json()) as { id: string }).id

    const oldOrphan = Crypto.randomUUID()
    const youngOrphan = Crypto.randomUUID()
    const foreign = "notes.txt"
    for (const key of [oldOrphan, youngOrphan, foreign]) await put(key)
    for (const key of [file, oldOrphan, foreign]) age(key)

    await eventually(async () => (exists(oldOrphan) ? undefined : true), 30_000)
    // a few more sweeps: nothing else goes
    await sleep(2500)
    expect(exists(youngOrphan)).toBe(true)
    expect(exists(foreign)).toBe(true)
    expect(exists(file)).toBe(true)
    const download = await fetch(`${server.baseUrl}${base}/files/${file}`, { headers: { authorization: `Bearer ${token}` } })
    expect(Buffer.from(await download.arrayBuffer()).equals(bytes)).toBe(true)
  })
})
