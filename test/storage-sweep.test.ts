// The PostgreSQL store's sweep (docs/storage.md, "Choosing a store") every TROUPE_STORAGE_SWEEP_SECONDS: chunks no
// file or variant row names and older than an hour go (an upload or a variant whose node died before its row
// committed); chunks of an upload still streaming (younger) stay, and so do a committed image variant's.
// PostgreSQL only (the embedded node's disk store empties its temporary directory at start instead).
import sharp from "sharp"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { database } from "./support/records.ts"
import { startServer, type TestServer } from "./support/TestServer.ts"
import { eventually, sleep } from "./support/wait.ts"

const onPg = process.env.DATABASE_URL !== undefined && process.env.DATABASE_URL !== ""

describe.runIf(onPg)("the orphan chunk sweep", () => {
  let server: TestServer
  beforeAll(async () => {
    server = await startServer({ env: { TROUPE_STORAGE_SWEEP_SECONDS: "1", TROUPE_STORAGE_IMAGE_SIZES: "16" } })
  }, 300_000)
  afterAll(async () => {
    await server?.close()
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

    const sql = database(server)
    try {
      // every committed blob looks old; one old orphan (a crashed upload or variant) and one young (still streaming)
      await sql`UPDATE storage_chunks SET created_at = now() - interval '2 hours'`
      await sql`INSERT INTO storage_chunks (blob_key, seq, data, created_at)
        VALUES ('orphan-old', 0, ${Buffer.from("x")}, now() - interval '2 hours'), ('orphan-young', 0, ${Buffer.from("y")}, now())`
      await eventually(async () =>
        (await sql`SELECT 1 FROM storage_chunks WHERE blob_key = 'orphan-old'`).length === 0 ? true : undefined
      )
      // a sweep or two more: the rest stays
      await sleep(2500)
      expect((await sql`SELECT 1 FROM storage_chunks WHERE blob_key = 'orphan-young'`).length).toBe(1)
      const kept = await sql<{ n: number }[]>`SELECT count(*)::int AS n FROM storage_chunks c
        WHERE EXISTS (SELECT 1 FROM storage_variants v WHERE v.blob_key = c.blob_key)`
      expect(kept[0]!.n).toBeGreaterThan(0)
    } finally {
      await sql.end()
    }
    expect((await get(`/files/${id}`)).bytes.equals(png)).toBe(true)
    const again = await get(`/files/${id}?width=16`)
    expect(again.status).toBe(200)
    expect(again.bytes.equals(variant.bytes)).toBe(true)
  })
})
