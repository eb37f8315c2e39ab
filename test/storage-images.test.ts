// Resized images (docs/storage.md, "Images") through HTTP, on disk (PGlite) or in PostgreSQL chunks (DATABASE_URL):
// `GET /files/{id}?width=&height=&fit=` answers a variant of the configured sizes only (sharp checks its
// dimensions), made once and then served with its own ETag (304 works); bad sizes, fits and non-images are 400s;
// concurrent requests for one new variant all get the same bytes and leave one variant stored; the variants go
// with their file.
import { execFile } from "node:child_process"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import * as Zlib from "node:zlib"
import sharp from "sharp"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { downloadFile } from "../packages/client-fetch/src/Storage.ts"
import { database, expectError } from "./support/records.ts"
import { startServer, type TestServer } from "./support/TestServer.ts"

const onPg = process.env.DATABASE_URL !== undefined && process.env.DATABASE_URL !== ""
const dataDir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "troupe-images-test-"))
let server: TestServer
let token: string

beforeAll(async () => {
  server = await startServer({ env: { TROUPE_STORAGE_IMAGE_SIZES: "16,32,64", ...(onPg ? {} : { TROUPE_DATA_DIR: dataDir }) } })
  token = await server.adminToken()
}, 300_000)

afterAll(async () => {
  await server?.close()
  Fs.rmSync(dataDir, { recursive: true, force: true })
})

