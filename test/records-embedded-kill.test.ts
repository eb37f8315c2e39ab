// Durability of the embedded default (PGlite in its worker thread, group commit on): a node SIGKILLed in the middle
// of a write load loses no acknowledged write. Runs on PGlite whatever DATABASE_URL says (on PostgreSQL the same
// claim is records-cluster.test.ts's).
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { passwordToken } from "./support/IdentityHelpers.ts"
import { startNode, type TestNode } from "./support/TestServer.ts"
import { sleep } from "./support/wait.ts"

describe("a PGlite node SIGKILLed during a write load", () => {
  const dir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "troupe-kill-"))
  const password = "kill-pw-1234567"
  const env = { DATABASE_URL: "", TROUPE_DATA_DIR: dir, TROUPE_ADMIN_PASSWORD: password, TROUPE_LIMIT_WRITES: "0", TROUPE_LIMIT_READS: "0" }
  const base = "/workspace/default/api/v1"
  let node: TestNode | undefined

  afterAll(async () => {
    await node?.stop("SIGKILL")
    Fs.rmSync(dir, { recursive: true, force: true })
  })

  const tokenOf = (n: TestNode) => passwordToken(n, "admin", password)

  it("loses no acknowledged create or patch, and serves every one after a restart", async () => {
    node = await startNode(env)
    const token = await tokenOf(node)
    const structure = await node.request("POST", `${base}/structures`, {
      token,
      body: {
        name: "Ledger",
        recordSlug: "ledger",
        properties: [
          { name: "key", type: "string", isUnique: true },
          { name: "n", type: "number" }
        ]
      }
    })
    expect(structure.status).toBeLessThan(300)

    const created = new Map<string, string>()
    const patched = new Set<string>()
    let stop = false
    const loop = async (worker: number) => {
      for (let k = 0; !stop; k++) {
        const key = `w${worker}-${k}`
        const res = await node!
          .request("POST", `${base}/records`, { token, body: { structureId: structure.body.id, data: { key, n: 0 } } })
          .catch(() => undefined)
        if (res?.status !== 201) return
        created.set(res.body.id, key)
        const patch = await node!
          .request("PATCH", `${base}/records/${res.body.id}`, { token, body: { data: { n: 1 } } })
          .catch(() => undefined)
        if (patch?.status !== 200) return
        patched.add(res.body.id)
      }
    }
    const loops = Array.from({ length: 24 }, (_, i) => loop(i))
    const deadline = Date.now() + 20_000
    while (patched.size < 300 && Date.now() < deadline) await sleep(20)
    await node.stop("SIGKILL")
    stop = true
    await Promise.all(loops)
    expect(patched.size).toBeGreaterThan(0)

    node = await startNode(env)
    const after = await tokenOf(node)
    for (const [id, key] of created) {
      const res = await node.request("GET", `${base}/records/${id}`, { token: after })
      expect(res.status, `acknowledged create ${id}`).toBe(200)
      expect(res.body.data.key).toBe(key)
      if (patched.has(id)) expect(res.body).toMatchObject({ version: 2, data: { n: 1 } })
    }
  }, 120_000)
})
