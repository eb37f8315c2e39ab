// The orphan sweep of the built-in stores (docs/storage.md, "Stores") every TROUPE_STORAGE_SWEEP_SECONDS: bytes no
// file or variant row names and older than an hour go (an upload or an image variant whose node died before its row
// committed); younger ones (an upload still streaming) stay, and so do a committed file's and variant's. PostgreSQL
// chunks with DATABASE_URL, files under TROUPE_DATA_DIR/storage/blobs on the embedded node.
import * as Crypto from "node:crypto"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import sharp from "sharp"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { database } from "./support/records.ts"
import { startServer, type TestServer } from "./support/TestServer.ts"
import { eventually, sleep } from "./support/wait.ts"

const onPg = process.env.DATABASE_URL !== undefined && process.env.DATABASE_URL !== ""
const dataDir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "troupe-sweep-test-"))
const blobs = Path.join(dataDir, "storage", "blobs")
const twoHoursAgo = () => new Date(Date.now() - 2 * 3600 * 1000)

/** Per backend: make every stored blob look old, add an orphan (old or young), see whether a key's bytes remain. */
const backend = (server: TestServer) => {
  if (onPg) {
    const sql = database(server)
    return {
      ageAll: async () => {
        await sql`UPDATE storage_chunks SET created_at = now() - interval '2 hours'`
      },
      orphan: async (key: string, old: boolean) => {
        await sql`INSERT INTO storage_chunks (blob_key, seq, data, created_at)
          VALUES (${key}, 0, ${Buffer.from("x")}, ${old ? twoHoursAgo() : new Date()})`
      },
      has: async (key: string) => (await sql`SELECT 1 FROM storage_chunks WHERE blob_key = ${key}`).length > 0,
      keptKeys: async () => (await sql<{ blob_key: string }[]>`SELECT blob_key FROM storage_variants`).map((r) => r.blob_key),
      end: () => sql.end()
    }
  }
  return {
    ageAll: async () => {
      for (const name of Fs.readdirSync(blobs)) Fs.utimesSync(Path.join(blobs, name), twoHoursAgo(), twoHoursAgo())
    },
    orphan: async (key: string, old: boolean) => {
      Fs.writeFileSync(Path.join(blobs, key), "x")
      if (old) Fs.utimesSync(Path.join(blobs, key), twoHoursAgo(), twoHoursAgo())
    },
    has: async (key: string) => Fs.existsSync(Path.join(blobs, key)),
    // on disk: every blob so far (the original and its variant)
    keptKeys: async () => Fs.readdirSync(blobs),
    end: async () => {}
  }
}

describe("the orphan sweep", () => {
  let server: TestServer
  beforeAll(async () => {
    server = await startServer({
      env: { TROUPE_STORAGE_SWEEP_SECONDS: "1", TROUPE_STORAGE_IMAGE_SIZES: "16", ...(onPg ? {} : { TROUPE_DATA_DIR: dataDir }) }
    })
  }, 300_000)
  afterAll(async () => {
    await server?.close()
    Fs.rmSync(dataDir, { recursive: true, force: true })
  })

  it("drops old orphans only, keeping files, variants and uploads in progress", { timeout: 120_000 }, async () => {
    const token = await server.adminToken()
    const base = server.base.replace(/^\/workspace\//, "/storage/workspace/")
    const get = async (path: string) => {
      const res = await fetch(`${server.baseUrl}${base}${path}`, { headers: { authorization: `Bearer ${token}` } })
      return { status: res.status, bytes: Buffer.from(await res.arrayBuffer()) }
    }
    const png = await sharp({ create: { width: 40, height: 20, channels: 3, background: { r: 9, g: 90, b: 200 } } })
      .png()
      .toBuffer()
    const form = new FormData()
    form.append("file", new Blob([png as Uint8Array<ArrayBuffer>], { type: "image/png" }), "pic.png")
    const up = await fetch(`${server.baseUrl}${base}/upload`, { method: "POST", headers: { authorization: `Bearer ${token}` }, body: form })
    expect(up.status).toBe(201)
    const { id } = (await up.json()) as { id: string }
    const variant = await get(`/files/${id}?width=16`)
    expect(variant.status).toBe(200)

    const store = backend(server)
    try {
      const stored = await store.keptKeys()
      expect(stored.length).toBeGreaterThan(0)
      // every committed blob looks old; one old orphan (a crashed upload or variant) and one young (still streaming)
      await store.ageAll()
      const oldKey = Crypto.randomUUID()
      const youngKey = Crypto.randomUUID()
      await store.orphan(oldKey, true)
      await store.orphan(youngKey, false)
      await eventually(async () => ((await store.has(oldKey)) ? undefined : true))
      // a sweep or two more: the rest stays
      await sleep(2500)
      expect(await store.has(youngKey)).toBe(true)
      for (const key of stored) expect(await store.has(key)).toBe(true)
    } finally {
      await store.end()
    }
    expect((await get(`/files/${id}`)).bytes.equals(png)).toBe(true)
    const again = await get(`/files/${id}?width=16`)
    expect(again.status).toBe(200)
    expect(again.bytes.equals(variant.bytes)).toBe(true)
  })
})