const base = () => server.base.replace(/^\/workspace\//, "/storage/workspace/")

const upload = async (bytes: Uint8Array, name: string, type: string) => {
  const form = new FormData()
  form.append("file", new Blob([bytes as Uint8Array<ArrayBuffer>], { type }), name)
  const res = await fetch(`${server.baseUrl}${base()}/upload`, {
    method: "POST",
    headers: { authorization: `Bearer ${token}` },
    body: form
  })
  expect(res.status).toBe(201)
  return (await res.json()) as { id: string }
}

const get = async (id: string, query: string, headers: Record<string, string> = {}) => {
  const res = await fetch(`${server.baseUrl}${base()}/files/${id}${query}`, { headers: { authorization: `Bearer ${token}`, ...headers } })
  const bytes = Buffer.from(await res.arrayBuffer())
  return { status: res.status, headers: res.headers, bytes, body: () => JSON.parse(bytes.toString()) }
}

/** A 100 × 50 image made by sharp (PNG unless said otherwise). */
const image = (format: "png" | "jpeg" | "webp" | "gif" = "png") =>
  sharp({ create: { width: 100, height: 50, channels: 3, background: { r: 200, g: 30, b: 30 } } })
    .toFormat(format)
    .toBuffer()

/** How many variants are stored, and how many blobs (originals and variants) the store holds. */
const stored = async () => {
  if (onPg) {
    const sql = database(server)
    try {
      const [v] = await sql`SELECT count(*)::int AS n FROM storage_variants`
      const [b] = await sql`SELECT count(DISTINCT blob_key)::int AS n FROM storage_chunks`
      return { variants: v!.n as number, blobs: b!.n as number }
    } finally {
      await sql.end()
    }
  }
  const blobs = Fs.readdirSync(Path.join(dataDir, "storage", "blobs")).length
  return { variants: undefined, blobs }
}

describe("image variants", () => {
  it("resizes to the asked size and fit, keeps the format, and serves the stored variant with its ETag", async () => {
    const file = await upload(await image(), "red.png", "image/png")
    const cover = await get(file.id, "?width=32&height=32")
    expect(cover.status).toBe(200)
    expect(cover.headers.get("content-type")).toBe("image/png")
    expect(await sharp(cover.bytes).metadata()).toMatchObject({ width: 32, height: 32, format: "png" })
    const inside = await get(file.id, "?width=32&height=32&fit=inside")
    expect(await sharp(inside.bytes).metadata()).toMatchObject({ width: 32, height: 16 })
    const wide = await get(file.id, "?width=64")
    expect(await sharp(wide.bytes).metadata()).toMatchObject({ width: 64, height: 32 })
    const high = await get(file.id, "?height=16")
    expect(await sharp(high.bytes).metadata()).toMatchObject({ width: 32, height: 16 })
    // the second ask answers the same stored bytes; its ETag is the variant's, and If-None-Match gives 304
    const again = await get(file.id, "?width=32&height=32")
    expect(again.bytes.equals(cover.bytes)).toBe(true)
    const etag = cover.headers.get("etag")!
    expect(etag).toBe(`"${(await import("node:crypto")).createHash("sha256").update(cover.bytes).digest("hex")}"`)
    expect(etag).not.toBe((await get(file.id, "")).headers.get("etag"))
    expect((await get(file.id, "?width=32&height=32", { "if-none-match": etag })).status).toBe(304)
    expect(Number(cover.headers.get("content-length"))).toBe(cover.bytes.length)
    // @troupe/client-fetch asks for the same variant
    const viaClient = await downloadFile({
      baseUrl: server.baseUrl,
      workspace: server.workspace,
      token,
      id: file.id,
      width: 32,
      height: 32
    })
    expect(Buffer.from(await viaClient.arrayBuffer()).equals(cover.bytes)).toBe(true)
    // a signed URL takes the same parameters
    const signed = await server.request("POST", `${base()}/files/${file.id}/signed-url`, { token, body: {} })
    const viaUrl = Buffer.from(await (await fetch(`${signed.body.url}&width=32&height=32`)).arrayBuffer())
    expect(viaUrl.equals(cover.bytes)).toBe(true)
    // other formats keep theirs
    for (const [format, type] of [
      ["jpeg", "image/jpeg"],
      ["webp", "image/webp"],
      ["gif", "image/gif"]
    ] as const) {
      const f = await upload(await image(format), `red.${format}`, type)
      const v = await get(f.id, "?width=16&height=16&fit=fill")
      expect(v.status, format).toBe(200)
      expect(v.headers.get("content-type")).toBe(type)
      expect(await sharp(v.bytes).metadata(), format).toMatchObject({ width: 16, height: 16, format })
    }
  })

  it("troupe files download --width --height --fit writes the variant", async () => {
    const file = await upload(await image(), "cli.png", "image/png")
    const work = Fs.mkdtempSync(Path.join(Os.tmpdir(), "troupe-images-cli-"))
    const bin = Path.resolve(import.meta.dirname, "../packages/cli/bin/troupe.mjs")
    const env = {
      ...process.env,
      TROUPE_CONFIG: Path.join(work, "config.json"),
      TROUPE_URL: server.baseUrl,
      TROUPE_WORKSPACE: server.workspace,
      TROUPE_TOKEN: token
    }
    try {
      const target = Path.join(work, "thumb.png")
      const args = ["files", "download", file.id, "-o", target, "--width", "16", "--height", "16", "--fit", "contain"]
      const code = await new Promise<number>((resolve) =>
        execFile(process.execPath, [bin, ...args], { env, cwd: work }, (error) => resolve(error === null ? 0 : 1))
      )
      expect(code).toBe(0)
      expect(await sharp(Fs.readFileSync(target)).metadata()).toMatchObject({ width: 16, height: 16, format: "png" })
    } finally {
      Fs.rmSync(work, { recursive: true, force: true })
    }
  })

  it("refuses sizes outside the list, unknown fits and non-images with the contract's 400", async () => {
    const file = await upload(await image(), "bad.png", "image/png")
    const text = await upload(Buffer.from("hello"), "note.txt", "text/plain")
    const cases: Array<[string, string, string]> = [
      [file.id, "?width=33", "width"],
      [file.id, "?width=32&height=100", "height"],
      [file.id, "?width=abc", "width"],
      [file.id, "?width=-16", "width"],
      [file.id, "?width=32&height=32&fit=stretch", "fit"],
      [file.id, "?fit=cover", "fit"],
      [text.id, "?width=32", "width"],
      [text.id, "?height=32", "height"]
    ]
    for (const [id, query, field] of cases) {
      const res = await get(id, query)
      const body = res.body()
      expectError({ status: res.status, body, text: res.bytes.toString() } as any, 400, "VALIDATION_ERROR")
      expect(body.details[0].field, query).toBe(field)
    }
  })

  it("an image past the pixel bound is refused a variant with a 400 saying why, and still downloads whole", async () => {
    // a real PNG whose header claims 10000 × 10000 pixels (its CRC fixed): refused before anything is decoded
    const png = Buffer.from(await image())
    png.writeUInt32BE(10_000, 16)
    png.writeUInt32BE(10_000, 20)
    png.writeUInt32BE(Zlib.crc32(png.subarray(12, 29)), 29)
    const file = await upload(png, "huge.png", "image/png")
    const res = await get(file.id, "?width=32")
    const body = res.body()
    expectError({ status: res.status, body, text: res.bytes.toString() } as any, 400, "VALIDATION_ERROR")
    expect(body.details[0].field).toBe("width")
    expect(body.details[0].message).toMatch(/megapixels/)
    const whole = await get(file.id, "")
    expect(whole.status).toBe(200)
    expect(whole.bytes.equals(png)).toBe(true)
  })

  it("concurrent asks for one new variant all get the same bytes, and one variant is stored", async () => {
    const file = await upload(await image(), "race.png", "image/png")
    const before = await stored()
    const answers = await Promise.all(Array.from({ length: 6 }, () => get(file.id, "?width=64&height=64&fit=contain")))
    for (const a of answers) {
      expect(a.status).toBe(200)
      expect(a.bytes.equals(answers[0]!.bytes)).toBe(true)
    }
    expect(await sharp(answers[0]!.bytes).metadata()).toMatchObject({ width: 64, height: 64 })
    const after = await stored()
    expect(after.blobs).toBe(before.blobs + 1)
    if (after.variants !== undefined) expect(after.variants).toBe(before.variants! + 1)
  })

  it("the file's delete removes its variants", async () => {
    const file = await upload(await image(), "gone.png", "image/png")
    const before = await stored()
    expect((await get(file.id, "?width=16")).status).toBe(200)
    expect((await get(file.id, "?width=32")).status).toBe(200)
    expect((await stored()).blobs).toBe(before.blobs + 2)
    const res = await server.request("DELETE", `${base()}/files/${file.id}`, { token })
    expect(res.status).toBe(200)
    const after = await stored()
    expect(after.blobs).toBe(before.blobs - 1)
    if (after.variants !== undefined) expect(after.variants).toBe(before.variants!)
    expect((await get(file.id, "?width=16")).status).toBe(404)
  })
})
