// Records across two real nodes on one PostgreSQL: what one node writes the other reads, the RecordKey actor
// serialises upserts wherever the request lands, updates of one record through both nodes neither race nor lose a
// change (each node writes them itself, guarded by the row's version: records/write/Update.ts), and killing a node in the middle of a write load
// loses no acknowledged write (the survivor reads every record, and takes over the dead node's actors to write
// them). PostgreSQL only: PGlite is one process.
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type Response, startServer, type TestNode, type TestServer } from "./support/TestServer.ts"
import { sleep } from "./support/wait.ts"

const range = (n: number, from = 1) => Array.from({ length: n }, (_, i) => i + from)

/** Two nodes, an admin token, a structure `cluster-item` (`key`, a number `n`, `via`) and request helpers. */
const cluster = async () => {
  // one deployment, one public URL (the load balancer's): tokens name it as issuer, so either node accepts them
  const a = await startServer({ env: { TROUPE_PUBLIC_URL: "http://troupe.test" } })
  const b = await a.startPeer()
  const token = await a.adminToken()
  const res = await a.request("POST", `${a.base}/structures`, {
    token,
    body: {
      name: "Cluster Item",
      recordSlug: "cluster-item",
      properties: [
        { name: "key", type: "string" },
        { name: "n", type: "number" },
        { name: "via", type: "string" }
      ]
    }
  })
  if (res.status >= 300) throw new Error(`structure: ${res.status} ${res.text}`)
  const structureId = res.body.id as string
  return {
    a,
    b,
    structureId,
    create: (node: TestNode, data: Record<string, unknown>) =>
      node.request("POST", `${a.base}/records`, { token, body: { structureId, data } }),
    patch: (node: TestNode, id: string, body: Record<string, unknown>) => node.request("PATCH", `${a.base}/records/${id}`, { token, body }),
    upsert: (node: TestNode, match: Record<string, unknown>, data: Record<string, unknown>) =>
      node.request("POST", `${a.base}/records/slug/cluster-item/upsert`, { token, body: { match, data } }),
    read: (node: TestNode, path: string) => node.request("GET", `${a.base}${path}`, { token })
  }
}
type Cluster = Awaited<ReturnType<typeof cluster>>

