import { afterAll, beforeAll, describe, expect, it } from "vitest"
import * as Crypto from "node:crypto"
import * as Fs from "node:fs"
import * as Http from "node:http"
import type { AddressInfo } from "node:net"
import * as Os from "node:os"
import * as Path from "node:path"
import { Readable } from "node:stream"
import { CHUNK_BYTES, FileRange } from "./FileRange.ts"

const dir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "troupe-file-range-"))
const file = Path.join(dir, "blob")
const bytes = Crypto.randomBytes(3 * CHUNK_BYTES + 12345)
Fs.writeFileSync(file, bytes)

/** The range of the last request sent through `sendTo`, and the response of each request once closed. */
let serve: (res: Http.ServerResponse) => void = () => {}
let closed: Array<Http.ServerResponse> = []
const server = Http.createServer((_req, res) => {
  res.on("close", () => closed.push(res))
  serve(res)
})
let base = ""

beforeAll(async () => {
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`
})
afterAll(() => {
  server.close()
  Fs.rmSync(dir, { recursive: true, force: true })
})

const fetchAll = (url: string) =>
  new Promise<Buffer>((resolve, reject) => {
    Http.get(url, (res) => {
      const chunks: Array<Buffer> = []
      res.on("data", (d: Buffer) => chunks.push(d))
      res.on("end", () => resolve(Buffer.concat(chunks)))
      res.on("error", reject)
    }).on("error", reject)
  })

const openFds = () => Fs.readdirSync("/proc/self/fd").length

const until = async (check: () => boolean) => {
  for (let i = 0; i < 200 && !check(); i++) await new Promise((r) => setTimeout(r, 10))
  return check()
}

describe("FileRange", () => {
  it("sends a range spanning several reads into a response, byte for byte, and reads the same bytes as a stream", async () => {
    for (const [start, end] of [
      [0, bytes.length - 1],
      [100, 2 * CHUNK_BYTES + 7],
      [CHUNK_BYTES, CHUNK_BYTES],
      [bytes.length - 10, bytes.length - 1]
    ] as const) {
      serve = (res) => {
        res.writeHead(200, { "content-length": String(end - start + 1) })
        new FileRange(file, start, end).sendTo(res)
      }
      expect((await fetchAll(base)).equals(bytes.subarray(start, end + 1))).toBe(true)
      const streamed = Buffer.concat(await new FileRange(file, start, end).toArray())
      expect(streamed.equals(bytes.subarray(start, end + 1))).toBe(true)
    }
  })

  it("stops reading and closes the file when the client goes away mid-answer", async () => {
    const before = openFds()
    closed = []
    serve = (res) => {
      res.writeHead(200, { "content-length": String(bytes.length) })
      new FileRange(file, 0, bytes.length - 1).sendTo(res)
    }
    await new Promise<void>((resolve, reject) => {
      const req = Http.get(base, { agent: false }, (res) => {
        res.once("data", () => {
          req.destroy()
          resolve()
        })
      })
      req.on("error", (e) => (req.destroyed ? undefined : reject(e)))
    })
    expect(await until(() => closed.length === 1)).toBe(true)
    expect(closed[0]!.writableFinished).toBe(false)
    expect(await until(() => openFds() <= before)).toBe(true)
  })

  it("cuts the connection when the file cannot be read, and fails a stream", async () => {
    const missing = Path.join(dir, "missing")
    serve = (res) => {
      res.writeHead(200, { "content-length": "10" })
      new FileRange(missing, 0, 9).sendTo(res)
    }
    await expect(fetchAll(base)).rejects.toThrow()
    await expect(Readable.from(new FileRange(missing, 0, 9)).toArray()).rejects.toThrow(/ENOENT/)
  })
})
