// Function runs across real nodes on one PostgreSQL: a run queued through one node is followed to its result through
// the other, runs queued through both nodes at once each execute exactly once with their own result, and a node
// SIGKILLed while its runs spin leaves them `failed` ("node lost", once their lease expires), never `running`,
// while the survivors keep their own runs. PostgreSQL only: PGlite is one process.
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { computeClient, fn } from "./support/compute.ts"
import { database } from "./support/records.ts"
import { startServer, type TestNode, type TestServer } from "./support/TestServer.ts"
import { sleep } from "./support/wait.ts"

const range = (n: number) => Array.from({ length: n }, (_, i) => i)

// one deployment, one public URL (the load balancer's): tokens name it as issuer, so every node accepts them
const PUBLIC_URL = { TROUPE_PUBLIC_URL: "http://troupe.test" }

const SPIN = fn("while (true) {}")

/** Queues test executions through a chosen node and follows runs through any node. */
const runsClient = (server: TestServer, token: string) => {
  const c = computeClient(server, token)
  const get = async (node: TestNode, jobId: string) => {
    const res = await node.request("GET", `${c.base}/function-runs?jobId=${jobId}`, { token })
    if (res.status !== 200) throw new Error(`run ${jobId}: ${res.status} ${res.text}`)
    return res.body
  }
  return {
    ...c,
    get,
    queue: async (node: TestNode, code: string, params: Record<string, unknown> = {}) => {
      const res = await node.request("POST", `${c.base}/compute-functions/test`, { token, body: { code, params } })
      if (res.status !== 200) throw new Error(`test execution: ${res.status} ${res.text}`)
      return res.body.jobId as string
    },
    /** Polls through `node` until the run has left `queued`; fails if it finished instead of running. */
    waitRunning: async (node: TestNode, jobId: string, timeoutMs = 30_000) => {
      const deadline = Date.now() + timeoutMs
      let last: any
      while (Date.now() < deadline) {
        last = await get(node, jobId)
        if (last.status === "running") return last
        if (last.status !== "queued") throw new Error(`run ${jobId} finished instead of running: ${JSON.stringify(last)}`)
        await sleep(25)
      }
      throw new Error(`run ${jobId} did not start within ${timeoutMs} ms: ${JSON.stringify(last)}`)
    }
  }
}

/** A node's name in `function_runs.lease_owner` (platform/Cluster.ts `nodeName`). */
const owner = (node: TestNode) => `127.0.0.1:${node.runnerPort}/${node.process.pid}`

describe.runIf(process.env.DATABASE_URL)("function runs across two nodes", () => {
  let a: TestServer
  let b: TestNode
  let token: string
  let runs: ReturnType<typeof runsClient>

  beforeAll(async () => {
    a = await startServer({ clustered: true, env: PUBLIC_URL })
    b = await a.startPeer()
    token = await a.adminToken()
    runs = runsClient(a, token)
    const res = await a.request("POST", `${a.base}/structures`, {
      token,
      body: { name: "Run Marks", recordSlug: "run-marks", properties: [{ name: "i", type: "number" }] }
    })
    expect(res.status, res.text).toBeLessThan(300)
  })
  afterAll(async () => {
    await a?.close()
  })

  it("a run queued through one node is followed to its result through the other", async () => {
    const code = fn("return executionParams.i * 2")
    const viaA = await runs.queue(a, code, { i: 21 })
    expect(await runs.waitRun(viaA, b)).toMatchObject({ id: viaA, status: "completed", result: 42, error: null })
    const viaB = await runs.queue(b, code, { i: 50 })
    expect(await runs.waitRun(viaB, a)).toMatchObject({ id: viaB, status: "completed", result: 100, error: null })
    // both nodes answer the same stored run
    expect(await runs.get(a, viaA)).toEqual(await runs.get(b, viaA))
  })

  it("40 runs queued through both nodes at once each execute exactly once with their own result", async () => {
    const nodes = [a, b]
    // every execution leaves a mark: a run executed twice would leave two
    const code = fn("await api.createRecord('run-marks', { i: executionParams.i }); return executionParams.i * 2")
    const jobs = await Promise.all(range(40).map((i) => runs.queue(nodes[i % 2]!, code, { i })))
    expect(new Set(jobs).size).toBe(40)
    // each followed through the node it was not queued through
    const done = await Promise.all(jobs.map((jobId, i) => runs.waitRun(jobId, nodes[(i + 1) % 2]!)))
    done.forEach((run, i) => {
      expect(run, JSON.stringify(run)).toMatchObject({ id: jobs[i], status: "completed", result: i * 2, error: null })
    })

    const marks = await a.request("GET", `${a.base}/records?structureId=run-marks&limit=100`, { token })
    expect(marks.status, marks.text).toBe(200)
    expect(marks.body.results.map((r: any) => r.data.i).sort((x: number, y: number) => x - y)).toEqual(range(40))
    // nothing left behind on either node's view
    for (const node of nodes) {
      for (const status of ["queued", "running"]) {
        const res = await node.request("GET", `${a.base}/function-runs?status=${status}&limit=1`, { token })
        expect(res.status, res.text).toBe(200)
        expect(res.body.total, `${status} runs`).toBe(0)
      }
    }
  })
})

