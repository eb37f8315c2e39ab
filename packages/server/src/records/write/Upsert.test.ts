// RecordEngine.upsertMany against a real database (PGlite, or PostgreSQL when DATABASE_URL is set): the group
// commit of one key's queued upserts. Over HTTP, batches form only when requests queue up while a transaction runs
// (test/records-concurrency.test.ts); here they are formed on purpose.
import type { Structure } from "@troupe/api/structures/Structure"
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { TEST_WORKSPACE } from "../../../../../test/support/TestDatabase.ts"
import { StructureService } from "../../structures/StructureService.ts"
import { RecordService } from "../RecordService.ts"
import { RecordEngine } from "./Engine.ts"
import { owner, RecordServices, writer } from "../../../../../test/support/TestRecords.ts"

const Services = RecordServices()

let counter = 0
const structure = Effect.flatMap(Effect.service(StructureService), (s) =>
  s.create(
    TEST_WORKSPACE,
    {
      name: `Item ${counter}`,
      recordSlug: `item-${counter++}`,
      properties: [
        { name: "key", type: "string" },
        { name: "n", type: "number" },
        { name: "pin", type: "string", isSecret: true }
      ]
    },
    owner
  )
).pipe(Effect.orDie)

const rowsOf = (sql: SqlClient.SqlClient, table: string, id: string) =>
  sql`SELECT * FROM ${sql(table)} WHERE record_id = ${id}`.pipe(Effect.orDie)

layer(Services)("RecordEngine.upsertMany", (it) => {
  it.effect("creates with the first item, updates with the rest: one version, changelog entry and event each, in order", () =>
    Effect.gen(function* () {
      const records = yield* RecordService
      const engine = yield* RecordEngine
      const sql = yield* SqlClient.SqlClient
      const s: Structure = yield* structure
      const items = [0, 1, 2, 3, 4].map((n) => ({ data: { n, pin: `p${n}` }, writer }))
      const results = yield* engine.upsertMany({ structure: s, match: { key: "k" }, items })
      expect(results.map((r) => r.status)).toStrictEqual([201, 200, 200, 200, 200])
      const bodies = results.map((r) => (r.body as any).data)
      expect(bodies.map((b) => b.version)).toStrictEqual([1, 2, 3, 4, 5])
      expect(bodies.map((b) => b.data.n)).toStrictEqual([0, 1, 2, 3, 4])
      expect(
        bodies.every((b) => b.data.pin !== undefined && !String(b.data.pin).startsWith("p")),
        "secrets masked"
      ).toBe(true)
      const id = bodies[0].id
      expect(bodies.every((b) => b.id === id)).toBe(true)
      const { row } = yield* records.get(TEST_WORKSPACE, id)
      expect(row.version).toBe(5)
      expect(row.data.n).toBe(4)
      expect(row.updatedAt).toBe(bodies[4].updatedAt)
      const versions = yield* rowsOf(sql, "record_versions", id)
      expect(versions.map((v: any) => Number(v.version)).sort()).toStrictEqual([1, 2, 3, 4, 5])
      const log = yield* records.changelog(TEST_WORKSPACE, id, {})
      expect(log.entries.map((e: any) => e.action)).toStrictEqual(["update", "update", "update", "update", "create"])
      expect(log.entries.map((e: any) => e.changes.n?.newValue)).toStrictEqual([4, 3, 2, 1, 0])
      const events = yield* sql`SELECT type, payload FROM events WHERE record_id = ${id}::uuid ORDER BY id`.pipe(Effect.orDie)
      expect(events.map((e: any) => e.type)).toStrictEqual(["record.created", ...Array(4).fill("record.updated")])
      const payloads = events.map((e: any) => (typeof e.payload === "string" ? JSON.parse(e.payload) : e.payload))
      payloads.slice(1).forEach((p: any, k: number) => {
        expect(p.data.record.version).toBe(k + 2)
        expect(p.data.changes.n).toStrictEqual({ old: k, new: k + 1 })
        expect(p.data.previous.data.n).toBe(k)
        expect(p.data.record.data.pin).not.toBe(`p${k + 1}`)
      })
    })
  )

  it.effect("one bad item fails the whole batch and writes nothing", () =>
    Effect.gen(function* () {
      const records = yield* RecordService
      const engine = yield* RecordEngine
      const s: Structure = yield* structure
      const first = yield* engine.upsertMany({ structure: s, match: { key: "b" }, items: [{ data: { n: 1 }, writer }] })
      const id = (first[0]!.body as any).data.id
      const failure = yield* Effect.flip(
        engine.upsertMany({
          structure: s,
          match: { key: "b" },
          items: [
            { data: { n: 2 }, writer },
            { data: { n: "two" }, writer },
            { data: { n: 3 }, writer }
          ]
        })
      )
      expect(failure.statusCode).toBe(400)
      const { row } = yield* records.get(TEST_WORKSPACE, id)
      expect(row.version).toBe(1)
      expect(row.data.n).toBe(1)
      const log = yield* records.changelog(TEST_WORKSPACE, id, {})
      expect(log.entries.length).toBe(1)
    })
  )
})
