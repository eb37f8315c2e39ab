// Two nodes given only the same DATABASE_URL (no TROUPE_PUBLIC_URL) form one deployment: the issuer and audience
// default to the value the first node kept in the database, so each node accepts the other's tokens.
// PostgreSQL only: PGlite is one process.
import { afterAll, describe, expect, it } from "vitest"
import { startServer, type TestServer } from "./support/TestServer.ts"

describe.runIf(process.env.DATABASE_URL)("a cluster without a configured public URL", () => {
  let a: TestServer
  afterAll(async () => {
    await a?.close()
  })

  it("serves tokens issued by either node, under one issuer", async () => {
    a = await startServer()
    const b = await a.startPeer()
    const token = await a.adminToken()
    const viaB = await b.request("GET", `${a.base}/me`, { token })
    expect(viaB.status).toBe(200)
    const discoveryA = (await a.request("GET", "/.well-known/openid-configuration")).body
    const discoveryB = (await b.request("GET", "/.well-known/openid-configuration")).body
    expect(discoveryB.issuer).toBe(discoveryA.issuer)
    expect(discoveryA.issuer).toBe(`http://localhost:${a.port}`)
  })
})