describe.runIf(process.env.DATABASE_URL)("records across two nodes", () => {
  let c: Cluster
  beforeAll(async () => {
    c = await cluster()
  })
  afterAll(async () => {
    await c?.a.close()
  })

  it("a record written through one node is read through the other", async () => {
    const { a, b } = c
    const created = await c.create(a, { key: "ab", n: 1, via: "a" })
    expect(created.status).toBe(201)
    const read = await c.read(b, `/records/${created.body.id}`)
    expect(read.status).toBe(200)
    expect(read.body).toMatchObject({
      id: created.body.id,
      structureId: c.structureId,
      version: 1,
      data: { key: "ab", n: 1, via: "a" }
    })
    const patched = await c.patch(b, created.body.id, { data: { n: 2, via: "b" } })
    expect(patched.status).toBe(200)
    const back = await c.read(a, `/records/${created.body.id}`)
    expect(back.body).toMatchObject({ version: 2, data: { key: "ab", n: 2, via: "b" } })
  })

  it("a write's error crosses to the other node with its status and code", async () => {
    const created = await c.create(c.a, { key: "err", n: 1 })
    expect(created.status).toBe(201)
    const missingId = crypto.randomUUID()
    // through both nodes, so one of the two calls reaches the record's actor on the other node
    for (const node of [c.a, c.b]) {
      const stale = await c.patch(node, created.body.id, { data: { n: 2 }, expectedVersion: 7 })
      expect(stale.status).toBe(409)
      expect(stale.body).toMatchObject({ statusCode: 409, code: "VERSION_CONFLICT" })
      const missing = await c.patch(node, missingId, { data: { n: 2 } })
      expect(missing.status).toBe(404)
      expect(missing.body).toMatchObject({ statusCode: 404, code: "RECORD_NOT_FOUND" })
    }
  })

  it("50 concurrent upserts of one key through both nodes end as one record at version 50", async () => {
    const nodes = [c.a, c.b]
    const results = await Promise.all(
      range(50, 0).map((i) => c.upsert(nodes[i % 2]!, { key: "same-key" }, { n: i, via: i % 2 === 0 ? "a" : "b" }))
    )
    const statuses = results.map((r) => r.status)
    expect(statuses.filter((s) => s === 201)).toHaveLength(1)
    expect(statuses.filter((s) => s === 200)).toHaveLength(49)
    const ids = new Set(results.map((r) => r.body.data.id))
    expect(ids.size).toBe(1)
    // each upsert saw the one before it: versions 1..50, each once
    expect(results.map((r) => r.body.data.version).sort((x, y) => x - y)).toEqual(range(50))
    const id = [...ids][0]!
    for (const node of nodes) {
      const read = await c.read(node, `/records/${id}`)
      expect(read.status).toBe(200)
      expect(read.body.version).toBe(50)
      expect(read.body.data.key).toBe("same-key")
    }
    const list = await c.read(c.a, `/records?structureId=${c.structureId}&filter=${encodeURIComponent("key:same-key")}`)
    expect(list.status).toBe(200)
    expect(list.body.results.map((r: any) => r.id)).toEqual([id])
  })

  it("concurrent PATCHes of one record through both nodes get distinct consecutive versions", async () => {
    const created = await c.create(c.a, { key: "patched", n: 0 })
    expect(created.status).toBe(201)
    const id = created.body.id as string
    const nodes = [c.a, c.b]
    const results = await Promise.all(
      range(30, 0).map((i) => c.patch(nodes[i % 2]!, id, { data: { n: i + 1, via: i % 2 === 0 ? "a" : "b" } }))
    )
    expect(results.map((r) => r.status)).toEqual(results.map(() => 200))
    expect(results.map((r) => r.body.version as number).sort((x, y) => x - y)).toEqual(range(30, 2))
    // each reply names the version it replaced: exactly the one before it
    for (const r of results) expect(r.body.previousVersion).toBe(r.body.version - 1)
    const history = await c.read(c.b, `/records/${id}/history`)
    expect(history.status).toBe(200)
    expect(history.body.versions.map((v: any) => v.version)).toEqual(range(31).reverse())
    // the stored record is the last version written
    const last = results.find((r) => r.body.version === 31)!
    const read = await c.read(c.a, `/records/${id}`)
    expect(read.body).toMatchObject({ version: 31, data: { n: last.body.data.n } })
  })

  it("concurrent PATCHes of different fields of one record through both nodes: no change is lost", async () => {
    const fields = range(24, 0).map((i) => `f${i}`)
    const token = await c.a.adminToken()
    const structure = await c.a.request("POST", `${c.a.base}/structures`, {
      token,
      body: { name: "Many Fields", recordSlug: "many-fields", properties: fields.map((name) => ({ name, type: "number" })) }
    })
    expect(structure.status).toBeLessThan(300)
    const created = await c.a.request("POST", `${c.a.base}/records`, { token, body: { structureId: structure.body.id, data: {} } })
    expect(created.status).toBe(201)
    const id = created.body.id as string
    // each PATCH merges one field; a write planned on a stale read would drop the fields written since
    const results = await Promise.all(fields.map((f, i) => c.patch([c.a, c.b][i % 2]!, id, { data: { [f]: i } })))
    expect(results.map((r) => r.status)).toEqual(results.map(() => 200))
    const read = await c.read(c.b, `/records/${id}`)
    expect(read.body.version).toBe(fields.length + 1)
    expect(read.body.data).toEqual(Object.fromEntries(fields.map((f, i) => [f, i])))
  })
})

