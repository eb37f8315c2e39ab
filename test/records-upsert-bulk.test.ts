// Upsert, Idempotency-Key, bulk routes of both generations (atomic and not), and the outbox events every record
// write appends in its own transaction (README: Records › Upsert and Idempotency-Key, Bulk, Events). Outbox rows are read from the database in
// the PostgreSQL run only: on PGlite the database lives inside the server process.
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import {
  type Client,
  client,
  countOf,
  createStructure,
  database,
  expectError,
  expectStatus,
  createServiceAccountClient,
  slug
} from "./support/records.ts"
import { startServer, type TestServer } from "./support/TestServer.ts"

describe("upsert, bulk and events", () => {
  let server: TestServer
  let api: Client
  let items: { id: string; recordSlug: string }

  beforeAll(async () => {
    server = await startServer({ env: { TROUPE_LIMIT_BULK: "0", TROUPE_LIMIT_WRITES: "0" } })
    api = client(server, await server.adminToken())
    items = await createStructure(api, {
      name: "Item",
      recordSlug: slug("item"),
      properties: [
        { name: "name", type: "string" },
        { name: "sku", type: "string", isUnique: true },
        { name: "n", type: "number" },
        { name: "code", type: "string" },
        { name: "qty", type: "number" },
        { name: "active", type: "boolean", nullable: true },
        { name: "secret", type: "string", isSecret: true }
      ]
    })
  })
  afterAll(async () => {
    await server?.close()
  })

  const upsert = (
    match: Record<string, unknown>,
    data: Record<string, unknown>,
    headers?: Record<string, string>,
    structure = items.recordSlug
  ) => api.call("POST", `/records/slug/${structure}/upsert`, { match, data }, headers)

  describe("upsert", () => {
    it("creates with 201 and the match merged into data, then updates with 200 and the match removed from data", async () => {
      const created = await upsert({ sku: "U-1" }, { name: "first", qty: 1 })
      expectStatus(created, 201)
      expect(created.body).toEqual({
        operation: "created",
        data: { id: expect.any(String), data: { sku: "U-1", name: "first", qty: 1 }, version: 1, createdAt: expect.any(String) }
      })
      const updated = await upsert({ sku: "U-1" }, { name: "second", sku: "IGNORED" })
      expectStatus(updated, 200)
      expect(updated.body).toEqual({
        operation: "updated",
        data: { id: created.body.data.id, data: { sku: "U-1", name: "second", qty: 1 }, version: 2, updatedAt: expect.any(String) }
      })
      const log = await api.call("GET", `/records/${created.body.data.id}/changelog`)
      expect(log.body.entries.map((e: any) => e.action)).toEqual(["update", "create"])
      expect((await api.call("GET", `/records/${created.body.data.id}/history`)).body.versions).toHaveLength(2)
    })

    it('matching is type-exact (42 is not "42") and null matches JSON null only', async () => {
      const s = await createStructure(api, { name: "Loose", recordSlug: slug("loose"), schemaDiscoveryMode: "schemaless", properties: [] })
      expectStatus(await upsert({ k: 42 }, { v: "number" }, undefined, s.recordSlug), 201)
      expectStatus(await upsert({ k: "42" }, { v: "string" }, undefined, s.recordSlug), 201)
      expectStatus(await upsert({ k: 42 }, { v: "number again" }, undefined, s.recordSlug), 200)
      expectStatus(await upsert({ k: true }, { v: "bool" }, undefined, s.recordSlug), 201)
      expectStatus(await upsert({ k: null }, { v: "null" }, undefined, s.recordSlug), 201)
      const again = await upsert({ k: null }, { v: "null again" }, undefined, s.recordSlug)
      expectStatus(again, 200)
      expect(again.body.data.data).toEqual({ k: null, v: "null again" })
      // a record without the field is not matched by null
      expectStatus(await api.call("POST", "/records", { structureId: s.id, data: { other: 1 } }), 201)
      expectStatus(await upsert({ other: 1, k: null }, { v: "x" }, undefined, s.recordSlug), 201)
      expect(await countOf(api, s.id)).toBe(6)
    })

    it("bad upserts are 4xx and write nothing", async () => {
      const n = await countOf(api, items.id)
      expectError(await upsert({}, { name: "x" }), 400, "VALIDATION_ERROR")
      expectError(await upsert({ sku: { nested: 1 } }, { name: "x" }), 400, "VALIDATION_ERROR")
      expectError(await upsert({ secret: "s" }, { name: "x" }), 400, "VALIDATION_ERROR")
      expectError(await upsert({ sku: "U-bad" }, { name: 5 }), 400, "VALIDATION_ERROR")
      expectError(await upsert({ unknown: "x" }, { name: "x" }), 400, "VALIDATION_ERROR")
      expectError(await upsert({ sku: "a\u0000b" }, { name: "x" }), 400, "VALIDATION_ERROR")
      expectError(await api.call("POST", `/records/slug/${items.recordSlug}/upsert`, { data: { name: "x" } }), 400, "VALIDATION_ERROR")
      expectError(
        await api.call("POST", "/records/slug/no-such-structure/upsert", { match: { a: 1 }, data: {} }),
        404,
        "STRUCTURE_NOT_FOUND"
      )
      expect(await countOf(api, items.id)).toBe(n)
    })

    it("needs write permission (create and update): a viewer is refused", async () => {
      const viewer = await createServiceAccountClient(server, api, { role: "viewer" })
      expectError(
        await viewer.call("POST", `/records/slug/${items.recordSlug}/upsert`, { match: { sku: "V" }, data: {} }),
        403,
        "PERMISSION_DENIED"
      )
    })

    it("Idempotency-Key replays the original response without executing again; another body with the key is 422", async () => {
      const key = { "idempotency-key": `key-${Date.now()}` }
      const first = await upsert({ sku: "IDEM-1" }, { qty: 1 }, key)
      expectStatus(first, 201)
      const replay = await upsert({ sku: "IDEM-1" }, { qty: 1 }, key)
      expectStatus(replay, 201)
      expect(replay.body).toEqual(first.body)
      expect(replay.headers.get("idempotent-replayed")).toBe("true")
      expect((await api.call("GET", `/records/${first.body.data.id}`)).body.version).toBe(1)
      expectError(await upsert({ sku: "IDEM-1" }, { qty: 2 }, key), 422, "IDEMPOTENCY_KEY_REUSED")
      const fresh = await upsert({ sku: "IDEM-1" }, { qty: 1 }, { "idempotency-key": `other-${Date.now()}` })
      expectStatus(fresh, 200)
      expect(fresh.body.data.version).toBe(2)
      // a failed request stores nothing under its key: the corrected retry runs
      const failing = { "idempotency-key": `fail-${Date.now()}` }
      expectError(await upsert({ sku: "IDEM-2" }, { qty: "x" }, failing), 400, "VALIDATION_ERROR")
      expectStatus(await upsert({ sku: "IDEM-2" }, { qty: 3 }, failing), 201)
      expectError(await upsert({ sku: "IDEM-3" }, { qty: 3 }, { "idempotency-key": "x".repeat(256) }), 400, "VALIDATION_ERROR")
    })

    it("masks secrets in its answers", async () => {
      const res = await upsert({ sku: "SECRET-1" }, { secret: "hush-hush" })
      expectStatus(res, 201)
      expect(res.body.data.data.secret).toBe("********")
      expect(res.text).not.toContain("hush-hush")
    })
  })

  describe("bulk, generation B", () => {
    const bulkCreate = (records: Array<Record<string, unknown>>, options?: Record<string, unknown>) =>
      api.call("POST", "/records/bulk", {
        structureId: items.id,
        records: records.map((data) => ({ data })),
        ...(options ? { options } : {})
      })

    it("creates every item: 201 with the records", async () => {
      const res = await bulkCreate([
        { name: "b1", n: 1 },
        { name: "b2", n: 2 }
      ])
      expectStatus(res, 201)
      expect(res.body).toMatchObject({ success: true, created: 2, failed: 0, errors: [] })
      expect(res.body.records.map((r: any) => r.data.name)).toEqual(["b1", "b2"])
      const quiet = await bulkCreate([{ name: "b3" }], { returnRecords: false })
      expect(quiet.body.records).toEqual([])
    })

    it("non-atomic: good items are written (201), bad ones listed with success false; all bad is a 4xx contract error", async () => {
      const n = await countOf(api, items.id)
      const res = await bulkCreate([{ name: "ok", sku: "BULK-1" }, { name: 5 }, { name: "dup", sku: "BULK-1" }])
      expectStatus(res, 201)
      expect(res.body).toMatchObject({ success: false, created: 1, failed: 2 })
      expect(res.body.errors).toEqual([
        {
          index: 1,
          code: "VALIDATION_ERROR",
          message: expect.any(String),
          details: [{ field: "data.name", property: "data.name", message: expect.any(String) }]
        },
        {
          index: 2,
          code: "DUPLICATE_KEY",
          message: expect.any(String),
          details: [{ field: "data.sku", property: "data.sku", message: expect.any(String) }]
        }
      ])
      expect(await countOf(api, items.id)).toBe(n + 1)
      const allBad = await bulkCreate([{ name: 1 }, { qty: "x" }])
      expectError(allBad, 400, "VALIDATION_ERROR")
      expect(allBad.body.details.map((d: any) => d.field)).toEqual(["records[0].data.name", "records[1].data.qty"])
      expect(await countOf(api, items.id)).toBe(n + 1)
    })

    it("atomic: one bad item fails the whole batch with its own status and writes nothing", async () => {
      const n = await countOf(api, items.id)
      const res = await bulkCreate(
        [
          { name: "a1", sku: "ATOM-1" },
          { name: "a2", sku: "ATOM-2" },
          { name: "a3", sku: "ATOM-1" }
        ],
        { atomic: true }
      )
      expectError(res, 409, "DUPLICATE_KEY")
      expect(res.body.details[0].field).toBe("records[2].data.sku")
      expect(await countOf(api, items.id)).toBe(n)
      const invalid = await bulkCreate([{ name: "a1" }, { name: 2 }], { atomic: true })
      expectError(invalid, 400, "VALIDATION_ERROR")
      expect(await countOf(api, items.id)).toBe(n)
      const ok = await bulkCreate(
        [
          { name: "a1", sku: "ATOM-1" },
          { name: "a2", sku: "ATOM-2" }
        ],
        { atomic: true }
      )
      expectStatus(ok, 201)
      expect(ok.body).toMatchObject({ success: true, created: 2, failed: 0 })
      expect(await countOf(api, items.id)).toBe(n + 2)
    })

    it("limits: empty is 400, more than 1,000 items is 413", async () => {
      expectError(await bulkCreate([]), 400, "VALIDATION_ERROR")
      const many = Array.from({ length: 1001 }, (_, i) => ({ n: i }))
      expectError(await bulkCreate(many), 413, "PAYLOAD_TOO_LARGE")
      expectError(await api.call("DELETE", "/records/bulk", { ids: Array.from({ length: 1001 }, () => "x") }), 413, "PAYLOAD_TOO_LARGE")
      expectError(await api.call("PATCH", "/records/bulk", { updates: [] }), 400, "VALIDATION_ERROR")
    })

    it("skipValidation only for callers who may change structures", async () => {
      const writerOnly = await createServiceAccountClient(server, api, { permissions: ["read:records", "write:records"] })
      const n = await countOf(api, items.id)
      const refused = await writerOnly.call("POST", "/records/bulk", {
        structureId: items.id,
        records: [{ data: { name: 1 } }],
        options: { skipValidation: true }
      })
      expectError(refused, 403, "PERMISSION_DENIED")
      expectStatus(await writerOnly.call("POST", "/records/bulk", { structureId: items.id, records: [{ data: { name: "fine" } }] }), 201)
      const r = await api.call("POST", "/records", { structureId: items.id, data: { name: "strict" } })
      expectError(
        await writerOnly.call("PATCH", `/records/${r.body.id}`, { data: { name: 1 }, options: { skipValidation: true } }),
        403,
        "PERMISSION_DENIED"
      )
      const skipped = await api.call("POST", "/records/bulk", {
        structureId: items.id,
        records: [{ data: { name: 1, extra: true } }],
        options: { skipValidation: true }
      })
      expectStatus(skipped, 201)
      expect(skipped.body.records[0].data).toEqual({ name: 1, extra: true })
      // never skipped: forbidden keys and unique values
      const raw = await api.raw("POST", "/records/bulk", {
        raw: `{"structureId":"${items.id}","records":[{"data":{"__proto__":{"x":1}}}],"options":{"skipValidation":true}}`,
        headers: { "content-type": "application/json" }
      })
      expectError(raw, 400, "VALIDATION_ERROR")
      expect(await countOf(api, items.id)).toBe(n + 3)
    })

    it("PATCH /records/bulk: per-item results and errors; createVersions; atomic rolls back", async () => {
      const made = await bulkCreate([
        { name: "u1", qty: 1 },
        { name: "u2", qty: 1 },
        { name: "u3", qty: 1, sku: "TAKEN" }
      ])
      const [a, b, c] = made.body.records.map((r: any) => r.id)
      const res = await api.call("PATCH", "/records/bulk", {
        updates: [
          { id: a, data: { qty: 2 } },
          { id: "00000000-0000-4000-8000-000000000000", data: { qty: 2 } },
          { id: b, data: { qty: "x" } }
        ]
      })
      expectStatus(res, 200)
      expect(res.body).toMatchObject({ success: false, updated: 1, failed: 2 })
      expect(res.body.results[0]).toMatchObject({ id: a, version: 2, data: { qty: 2 } })
      expect(res.body.errors.map((e: any) => [e.index, e.code])).toEqual([
        [1, "RECORD_NOT_FOUND"],
        [2, "VALIDATION_ERROR"]
      ])
      const quiet = await api.call("PATCH", "/records/bulk", { updates: [{ id: a, data: { qty: 3 } }], options: { createVersions: false } })
      expectStatus(quiet, 200)
      expect(quiet.body.results[0].version).toBe(2)
      const atomic = await api.call("PATCH", "/records/bulk", {
        updates: [
          { id: a, data: { qty: 10 } },
          { id: b, data: { qty: 10 } },
          { id: a, data: { sku: "TAKEN" } }
        ],
        options: { atomic: true }
      })
      expectError(atomic, 409, "DUPLICATE_KEY")
      expect(atomic.body.details[0].field).toBe("updates[2].data.sku")
      expect((await api.call("GET", `/records/${a}`)).body).toMatchObject({ version: 2, data: { qty: 3 } })
      expect((await api.call("GET", `/records/${b}`)).body).toMatchObject({ version: 1, data: { qty: 1 } })
      const stale = await api.call("PATCH", "/records/bulk", {
        updates: [{ id: c, data: { qty: 5 }, expectedVersion: 7 }],
        options: { atomic: true }
      })
      expectError(stale, 409, "VERSION_CONFLICT")
      const twice = await api.call("PATCH", "/records/bulk", {
        updates: [
          { id: a, data: { qty: 20 } },
          { id: b, data: { qty: 20 } },
          { id: a, data: { name: "twice" } }
        ],
        options: { atomic: true }
      })
      expectStatus(twice, 200)
      expect(twice.body.results.map((r: any) => r.version)).toEqual([3, 2, 4])
      expect((await api.call("GET", `/records/${a}`)).body.data).toMatchObject({ qty: 20, name: "twice" })
    })

    it("DELETE /records/bulk: soft by default, permanent on request, atomic all-or-nothing", async () => {
      const made = await bulkCreate([{ name: "d1" }, { name: "d2" }, { name: "d3" }, { name: "d4" }])
      const [a, b, c, d] = made.body.records.map((r: any) => r.id)
      const res = await api.call("DELETE", "/records/bulk", { ids: [a, "not-an-id"] })
      expectStatus(res, 200)
      expect(res.body).toMatchObject({ success: false, deleted: 1, failed: 1 })
      expect(res.body.errors[0]).toMatchObject({ index: 1, id: "not-an-id", code: "RECORD_NOT_FOUND" })
      expectStatus(await api.call("GET", `/records/${a}?includeDeleted=true`), 200)
      const atomic = await api.call("DELETE", "/records/bulk", { ids: [b, a], atomic: true })
      expectError(atomic, 404, "RECORD_NOT_FOUND")
      expect(atomic.body.details[0].field).toBe("ids[1]")
      expectStatus(await api.call("GET", `/records/${b}`), 200)
      const hard = await api.call("DELETE", "/records/bulk", { ids: [b, c], permanent: true, atomic: true })
      expectStatus(hard, 200)
      expect(hard.body).toMatchObject({ success: true, deleted: 2, failed: 0 })
      expectError(await api.call("GET", `/records/${c}?includeDeleted=true`), 404, "RECORD_NOT_FOUND")
      const allMissing = await api.call("DELETE", "/records/bulk", { ids: [b, c] })
      expectError(allMissing, 404, "RECORD_NOT_FOUND")
      expectStatus(await api.call("GET", `/records/${d}`), 200)
    })
  })

  describe("bulk, generation A", () => {
    let flat: { id: string; recordSlug: string }
    beforeAll(async () => {
      flat = await createStructure(api, {
        name: "Flat",
        recordSlug: slug("flat"),
        properties: [
          { name: "title", type: "string", required: true },
          { name: "price", type: "number" },
          { name: "inStock", type: "boolean" }
        ]
      })
    })

    it("bulk create, bulk patch by query, bulk delete by query", async () => {
      const created = await api.call("POST", `/structures/${flat.recordSlug}/records/bulk`, {
        records: [
          { title: "cheap", price: 5, inStock: true },
          { title: "mid", price: 50, inStock: true },
          { title: "dear", price: 500, inStock: false }
        ]
      })
      expectStatus(created, 201)
      expect(created.body.records[0]).toMatchObject({ title: "cheap", price: 5, version: 1 })
      expect(created.body.records[0]).not.toHaveProperty("data")
      const patched = await api.call("PATCH", `/structures/${flat.recordSlug}/records/bulk`, {
        query: "price>10 AND inStock==true",
        updates: { price: 45 }
      })
      expectStatus(patched, 200)
      expect(patched.body).toMatchObject({ success: true, updated: 1, failed: 0 })
      expect(patched.body.results[0]).toMatchObject({ title: "mid", price: 45, version: 2 })
      const none = await api.call("PATCH", `/structures/${flat.recordSlug}/records/bulk`, { query: "price>100000", updates: { price: 1 } })
      expectStatus(none, 200)
      expect(none.body.updated).toBe(0)
      const badUpdate = await api.call("PATCH", `/structures/${flat.recordSlug}/records/bulk`, {
        query: "price<10",
        updates: { price: "free" },
        atomic: true
      })
      expectError(badUpdate, 400, "VALIDATION_ERROR")
      // named as the body spells it: the one `updates` object, not the matched records
      expect(badUpdate.body.details[0].field).toBe("updates.price")
      expectError(await api.call("PATCH", `/structures/${flat.recordSlug}/records/bulk`, { query: "price >>> 1", updates: {} }), 400)
      const deleted = await api.call("POST", `/structures/${flat.recordSlug}/records/bulk-delete`, { query: "inStock==false" })
      expectStatus(deleted, 200)
      expect(deleted.body).toMatchObject({ success: true, deleted: 1, failed: 0 })
      const left = await api.call("GET", `/structures/${flat.recordSlug}/records?sort=price`)
      expect(left.body.records.map((r: any) => [r.title, r.price])).toEqual([
        ["cheap", 5],
        ["mid", 45]
      ])
      // the query is required: an empty body never touches every record; "*" does, explicitly
      expectError(await api.call("POST", `/structures/${flat.recordSlug}/records/bulk-delete`, {}), 400, "VALIDATION_ERROR")
      expectError(await api.call("POST", `/structures/${flat.recordSlug}/records/bulk-delete`, { query: " " }), 400, "VALIDATION_ERROR")
      expectError(
        await api.call("PATCH", `/structures/${flat.recordSlug}/records/bulk`, { updates: { price: 1 } }),
        400,
        "VALIDATION_ERROR"
      )
      const everything = await api.call("PATCH", `/structures/${flat.recordSlug}/records/bulk`, { query: "*", updates: { inStock: false } })
      expectStatus(everything, 200)
      expect(everything.body.updated).toBe(2)
      const atomicBad = await api.call("POST", `/structures/${flat.recordSlug}/records/bulk`, {
        records: [{ title: "ok" }, { price: 1 }],
        atomic: true
      })
      expectError(atomicBad, 400, "VALIDATION_ERROR")
      expect(atomicBad.body.details[0].field).toBe("records[1].title")
      expect((await api.call("GET", `/structures/${flat.recordSlug}/records`)).body.total).toBe(2)
    })
  })

  describe("events", () => {
    it.runIf(process.env.DATABASE_URL)(
      "every write appends its event to the outbox (PostgreSQL run: the outbox table is readable)",
      async () => {
        const s = await createStructure(api, {
          name: "Evented",
          recordSlug: slug("evented"),
          properties: [
            { name: "name", type: "string" },
            { name: "key", type: "string", isSecret: true },
            { name: "sku", type: "string", isUnique: true }
          ]
        })
        const r = await api.call("POST", "/records", { structureId: s.id, data: { name: "e1", key: "very-secret" } })
        expectStatus(r, 201)
        const id = r.body.id
        expectStatus(await api.call("PATCH", `/records/${id}`, { data: { name: "e2" } }), 200)
        expectStatus(await api.call("POST", `/records/${id}/restore`, { version: 1 }), 200)
        expectStatus(await api.call("POST", `/records/${id}/revert`, {}), 200)
        expectStatus(await api.call("DELETE", `/records/${id}`), 200)
        expectStatus(await api.call("POST", `/records/${id}/restore`, {}), 200)
        expectStatus(await upsert({ sku: "EV-1" }, { name: "u" }, undefined, s.recordSlug), 201)
        expectStatus(await upsert({ sku: "EV-1" }, { name: "u2" }, undefined, s.recordSlug), 200)
        const bulk = await api.call("POST", "/records/bulk", {
          structureId: s.id,
          records: [{ data: { name: "b1" } }, { data: { name: "b2" } }],
          options: { atomic: true }
        })
        expectStatus(bulk, 201)
        const ids = bulk.body.records.map((x: any) => x.id)
        expectStatus(await api.call("PATCH", "/records/bulk", { updates: ids.map((x: string) => ({ id: x, data: { name: "bu" } })) }), 200)
        expectStatus(await api.call("DELETE", "/records/bulk", { ids }), 200)
        // a failed write appends nothing
        expectError(await api.call("PATCH", `/records/${id}`, { data: { name: 5 } }), 400)

        const sql = database(server)
        try {
          const events = await sql`SELECT type, record_id, payload FROM events WHERE structure_id = ${s.id} ORDER BY id`
          const types = events.map((e) => e.type)
          expect(types).toEqual([
            "record.created",
            "record.updated",
            "record.restored",
            "record.reverted",
            "record.deleted",
            "record.restored",
            "record.created",
            "record.updated",
            "record.created",
            "record.created",
            "record.bulk.created",
            "record.updated",
            "record.updated",
            "record.bulk.updated",
            "record.deleted",
            "record.deleted",
            "record.bulk.deleted"
          ])
          const updated = events[1]!.payload as any
          expect(updated).toMatchObject({
            event: "record.updated",
            workspace: server.workspace,
            structure: s.recordSlug,
            data: {
              record: { id, structureId: s.id, data: { name: "e2", key: "********" } },
              previous: { data: { name: "e1", key: "********" } },
              changes: { name: { old: "e1", new: "e2" } },
              metadata: { userId: expect.any(String), source: "api" }
            }
          })
          expect(Date.parse(updated.timestamp)).not.toBeNaN()
          expect(events[0]!.record_id).toBe(id)
          const bulkCreated = events[10]!.payload as any
          expect(bulkCreated.data).toMatchObject({ structure: s.recordSlug, count: 2, recordIds: ids })
          expect(JSON.stringify(events.map((e) => e.payload))).not.toContain("very-secret")
        } finally {
          await sql.end()
        }
      }
    )
  })
})
