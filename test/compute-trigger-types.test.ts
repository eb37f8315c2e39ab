// Every trigger type proven end to end through a function's side effect (it writes a record): event-driven on every
// record event (bulk and failed writes included), scheduled (interval, once; pause, resume, update, delete),
// HTTP triggers (sync, async, any method, status codes), the trigger validation errors, the loop limit, and the
// trigger.fired / function.* events on webhooks and SSE.
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { computeClient, fn } from "./support/compute.ts"
import { createAccount } from "./support/IdentityHelpers.ts"
import { openSse } from "./support/SseClient.ts"
import { startServer, type TestServer } from "./support/TestServer.ts"
import { type Receiver, startReceiver } from "./support/WebhookReceiver.ts"
import { eventually, sleep } from "./support/wait.ts"

/** Writes what the function was given into the `audit` structure. */
const AUDIT = fn(`
  const rec = await api.createRecord('audit', { tag: triggerParams.tag || 'none', payload: JSON.stringify(executionParams) })
  return { success: true, data: { id: rec.id } }
`)

describe("trigger types over HTTP", () => {
  let server: TestServer
  let token: string
  let c: ReturnType<typeof computeClient>
  let audit: { id: string }
  let rx: Receiver

  const structure = async (slug: string, properties: Array<Record<string, unknown>>) => {
    const res = await server.request("POST", `${server.base}/structures`, { token, body: { name: slug, recordSlug: slug, properties } })
    expect(res.status, res.text).toBeLessThan(300)
  }
  const auditRows = async (tag: string) => {
    const res = await server.request(
      "GET",
      `${server.base}/records?structureId=audit&limit=100&filter=${encodeURIComponent(`tag:${tag}`)}`,
      { token }
    )
    expect(res.status, res.text).toBe(200)
    return (res.body.results as Array<any>).map((r) => ({ ...r, params: JSON.parse(r.data.payload) }))
  }
  const waitAudit = async (tag: string, n: number, timeoutMs = 20_000) => {
    const deadline = Date.now() + timeoutMs
    while (Date.now() < deadline) {
      const rows = await auditRows(tag)
      if (rows.length >= n) return rows
      await sleep(50)
    }
    throw new Error(`expected ${n} audit rows tagged ${tag}, got ${(await auditRows(tag)).length}`)
  }
  const eventTrigger = (tag: string, event: string, recordSlug = "orders") =>
    c.createTrigger({
      name: `on-${tag}`,
      functionId: audit.id,
      executionType: "event-driven",
      triggerMetadata: { event, recordSlug, params: { tag } }
    })

  beforeAll(async () => {
    server = await startServer({ env: { TROUPE_FUNCTION_TIMEOUT_MS: "1500", TROUPE_WEBHOOK_RETRY_DELAYS: "0.2,0.2,0.2" } })
    token = await server.adminToken()
    c = computeClient(server, token)
    rx = await startReceiver()
    await structure("audit", [
      { name: "tag", type: "string" },
      { name: "payload", type: "string" }
    ])
    await structure("orders", [
      { name: "amount", type: "number", minimum: 0 },
      { name: "note", type: "string" },
      { name: "pin", type: "string", isSecret: true }
    ])
    audit = await c.createFunction("audit", AUDIT)
  })
  afterAll(async () => {
    await rx?.close()
    await server?.close()
  })

  describe("event-driven", () => {
    it("record_created, record_updated, record_deleted, record_restored and record_reverted fire with the event as params (event, workspaceSlug, recordSlug, recordId, data, timestamp)", async () => {
      for (const e of ["record_created", "record_updated", "record_deleted", "record_restored", "record_reverted"]) await eventTrigger(e, e)
      const created = await server.request("POST", `${server.base}/records`, {
        token,
        body: { structureId: "orders", data: { amount: 5, pin: "1234" } }
      })
      expect(created.status).toBe(201)
      const id = created.body.id
      const [onCreate] = await waitAudit("record_created", 1)
      expect(onCreate!.params).toMatchObject({
        event: "record_created",
        workspaceSlug: server.workspace,
        recordSlug: "orders",
        recordId: id
      })
      expect(onCreate!.params.data).toMatchObject({ id, data: { amount: 5, pin: "********" } })
      expect(Number.isNaN(Date.parse(onCreate!.params.timestamp))).toBe(false)

      expect((await server.request("PATCH", `${server.base}/records/${id}`, { token, body: { data: { amount: 7 } } })).status).toBe(200)
      const [onUpdate] = await waitAudit("record_updated", 1)
      expect(onUpdate!.params.data.before.data.amount).toBe(5)
      expect(onUpdate!.params.data.after.data.amount).toBe(7)

      expect((await server.request("POST", `${server.base}/records/${id}/revert`, { token, body: {} })).status).toBeLessThan(300)
      const [onRevert] = await waitAudit("record_reverted", 1)
      expect(onRevert!.params.data.after.data.amount).toBe(5)

      expect((await server.request("DELETE", `${server.base}/records/${id}`, { token })).status).toBeLessThan(300)
      const [onDelete] = await waitAudit("record_deleted", 1)
      expect(onDelete!.params.data).toMatchObject({ id })

      expect((await server.request("POST", `${server.base}/records/${id}/restore`, { token, body: {} })).status).toBeLessThan(300)
      const [onRestore] = await waitAudit("record_restored", 1)
      expect(onRestore!.params.recordId).toBe(id)

      // the last run's audit record can be read before its run's end is written (finished runs are written in
      // batches): wait for every run to finish, then none may have failed
      const runs = await eventually(async () => {
        const res = await c.call("GET", `/function-runs?executionSource=trigger&limit=100`)
        const data: Array<any> = res.body.data
        return data.length >= 5 && data.every((r) => r.status !== "queued" && r.status !== "running") ? data : undefined
      })
      expect(runs.map((r) => r.status)).toEqual(runs.map(() => "completed"))
    })

    it("bulk writes fire the per-record triggers", async () => {
      await structure("bulkorders", [{ name: "amount", type: "number" }])
      await eventTrigger("bulk2", "record_created", "bulkorders")
      const res = await server.request("POST", `${server.base}/records/bulk`, {
        token,
        body: { structureId: "bulkorders", records: [{ data: { amount: 1 } }, { data: { amount: 2 } }, { data: { amount: 3 } }] }
      })
      expect(res.status, res.text).toBeLessThan(300)
      const rows = await waitAudit("bulk2", 3)
      expect(rows.map((r) => r.params.data.data.amount).sort()).toEqual([1, 2, 3])
    })

    it("a refused write fires record_create_failed (both spellings) and record_updated_failed with the error and the input", async () => {
      await eventTrigger("create-failed", "record_create_failed")
      await eventTrigger("created-failed", "record_created_failed")
      await eventTrigger("updated-failed", "record_updated_failed")
      const bad = await server.request("POST", `${server.base}/records`, { token, body: { structureId: "orders", data: { amount: -1 } } })
      expect(bad.status).toBe(400)
      const [failed] = await waitAudit("create-failed", 1)
      expect(failed!.params).toMatchObject({ event: "record_create_failed", recordSlug: "orders" })
      expect(failed!.params.data.error.code).toBe("VALIDATION_ERROR")
      expect(failed!.params.data.input).toEqual({ amount: -1 })
      await waitAudit("created-failed", 1)
      const ok = await server.request("POST", `${server.base}/records`, { token, body: { structureId: "orders", data: { amount: 1 } } })
      const badUpdate = await server.request("PATCH", `${server.base}/records/${ok.body.id}`, { token, body: { data: { amount: "many" } } })
      expect(badUpdate.status).toBe(400)
      const [updateFailed] = await waitAudit("updated-failed", 1)
      expect(updateFailed!.params).toMatchObject({ event: "record_updated_failed", recordId: ok.body.id })
    })

    it("a function that writes to its own trigger's structure stops at the depth limit", async () => {
      await structure("loops", [{ name: "n", type: "number" }])
      const looper = await c.createFunction(
        "looper",
        fn("await api.createRecord('loops', { n: (executionParams.data.data.n || 0) + 1 }); return 'again'")
      )
      await c.createTrigger({
        name: "loop",
        functionId: looper.id,
        executionType: "event-driven",
        triggerMetadata: { event: "record_created", recordSlug: "loops" }
      })
      expect(
        (await server.request("POST", `${server.base}/records`, { token, body: { structureId: "loops", data: { n: 0 } } })).status
      ).toBe(201)
      const deadline = Date.now() + 20_000
      let stopped: any
      while (Date.now() < deadline && stopped === undefined) {
        const runs = await c.call("GET", `/function-runs?functionId=${looper.id}&status=failed`)
        stopped = runs.body.data.find((r: any) => /depth limit/.test(r.error ?? ""))
        await sleep(100)
      }
      expect(stopped).toBeDefined()
      await sleep(500)
      const count = (await server.request("GET", `${server.base}/records?structureId=loops&includeCount=true&limit=1`, { token })).body
        .pagination.total
      expect(count).toBeLessThanOrEqual(12)
      expect(count).toBeGreaterThan(2)
    })
  })

  describe("validation", () => {
    const attempt = (executionType: string, triggerMetadata: Record<string, unknown>) =>
      c.call("POST", "/function-triggers", {
        name: `v-${Math.random().toString(36).slice(2)}`,
        functionId: audit.id,
        executionType,
        triggerMetadata
      })
    it("answers 400 naming the field for every invalid trigger", async () => {
      const cases: Array<[string, Record<string, unknown>, string]> = [
        ["event-driven", { event: "record_exploded", recordSlug: "orders" }, "triggerMetadata.event"],
        ["event-driven", { event: "record_created" }, "triggerMetadata.recordSlug"],
        ["event-driven", { event: "record_created", recordSlug: "ghosts" }, "triggerMetadata.recordSlug"],
        ["scheduled", { scheduleType: "interval" }, "triggerMetadata.interval"],
        ["scheduled", { interval: 0 }, "triggerMetadata.interval"],
        ["scheduled", { interval: -5 }, "triggerMetadata.interval"],
        ["scheduled", { interval: "5" }, "triggerMetadata.interval"],
        ["scheduled", { scheduleType: "cron", cronExpression: "0 */5 * * * *" }, "triggerMetadata.cronExpression"],
        ["scheduled", { scheduleType: "cron", cronExpression: "0 0 * * 7" }, "triggerMetadata.cronExpression"],
        ["scheduled", { scheduleType: "once" }, "triggerMetadata.scheduledAt"],
        ["scheduled", { scheduleType: "once", scheduledAt: "tomorrow" }, "triggerMetadata.scheduledAt"],
        ["scheduled", { scheduleType: "once", scheduledAt: "2001-01-01T00:00:00Z" }, "triggerMetadata.scheduledAt"],
        ["scheduled", { scheduleType: "cron", cronExpression: "0 9 * * *", timezone: "Mars/Olympus" }, "triggerMetadata.timezone"],
        ["http-trigger", {}, "triggerMetadata.path"],
        ["http-trigger", { path: "/a/../b" }, "triggerMetadata.path"]
      ]
      for (const [type, metadata, field] of cases) {
        const res = await attempt(type, metadata)
        expect(res.status, `${type} ${JSON.stringify(metadata)}`).toBe(400)
        expect(res.body.code).toBe("VALIDATION_ERROR")
        expect(
          res.body.details.map((d: any) => d.field),
          JSON.stringify(metadata)
        ).toContain(field)
      }
    })
  })

  describe("scheduled", () => {
    it("an interval trigger runs every interval, pauses, resumes, reschedules on update and stops on delete", async () => {
      const t = await c.createTrigger({
        name: "every-second",
        functionId: audit.id,
        executionType: "scheduled",
        triggerMetadata: { interval: 1, params: { tag: "interval" } }
      })
      expect(t).toMatchObject({ status: "active", paused: false })
      expect(t.triggerMetadata).toMatchObject({ scheduleType: "interval", interval: 1, timezone: "UTC" })
      const first = await waitAudit("interval", 2, 10_000)
      expect(first[0]!.params).toMatchObject({ triggerId: t.id, triggerName: "every-second" })
      const runs = await c.call("GET", `/function-runs?triggerId=${t.id}`)
      expect(runs.body.data[0]).toMatchObject({ executionSource: "scheduled" })
      expect(new Set(runs.body.data.map((r: any) => r.scheduledFor)).size).toBe(runs.body.data.length)

      const paused = await c.call("PATCH", `/function-triggers/${t.id}/pause`)
      expect(paused.status).toBe(200)
      expect(paused.body.trigger).toMatchObject({ paused: true, status: "paused" })
      expect((await c.call("GET", `/function-triggers/${t.id}`)).body.paused).toBe(true)
      await sleep(300)
      const atPause = (await auditRows("interval")).length
      await sleep(2200)
      expect((await auditRows("interval")).length).toBe(atPause)

      const resumed = await c.call("PATCH", `/function-triggers/${t.id}/resume`)
      expect(resumed.body.trigger).toMatchObject({ paused: false, status: "active" })
      await waitAudit("interval", atPause + 2, 10_000)

      const updated = await c.call("PUT", `/function-triggers/${t.id}`, {
        triggerMetadata: { interval: 3600, params: { tag: "interval" } }
      })
      expect(updated.status).toBe(200)
      expect(Date.parse(updated.body.nextRunAt) - Date.now()).toBeGreaterThan(3000 * 1000)
      await sleep(300)
      const afterUpdate = (await auditRows("interval")).length
      await sleep(1500)
      expect((await auditRows("interval")).length).toBe(afterUpdate)

      expect((await c.call("DELETE", `/function-triggers/${t.id}`)).status).toBe(200)
    })

    it("an interval trigger stops at once when its function is deleted", async () => {
      const doomed = await c.createFunction("doomed-audit", AUDIT)
      const t = await c.createTrigger({
        name: "every-second-doomed",
        functionId: doomed.id,
        executionType: "scheduled",
        triggerMetadata: { interval: 1, params: { tag: "doomed" } }
      })
      await waitAudit("doomed", 1, 10_000)
      expect((await c.call("DELETE", `/compute-functions/${doomed.id}`)).status).toBe(200)
      await sleep(300)
      const runsAt = async () => (await c.call("GET", `/function-runs?triggerId=${t.id}&limit=100`)).body.data.length
      const atDelete = await runsAt()
      await sleep(2500)
      expect(await runsAt()).toBe(atDelete)
      expect((await c.call("GET", `/function-triggers/${t.id}`)).status).toBe(200)
    })

    it("a once trigger fires once and then stays, marked completed", async () => {
      const at = new Date(Date.now() + 1500).toISOString()
      const t = await c.createTrigger({
        name: "just-once",
        functionId: audit.id,
        executionType: "scheduled",
        triggerMetadata: { scheduleType: "once", scheduledAt: at, params: { tag: "once" } }
      })
      await waitAudit("once", 1, 10_000)
      await sleep(1500)
      expect(await auditRows("once")).toHaveLength(1)
      const read = await c.call("GET", `/function-triggers/${t.id}`)
      expect(read.body.triggerMetadata.completed).toBe(true)
      expect(read.body.status).toBe("completed")
    })

    it("a cron trigger in a time zone gets its next run from the expression", async () => {
      const t = await c.createTrigger({
        name: "nine-tokyo",
        functionId: audit.id,
        executionType: "scheduled",
        triggerMetadata: { scheduleType: "cron", cronExpression: "0 9 * * *", timezone: "Asia/Tokyo" }
      })
      const next = new Date((t as any).nextRunAt)
      expect(next.getUTCHours()).toBe(0)
      expect(next.getUTCMinutes()).toBe(0)
      expect(next.getTime()).toBeGreaterThan(Date.now())
    })
  })

  describe("HTTP triggers", () => {
    it("runs sync with any method, strips credentials, passes text bodies, and answers async with 202", async () => {
      const echo = await c.createFunction(
        "http-echo",
        fn(`
        await api.createRecord('audit', { tag: 'http', payload: JSON.stringify(executionParams) })
        if (executionParams.query.fail) throw new Error('asked to fail')
        if (executionParams.query.spin) { while (true) {} }
        return { success: true, data: { method: executionParams.method, body: executionParams.body, query: executionParams.query, headers: executionParams.headers } }
      `)
      )
      const t = await c.createTrigger({
        name: "hook",
        functionId: echo.id,
        executionType: "webhook",
        triggerMetadata: { path: "/orders/incoming" }
      })
      expect(t).toMatchObject({ executionType: "http-trigger" })
      expect((t as any).url).toBe(`/workspace/${server.workspace}/api/v1/http-triggers/orders/incoming`)
      const dup = await c.call("POST", "/function-triggers", {
        name: "hook2",
        functionId: echo.id,
        executionType: "http-trigger",
        triggerMetadata: { path: "orders/incoming/" }
      })
      expect(dup.status).toBe(409)

      const url = `/workspace/${server.workspace}/api/v1/http-triggers/orders/incoming`
      const post = await server.request("POST", `${url}?a=1`, {
        token,
        body: { hello: "world" },
        headers: { cookie: "s=1", "x-custom": "yes" }
      })
      expect(post.status, post.text).toBe(200)
      expect(post.body).toMatchObject({ success: true, data: { method: "POST", body: { hello: "world" }, query: { a: "1" } } })
      expect(post.body.runId).toMatch(/^[0-9a-f-]{36}$/)
      expect(post.body.data.headers.authorization).toBeUndefined()
      expect(post.body.data.headers.cookie).toBeUndefined()
      expect(post.body.data.headers["x-custom"]).toBe("yes")

      const text = await server.request("PUT", url, { token, raw: "plain words", headers: { "content-type": "text/plain" } })
      expect(text.status).toBe(200)
      expect(text.body.data).toMatchObject({ method: "PUT", body: "plain words" })
      // a text body with NUL cannot be stored with the run: 400 with the contract body, no run
      const nul = await server.request("POST", url, { token, raw: "a\u0000b", headers: { "content-type": "text/plain" } })
      expect(nul.status).toBe(400)
      expect(nul.body).toMatchObject({ statusCode: 400, code: "VALIDATION_ERROR" })
      expect(nul.body.message).toContain("NUL")
      for (const method of ["GET", "DELETE", "PATCH", "OPTIONS"]) {
        const res = await server.request(method, url, { token })
        expect(res.status, method).toBe(200)
        expect(res.body.data.method).toBe(method)
      }
      const head = await fetch(`${server.baseUrl}${url}`, { method: "HEAD", headers: { authorization: `Bearer ${token}` } })
      expect(head.status).toBe(200)

      const legacy = await server.request("POST", `/workspace/${server.workspace}/api/v1/webhook/orders/incoming`, { token, body: {} })
      expect(legacy.status).toBe(200)

      const async = await server.request("POST", `${url}?async=true`, { token, body: { later: true } })
      expect(async.status).toBe(202)
      const run = await c.waitRun(async.body.jobId)
      expect(run).toMatchObject({ status: "completed", executionSource: "webhook", triggerId: t.id })

      const thrown = await server.request("POST", `${url}?fail=1`, { token, body: {} })
      expect(thrown.status).toBe(500)
      expect(thrown.body).toMatchObject({ success: false })
      expect(thrown.body.error).toContain("asked to fail")
      const spun = await server.request("POST", `${url}?spin=1`, { token, body: {} })
      expect(spun.status).toBe(504)
      expect(spun.body.success).toBe(false)

      expect(
        (await server.request("POST", `/workspace/${server.workspace}/api/v1/http-triggers/nowhere`, { token, body: {} })).status
      ).toBe(404)
      const doomed = await c.createFunction("http-doomed", fn("return 1"))
      await c.createTrigger({
        name: "doomed-hook",
        functionId: doomed.id,
        executionType: "http-trigger",
        triggerMetadata: { path: "doomed" }
      })
      expect((await c.call("DELETE", `/compute-functions/${doomed.id}`)).status).toBe(200)
      const orphan = await server.request("POST", `/workspace/${server.workspace}/api/v1/http-triggers/doomed`, { token, body: {} })
      expect(orphan.status).toBe(400)
      expect(orphan.body.code).toBe("BAD_REQUEST")
      expect((await server.request("POST", url, { body: {} })).status).toBe(401)
      const bad = await server.request("POST", url, { token, raw: "{oops", headers: { "content-type": "application/json" } })
      expect(bad.status).toBe(400)
    })
  })

  describe("events", () => {
    it("trigger.fired and function.completed reach webhooks; function events reach SSE only with read:functions", async () => {
      const hook = await server.request("POST", `${server.base}/webhooks`, {
        token,
        body: { url: `${rx.url}/compute`, events: ["trigger.fired", "function.*"] }
      })
      expect(hook.status).toBe(201)
      const reader = await createAccount(server, token, { permissions: ["read:records"] })
      const sse = `${server.baseUrl}/realtime/workspace/${server.workspace}/api/v1/events`
      const admin = await openSse(`${sse}?events=function.*`, { authorization: `Bearer ${token}` })
      const plain = await openSse(sse, { authorization: `Bearer ${reader.token}` })
      expect([admin.status, plain.status]).toEqual([200, 200])
      const t = await c.createTrigger({
        name: "evented",
        functionId: audit.id,
        executionType: "on-demand",
        triggerMetadata: { params: { tag: "evented" } }
      })
      const job = await c.call("POST", `/function-triggers/${t.id}/execute`, {})
      await c.waitRun(job.body.jobId)
      await rx.waitFor((hits) => hits.some((h) => h.json?.event === "function.completed" && h.json.data.runId === job.body.jobId), 10_000)
      const fired = rx.hits.find((h) => h.json?.event === "trigger.fired" && h.json.data.runId === job.body.jobId)
      expect(fired?.json.data).toMatchObject({ triggerId: t.id, triggerName: "evented", executionType: "on-demand" })
      const completed = rx.hits.find((h) => h.json?.event === "function.completed" && h.json.data.runId === job.body.jobId)
      expect(completed?.json.data).toMatchObject({ functionId: audit.id, triggerId: t.id, status: "completed" })
      await admin.waitFor(
        (messages) => messages.some((m) => m.json?.event === "function.completed" && m.json.data.runId === job.body.jobId),
        10_000
      )
      // the plain reader saw the audit record's event but no compute event
      await plain.waitFor((messages) => messages.some((m) => m.json?.event === "record.created" && m.json.structure === "audit"), 10_000)
      expect(plain.messages.some((m) => /^(function|trigger)\./.test(m.json?.event ?? ""))).toBe(false)
      admin.close()
      plain.close()
    })
  })
})
