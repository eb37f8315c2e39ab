// Scheduled triggers across two real nodes on one PostgreSQL: a 1 s interval trigger produces at most one run per
// tick — never a duplicate — while the scheduler singleton lives on either node, and its ticks resume on the
// survivor after the scheduler's node is SIGKILLed. The function's side effect (a record per run) happens exactly
// once per run. PostgreSQL only: PGlite is one process.
import { afterAll, describe, expect, it } from "vitest"
import { computeClient, fn } from "./support/compute.ts"
import { startServer, type TestNode, type TestServer } from "./support/TestServer.ts"
import { sleep } from "./support/wait.ts"

describe.runIf(process.env.DATABASE_URL)("scheduled triggers across two nodes", () => {
  let a: TestServer
  afterAll(async () => {
    await a?.close()
  })

  it("one run per tick, no duplicates, across a SIGKILL of the scheduler's node", async () => {
    const env = { TROUPE_PUBLIC_URL: "http://troupe.test", TROUPE_LOG_LEVEL: "info" }
    a = await startServer({ env })
    const b = await a.startPeer(env)
    const token = await a.adminToken()
    const c = computeClient(a, token)
    const made = await a.request("POST", `${a.base}/structures`, {
      token,
      body: { name: "ticks", recordSlug: "ticks", properties: [{ name: "at", type: "string" }] }
    })
    expect(made.status).toBeLessThan(300)
    const writer = await c.createFunction(
      "tick-writer",
      fn("await api.createRecord('ticks', { at: executionParams.scheduledFor }); return 1")
    )
    const trigger = await c.createTrigger({
      name: "every-second",
      functionId: writer.id,
      executionType: "scheduled",
      triggerMetadata: { interval: 1 }
    })

    const runsOf = async (node: Pick<TestNode, "request">) => {
      const res = await node.request("GET", `${a.base}/function-runs?triggerId=${trigger.id}&limit=1000`, { token })
      expect(res.status).toBe(200)
      return res.body.data as Array<any>
    }
    await sleep(6000)
    const scheduler = [a as TestNode, b].find((n) => n.output().includes("scheduler: running on this node"))
    expect(scheduler).toBeDefined()
    const survivor = scheduler === b ? a : b
    const before = (await runsOf(survivor)).length
    expect(before).toBeGreaterThanOrEqual(3)

    const killedAt = Date.now()
    await scheduler!.stop("SIGKILL")
    // ticks resume on the survivor
    const deadline = Date.now() + 45_000
    let resumed: Array<any> = []
    while (Date.now() < deadline) {
      resumed = (await runsOf(survivor)).filter((r) => Date.parse(r.scheduledFor) > killedAt + 1000)
      if (resumed.length >= 3) break
      await sleep(250)
    }
    expect(resumed.length).toBeGreaterThanOrEqual(3)
    expect(survivor.output()).toContain("scheduler: running on this node")

    // settle: every run reaches a final state (runs on the killed node fail as lost)
    await sleep(3000)
    const runs = await runsOf(survivor)
    const ticks = runs.map((r) => r.scheduledFor as string)
    expect(new Set(ticks).size).toBe(ticks.length)
    // every tick lies on the trigger's 1 s grid
    const offsets = new Set(ticks.map((t) => Date.parse(t) % 1000))
    expect(offsets.size).toBe(1)
    expect(runs.every((r) => r.executionSource === "scheduled")).toBe(true)
    // each completed run wrote its record exactly once
    const completed = runs.filter((r) => r.status === "completed").map((r) => r.scheduledFor)
    const records = await survivor.request("GET", `${a.base}/records?structureId=ticks&limit=100&includeCount=true`, { token })
    const written = (records.body.results as Array<any>).map((r) => r.data.at)
    expect(new Set(written).size).toBe(written.length)
    for (const at of completed) expect(written).toContain(at)
  }, 120_000)
})
