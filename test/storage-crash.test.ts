// A node SIGKILLed while a 100 MB upload streams into it (the embedded node: PGlite and the disk store under
// TROUPE_DATA_DIR). After a restart on the same directory there is no row, no usage and no byte of it: the bytes were
// only ever in storage/tmp (emptied at start), and the metadata row is written only once the whole file is stored.
// PGlite only (on PostgreSQL the chunks of an upload that never committed are swept after an hour, docs/storage.md).
import * as Fs from "node:fs"
import * as Http from "node:http"
import * as Os from "node:os"
import * as Path from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { passwordToken } from "./support/IdentityHelpers.ts"
import { startNode, type TestNode } from "./support/TestServer.ts"
import { eventually } from "./support/wait.ts"

describe.runIf(!process.env.DATABASE_URL)("an embedded node killed mid-upload", () => {
  const dir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "troupe-storage-crash-"))
  const env = { DATABASE_URL: "", TROUPE_DATA_DIR: dir, TROUPE_ADMIN_PASSWORD: "crash-test-password" }
  let node: TestNode | undefined

  afterAll(async () => {
    await node?.stop("SIGKILL")
    Fs.rmSync(dir, { recursive: true, force: true })
  })

  it("leaves no row and no bytes after a restart", { timeout: 300_000 }, async () => {
    node = await startNode(env)
    const token = await passwordToken(node, "admin", env.TROUPE_ADMIN_PASSWORD)
    const base = "/storage/workspace/default/api/v1"
    const boundary = "crash"
    const head = Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="big.bin"\r\n\r\n`)
    const tail = Buffer.from(`\r\n--${boundary}--\r\n`)
    const total = 100 * 1024 * 1024
    const chunk = Buffer.alloc(1024 * 1024, 7)
    const req = Http.request(`${node.baseUrl}${base}/upload`, {
      method: "POST",
      headers: {
        authorization: `Bearer ${token}`,
        "content-type": `multipart/form-data; boundary=${boundary}`,
        "content-length": head.length + total + tail.length
      }
    })
    req.on("error", () => {})
    req.write(head)
    // 30 MB in, then the node dies with the rest still to come
    for (let i = 0; i < 30; i++) if (!req.write(chunk)) await new Promise((r) => req.once("drain", r))
    const tmp = Path.join(dir, "storage", "tmp")
    await eventually(
      async () => (Fs.readdirSync(tmp).some((f) => Fs.statSync(Path.join(tmp, f)).size > 10 * 1024 * 1024) ? true : undefined),
      60_000
    )
    await node.stop("SIGKILL")
    req.destroy()

    node = await startNode(env)
    const again = await passwordToken(node, "admin", env.TROUPE_ADMIN_PASSWORD)
    const usage = await node.request("GET", `${base}/usage`, { token: again })
    expect(usage.body).toMatchObject({ files: 0, bytes: 0 })
    expect((await node.request("GET", `${base}/files`, { token: again })).body.total).toBe(0)
    expect(Fs.readdirSync(tmp)).toEqual([])
    expect(Fs.readdirSync(Path.join(dir, "storage", "blobs"))).toEqual([])
  })
})
