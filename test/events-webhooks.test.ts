// Webhooks end to end: a real node (PGlite, or PostgreSQL when DATABASE_URL is set) with short retry delays, real
// record writes producing the events, and a real local HTTP receiver checking signatures against the raw body.
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { clientCredentialsToken } from "./support/IdentityHelpers.ts"
import { startServer, type TestServer } from "./support/TestServer.ts"
import { type Hit, type Receiver, startReceiver, troupeSignature, verifyStandardWebhook } from "./support/WebhookReceiver.ts"
import { sleep } from "./support/wait.ts"

const DELAYS = [0.2, 0.4, 0.6]

describe("webhooks over HTTP", () => {
  let server: TestServer
  let token: string
  let rx: Receiver
  const hooks = () => `${server.base}/webhooks`

  const createStructure = async (slug: string) => {
    const res = await server.request("POST", `${server.base}/structures`, {
      token,
      body: {
        name: slug,
        recordSlug: slug,
        properties: [
          { name: "title", type: "string" },
          { name: "status", type: "string" },
          { name: "amount", type: "number" }
        ]
      }
    })
    expect(res.status, JSON.stringify(res.body)).toBeLessThan(300)
    return res.body.id as string
  }
  const createRecord = async (slug: string, data: Record<string, unknown>) => {
    const res = await server.request("POST", `${server.base}/structures/${slug}/records`, { token, body: data })
    expect(res.status, JSON.stringify(res.body)).toBeLessThan(300)
    return res.body.id as string
  }
  const createHook = async (body: Record<string, unknown>) => {
    const res = await server.request("POST", hooks(), { token, body })
    expect(res.status, JSON.stringify(res.body)).toBe(201)
    return res.body
  }
  const byPath = (path: string) => rx.hits.filter((h) => h.path === path)

  beforeAll(async () => {
    server = await startServer({ env: { TROUPE_WEBHOOK_RETRY_DELAYS: DELAYS.join(",") } })
    token = await server.adminToken()
    rx = await startReceiver((hit) => (hit.path.startsWith("/fail") ? 500 : 200))
    await createStructure("posts")
    await createStructure("users")
  })
  afterAll(async () => {
    await rx?.close()
    await server?.close()
  })

  describe("management", () => {
    it("creates a webhook: 201 with a generated whsec_ secret shown once", async () => {
      const hook = await createHook({ name: "n1", url: `${rx.url}/m1`, events: ["record.created"], filters: { structure: "posts" } })
      expect(hook).toMatchObject({
        name: "n1",
        url: `${rx.url}/m1`,
        events: ["record.created"],
        filters: { structure: "posts" },
        enabled: true,
        status: "active"
      })
      expect(hook.id).toMatch(/^[0-9a-f-]{36}$/)
      expect(hook.secret).toMatch(/^whsec_/)
      expect(typeof hook.createdAt).toBe("string")
      expect(typeof hook.createdBy).toBe("string")
      const got = await server.request("GET", `${hooks()}/${hook.id}`, { token })
      expect(got.status).toBe(200)
      expect(got.body.secret).toBeUndefined()
      expect(got.body.name).toBe("n1")
    })

    it("lists under both bases", async () => {
      await createHook({ name: "listed", url: `${rx.url}/m2`, events: ["*"] })
      for (const path of [hooks(), `/data${hooks()}`]) {
        const res = await server.request("GET", path, { token })
        expect(res.status).toBe(200)
        expect(res.body.total).toBeGreaterThanOrEqual(2)
        expect(res.body.data.some((w: any) => w.name === "listed")).toBe(true)
        expect(res.body.data.every((w: any) => w.secret === undefined)).toBe(true)
      }
      const page = await server.request("GET", `${hooks()}?limit=1&page=2`, { token })
      expect(page.body).toMatchObject({ page: 2, limit: 1 })
      expect(page.body.data).toHaveLength(1)
    })

    it("updates url, events, filters, name; a new secret is shown, otherwise never", async () => {
      const hook = await createHook({ url: `${rx.url}/m3`, events: ["record.created"], secret: "first-secret" })
      expect(hook.secret).toBe("first-secret")
      expect(hook.name).toContain("127.0.0.1")
      const patched = await server.request("PATCH", `/data${hooks()}/${hook.id}`, {
        token,
        body: { name: "renamed", url: `${rx.url}/m3b`, events: ["record.updated", "record.deleted"], filters: { data: { status: "paid" } } }
      })
      expect(patched.status).toBe(200)
      expect(patched.body).toMatchObject({
        name: "renamed",
        url: `${rx.url}/m3b`,
        events: ["record.updated", "record.deleted"],
        filters: { data: { status: "paid" } }
      })
      expect(patched.body.secret).toBeUndefined()
      const rotated = await server.request("PATCH", `${hooks()}/${hook.id}`, { token, body: { secret: "second-secret" } })
      expect(rotated.body.secret).toBe("second-secret")
      const disabled = await server.request("PATCH", `${hooks()}/${hook.id}`, { token, body: { enabled: false } })
      expect(disabled.body).toMatchObject({ enabled: false, status: "disabled" })
      const enabled = await server.request("PATCH", `${hooks()}/${hook.id}`, { token, body: { enabled: true } })
      expect(enabled.body).toMatchObject({ enabled: true, status: "active" })
    })

    it("deletes: 204, then 404", async () => {
      const hook = await createHook({ url: `${rx.url}/m4`, events: ["*"] })
      const del = await server.request("DELETE", `${hooks()}/${hook.id}`, { token })
      expect(del.status).toBe(204)
      expect((await server.request("GET", `${hooks()}/${hook.id}`, { token })).status).toBe(404)
      expect((await server.request("DELETE", `${hooks()}/${hook.id}`, { token })).status).toBe(404)
      expect((await server.request("PATCH", `${hooks()}/${hook.id}`, { token, body: { name: "x" } })).status).toBe(404)
    })

    it("unknown ids are 404 with the contract body; malformed ids 400 naming the id", async () => {
      const res = await server.request("GET", `${hooks()}/00000000-0000-4000-8000-000000000000`, { token })
      expect(res.status).toBe(404)
      expect(res.body).toMatchObject({ error: "Not Found", statusCode: 404, code: "NOT_FOUND", details: [] })
      expect(typeof res.body.requestId).toBe("string")
      for (const [method, path] of [
        ["GET", "/not-a-uuid"],
        ["PATCH", "/not-a-uuid"],
        ["DELETE", "/not-a-uuid"],
        ["GET", "/not-a-uuid/failures"],
        ["POST", "/not-a-uuid/test"],
        ["GET", "/not-a-uuid/deliveries"]
      ] as const) {
        const bad = await server.request(method, `${hooks()}${path}`, { token, ...(method === "PATCH" ? { body: { name: "x" } } : {}) })
        expect(bad.status, `${method} ${path}`).toBe(400)
        expect(bad.body).toMatchObject({ statusCode: 400, code: "BAD_REQUEST", details: [{ field: "id", property: "id" }] })
      }
    })

    it("bad input is 400 with details naming the field", async () => {
      const cases: Array<[Record<string, unknown>, string]> = [
        [{ url: `${rx.url}/x`, events: ["record.exploded"] }, "events[0]"],
        [{ url: `${rx.url}/x`, events: [] }, "events"],
        [{ url: "ftp://example.com/x", events: ["*"] }, "url"],
        [{ url: "not a url", events: ["*"] }, "url"],
        [{ events: ["*"] }, "url"],
        [{ url: `${rx.url}/x`, events: ["*"], filters: { structur: "posts" } }, "filters.structur"],
        [{ url: `${rx.url}/x`, events: ["*"], filters: { query: "amount >" } }, "filters.query"],
        [{ url: `${rx.url}/x`, events: ["*"], filters: { data: "x" } }, "filters.data"],
        [{ url: `${rx.url}/x`, events: ["*"], secret: "" }, "secret"]
      ]
      for (const [body, field] of cases) {
        const res = await server.request("POST", hooks(), { token, body })
        expect(res.status, JSON.stringify(body)).toBe(400)
        expect(res.body.statusCode).toBe(400)
        expect(
          res.body.details.map((d: any) => d.field),
          JSON.stringify(res.body)
        ).toContain(field)
      }
      const hook = await createHook({ url: `${rx.url}/m5`, events: ["*"] })
      const badPatch = await server.request("PATCH", `${hooks()}/${hook.id}`, { token, body: { events: ["nope"] } })
      expect(badPatch.status).toBe(400)
    })

    it("needs a token, read:webhooks to read and write:webhooks to change", async () => {
      expect((await server.request("GET", hooks())).status).toBe(401)
      const sa = await server.request("POST", `${server.base}/service-accounts`, {
        token,
        body: { name: "hook-reader", permissions: ["read:webhooks"] }
      })
      expect(sa.status, JSON.stringify(sa.body)).toBe(201)
      const reader = await clientCredentialsToken(server, sa.body.clientId, sa.body.clientSecret)
      expect((await server.request("GET", hooks(), { token: reader })).status).toBe(200)
      const denied = await server.request("POST", hooks(), { token: reader, body: { url: `${rx.url}/x`, events: ["*"] } })
      expect(denied.status).toBe(403)
      expect(denied.body.code).toBe("PERMISSION_DENIED")
    })
  })

  describe("delivery", () => {
    it("POSTs the event payload signed over the raw body, with the troupe and Standard Webhooks headers", async () => {
      const secret = "delivery-secret"
      await createHook({ url: `${rx.url}/d1`, events: ["record.created", "record.updated"], filters: { structure: "posts" }, secret })
      const generated = await createHook({ url: `${rx.url}/d1std`, events: ["record.created"], filters: { structure: "posts" } })
      const id = await createRecord("posts", { title: "Hello", status: "draft" })
      await createRecord("users", { title: "not for this hook" })
      await rx.waitFor(() => byPath("/d1").length >= 1 && byPath("/d1std").length >= 1)
      const hit = byPath("/d1")[0]!
      expect(hit.method).toBe("POST")
      expect(hit.headers["content-type"]).toMatch(/^application\/json/)
      expect(hit.headers["x-troupe-signature"]).toBe(troupeSignature(secret, hit.body))
      expect(hit.headers["x-troupe-event"]).toBe("record.created")
      expect(hit.headers["x-troupe-delivery"]).toMatch(/^[0-9a-f-]{36}$/)
      expect(hit.headers["webhook-id"]).toBe(hit.headers["x-troupe-delivery"])
      expect(Math.abs(Number(hit.headers["webhook-timestamp"]) - Date.now() / 1000)).toBeLessThan(300)
      expect(verifyStandardWebhook(secret, hit.headers, hit.body)).toBe(true)
      expect(hit.json).toMatchObject({
        event: "record.created",
        workspace: server.workspace,
        data: { structure: "posts", recordId: id, record: { id, title: "Hello", status: "draft" } }
      })
      expect(Number.isNaN(Date.parse(hit.json.timestamp))).toBe(false)
      // a generated whsec_ secret verifies the way the Standard Webhooks libraries do it
      const std = byPath("/d1std")[0]!
      expect(verifyStandardWebhook(generated.secret, std.headers, std.body)).toBe(true)
      expect(std.headers["x-troupe-signature"]).toBe(troupeSignature(generated.secret, std.body))

      const patched = await server.request("PATCH", `${server.base}/structures/posts/records/${id}`, {
        token,
        body: { status: "published" }
      })
      expect(patched.status, JSON.stringify(patched.body)).toBeLessThan(300)
      await rx.waitFor(() => byPath("/d1").length >= 2)
      const update = byPath("/d1")[1]!
      expect(update.headers["x-troupe-event"]).toBe("record.updated")
      expect(update.json.data.record).toMatchObject({ id, status: "published" })
      await sleep(300)
      // the users record never reached the posts-only webhook
      expect(byPath("/d1").every((h) => h.json.data.structure === "posts")).toBe(true)
    })

    it("filters by field equality and by a query-language condition", async () => {
      await createHook({ url: `${rx.url}/eq`, events: ["record.created"], filters: { structure: "posts", data: { status: "paid" } } })
      await createHook({ url: `${rx.url}/q`, events: ["record.*"], filters: { query: "amount > 100 AND status = 'paid'" } })
      await createRecord("posts", { title: "a", status: "open", amount: 500 })
      const paidBig = await createRecord("posts", { title: "b", status: "paid", amount: 500 })
      const paidSmall = await createRecord("posts", { title: "c", status: "paid", amount: 5 })
      await rx.waitFor(() => byPath("/eq").length >= 2 && byPath("/q").length >= 1)
      await sleep(300)
      expect(
        byPath("/eq")
          .map((h) => h.json.data.recordId)
          .sort()
      ).toEqual([paidBig, paidSmall].sort())
      expect(byPath("/q").map((h) => h.json.data.recordId)).toEqual([paidBig])
    })

    it("keeps event order per webhook", async () => {
      await createHook({ url: `${rx.url}/order`, events: ["record.created"], filters: { structure: "users" } })
      const ids: Array<string> = []
      for (let i = 0; i < 10; i++) ids.push(await createRecord("users", { title: `u${i}` }))
      await rx.waitFor(() => byPath("/order").length >= 10)
      expect(byPath("/order").map((h) => h.json.data.recordId)).toEqual(ids)
    })

    it("retries after the configured delays with one delivery id, then lists the failure and stops until re-enabled", async () => {
      const hook = await createHook({ url: `${rx.url}/fail`, events: ["record.created"], filters: { structure: "posts" }, secret: "s" })
      const first = await createRecord("posts", { title: "doomed" })
      await rx.waitFor(() => byPath("/fail").length >= 4, 20_000, "4 attempts")
      const attempts = byPath("/fail")
      expect(new Set(attempts.map((h) => h.headers["x-troupe-delivery"])).size).toBe(1)
      expect(attempts.every((h) => h.body === attempts[0]!.body)).toBe(true)
      for (let i = 1; i < 4; i++) {
        expect(attempts[i]!.at - attempts[i - 1]!.at).toBeGreaterThanOrEqual(DELAYS[i - 1]! * 1000 - 20)
      }
      let state: any
      for (let i = 0; i < 100; i++) {
        state = (await server.request("GET", `${hooks()}/${hook.id}`, { token })).body
        if (state.status === "failed") break
        await sleep(50)
      }
      expect(state.status).toBe("failed")
      const failures = await server.request("GET", `${hooks()}/${hook.id}/failures`, { token })
      expect(failures.status).toBe(200)
      expect(failures.body.failures).toHaveLength(1)
      const failure = failures.body.failures[0]
      expect(failure).toMatchObject({ event: "record.created", attempts: 4, lastStatus: 500 })
      expect(failure.id).toBe(attempts[0]!.headers["x-troupe-delivery"])
      expect(failure.payload.data.recordId).toBe(first)
      expect(failure.lastError).toMatch(/500/)
      expect(Number.isNaN(Date.parse(failure.failedAt))).toBe(false)

      // failed: receives nothing new
      await createRecord("posts", { title: "ignored" })
      await sleep(1500)
      expect(byPath("/fail")).toHaveLength(4)

      // re-enabled, pointing at a healthy path: active again and delivering
      const back = await server.request("PATCH", `${hooks()}/${hook.id}`, { token, body: { enabled: true, url: `${rx.url}/recovered` } })
      expect(back.body).toMatchObject({ status: "active", enabled: true })
      const later = await createRecord("posts", { title: "after" })
      await rx.waitFor(() => byPath("/recovered").some((h) => h.json.data.recordId === later))
      expect(byPath("/recovered").map((h: Hit) => h.json.data.recordId)).toEqual([later])
    })

    it("test endpoint: 200 {delivered, status, durationMs}, signed like a real delivery", async () => {
      const ok = await createHook({ url: `${rx.url}/t-ok`, events: ["*"], secret: "test-secret" })
      const res = await server.request("POST", `${hooks()}/${ok.id}/test`, { token })
      expect(res.status).toBe(200)
      expect(res.body).toMatchObject({ delivered: true, status: 200 })
      expect(typeof res.body.durationMs).toBe("number")
      const hit = byPath("/t-ok")[0]!
      expect(hit.headers["x-troupe-signature"]).toBe(troupeSignature("test-secret", hit.body))
      expect(hit.headers["x-troupe-event"]).toBe("webhook.test")
      expect(hit.json).toMatchObject({ event: "webhook.test", workspace: server.workspace })
      const withBody = await server.request("POST", `/data${hooks()}/${ok.id}/test`, {
        token,
        body: { event: "record.created", data: { hello: 1 } }
      })
      expect(withBody.body.delivered).toBe(true)
      expect(byPath("/t-ok")[1]!.json).toMatchObject({ event: "record.created", data: { hello: 1 } })
      // an event name that does not exist, or data that is not an object: 400, nothing sent
      for (const body of [{ event: "nope" }, { event: "record.*" }, { data: "text" }]) {
        const refused = await server.request("POST", `${hooks()}/${ok.id}/test`, { token, body })
        expect(refused.status, JSON.stringify(body)).toBe(400)
        expect(refused.body.code).toBe("VALIDATION_ERROR")
      }
      expect(byPath("/t-ok")).toHaveLength(2)

      const bad = await createHook({ url: `${rx.url}/fail-test`, events: ["*"] })
      const failed = await server.request("POST", `${hooks()}/${bad.id}/test`, { token, body: {} })
      expect(failed.status).toBe(200)
      expect(failed.body).toMatchObject({ delivered: false, status: 500 })
      const nowhere = await createHook({ url: "http://127.0.0.1:1/closed", events: ["*"] })
      const refused = await server.request("POST", `${hooks()}/${nowhere.id}/test`, { token })
      expect(refused.body).toMatchObject({ delivered: false, status: null })
      expect(typeof refused.body.error).toBe("string")
    })

    it("delivery log shows status, attempts, response code and duration; redelivery resends with the same delivery id", async () => {
      const hook = await createHook({ url: `${rx.url}/log`, events: ["record.created"], filters: { structure: "users" } })
      const id = await createRecord("users", { title: "logged" })
      await rx.waitFor(() => byPath("/log").length >= 1)
      let log: any
      for (let i = 0; i < 100; i++) {
        log = (await server.request("GET", `${hooks()}/${hook.id}/deliveries`, { token })).body
        if (log.data[0]?.status === "delivered") break
        await sleep(50)
      }
      expect(log.total).toBe(1)
      const entry = log.data[0]
      expect(entry).toMatchObject({
        webhookId: hook.id,
        event: "record.created",
        status: "delivered",
        attempts: 1,
        lastStatus: 200,
        redeliveryOf: null
      })
      expect(typeof entry.durationMs).toBe("number")
      expect(typeof entry.eventId).toBe("string")
      const detail = await server.request("GET", `${hooks()}/${hook.id}/deliveries/${entry.id}`, { token })
      expect(detail.status).toBe(200)
      expect(detail.body.payload.data.recordId).toBe(id)
      expect((await server.request("GET", `${hooks()}/${hook.id}/deliveries?status=failed`, { token })).body.total).toBe(0)

      const again = await server.request("POST", `${hooks()}/${hook.id}/deliveries/${entry.id}/redeliver`, { token })
      expect(again.status).toBe(202)
      expect(again.body).toMatchObject({ redeliveryOf: entry.id, event: "record.created" })
      await rx.waitFor(() => byPath("/log").length >= 2)
      const [original, resent] = byPath("/log")
      expect(resent!.body).toBe(original!.body)
      expect(resent!.headers["x-troupe-delivery"]).toBe(original!.headers["x-troupe-delivery"])
      const after = (await server.request("GET", `${hooks()}/${hook.id}/deliveries`, { token })).body
      expect(after.total).toBe(2)
      expect(
        (await server.request("POST", `${hooks()}/${hook.id}/deliveries/00000000-0000-4000-8000-000000000000/redeliver`, { token })).status
      ).toBe(404)
      const malformed = await server.request("GET", `${hooks()}/${hook.id}/deliveries/not-a-uuid`, { token })
      expect(malformed.status).toBe(400)
      expect(malformed.body.details).toMatchObject([{ field: "deliveryId" }])

      // a webhook that is not active refuses redelivery
      await server.request("PATCH", `${hooks()}/${hook.id}`, { token, body: { enabled: false } })
      const refused = await server.request("POST", `${hooks()}/${hook.id}/deliveries/${entry.id}/redeliver`, { token })
      expect(refused.status).toBe(409)
    })

    it("redeliveries racing the webhook's delete: 202 or 404 NOT_FOUND, never a 500", async () => {
      for (let round = 0; round < 5; round++) {
        const hook = await createHook({ url: `${rx.url}/race-${round}`, events: ["record.created"], filters: { structure: "posts" } })
        await createRecord("posts", { title: `race ${round}` })
        let entry: any
        for (let i = 0; i < 100 && entry === undefined; i++) {
          entry = (await server.request("GET", `${hooks()}/${hook.id}/deliveries`, { token })).body.data[0]
          if (entry === undefined) await sleep(50)
        }
        expect(entry).toBeDefined()
        const redeliver = () => server.request("POST", `${hooks()}/${hook.id}/deliveries/${entry.id}/redeliver`, { token })
        const answers = await Promise.all([
          ...Array.from({ length: 6 }, redeliver),
          server.request("DELETE", `${hooks()}/${hook.id}`, { token }),
          ...Array.from({ length: 6 }, redeliver)
        ])
        expect(answers[6]!.status, answers[6]!.text).toBe(204)
        for (const res of [...answers.slice(0, 6), ...answers.slice(7)]) {
          expect([202, 404], res.text).toContain(res.status)
          if (res.status === 404) expect(res.body.code).toBe("NOT_FOUND")
        }
      }
      expect(server.output()).not.toContain("request failed")
    })
  })
})

describe("webhook URLs in production", () => {
  let server: TestServer
  beforeAll(async () => {
    server = await startServer({ env: { NODE_ENV: "production" } })
  })
  afterAll(async () => {
    await server?.close()
  })

  it("refuses loopback and private addresses, accepts public ones", async () => {
    const token = await server.adminToken()
    for (const url of [
      "http://127.0.0.1:9000/x",
      "http://localhost/x",
      "http://10.0.0.8/x",
      "http://[::1]/x",
      "http://169.254.169.254/x"
    ]) {
      const res = await server.request("POST", `${server.base}/webhooks`, { token, body: { url, events: ["*"] } })
      expect(res.status, url).toBe(400)
      expect(res.body.details[0].field).toBe("url")
    }
    const ok = await server.request("POST", `${server.base}/webhooks`, { token, body: { url: "https://example.com/hook", events: ["*"] } })
    expect(ok.status).toBe(201)
    const patched = await server.request("PATCH", `${server.base}/webhooks/${ok.body.id}`, { token, body: { url: "http://192.168.1.1/x" } })
    expect(patched.status).toBe(400)
  })
})
