// Server-sent events end to end on one node (PGlite, or PostgreSQL when DATABASE_URL is set): auth, framing,
// filters, resume and heartbeats, with real record writes producing the events.
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { clientCredentialsToken } from "./support/IdentityHelpers.ts"
import { openSse, type SseConnection } from "./support/SseClient.ts"
import { startServer, type TestServer } from "./support/TestServer.ts"
import { sleep } from "./support/wait.ts"

describe("realtime (SSE)", () => {
  let server: TestServer
  let token: string
  const open: Array<SseConnection> = []
  const eventsUrl = (query = "") => `${server.baseUrl}/realtime/workspace/${server.workspace}/api/v1/events${query}`
  const connect = async (query = "", headers: Record<string, string> = { authorization: `Bearer ${token}` }) => {
    const c = await openSse(eventsUrl(query), headers)
    open.push(c)
    return c
  }
  const createRecord = async (slug: string, data: Record<string, unknown>) => {
    const res = await server.request("POST", `${server.base}/structures/${slug}/records`, { token, body: data })
    expect(res.status, JSON.stringify(res.body)).toBeLessThan(300)
    return res.body.id as string
  }

  beforeAll(async () => {
    server = await startServer({ env: { TROUPE_SSE_HEARTBEAT_SECONDS: "0.3" } })
    token = await server.adminToken()
    for (const slug of ["notes", "tasks"]) {
      const res = await server.request("POST", `${server.base}/structures`, {
        token,
        body: { name: slug, recordSlug: slug, properties: [{ name: "title", type: "string" }] }
      })
      expect(res.status, JSON.stringify(res.body)).toBeLessThan(300)
    }
  })
  afterAll(async () => {
    for (const c of open) c.close()
    await server?.close()
  })

  it("refuses a missing or bad token (401), another workspace's token and a missing permission (403)", async () => {
    const none = await openSse(eventsUrl())
    expect(none.status).toBe(401)
    expect(none.errorBody).toMatchObject({ statusCode: 401, code: "UNAUTHORIZED" })
    const bad = await openSse(eventsUrl(), { authorization: "Bearer not-a-token" })
    expect(bad.status).toBe(401)
    const badQuery = await openSse(eventsUrl("?access_token=nope"))
    expect(badQuery.status).toBe(401)

    const other = await openSse(`${server.baseUrl}/realtime/workspace/elsewhere/api/v1/events`, { authorization: `Bearer ${token}` })
    expect(other.status).toBe(403)

    const sa = await server.request("POST", `${server.base}/service-accounts`, {
      token,
      body: { name: "no-records", permissions: ["read:webhooks"] }
    })
    const limited = await clientCredentialsToken(server, sa.body.clientId, sa.body.clientSecret)
    const denied = await openSse(eventsUrl(), { authorization: `Bearer ${limited}` })
    expect(denied.status).toBe(403)
    expect(denied.errorBody.code).toBe("PERMISSION_DENIED")
  })

  it("400 for an unknown event name; 405 for another method", async () => {
    const res = await openSse(eventsUrl("?events=record.exploded"), { authorization: `Bearer ${token}` })
    expect(res.status).toBe(400)
    expect(res.errorBody.statusCode).toBe(400)
    const post = await fetch(eventsUrl(), { method: "POST", headers: { authorization: `Bearer ${token}` } })
    expect(post.status).toBe(405)
  })

  it("400 for a resume id that is not an event id (query or header); a whole number resumes", async () => {
    const byQuery = await openSse(eventsUrl("?lastEventId=abc"), { authorization: `Bearer ${token}` })
    expect(byQuery.status).toBe(400)
    expect(byQuery.errorBody).toMatchObject({ code: "VALIDATION_ERROR", details: [{ field: "query.lastEventId" }] })
    for (const bad of ["-5", "1.5"]) {
      const byHeader = await openSse(eventsUrl(), { authorization: `Bearer ${token}`, "last-event-id": bad })
      expect(byHeader.status, bad).toBe(400)
      expect(byHeader.errorBody.details[0].field).toBe("headers.last-event-id")
    }
    const fine = await openSse(eventsUrl("?lastEventId=0"), { authorization: `Bearer ${token}` })
    expect(fine.status).toBe(200)
    fine.close()
  })

  it("streams text/event-stream with retry:, then each event with id: = event id and the event as JSON", async () => {
    const sse = await connect()
    expect(sse.status).toBe(200)
    expect(sse.headers.get("content-type")).toMatch(/^text\/event-stream/)
    expect(sse.headers.get("cache-control")).toMatch(/no-cache/)
    await sleep(100)
    const id = await createRecord("notes", { title: "live" })
    await sse.waitFor((m) => m.some((x) => x.json?.data?.record?.id === id))
    expect(sse.retry()).toBeGreaterThan(0)
    const msg = sse.messages.find((x) => x.json?.data?.record?.id === id)!
    expect(msg.id).toMatch(/^\d+$/)
    expect(msg.json).toMatchObject({
      id: msg.id,
      event: "record.created",
      workspace: server.workspace,
      structure: "notes",
      data: { record: { id, data: { title: "live" } } }
    })
  })

  it("takes the token from ?access_token= and filters by structure and events", async () => {
    const tasksOnly = await connect(`?access_token=${encodeURIComponent(token)}&structure=tasks`, {})
    const updatesOnly = await connect(`?events=record.updated`)
    expect(tasksOnly.status).toBe(200)
    await sleep(100)
    const note = await createRecord("notes", { title: "n" })
    const task = await createRecord("tasks", { title: "t" })
    const patched = await server.request("PATCH", `${server.base}/structures/notes/records/${note}`, { token, body: { title: "n2" } })
    expect(patched.status).toBeLessThan(300)
    await tasksOnly.waitFor((m) => m.some((x) => x.json.data.record.id === task))
    await updatesOnly.waitFor((m) => m.length >= 1)
    await sleep(300)
    expect(tasksOnly.messages.every((x) => x.json.structure === "tasks")).toBe(true)
    expect(updatesOnly.messages.map((x) => [x.json.event, x.json.data.record.id])).toEqual([["record.updated", note]])
  })

  it("resumes after Last-Event-ID (header or ?lastEventId=) without gaps or repeats", async () => {
    const first = await connect("?structure=tasks")
    await sleep(100)
    const ids: Array<string> = []
    for (let i = 0; i < 3; i++) ids.push(await createRecord("tasks", { title: `r${i}` }))
    await first.waitFor((m) => ids.every((id) => m.some((x) => x.json.data.record.id === id)))
    const seen = first.messages.filter((x) => ids.includes(x.json.data.record.id))
    first.close()
    // while disconnected
    const missed = [await createRecord("tasks", { title: "m1" }), await createRecord("tasks", { title: "m2" })]
    const resumed = await connect("?structure=tasks", { authorization: `Bearer ${token}`, "last-event-id": seen[0]!.id! })
    await resumed.waitFor((m) => missed.every((id) => m.some((x) => x.json.data.record.id === id)))
    const live = await createRecord("tasks", { title: "after" })
    await resumed.waitFor((m) => m.some((x) => x.json.data.record.id === live))
    const got = resumed.messages.map((x) => x.json.data.record.id)
    expect(got).toEqual([ids[1], ids[2], ...missed, live])
    const viaQuery = await connect(`?structure=tasks&lastEventId=${seen[1]!.id}`)
    await viaQuery.waitFor((m) => m.some((x) => x.json.data.record.id === live))
    expect(viaQuery.messages.map((x) => x.json.data.record.id)).toEqual([ids[2], ...missed, live])
  })

  it("sends heartbeats while idle", async () => {
    const sse = await connect("?structure=nothing-here")
    const deadline = Date.now() + 10_000
    while (sse.comments.filter((c) => c === "heartbeat").length < 2 && Date.now() < deadline) await sleep(50)
    expect(sse.comments.filter((c) => c === "heartbeat").length).toBeGreaterThanOrEqual(2)
    expect(sse.ended()).toBe(false)
  })
})
