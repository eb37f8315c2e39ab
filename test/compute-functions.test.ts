// Compute functions end to end on one real node (PGlite, or PostgreSQL when DATABASE_URL is set): function CRUD and
// versions, code checks, test executions followed through /function-runs, the whole `api` of a function (records
// through the same services as HTTP, helpers, outbound HTTP), limits and escapes with a clear run status while the
// node keeps answering, and permissions.
import * as Crypto from "node:crypto"
import * as Http from "node:http"
import type * as Net from "node:net"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { computeClient, fn } from "./support/compute.ts"
import { createAccount, createUser } from "./support/IdentityHelpers.ts"
import { startServer, type TestServer } from "./support/TestServer.ts"
import { sleep } from "./support/wait.ts"

describe("compute functions over HTTP", () => {
  let server: TestServer
  let token: string
  let c: ReturnType<typeof computeClient>
  let outside: Http.Server
  let outsideUrl: string

  beforeAll(async () => {
    outside = Http.createServer((req, res) => {
      let body = ""
      req.on("data", (d) => (body += d))
      req.on("end", () => {
        res.writeHead(200, { "content-type": "application/json" })
        res.end(JSON.stringify({ method: req.method, path: req.url, body }))
      })
    })
    await new Promise<void>((r) => outside.listen(0, "127.0.0.1", () => r()))
    outsideUrl = `http://127.0.0.1:${(outside.address() as Net.AddressInfo).port}`
    server = await startServer({
      env: { TROUPE_FUNCTION_TIMEOUT_MS: "3000", TROUPE_FUNCTION_MEMORY_MB: "32", TROUPE_FUNCTION_HTTP_ALLOWLIST: "127.0.0.1" }
    })
    token = await server.adminToken()
    c = computeClient(server, token)
    const res = await server.request("POST", `${server.base}/structures`, {
      token,
      body: {
        name: "Counters",
        recordSlug: "counters",
        properties: [
          { name: "name", type: "string", isUnique: true },
          { name: "count", type: "number" },
          { name: "tags", type: "array", items: { type: "string" } },
          { name: "secret", type: "string", isSecret: true }
        ]
      }
    })
    expect(res.status, res.text).toBeLessThan(300)
  })
  afterAll(async () => {
    await server?.close()
    await new Promise((r) => outside?.close(r))
  })

  describe("functions CRUD", () => {
    it("creates, reads, lists without code, updates with versions, deletes", async () => {
      const code = fn("return { success: true, data: 1 }")
      const created = await c.createFunction("crud-one", code, "first")
      expect(created).toMatchObject({ name: "crud-one", description: "first", code, version: 1, workspaceSlug: server.workspace })
      expect(created.id).toMatch(/^[0-9a-f-]{36}$/)
      expect((created as any).codeHash).toBe(Crypto.createHash("sha256").update(code).digest("hex"))

      const dup = await c.call("POST", "/compute-functions", { name: "crud-one", code })
      expect(dup.status).toBe(409)
      expect(dup.body).toMatchObject({ statusCode: 409, error: "Conflict" })

      const list = await c.call("GET", "/compute-functions?search=crud-&limit=10")
      expect(list.status).toBe(200)
      expect(list.body).toMatchObject({ total: 1, page: 1, limit: 10 })
      expect(list.body.functions[0]).toMatchObject({ id: created.id, name: "crud-one" })
      expect(list.body.functions[0].code).toBeUndefined()

      expect((await c.call("GET", "/compute-functions?limit=1001")).status).toBe(400)
      expect((await c.call("GET", "/compute-functions/not-a-uuid")).status).toBe(400)
      expect((await c.call("GET", `/compute-functions/${Crypto.randomUUID()}`)).status).toBe(404)

      const updated = await c.call("PUT", `/compute-functions/${created.id}`, { code: fn("return 2"), description: "second" })
      expect(updated.status, updated.text).toBe(200)
      expect(updated.body).toMatchObject({ version: 2, description: "second", name: "crud-one" })
      const other = await c.createFunction("crud-two", code)
      const clash = await c.call("PUT", `/compute-functions/${other.id}`, { name: "crud-one" })
      expect(clash.status).toBe(409)

      const versions = await c.call("GET", `/compute-functions/${created.id}/versions`)
      expect(versions.body.versions.map((v: any) => v.version)).toEqual([2, 1])
      expect(versions.body.versions[1].code).toBe(code)

      const simple = await c.call("GET", "/functions?search=crud-")
      expect(simple.body).toMatchObject({ total: 2 })
      expect(simple.body.data.map((f: any) => f.name).sort()).toEqual(["crud-one", "crud-two"])

      const deleted = await c.call("DELETE", `/compute-functions/${created.id}`)
      expect(deleted.status).toBe(200)
      expect(deleted.body).toMatchObject({ success: true })
      expect(typeof deleted.body.message).toBe("string")
      expect((await c.call("GET", `/compute-functions/${created.id}`)).status).toBe(404)
    })

    it("sorts lists by a JSON sort and pages them", async () => {
      for (const n of ["sort-b", "sort-a", "sort-c"]) await c.createFunction(n, fn("return 1"))
      const res = await c.call(
        "GET",
        `/compute-functions?search=sort-&sort=${encodeURIComponent(JSON.stringify([{ field: "name", direction: "desc" }]))}&limit=2&page=1`
      )
      expect(res.status, res.text).toBe(200)
      expect(res.body.functions.map((f: any) => f.name)).toEqual(["sort-c", "sort-b"])
      expect(res.body.total).toBe(3)
      const bad = await c.call("GET", `/compute-functions?sort=${encodeURIComponent('[{"field":"code"}]')}`)
      expect(bad.status).toBe(400)
    })

    it("refuses code that cannot run: module style, imports, syntax errors, no run()", async () => {
      for (const code of [
        "exports.handler = async () => 1",
        "module.exports = async function run() {}",
        "import x from 'y'\nasync function run() {}",
        "async function run() { return await import('fs') }",
        "async function run() { return 1 ",
        "async function main() { return 1 }"
      ]) {
        const res = await c.call("POST", "/compute-functions", { name: `bad-${Crypto.randomUUID()}`, code })
        expect(res.status, code).toBe(400)
        expect(res.body.details[0].field).toBe("code")
        const tested = await c.call("POST", "/compute-functions/test", { code, params: {} })
        expect(tested.status, code).toBe(400)
      }
      // a string that merely mentions module.exports is fine
      const ok = await c.call("POST", "/compute-functions/test", { code: fn("return 'module.exports'"), params: {} })
      expect(ok.status).toBe(200)
    })

    it("test execution needs code and params", async () => {
      expect((await c.call("POST", "/compute-functions/test", { params: {} })).status).toBe(400)
      expect((await c.call("POST", "/compute-functions/test", { code: fn("return 1") })).status).toBe(400)
      expect((await c.call("POST", "/compute-functions/test", { code: fn("return 1"), params: [] })).status).toBe(400)
    })
  })

  describe("test executions", () => {
    it("queues a job and the run completes with result, logs, hash, version and metrics", async () => {
      const code = fn("api.log('hello', executionParams.name); return { success: true, data: { greeting: 'hi ' + executionParams.name } }")
      const queued = await c.call("POST", "/compute-functions/test", { code, params: { name: "ada" } })
      expect(queued.status).toBe(200)
      expect(queued.body).toMatchObject({ status: "queued" })
      expect(queued.body.jobId).toMatch(/^[0-9a-f-]{36}$/)
      expect(Number.isNaN(Date.parse(queued.body.queuedAt))).toBe(false)
      const run = await c.waitRun(queued.body.jobId)
      expect(run).toMatchObject({
        id: queued.body.jobId,
        jobId: queued.body.jobId,
        status: "completed",
        executionSource: "manual",
        result: { success: true, data: { greeting: "hi ada" } },
        error: null,
        functionCodeHash: Crypto.createHash("sha256").update(code).digest("hex"),
        functionVersion: "test",
        isRerun: false,
        rerunCount: 0
      })
      expect(run.logs.map((l: any) => l.message)).toEqual(["hello ada"])
      expect(run.durationMs).toBeGreaterThanOrEqual(0)
      expect(run.cpuUsageSeconds).toBeGreaterThanOrEqual(0)
      expect(run.memoryUsageBytes).toBeGreaterThan(0)
      const system = (await c.call("GET", "/function-triggers?search=default-trigger")).body.triggers[0]
      expect(run.triggerId).toBe(system.id)
      const byId = await c.call("GET", `/function-runs/${run.id}`)
      expect(byId.body).toMatchObject({ id: run.id, status: "completed" })
    })

    it("a thrown error fails the run; a structured failure completes it", async () => {
      const thrown = await c.runCode(fn("throw new Error('boom')"))
      expect(thrown.status).toBe("failed")
      expect(thrown.error).toContain("boom")
      const business = await c.runCode(fn("return { success: false, error: 'not today' }"))
      expect(business.status).toBe("completed")
      expect(business.result).toEqual({ success: false, error: "not today" })
    })

    it("unknown run ids: 400 for a malformed id, 404 for an unknown one", async () => {
      expect((await c.call("GET", "/function-runs?jobId=nope")).status).toBe(400)
      expect((await c.call("GET", `/function-runs?jobId=${Crypto.randomUUID()}`)).status).toBe(404)
      expect((await c.call("GET", `/function-runs/${Crypto.randomUUID()}`)).status).toBe(404)
    })

    it("lists runs newest first with filters", async () => {
      const a = await c.runCode(fn("return 'a'"))
      const b = await c.runCode(fn("throw new Error('b')"))
      const page = await c.call("GET", "/function-runs?limit=2")
      expect(page.status).toBe(200)
      expect(page.body).toMatchObject({ page: 1, limit: 2 })
      expect(page.body.data.map((r: any) => r.id)).toEqual([b.id, a.id])
      const failed = await c.call("GET", "/function-runs?status=failed&limit=1000")
      expect(failed.body.data.every((r: any) => r.status === "failed")).toBe(true)
      expect(failed.body.data.some((r: any) => r.id === b.id)).toBe(true)
      expect((await c.call("GET", "/function-runs?limit=1001")).status).toBe(400)
      expect((await c.call("GET", "/function-runs?status=weird")).status).toBe(400)
    })
  })

  describe("the api object", () => {
    it("creates, queries, fetches, updates and deletes records as the caller, with source function", async () => {
      const run = await c.runCode(
        fn(`
        const a = await api.createRecord('counters', { name: 'alpha', count: 1, tags: ['x'], secret: 's3cret' })
        const b = await api.createRecord('counters', { name: 'beta', count: 5, tags: ['y'] })
        const byField = await api.fetchRecordByUniqueField('counters', 'name', 'beta')
        const fetched = await api.fetchRecord(a.id)
        const missing = await api.fetchRecord('00000000-0000-4000-8000-000000000000')
        const page = await api.queryRecords('counters', { filter: { 'data.count': { gte: 2 } }, includeTotal: true })
        const bracket = await api.queryRecords('counters', { 'data.count[lt]': 2, sort: [{ field: 'count', direction: 'desc' }] })
        const sorted = await api.queryRecords('counters', { sort: '-count', pageSize: 1, page: 2 })
        const updated = await api.updateRecord(b.id, { count: 6 })
        const agg = await api.aggregateRecords('counters', { operations: { total: { sum: 'count' }, n: { count: '*' } } })
        const removed = await api.deleteRecord(a.id)
        return { a, byField: byField.id === b.id, fetched: fetched.data, missing, total: page.total,
          pageIds: page.items.map(r => r.id), bracket: bracket.items.map(r => r.data.name), sorted: sorted.items.map(r => r.data.name),
          pageSize: sorted.pageSize, page: sorted.page, updated: updated.data.count, version: updated.version, agg, removed }
      `)
      )
      expect(run.status, run.error).toBe("completed")
      const r = run.result
      expect(r.a.data).toMatchObject({ name: "alpha", count: 1, secret: "********" })
      expect(r.byField).toBe(true)
      expect(r.fetched.secret).toBe("********")
      expect(r.missing).toBeNull()
      expect(r.total).toBe(1)
      expect(r.bracket).toEqual(["alpha"])
      expect(r.sorted).toEqual(["alpha"])
      expect([r.pageSize, r.page]).toEqual([1, 2])
      expect([r.updated, r.version]).toEqual([6, 2])
      expect(r.agg.results[0]).toMatchObject({ total: 7, n: 2 })
      expect(r.removed).toMatchObject({ success: true, id: r.a.id })
      const changelog = await server.request("GET", `${server.base}/records/${r.a.id}/changelog`, { token })
      expect(changelog.status).toBe(200)
      expect(JSON.stringify(changelog.body)).toContain('"source":"function"')
    })

    it("incrementField is atomic under concurrent runs", async () => {
      const created = await server.request("POST", `${server.base}/records`, {
        token,
        body: { structureId: "counters", data: { name: "hits", count: 0 } }
      })
      expect(created.status).toBe(201)
      const id = created.body.id
      const jobs = await Promise.all(
        Array.from({ length: 20 }, () =>
          c.call("POST", "/compute-functions/test", {
            code: fn(`return (await api.incrementField('${id}', 'count', 1)).data.count`),
            params: {}
          })
        )
      )
      const runs = await Promise.all(jobs.map((j) => c.waitRun(j.body.jobId)))
      expect(runs.filter((r) => r.status !== "completed").map((r) => r.error)).toEqual([])
      expect(new Set(runs.map((r) => r.result)).size).toBe(20)
      const down = await c.runCode(fn(`return (await api.decrementField('${id}', 'count', 5)).data.count`))
      expect(down.result).toBe(15)
      const read = await server.request("GET", `${server.base}/records/${id}`, { token })
      expect(read.body.data.count).toBe(15)
      expect(read.body.version).toBe(22)
      const bad = await c.runCode(
        fn(`try { await api.incrementField('${id}', 'name', 1) } catch (e) { return { code: e.code, statusCode: e.statusCode } }`)
      )
      expect(bad.result).toEqual({ code: "VALIDATION_ERROR", statusCode: 400 })
    })

    it("validation errors surface in the function as errors with code and details", async () => {
      const run = await c.runCode(
        fn(`
        try { await api.createRecord('counters', { count: 'many' }) } catch (e) { return { message: e.message, code: e.code, statusCode: e.statusCode, details: e.details } }
      `)
      )
      expect(run.status).toBe("completed")
      expect(run.result).toMatchObject({ code: "VALIDATION_ERROR", statusCode: 400 })
      expect(run.result.details[0].field).toContain("count")
      const missing = await c.runCode(fn("return await api.createRecord('nope', {})"))
      expect(missing.status).toBe("failed")
      expect(missing.error).toContain("not found")
    })

    it("helpers: math, uuid, lodash, formatDate", async () => {
      const run = await c.runCode(
        fn(`
        return {
          evaluated: api.math.evaluate('2 + 3 * 4'),
          sum: api.math.add(2, 3), diff: api.math.subtract(2, 3), product: api.math.multiply(2, 3), quotient: api.math.divide(3, 2),
          uuid: api.uuid(),
          chunk: api.lodash.chunk([1, 2, 3], 2), flat: api.lodash.flatten([[1], [2, [3]]]), uniq: api.lodash.uniq([1, 1, 2]),
          merged: api.lodash.merge({ a: { b: 1 } }, { a: { c: 2 } }),
          date: api.formatDate('2026-03-04T05:06:07Z', 'YYYY-MM-DD HH:mm:ss')
        }
      `)
      )
      expect(run.status, run.error).toBe("completed")
      expect(run.result).toMatchObject({
        evaluated: 14,
        sum: 5,
        diff: -1,
        product: 6,
        quotient: 1.5,
        chunk: [[1, 2], [3]],
        flat: [1, 2, [3]],
        uniq: [1, 2],
        merged: { a: { b: 1, c: 2 } },
        date: "2026-03-04 05:06:07"
      })
      expect(run.result.uuid).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/)
    })

    it("outbound HTTP reaches allow-listed hosts only", async () => {
      const run = await c.runCode(
        fn(`
        const got = await api.httpGet('${outsideUrl}/hello')
        const posted = await api.httpPost('${outsideUrl}/post', { a: 1 })
        const res = await api.fetch('${outsideUrl}/f', { method: 'PUT', body: 'x' })
        let refused
        try { await api.httpGet('http://example.invalid/') } catch (e) { refused = e.code }
        return { got: got.data.path, status: got.status, posted: JSON.parse(posted.data.body), fetched: (await res.json()).method, refused }
      `)
      )
      expect(run.status, run.error).toBe("completed")
      expect(run.result).toEqual({ got: "/hello", status: 200, posted: { a: 1 }, fetched: "PUT", refused: "HOST_NOT_ALLOWED" })
    })
  })

  describe("limits and escapes", () => {
    it("infinite loops before and after an await time out while the node keeps answering", async () => {
      const before = c.runCode(fn("while (true) {}"))
      const after = c.runCode(fn("await null; while (true) {}"))
      await sleep(300)
      const health = await server.request("GET", "/health")
      expect(health.status).toBe(200)
      for (const run of await Promise.all([before, after])) {
        expect(run.status).toBe("timed_out")
        expect(run.error).toMatch(/timed out/i)
      }
    })

    it("a run that times out keeps the logs it wrote", async () => {
      const run = await c.runCode(
        fn("api.log('step 1'); await api.fetchRecord('00000000-0000-4000-8000-000000000000'); api.log('step 2'); while (true) {}")
      )
      expect(run.status).toBe("timed_out")
      expect(run.logs.map((l: any) => l.message)).toEqual(["step 1", "step 2"])
    })

    it("never-settling promises and microtask floods time out", async () => {
      const never = await c.runCode(fn("return new Promise(() => {})"))
      expect(never.status).toBe("timed_out")
      const flood = await c.runCode(fn("for (;;) await null"))
      expect(flood.status).toBe("timed_out")
    })

    it("memory bombs fail the run and the next run works", async () => {
      const bomb = await c.runCode(fn("const a = []; for (;;) a.push(new Array(1e6).fill(1))"))
      expect(bomb.status).toBe("failed")
      expect(bomb.error).toMatch(/memory/i)
      const next = await c.runCode(fn("return 'alive'"))
      expect(next).toMatchObject({ status: "completed", result: "alive" })
    })

    it("constructor chains reach no host object; injected objects are frozen", async () => {
      const run = await c.runCode(
        fn(`
        const g = api.log.constructor.constructor('return this')()
        let tampered = 'no'
        try { api.createRecord = () => 1; tampered = String(api.createRecord === 1) } catch (e) { tampered = 'threw' }
        let paramsTampered = 'no'
        try { executionParams.x = 1; paramsTampered = String(executionParams.x) } catch (e) { paramsTampered = 'threw' }
        return { process: typeof g.process, require: typeof g.require, console: typeof console, setTimeout: typeof setTimeout,
          tampered, paramsTampered, frozen: Object.isFrozen(api) && Object.isFrozen(executionParams) }
      `),
        { a: { b: 1 } }
      )
      expect(run.status, run.error).toBe("completed")
      expect(run.result).toMatchObject({
        process: "undefined",
        require: "undefined",
        console: "undefined",
        setTimeout: "undefined",
        frozen: true
      })
      expect(run.result.tampered).not.toBe("true")
      expect(run.result.paramsTampered).not.toBe("1")
    })

    it("huge results fail and huge logs are capped", async () => {
      const big = await c.runCode(fn("return 'x'.repeat(5 * 1024 * 1024)"))
      expect(big.status).toBe("failed")
      expect(big.error).toMatch(/result/i)
      const logs = await c.runCode(fn("for (let i = 0; i < 5000; i++) api.log('line ' + i + ' ' + 'y'.repeat(100)); return 'done'"))
      expect(logs.status).toBe("completed")
      expect(logs.logs.length).toBeLessThanOrEqual(1001)
      expect(logs.logs[logs.logs.length - 1].message).toMatch(/dropped/)
    })
  })

  describe("permissions", () => {
    it("viewers read functions and runs but cannot write or execute; developers cannot manage triggers", async () => {
      const fnRow = await c.createFunction("perm-fn", fn("return 1"))
      const viewer = await createUser(server, token, "viewer")
      const v = computeClient(server, viewer.token)
      expect((await v.call("GET", `/compute-functions/${fnRow.id}`)).status).toBe(200)
      expect((await v.call("GET", "/function-runs")).status).toBe(200)
      expect((await v.call("GET", "/function-triggers")).status).toBe(403)
      expect((await v.call("POST", "/compute-functions", { name: "v", code: fn("return 1") })).status).toBe(403)
      expect((await v.call("POST", "/compute-functions/test", { code: fn("return 1"), params: {} })).status).toBe(403)
      const developer = await createUser(server, token, "developer")
      const d = computeClient(server, developer.token)
      expect((await d.call("POST", "/compute-functions/test", { code: fn("return 1"), params: {} })).status).toBe(200)
      expect((await d.call("POST", "/function-triggers", { name: "d", functionId: fnRow.id, executionType: "on-demand" })).status).toBe(403)
      expect((await d.call("GET", "/function-triggers")).status).toBe(403)
      const noToken = await server.request("GET", `${c.base}/compute-functions`)
      expect(noToken.status).toBe(401)
    })

    it("a function acts as its caller, with the caller's permissions", async () => {
      const developer = await createUser(server, token, "developer")
      const d = computeClient(server, developer.token)
      const res = await d.call("POST", "/compute-functions/test", {
        code: fn("return (await api.createRecord('counters', { name: 'by-dev' })).createdBy"),
        params: {}
      })
      expect((await d.waitRun(res.body.jobId)).result).toBe(developer.userId)
      const account = await createAccount(server, token, { permissions: ["execute:functions", "read:functions", "read:records"] })
      const sa = computeClient(server, account.token)
      const denied = await sa.call("POST", "/compute-functions/test", {
        code: fn("try { await api.createRecord('counters', { name: 'by-sa' }) } catch (e) { return e.code } return 'written'"),
        params: {}
      })
      expect((await sa.waitRun(denied.body.jobId)).result).toBe("PERMISSION_DENIED")
    })
  })

  describe("warm contexts", () => {
    it("runs of one version share their top-level state, each with its caller's api; a new version starts afresh", async () => {
      const code = (mark: string) => `var loads = (typeof loads === "number" ? loads : 0) + 1
        var runs = 0
        async function run(p) {
          runs++
          const by = (await api.createRecord("counters", { name: "warm-${mark}-" + p.n })).createdBy
          return { loads, runs, by, n: executionParams.n }
        }`
      const created = await c.createFunction("warm-fn", code("a"))
      const execute = async (client: typeof c, n: number) =>
        (await client.waitRun((await client.call("POST", `/functions/${created.id}/execute`, { n })).body.jobId)).result
      const first = await execute(c, 1)
      const second = await execute(c, 2)
      expect([first.loads, first.runs, first.n, second.loads, second.runs, second.n]).toEqual([1, 1, 1, 1, 2, 2])
      const developer = await createUser(server, token, "developer")
      const third = await execute(computeClient(server, developer.token), 3)
      expect(third).toMatchObject({ loads: 1, runs: 3, n: 3, by: developer.userId })
      expect(third.by).not.toBe(first.by)
      expect((await c.call("PUT", `/compute-functions/${created.id}`, { code: code("b") })).status).toBe(200)
      expect(await execute(c, 4)).toMatchObject({ loads: 1, runs: 1, n: 4, by: first.by })
    })
  })

  it("documents every compute route in /openapi.json", async () => {
    const spec = (await server.request("GET", "/openapi.json")).body
    for (const path of [
      "/workspace/{workspace}/api/v1/compute-functions",
      "/workspace/{workspace}/api/v1/compute-functions/test",
      "/workspace/{workspace}/api/v1/compute-functions/{id}/versions",
      "/workspace/{workspace}/api/v1/functions/{id}/execute",
      "/workspace/{workspace}/api/v1/drafts/{id}",
      "/workspace/{workspace}/api/v1/function-triggers/{id}/execute",
      "/workspace/{workspace}/api/v1/function-runs/{id}/rerun-history"
    ])
      expect(Object.keys(spec.paths)).toContain(path)
  })
})