describe.runIf(process.env.DATABASE_URL)("a node stopped with SIGTERM while its run spins", () => {
  let a: TestServer
  afterAll(async () => {
    await a?.close()
  })

  it("fails the run at once as stopped, not later as lost", { timeout: 90_000 }, async () => {
    // a long lease: a run left to it would stay running for a minute
    const env = { ...PUBLIC_URL, TROUPE_FUNCTION_LEASE_SECONDS: "60", TROUPE_FUNCTION_TIMEOUT_MS: "60000" }
    a = await startServer({ clustered: true, env })
    const b = await a.startPeer(env)
    const token = await a.adminToken()
    const runs = runsClient(a, token)
    // submitted through b, the run starts on b (it has free slots)
    const jobId = await runs.queue(b, fn("while (true) {}"))
    await runs.waitRunning(a, jobId)
    expect(await b.stop("SIGTERM")).toBe(0)
    const run = await runs.waitRun(jobId, a, 20_000)
    expect(run.status).toBe("failed")
    expect(run.error).toMatch(/node stopped/)
  })
})

describe.runIf(process.env.DATABASE_URL)("a node killed while its runs spin", () => {
  let a: TestServer
  let b: TestNode
  let token: string
  let runs: ReturnType<typeof runsClient>

  beforeAll(async () => {
    // A and B run one function at a time, so one spinning run each leaves them no slot for anything else
    a = await startServer({
      clustered: true,
      env: {
        ...PUBLIC_URL,
        TROUPE_FUNCTION_LEASE_SECONDS: "2",
        TROUPE_FUNCTION_CONCURRENCY: "1",
        TROUPE_FUNCTION_TIMEOUT_MS: "60000"
      }
    })
    b = await a.startPeer()
    token = await a.adminToken()
    runs = runsClient(a, token)
  })
  afterAll(async () => {
    await a?.close()
  })

  it("fails the dead node's runs as node lost and leaves the survivors' runs running", { timeout: 90_000 }, async () => {
    const busy = [await runs.queue(a, SPIN), await runs.queue(b, SPIN)]
    for (const jobId of busy) await runs.waitRunning(a, jobId)

    // C arrives once A and B are full: the runs queued through it can only run on it
    const c = await a.startPeer({ TROUPE_FUNCTION_CONCURRENCY: "8" })
    const onC = [await runs.queue(c, SPIN), await runs.queue(c, SPIN)]
    for (const jobId of onC) await runs.waitRunning(a, jobId)
    for (const jobId of busy) expect((await runs.get(a, jobId)).status).toBe("running")
    const sql = database(a)
    try {
      const owners = await sql<Array<{ id: string; leaseOwner: string }>>`
        SELECT id, lease_owner AS "leaseOwner" FROM function_runs WHERE id IN ${sql([...busy, ...onC])}`
      const ownerOf = new Map(owners.map((r) => [r.id, r.leaseOwner]))
      expect(onC.map((id) => ownerOf.get(id))).toEqual([owner(c), owner(c)])
      expect(busy.map((id) => ownerOf.get(id)).sort()).toEqual([owner(a), owner(b)].sort())
    } finally {
      await sql.end()
    }

    await c.stop("SIGKILL")
    const deadline = Date.now() + 30_000
    const lost = await Promise.all(
      onC.map(async (jobId) => {
        let run = await runs.get(b, jobId)
        while (run.status === "running" && Date.now() < deadline) {
          await sleep(100)
          run = await runs.get(b, jobId)
        }
        return run
      })
    )
    for (const run of lost) {
      expect(run, JSON.stringify(run)).toMatchObject({ status: "failed" })
      expect(run.error).toMatch(/^node lost/)
    }

    // the survivors answer, and their own runs were not taken for lost
    for (const node of [a, b]) expect((await node.request("GET", "/health")).status).toBe(200)
    for (const jobId of busy) expect(["running", "timed_out"]).toContain((await runs.get(a, jobId)).status)
  })
})
