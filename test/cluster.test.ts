// Two real nodes on one PostgreSQL form one cluster: entity messages sent through node A are handled by the node
// that owns the entity's shard, which for some ids is node B. Needs PostgreSQL (PGlite is one process), so it runs
// in the PostgreSQL pass of `.ci/run` (DATABASE_URL set). The probe entity is reached through the platform
// administrators' diagnostic route, which answers with runner addresses.
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { startServer, type TestNode, type TestServer } from "./support/TestServer.ts"
import { sleep } from "./support/wait.ts"

describe.runIf(process.env.DATABASE_URL)("cluster across two processes", () => {
  let a: TestServer
  let b: TestNode
  let token: string
  const probe = (node: TestNode, id: string) => node.request("GET", `/workspace/api/v1/cluster/probe/${id}`, { token })
  beforeAll(async () => {
    // one issuer for both nodes, so the administrator's token is valid on each
    a = await startServer({ env: { TROUPE_PUBLIC_URL: "http://troupe.test" } })
    b = await a.startPeer()
    token = await a.adminToken()
  })
  afterAll(async () => {
    await a?.close()
  })

  it("routes entity messages to the node that owns them", async () => {
    const nodeA = (await probe(a, "x")).body.servedBy as string
    const nodeB = (await probe(b, "x")).body.servedBy as string
    expect(nodeA).toMatch(/^127\.0\.0\.1:\d+$/)
    expect(nodeB).toMatch(/^127\.0\.0\.1:\d+$/)
    expect(nodeA).not.toBe(nodeB)
    const seen = new Set<string>()
    const deadline = Date.now() + 60_000
    while (Date.now() < deadline && !(seen.has(nodeA) && seen.has(nodeB))) {
      for (let i = 0; i < 40; i++) {
        const res = await probe(a, `entity-${i}`)
        expect(res.status).toBe(200)
        expect(res.body.servedBy).toBe(nodeA)
        seen.add(res.body.node)
      }
      await sleep(500)
    }
    expect(seen).toContain(nodeA)
    expect(seen).toContain(nodeB)
  })

  it("the same entity id answers from the same node through either node", async () => {
    const viaA = await probe(a, "shared-entity")
    const viaB = await probe(b, "shared-entity")
    expect(viaA.status).toBe(200)
    expect(viaA.body.node).toBe(viaB.body.node)
  })

  it("is refused without a platform administrator's token on every node, and /ready tells nothing", async () => {
    for (const node of [a, b]) {
      expect((await node.request("GET", "/workspace/api/v1/cluster/probe/x")).status).toBe(401)
      expect((await node.request("GET", "/cluster/probe/x")).status).toBe(404)
      expect((await node.request("GET", "/ready")).body).toEqual({ status: "ready" })
    }
  })
})
