// Identity across nodes. With PostgreSQL (DATABASE_URL) two nodes share the database: a rotate, revoke, delete or
// member removal answered by one node holds at once on the other, tokens signed by one verify on the other, and
// rate limits are counted cluster-wide. With embedded PGlite (one process) the same assertions run on the one node.
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { createAccount, createUser, clientCredentialsToken, tokenRequest } from "./support/IdentityHelpers.ts"
import { startServer, type TestNode, type TestServer } from "./support/TestServer.ts"
import { sleep } from "./support/wait.ts"

const postgres = (process.env.DATABASE_URL ?? "") !== ""
const windowSeconds = 8
let server: TestServer
let nodes: Array<TestNode> = []
let admin: string

beforeAll(async () => {
  server = await startServer({
    clustered: postgres,
    // one issuer for the whole cluster (the default, http://localhost:$PORT, differs per node)
    env: { TROUPE_LIMIT_READS: "6", TROUPE_LIMIT_WINDOW_SECONDS: String(windowSeconds), TROUPE_PUBLIC_URL: "http://troupe.test" }
  })
  nodes = [server]
  if (postgres) nodes.push(await server.startPeer())
  admin = await server.adminToken()
})

afterAll(async () => {
  await server?.close()
})

const me = (node: TestNode, token: string) => node.request("GET", "/workspace/default/api/v1/me", { token })

/** Leaves at least `needed` ms of the current limit window, else waits for the next one. */
const roomInWindow = async (needed: number) => {
  const ms = windowSeconds * 1000
  const left = ms - (Date.now() % ms)
  if (left < needed) await sleep(left + 50)
}

describe("identity across nodes", () => {
  it("tokens signed by one node verify on every node", async () => {
    await roomInWindow(5000)
    const account = await createAccount(server, admin, { role: "viewer" })
    for (const node of nodes) {
      expect((await me(node, admin)).status).toBe(200)
      expect((await me(node, account.token)).status).toBe(200)
    }
    const fromLast = await clientCredentialsToken(nodes[nodes.length - 1]!, account.clientId, account.clientSecret)
    expect((await me(server, fromLast)).status).toBe(200)
  })

  it("rotate, revoke, delete and member removal on one node are refused at once on the others", async () => {
    await roomInWindow(7000)
    const first = nodes[0]!
    const last = nodes[nodes.length - 1]!
    const rotated = await createAccount(server, admin, { role: "viewer" })
    const revoked = await createAccount(server, admin, { role: "viewer" })
    const deleted = await createAccount(server, admin, { role: "viewer" })
    const user = await createUser(server, admin, "viewer")
    const lastAdmin = await tokenRequest(last, { grant_type: "password", username: "admin", password: server.adminPassword })
    const adminOnLast = lastAdmin.body.access_token as string
    // a change on the first node is answered, then the other node is asked at once
    expect((await first.request("POST", `${server.base}/service-accounts/${rotated.id}/rotate`, { token: admin })).status).toBe(200)
    expect((await me(last, rotated.token)).status).toBe(401)
    // and the other way round
    await roomInWindow(5000)
    expect((await last.request("POST", `${server.base}/service-accounts/${revoked.id}/revoke`, { token: adminOnLast })).status).toBe(200)
    expect((await me(first, revoked.token)).status).toBe(401)
    expect((await last.request("DELETE", `${server.base}/service-accounts/${deleted.id}`, { token: adminOnLast })).status).toBe(204)
    expect((await me(first, deleted.token)).status).toBe(401)
    await roomInWindow(5000)
    expect((await first.request("DELETE", `${server.base}/members/${user.userId}`, { token: admin })).status).toBe(204)
    for (const node of nodes) expect((await me(node, user.token)).status).toBe(401)
    // the old secret is refused by every node's token endpoint
    for (const node of nodes) {
      const res = await tokenRequest(node, {
        grant_type: "client_credentials",
        client_id: rotated.clientId,
        client_secret: rotated.clientSecret
      })
      expect(res.status).toBe(401)
    }
  })

  it("rate limits are counted for the whole cluster", async () => {
    const ms = windowSeconds * 1000
    await sleep(ms - (Date.now() % ms) + 50)
    for (let i = 0; i < 6; i++) expect((await me(nodes[0]!, admin)).status).toBe(200)
    // nodes reconcile their counts through the database about once a second
    await sleep(2500)
    for (const node of nodes) {
      const res = await me(node, admin)
      expect(res.status).toBe(429)
      expect(res.headers.has("retry-after")).toBe(true)
    }
  })
})
