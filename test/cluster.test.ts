// Two real nodes on one PostgreSQL form one cluster: entity messages sent through node A are handled by the node
// that owns the entity's shard, which for some ids is node B. Needs PostgreSQL (PGlite is one process), so it runs
// in the PostgreSQL pass of `.ci/run` (DATABASE_URL set).
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { startServer, type TestNode, type TestServer } from "./support/TestServer.ts"

describe.runIf(process.env.DATABASE_URL)("cluster across two processes", () => {
  let a: TestServer
  let b: TestNode
  beforeAll(async () => {
    a = await startServer()
    b = await a.startPeer()
  })
  afterAll(async () => {
    await a?.close()
  })

  it("routes entity messages to the node that owns them", async () => {
    const nodeA = (await a.request("GET", "/cluster/probe/x")).body.servedBy as string
    const nodeB = (await b.request("GET", "/cluster/probe/x")).body.servedBy as string
    expect(nodeA).not.toBe(nodeB)
    const seen = new Set<string>()
    const deadline = Date.now() + 60_000
    while (Date.now() < deadline && !(seen.has(nodeA) && seen.has(nodeB))) {
      for (let i = 0; i < 40; i++) {
        const res = await a.request("GET", `/cluster/probe/entity-${i}`)
        expect(res.status).toBe(200)
        expect(res.body.servedBy).toBe(nodeA)
        seen.add(res.body.node)
      }
      await new Promise((r) => setTimeout(r, 500))
    }
    expect(seen).toContain(nodeA)
    expect(seen).toContain(nodeB)
  })

  it("the same entity id answers from the same node through either node", async () => {
    const viaA = await a.request("GET", "/cluster/probe/shared-entity")
    const viaB = await b.request("GET", "/cluster/probe/shared-entity")
    expect(viaA.body.node).toBe(viaB.body.node)
  })
})
