// First boot (README: Identity and access › First boot): without TROUPE_ADMIN_PASSWORD a password is generated and printed once; the
// workspace is TROUPE_WORKSPACE; a restart on the same database creates nothing and prints nothing.
import { afterAll, describe, expect, it } from "@effect/vitest"
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
    expect(match, node.output()).not.toBeNull()
    const password = match![1]!
    expect(password.length).toBeGreaterThanOrEqual(20)
    // printed exactly once, on stdout, and nowhere in the JSON log
    expect(node.output().split(password).length - 1).toBe(1)
    const res = await tokenRequest(node, { grant_type: "password", username: "admin", password })
    expect(res.status, res.text).toBe(200)
    expect(claims(res.body.access_token).workspace).toBe("acme-corp")
    const me = await node.request("GET", "/workspace/acme-corp/api/v1/me", { token: res.body.access_token })
    expect(me.body.role).toBe("owner")
    expect(me.body.isPlatformAdmin).toBe(true)
    const list = await node.request("GET", "/workspace/api/v1/workspaces", { token: res.body.access_token })
    expect(list.body.data.map((w: any) => w.slug)).toStrictEqual(["acme-corp"])

    await node.stop()
    node = await startNode(env)
    expect(node.output()).not.toMatch(printed)
    const again = await tokenRequest(node, { grant_type: "password", username: "admin", password })
    expect(again.status).toBe(200)
    // the signing key survived the restart: the earlier token still verifies
    expect((await node.request("GET", "/workspace/acme-corp/api/v1/me", { token: res.body.access_token })).status).toBe(200)
  })
})
