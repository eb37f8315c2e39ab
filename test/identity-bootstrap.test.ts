// First boot (CONTRACT.md §1): without TROUPE_ADMIN_PASSWORD a password is generated and printed once; the
// workspace is TROUPE_WORKSPACE; a restart on the same database creates nothing and prints nothing.
import { afterAll, assert, describe, it } from "@effect/vitest"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { claims, tokenRequest } from "./support/IdentityHelpers.ts"
import { freshDatabase, startNode, type TestNode } from "./support/TestServer.ts"

const cleanups: Array<() => Promise<void>> = []

afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup()
})

const printed = /generated admin password \(shown once; set TROUPE_ADMIN_PASSWORD to choose it\): (\S+)/

describe("bootstrap", () => {
  it("generates, prints once and keeps the admin password across restarts", async () => {
    // a fixed public URL: the default names the port, which changes with the restart (and with it the issuer)
    const env: Record<string, string> = {
      TROUPE_ADMIN_PASSWORD: "",
      TROUPE_WORKSPACE: "acme-corp",
      TROUPE_PUBLIC_URL: "http://troupe.test"
    }
    if (process.env.DATABASE_URL) {
      const db = await freshDatabase(process.env.DATABASE_URL)
      cleanups.push(db.drop)
      env.DATABASE_URL = db.url
    } else {
      const dir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "troupe-bootstrap-"))
      cleanups.push(async () => Fs.rmSync(dir, { recursive: true, force: true }))
      env.DATABASE_URL = ""
      env.TROUPE_DATA_DIR = dir
    }
    let node: TestNode = await startNode(env)
    cleanups.push(() => node.stop().then(() => {}))
    const match = printed.exec(node.output())
    assert.isNotNull(match, node.output())
    const password = match![1]!
    assert.isAtLeast(password.length, 20)
    // printed exactly once, on stdout, and nowhere in the JSON log
    assert.strictEqual(node.output().split(password).length - 1, 1)
    const res = await tokenRequest(node, { grant_type: "password", username: "admin", password })
    assert.strictEqual(res.status, 200, res.text)
    assert.strictEqual(claims(res.body.access_token).workspace, "acme-corp")
    const me = await node.request("GET", "/workspace/acme-corp/api/v1/me", { token: res.body.access_token })
    assert.strictEqual(me.body.role, "owner")
    assert.isTrue(me.body.isPlatformAdmin)
    const list = await node.request("GET", "/workspace/api/v1/workspaces", { token: res.body.access_token })
    assert.deepStrictEqual(list.body.data.map((w: any) => w.slug), ["acme-corp"])

    await node.stop()
    node = await startNode(env)
    assert.notMatch(node.output(), printed)
    const again = await tokenRequest(node, { grant_type: "password", username: "admin", password })
    assert.strictEqual(again.status, 200)
    // the signing key survived the restart: the earlier token still verifies
    assert.strictEqual((await node.request("GET", "/workspace/acme-corp/api/v1/me", { token: res.body.access_token })).status, 200)
  })
})
