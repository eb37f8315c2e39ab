// The TTL sweeper end to end: an expired record is hidden from reads at once, then removed from the table by the
// sweeper (live or soft-deleted), which writes a `record.expired` event in the same transaction. Through HTTP the
// removal shows as that event on the realtime stream (it commits with the DELETE); the PostgreSQL run also checks
// the rows themselves.
import postgres from "postgres"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { subscribe } from "./support/records.ts"
import { startServer, type TestServer } from "./support/TestServer.ts"
import { eventually } from "./support/wait.ts"

describe("record TTL sweeper", () => {
  let server: TestServer
  let token: string
  let structureId: string
  beforeAll(async () => {
    server = await startServer({ env: { TROUPE_TTL_SWEEP_SECONDS: "1" } })
    token = await server.adminToken()
    const res = await server.request("POST", `${server.base}/structures`, {
      token,
      body: {
        name: "Ttl Item",
        recordSlug: "ttl-item",
        properties: [
          { name: "code", type: "string", isUnique: true },
          { name: "pin", type: "string", isSecret: true }
        ]
      }
    })
    expect(res.status).toBeLessThan(300)
    structureId = res.body.id
  })
  afterAll(async () => {
    await server?.close()
  })

  const create = (data: Record<string, unknown>, ttlSeconds?: number) =>
    server.request("POST", `${server.base}/records${ttlSeconds !== undefined ? `?ttlSeconds=${ttlSeconds}` : ""}`, {
      token,
      body: { structureId, data }
    })

  it("hides an expired record, then removes it (live or soft-deleted) with a record.expired event", async () => {
    const stream = await subscribe(server, token, "events=record.expired&structure=ttl-item")
    try {
      const keep = await create({ code: "keep", pin: "0000" })
      const live = await create({ code: "c-1", pin: "1234" }, 1)
      const deleted = await create({ code: "c-2", pin: "5678" }, 1)
      for (const r of [keep, live, deleted]) expect(r.status).toBe(201)
      expect(keep.body.expiresAt).toBeNull()
      // expiresAt is computed in the node, createdAt is the transaction's start: about 1 s apart, not exactly
      expect(Date.parse(live.body.expiresAt) - Date.parse(live.body.createdAt)).toBeGreaterThanOrEqual(500)
      expect(Date.parse(live.body.expiresAt) - Date.parse(live.body.createdAt)).toBeLessThanOrEqual(1500)
      expect((await server.request("DELETE", `${server.base}/records/${deleted.body.id}`, { token })).status).toBe(200)
      const expiredIds = [live.body.id as string, deleted.body.id as string]

      // reads hide the record as soon as it expires
      await eventually(async () => {
        const res = await server.request("GET", `${server.base}/records/${live.body.id}`, { token })
        return res.status === 404 ? res : undefined
      })

      // the sweeper removes both and says so, once each
      const events = await eventually(async () => {
        const mine = stream.messages.filter((m) => expiredIds.includes(m.data?.record?.id))
        return mine.length >= 2 ? mine : undefined
      })
      expect(events.map((e) => e.data.record.id).sort()).toEqual([...expiredIds].sort())
      const event = events.find((e) => e.data.record.id === live.body.id)
      expect(event).toMatchObject({
        event: "record.expired",
        workspace: server.workspace,
        structure: "ttl-item",
        data: {
          record: { id: live.body.id, structureId, data: { code: "c-1", pin: "********" } },
          previous: null,
          changes: {},
          metadata: { userId: "system", source: "ttl" }
        }
      })
      expect(typeof event.timestamp).toBe("string")

      // an expired record's unique value is free again
      const again = await eventually(async () => {
        const res = await create({ code: "c-1" })
        return res.status === 409 ? undefined : res
      })
      expect(again.status).toBe(201)
      // a record without TTL stays
      expect((await server.request("GET", `${server.base}/records/${keep.body.id}`, { token })).status).toBe(200)

      if (server.databaseUrl !== undefined) {
        const db = postgres(server.databaseUrl, { max: 1, onnotice: () => {} })
        try {
          const all: Array<string> = [...expiredIds, keep.body.id]
          const rows = await db`SELECT id FROM records WHERE id IN ${db(all)}`
          expect(rows.map((r) => r.id)).toEqual([keep.body.id])
          const versions = await db`SELECT count(*)::int AS n FROM record_versions WHERE record_id IN ${db(expiredIds)}`
          expect(versions[0]!.n).toBe(0)
          const stored = await db`SELECT record_id, structure_id, record_slug, payload FROM events
            WHERE type = 'record.expired' AND record_id IN ${db(expiredIds)}`
          expect(stored.map((r) => r.record_id).sort()).toEqual([...expiredIds].sort())
          for (const row of stored) {
            expect(row.structure_id).toBe(structureId)
            expect(row.record_slug).toBe("ttl-item")
            expect(row.payload.data.record.data.pin).toBe("********")
            expect(row.payload.data.metadata).toEqual({ userId: "system", source: "ttl" })
          }
        } finally {
          await db.end()
        }
      }
    } finally {
      await stream.close()
    }
  })

  it("keeps a record whose TTL was cleared", async () => {
    const r = await create({ code: "cleared" }, 3)
    expect(r.status).toBe(201)
    const patched = await server.request("PATCH", `${server.base}/records/${r.body.id}?clearTtl=true`, {
      token,
      body: { data: {} }
    })
    expect(patched.status).toBe(200)
    expect(patched.body.expiresAt).toBeNull()
    // a marker expiring after the cleared record's old expiry: once it is swept, a sweep has passed that time too
    expect((await create({ code: "marker" }, 3)).status).toBe(201)
    await eventually(async () => {
      const res = await create({ code: "marker" })
      return res.status === 201 ? res : undefined
    })
    const res = await server.request("GET", `${server.base}/records/${r.body.id}`, { token })
    expect(res.status).toBe(200)
    expect(res.body.expiresAt).toBeNull()
  })
})