describe.runIf(process.env.DATABASE_URL)("a node killed during a write load", () => {
  let c: Cluster
  beforeAll(async () => {
    c = await cluster()
  })
  afterAll(async () => {
    await c?.a.close()
  })

  it("loses no acknowledged write and the survivor serves every record", { timeout: 240_000 }, async () => {
    const a: TestServer = c.a
    const b: TestNode = c.b
    const acked = new Map<string, { key: string; n: number; via: string }>()
    let stopA = false
    let stopB = false
    let failedOnA = 0
    const worker = async (node: TestNode, via: string, w: number, stopped: () => boolean) => {
      for (let i = 0; !stopped(); i++) {
        const data = { key: `${via}-${w}-${i}`, n: i, via }
        let res: Response
        try {
          res = await c.create(node, data)
        } catch {
          // the connection died with the node: not acknowledged, so nothing is owed
          if (node === b) return
          failedOnA++
          continue
        }
        if (res.status === 201) acked.set(res.body.id, data)
        else if (node === a) failedOnA++
      }
    }
    const workers = [...range(6, 0).map((w) => worker(a, "a", w, () => stopA)), ...range(6, 0).map((w) => worker(b, "b", w, () => stopB))]
    // kill B once both nodes have acknowledged writes
    const count = (via: string) => [...acked.values()].filter((d) => d.via === via).length
    const deadline = Date.now() + 60_000
    while ((count("a") < 60 || count("b") < 60) && Date.now() < deadline) await sleep(20)
    expect(count("b")).toBeGreaterThanOrEqual(60)
    const exited = new Promise((resolve) => b.process.once("exit", resolve))
    b.process.kill("SIGKILL")
    await exited
    stopB = true
    // the survivor keeps taking writes
    const before = count("a")
    while (count("a") < before + 60 && Date.now() < deadline + 60_000) await sleep(20)
    stopA = true
    await Promise.all(workers)
    expect(count("a")).toBeGreaterThanOrEqual(before + 60)
    expect(failedOnA).toBe(0)

    // every acknowledged write is there, read through the survivor
    const entries = [...acked.entries()]
    const pool = async <T>(items: ReadonlyArray<T>, n: number, f: (item: T) => Promise<void>) => {
      let next = 0
      await Promise.all(
        range(n).map(async () => {
          while (next < items.length) await f(items[next++]!)
        })
      )
    }
    await pool(entries, 8, async ([id, data]) => {
      const read = await c.read(a, `/records/${id}`)
      expect(read.status).toBe(200)
      expect(read.body.data).toEqual(data)
    })
    const list = await c.read(a, `/records?structureId=${c.structureId}&includeCount=true&limit=1`)
    expect(list.body.pagination.total).toBeGreaterThanOrEqual(entries.length)

    // and the survivor writes every record: the dead node's actors move to it once its death is noticed
    const writeDeadline = Date.now() + 150_000
    const versions = new Map<string, number>()
    await pool(entries, 8, async ([id, data]) => {
      while (true) {
        const res = await c.patch(a, id, { data: { n: data.n + 1000 } }).catch(() => undefined)
        if (res?.status === 200) {
          versions.set(id, res.body.version)
          return
        }
        // only an unreachable shard is retried; anything else is a real failure
        if (res !== undefined && res.status < 500) throw new Error(`PATCH ${id}: ${res.status} ${res.text}`)
        if (Date.now() > writeDeadline) throw new Error(`PATCH ${id} still failing: ${res?.status} ${res?.text}`)
        await sleep(500)
      }
    })
    expect(versions.size).toBe(entries.length)
    expect([...versions.values()].every((v) => v === 2)).toBe(true)
    const [sampleId, sample] = entries[entries.length - 1]!
    const read = await c.read(a, `/records/${sampleId}`)
    expect(read.body).toMatchObject({ version: 2, data: { ...sample, n: sample.n + 1000 } })
  })
})
