// On-demand triggers, drafts and re-runs end to end: trigger CRUD with versions and encrypted params, the system
// default-trigger, execute, publishing drafts of functions and triggers, re-runs with lineage and every re-run error
// (README: Functions and triggers › Runs), and the default-trigger of a workspace created later.
import * as Crypto from "node:crypto"
import postgres from "postgres"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { computeClient, fn } from "./support/compute.ts"
import { startServer, type TestServer } from "./support/TestServer.ts"

describe("on-demand triggers, drafts and re-runs", () => {
  let server: TestServer
  let token: string
  let c: ReturnType<typeof computeClient>
  let echo: { id: string }

  beforeAll(async () => {
    server = await startServer()
    token = await server.adminToken()
    c = computeClient(server, token)
    echo = await c.createFunction("echo", fn("return { success: true, data: { params: executionParams, trigger: triggerParams } }"))
  })
  afterAll(async () => {
    await server?.close()
  })

  describe("triggers", () => {
    it("creates an on-demand trigger with encrypted params that the function sees in plaintext", async () => {
      const trigger = await c.createTrigger({
        name: "echo-now",
        description: "runs echo",
        functionId: echo.id,
        executionType: "on-demand",
        triggerMetadata: { params: { plain: 1, apiKey: { value: "sk-live-123", encrypt: true } } }
      })
      expect(trigger).toMatchObject({ name: "echo-now", executionType: "on-demand", functionId: echo.id, paused: false, isSystem: false })
      const key = trigger.triggerMetadata.params.apiKey
      expect(key).toMatchObject({ encrypted: true })
      expect(typeof key.keyVersion).toBe("number")
      expect(key.keyVersion).toBeGreaterThan(0)
      expect(JSON.stringify(trigger)).not.toContain("sk-live-123")
      const read = await c.call("GET", `/function-triggers/${trigger.id}`)
      expect(read.body.triggerMetadata.params.apiKey).toEqual(key)

      const executed = await c.call("POST", `/function-triggers/${trigger.id}/execute`, { orderId: 42, nested: { a: true } })
      expect(executed.status).toBe(200)
      expect(executed.body.jobId).toMatch(/^[0-9a-f-]{36}$/)
      const run = await c.waitRun(executed.body.jobId)
      expect(run).toMatchObject({
        status: "completed",
        triggerId: trigger.id,
        functionId: echo.id,
        executionSource: "manual",
        functionVersion: "1"
      })
      expect(run.result.data).toEqual({ params: { orderId: 42, nested: { a: true } }, trigger: { plain: 1, apiKey: "sk-live-123" } })

      // sending the shown form back keeps the secret; changing the name stores a version
      const put = await c.call("PUT", `/function-triggers/${trigger.id}`, {
        name: "echo-later",
        triggerMetadata: read.body.triggerMetadata
      })
      expect(put.status, put.text).toBe(200)
      expect(put.body.triggerMetadata.params.apiKey.value).toBe(key.value)
      expect(put.body.version).toBe(2)
      const again = await c.waitRun((await c.call("POST", `/function-triggers/${trigger.id}/execute`, {})).body.jobId)
      expect(again.result.data.trigger.apiKey).toBe("sk-live-123")
      const forged = await c.call("PUT", `/function-triggers/${trigger.id}`, {
        triggerMetadata: { params: { apiKey: { value: "plain-text", encrypted: true, keyVersion: 1 } } }
      })
      expect(forged.status).toBe(400)
      const versions = await c.call("GET", `/function-triggers/${trigger.id}/versions`)
      expect(versions.body.versions.map((v: any) => v.version)).toEqual([2, 1])
    })

    it("rules: unique names, executionType fixed, execute only on-demand, pause only scheduled", async () => {
      const t = await c.createTrigger({ name: "rules", functionId: echo.id, executionType: "on-demand" })
      expect((await c.call("POST", "/function-triggers", { name: "rules", functionId: echo.id, executionType: "on-demand" })).status).toBe(
        409
      )
      const changed = await c.call("PUT", `/function-triggers/${t.id}`, { executionType: "scheduled" })
      expect(changed.status).toBe(400)
      expect((await c.call("PUT", `/function-triggers/${t.id}`, { executionType: "on-demand", description: "same type" })).status).toBe(200)
      expect((await c.call("PATCH", `/function-triggers/${t.id}/pause`)).status).toBe(400)
      const missingFn = await c.call("POST", "/function-triggers", {
        name: "x",
        functionId: Crypto.randomUUID(),
        executionType: "on-demand"
      })
      expect(missingFn.status).toBe(404)
      expect((await c.call("POST", "/function-triggers", { name: "y", functionId: "nope", executionType: "on-demand" })).status).toBe(400)
      expect((await c.call("POST", "/function-triggers", { name: "z", functionId: echo.id, executionType: "sometimes" })).status).toBe(400)
      expect((await c.call("GET", "/function-triggers/nope")).status).toBe(400)
      expect((await c.call("GET", `/function-triggers/${Crypto.randomUUID()}`)).status).toBe(404)
      const list = await c.call("GET", "/function-triggers?search=rules")
      expect(list.body).toMatchObject({ total: 1, page: 1 })
      expect(list.body.triggers[0]).toMatchObject({ id: t.id, name: "rules", executionType: "on-demand", functionId: echo.id })
      const del = await c.call("DELETE", `/function-triggers/${t.id}`)
      expect(del.status).toBe(200)
      expect((await c.call("GET", `/function-triggers/${t.id}`)).status).toBe(404)
    })

    it("default-trigger exists, is readable, and cannot be updated, deleted or executed", async () => {
      const list = await c.call("GET", "/function-triggers?search=default-trigger")
      const system = list.body.triggers[0]
      expect(system).toMatchObject({ name: "default-trigger", isSystem: true, executionType: "on-demand" })
      expect((await c.call("GET", `/function-triggers/${system.id}`)).status).toBe(200)
      expect((await c.call("PUT", `/function-triggers/${system.id}`, { description: "x" })).status).toBe(400)
      expect((await c.call("DELETE", `/function-triggers/${system.id}`)).status).toBe(400)
      expect((await c.call("POST", `/function-triggers/${system.id}/execute`, {})).status).toBe(400)
      expect(
        (await c.call("POST", "/function-triggers", { name: "default-trigger", functionId: echo.id, executionType: "on-demand" })).status
      ).toBe(409)
    })

    it("a workspace created later has its default-trigger", async () => {
      const created = await server.request("POST", "/workspace/api/v1/workspaces", { token, body: { slug: "later", name: "Later" } })
      expect(created.status, created.text).toBe(201)
      const laterToken = await server.userToken("admin", server.adminPassword, "later")
      const later = computeClient(server, laterToken, "later")
      const list = await later.call("GET", "/function-triggers")
      expect(list.body.triggers.map((t: any) => t.name)).toEqual(["default-trigger"])
      const run = await later.runCode(fn("return 'ok'"))
      expect(run.triggerId).toBe(list.body.triggers[0].id)
    })

    it("a deleted function's trigger stays and execute answers 400", async () => {
      const doomed = await c.createFunction("doomed", fn("return 1"))
      const t = await c.createTrigger({ name: "orphan", functionId: doomed.id, executionType: "on-demand" })
      const run = await c.waitRun((await c.call("POST", `/function-triggers/${t.id}/execute`, {})).body.jobId)
      expect((await c.call("DELETE", `/compute-functions/${doomed.id}`)).status).toBe(200)
      expect((await c.call("GET", `/function-triggers/${t.id}`)).status).toBe(200)
      const exec = await c.call("POST", `/function-triggers/${t.id}/execute`, {})
      expect(exec.status).toBe(400)
      expect(exec.body.message).toBe(`Function not found for trigger: ${t.id}`)
      const rerun = await c.call("POST", `/function-runs/${run.id}/rerun`, {})
      expect(rerun.status).toBe(400)
      expect(rerun.body.message).toBe(`Function not found for trigger: ${t.id}`)
    })
  })

  describe("simplified /functions", () => {
    it("POST /functions/{id}/execute queues a run whose params are the body", async () => {
      const res = await c.call("POST", `/functions/${echo.id}/execute`, { hello: "world" })
      expect(res.status).toBe(200)
      expect(res.body.status).toBe("queued")
      const run = await c.waitRun(res.body.jobId)
      expect(run).toMatchObject({ status: "completed", functionId: echo.id })
      expect(run.result.data.params).toEqual({ hello: "world" })
      expect((await c.call("POST", `/functions/${Crypto.randomUUID()}/execute`, {})).status).toBe(404)
    })
  })

  describe("drafts", () => {
    it("a function draft is read, updated, listed and published (then gone); a name clash is 409 and keeps it", async () => {
      const draft = await c.call("POST", "/drafts", {
        resourceType: "compute-functions",
        data: { name: "drafted", code: fn("return 'v1'") }
      })
      expect(draft.status).toBe(201)
      expect(draft.body).toMatchObject({ resourceType: "compute-functions", data: { name: "drafted" } })
      const put = await c.call("PUT", `/drafts/${draft.body.id}`, {
        data: { name: "drafted", code: fn("return 'v2'"), description: "reviewed" }
      })
      expect(put.status).toBe(200)
      expect(put.body.data.description).toBe("reviewed")
      expect((await c.call("GET", `/drafts/${draft.body.id}`)).body.data.description).toBe("reviewed")
      expect((await c.call("GET", "/drafts")).body.drafts.some((d: any) => d.id === draft.body.id)).toBe(true)
      const published = await c.call("POST", `/compute-functions/${draft.body.id}/publish`)
      expect(published.status, published.text).toBe(201)
      expect(published.body).toMatchObject({ name: "drafted", description: "reviewed", version: 1 })
      expect((await c.call("GET", `/drafts/${draft.body.id}`)).status).toBe(404)

      const clash = await c.call("POST", "/drafts", { resourceType: "compute-functions", data: { name: "drafted", code: fn("return 1") } })
      const refused = await c.call("POST", `/compute-functions/${clash.body.id}/publish`)
      expect(refused.status).toBe(409)
      expect((await c.call("GET", `/drafts/${clash.body.id}`)).status).toBe(200)
      const invalidDraft = await c.call("POST", "/drafts", { resourceType: "compute-functions", data: { name: "no-code" } })
      expect((await c.call("POST", `/compute-functions/${invalidDraft.body.id}/publish`)).status).toBe(400)
      expect((await c.call("DELETE", `/drafts/${invalidDraft.body.id}`)).status).toBe(200)
      // the create's own checks name the field inside the draft too
      const badCode = await c.call("POST", "/drafts", {
        resourceType: "compute-functions",
        data: { name: "old-style", code: "exports.handler = 1" }
      })
      const codeRefused = await c.call("POST", `/compute-functions/${badCode.body.id}/publish`)
      expect(codeRefused.status).toBe(400)
      expect(codeRefused.body.details[0]).toMatchObject({ field: "data.code", property: "data.code" })
      expect((await c.call("POST", "/drafts", { resourceType: "pages", data: {} })).status).toBe(400)
    })

    it("a trigger draft is published through /function-triggers/{draftId}/publish; its params to encrypt are never stored or shown in plaintext", async () => {
      const draft = await c.call("POST", "/drafts", {
        resourceType: "function-triggers",
        data: {
          name: "drafted-trigger",
          functionId: echo.id,
          executionType: "on-demand",
          triggerMetadata: { params: { plain: 1, apiKey: { value: "sk-draft-123", encrypt: true } } }
        }
      })
      expect(draft.status).toBe(201)
      expect(draft.body.data.triggerMetadata.params.apiKey).toMatchObject({ encrypted: true })
      expect(draft.body.data.triggerMetadata.params.plain).toBe(1)
      expect(JSON.stringify(draft.body)).not.toContain("sk-draft-123")
      const reread = await c.call("GET", `/drafts/${draft.body.id}`)
      expect(JSON.stringify(reread.body)).not.toContain("sk-draft-123")
      const listed = await c.call("GET", "/drafts?resourceType=function-triggers")
      expect(JSON.stringify(listed.body)).not.toContain("sk-draft-123")
      const edited = await c.call("PUT", `/drafts/${draft.body.id}`, {
        data: {
          ...draft.body.data,
          triggerMetadata: { params: { ...draft.body.data.triggerMetadata.params, other: { value: "sk-other", encrypt: true } } }
        }
      })
      expect(edited.status, edited.text).toBe(200)
      expect(JSON.stringify(edited.body)).not.toContain("sk-other")
      expect((await c.call("POST", `/compute-functions/${draft.body.id}/publish`)).status).toBe(404)
      const published = await c.call("POST", `/function-triggers/${draft.body.id}/publish`)
      expect(published.status, published.text).toBe(201)
      expect(published.body).toMatchObject({ name: "drafted-trigger", executionType: "on-demand" })
      const run = await c.waitRun((await c.call("POST", `/function-triggers/${published.body.id}/execute`, {})).body.jobId)
      expect(run.result.data.trigger).toStrictEqual({ plain: 1, apiKey: "sk-draft-123", other: "sk-other" })
    })
  })

  describe("re-runs", () => {
    it("re-runs with overrides, lineage, an atomic rerunCount and the history", async () => {
      const t = await c.createTrigger({ name: "rerunnable", functionId: echo.id, executionType: "on-demand" })
      const original = await c.waitRun((await c.call("POST", `/function-triggers/${t.id}/execute`, { a: 1, b: 2 })).body.jobId)
      const reruns = await Promise.all(
        Array.from({ length: 5 }, (_, i) =>
          c.call("POST", `/function-runs/${original.id}/rerun`, { reason: `try ${i}`, overrideParams: { b: 3 + i }, useLatestCode: true })
        )
      )
      for (const r of reruns) {
        expect(r.status, r.text).toBe(200)
        expect(r.body.jobId).toMatch(/^[0-9a-f-]{36}$/)
        expect(typeof r.body.message).toBe("string")
      }
      const first = await c.waitRun(reruns[0]!.body.jobId)
      expect(first).toMatchObject({
        status: "completed",
        isRerun: true,
        originalRunId: original.id,
        rerunBy: (await server.request("GET", `${server.base}/me`, { token })).body.id,
        rerunReason: "try 0",
        executionSource: "rerun",
        triggerId: t.id
      })
      expect(first.result.data.params).toEqual({ a: 1, b: 3 })
      const history = await c.call("GET", `/function-runs/${original.id}/rerun-history`)
      expect(history.body).toMatchObject({ originalRunId: original.id, rerunCount: 5 })
      expect(history.body.reruns).toHaveLength(5)
      expect(history.body.reruns[0]).toMatchObject({ originalRunId: original.id, isRerun: true })
      const test = await c.runCode(fn("return executionParams.n * 2"), { n: 21 })
      const rerunTest = await c.waitRun((await c.call("POST", `/function-runs/${test.id}/rerun`, { overrideParams: { n: 5 } })).body.jobId)
      expect(rerunTest.result).toBe(10)
    })

    it("answers every re-run error of the spec with 400", async () => {
      expect((await c.call("POST", "/function-runs/nope/rerun", {})).body.message).toBe("Invalid run ID.")
      const unknown = await c.call("POST", `/function-runs/${Crypto.randomUUID()}/rerun`, {})
      expect(unknown.status).toBe(400)
      expect(unknown.body.message).toBe("Original run not found.")

      const created = await server.request("POST", "/workspace/api/v1/workspaces", { token, body: { slug: "elsewhere" } })
      expect(created.status).toBe(201)
      const other = computeClient(server, await server.userToken("admin", server.adminPassword, "elsewhere"), "elsewhere")
      const foreign = await other.runCode(fn("return 1"))
      const wrong = await c.call("POST", `/function-runs/${foreign.id}/rerun`, {})
      expect(wrong.status).toBe(400)
      expect(wrong.body.message).toBe("Run does not belong to this workspace.")

      const t = await c.createTrigger({ name: "short-lived", functionId: echo.id, executionType: "on-demand" })
      const run = await c.waitRun((await c.call("POST", `/function-triggers/${t.id}/execute`, {})).body.jobId)
      expect((await c.call("DELETE", `/function-triggers/${t.id}`)).status).toBe(200)
      expect((await c.call("GET", `/function-runs/${run.id}`)).status).toBe(200)
      const gone = await c.call("POST", `/function-runs/${run.id}/rerun`, {})
      expect(gone.status).toBe(400)
      expect(gone.body.message).toBe("Original trigger not found; it may have been deleted.")
    })

    // Runs always store their parameters through the API: these two rows of the table are reached by changing the
    // stored row itself, which only a PostgreSQL run can do from the outside.
    it.runIf(process.env.DATABASE_URL)("a run without stored parameters, or with unreadable ones, cannot be re-run", async () => {
      const db = postgres(server.databaseUrl!, { max: 1, onnotice: () => {} })
      try {
        const bare = await c.runCode(fn("return 1"))
        await db`UPDATE function_runs SET parameters = NULL WHERE id = ${bare.id}`
        const none = await c.call("POST", `/function-runs/${bare.id}/rerun`, {})
        expect(none.status).toBe(400)
        expect(none.body.message).toBe("Original run has no parameters stored.")
        const broken = await c.runCode(fn("return 1"))
        const other = await c.runCode(fn("return 2"))
        // a ciphertext bound to another run does not decrypt here
        await db`UPDATE function_runs SET parameters = (SELECT parameters FROM function_runs WHERE id = ${other.id}) WHERE id = ${broken.id}`
        const unreadable = await c.call("POST", `/function-runs/${broken.id}/rerun`, {})
        expect(unreadable.status).toBe(400)
        expect(unreadable.body.message).toBe("Failed to decrypt original run parameters.")
      } finally {
        await db.end()
      }
    })
  })

  describe("rate limits", () => {
    it("test executions, executes, re-runs and HTTP triggers count against the functions class", async () => {
      const limited = await startServer({ env: { TROUPE_LIMIT_FUNCTIONS: "3" } })
      try {
        const t = await limited.adminToken()
        const lc = computeClient(limited, t)
        const fnRow = await lc.createFunction("limited", fn("return 1"))
        const trigger = await lc.createTrigger({ name: "limited-now", functionId: fnRow.id, executionType: "on-demand" })
        const statuses = [
          (await lc.call("POST", "/compute-functions/test", { code: fn("return 1"), params: {} })).status,
          (await lc.call("POST", `/function-triggers/${trigger.id}/execute`, {})).status,
          (await lc.call("POST", `/functions/${fnRow.id}/execute`, {})).status
        ]
        expect(statuses).toEqual([200, 200, 200])
        const over = await lc.call("POST", "/compute-functions/test", { code: fn("return 1"), params: {} })
        expect(over.status).toBe(429)
        expect(over.body.code).toBe("QUOTA_EXCEEDED")
        expect(Number(over.headers.get("retry-after"))).toBeGreaterThan(0)
        // reads are another class
        expect((await lc.call("GET", "/function-runs")).status).toBe(200)
      } finally {
        await limited.close()
      }
    })
  })
})
