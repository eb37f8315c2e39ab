// The raw baseline of the storage bench (scripts/bench/storage.ts), a process of its own so that it does not share
// an event loop with the load generator: node:http serving one stored file's bytes from the store the node used,
// with a plain stream: `fs.createReadStream` of the disk store's file, or the PostgreSQL store's chunk rows, four
// per query as the node reads them. No auth, no metadata lookup. `POST /upload` stores a request's body as it
// streams, the simplest way in the same store: piped into a new file beside the disk store's, or cut into 256 KiB
// chunk rows INSERTed one by one (no multipart parsing, no checksum, no metadata row). Prints `port <n>` once
// listening.
// Usage: raw-storage.ts disk <file path> <size> | raw-storage.ts pg <database url> <blob key> <size>
import * as Crypto from "node:crypto"
import * as Fs from "node:fs"
import * as Http from "node:http"
import type { AddressInfo } from "node:net"
import postgres from "postgres"

const CHUNK = 256 * 1024
const [kind, where, ...rest] = process.argv.slice(2)
const size = Number(rest.at(-1))
const sql = kind === "pg" ? postgres(where!, { max: 16 }) : undefined
const key = rest[0]!

/** Stores one upload's body in the same store: a new file, or chunk rows under a new key. */
const upload = async (req: Http.IncomingMessage) => {
  const id = Crypto.randomUUID()
  if (sql === undefined) {
    const out = Fs.createWriteStream(`${where}.raw-${id}`)
    await new Promise<void>((resolve, reject) => {
      req.pipe(out)
      out.on("finish", resolve)
      out.on("error", reject)
    })
    return id
  }
  let pending: Array<Buffer> = []
  let size = 0
  let seq = 0
  const flush = async () => {
    const data = Buffer.concat(pending)
    pending = []
    size = 0
    await sql`INSERT INTO storage_chunks (blob_key, seq, data) VALUES (${`raw-${id}`}, ${seq++}, ${data})`
  }
  for await (const chunk of req as AsyncIterable<Buffer>) {
    pending.push(chunk)
    size += chunk.length
    if (size >= CHUNK) await flush()
  }
  if (size > 0) await flush()
  return id
}

const server = Http.createServer((req, res) => {
  if (req.method === "POST") {
    upload(req).then(
      (id) => {
        res.writeHead(201, { "content-type": "application/json" })
        res.end(JSON.stringify({ id }))
      },
      () => res.destroy()
    )
    return
  }
  res.writeHead(200, { "content-type": "application/octet-stream", "content-length": size })
  if (sql === undefined) {
    Fs.createReadStream(where!, { highWaterMark: CHUNK }).pipe(res)
    return
  }
  const last = Math.ceil(size / CHUNK) - 1
  const next = async (seq: number): Promise<void> => {
    const rows = await sql`SELECT data FROM storage_chunks WHERE blob_key = ${key} AND seq >= ${seq} AND seq <= ${seq + 3} ORDER BY seq`
    for (const row of rows) if (!res.write(row.data)) await new Promise((r) => res.once("drain", r))
    if (seq + 4 <= last) return next(seq + 4)
    res.end()
  }
  next(0).catch(() => res.destroy())
})
server.listen(0, "127.0.0.1", () => process.stdout.write(`port ${(server.address() as AddressInfo).port}\n`))
process.on("SIGTERM", () => {
  server.close()
  void sql?.end()
  process.exit(0)
})
