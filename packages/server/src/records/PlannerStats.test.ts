// No cliff after a bulk write (records/PlannerStats.ts), on PGlite or PostgreSQL (DATABASE_URL): 20,000 records are
// bulk-created in a structure, 1,000 per request as the HTTP route takes them, into a table never analyzed, and again
// after statistics taken when the structure held 82 records; right after each, a plain list page of that structure
// (`GET /records?structureId=…&limit=20`, the exact statement the list routes run) must walk the
// `(structure_id, created_at, id)` index, not sort the structure's rows, and the planner must know the structure's
// size (its estimate is what tipped plans into sorting every row). The plan is read with EXPLAIN, not timed.
import type { Structure } from "@troupe/api/structures/Structure"
import { expect, layer } from "@effect/vitest"
import { Effect, Result } from "effect"
import { SqlClient } from "effect/sql"
import { TEST_WORKSPACE } from "../../../../test/support/TestDatabase.ts"
import { owner, RecordServices, writer } from "../../../../test/support/TestRecords.ts"
import * as Ast from "../query/Ast.ts"
import { parseSort } from "../query/FilterParser.ts"
import { listStatements } from "../query/RecordQuery.ts"
import { StructureService } from "../structures/StructureService.ts"
import { RecordEngine } from "./write/Engine.ts"

const BULK = 1000
const IMPORTED = 20_000

const items = (from: number, count: number) =>
  Array.from({ length: count }, (_, i) => ({ data: { name: `item ${from + i}`, n: from + i } }))

layer(RecordServices())("records: the planner's statistics after bulk writes", (it) => {
  it.effect(
    "right after 20,000 records are bulk-created, a list page of their structure walks the index",
    () =>
      Effect.gen(function* () {
        const engine = yield* RecordEngine
        const structures = yield* StructureService
        const sql = yield* SqlClient.SqlClient
        const create = (name: string) =>
          Effect.orDie(
            structures.create(
              TEST_WORKSPACE,
              {
                name,
                recordSlug: name.toLowerCase(),
                properties: [
                  { name: "name", type: "string" },
                  { name: "n", type: "number" }
                ]
              },
              owner
            )
          )
        const seen: Structure = yield* create("Seen")
        yield* Effect.orDie(engine.createSome({ structure: seen, items: items(0, 100), writer }))
        const imported: Structure = yield* create("Imported")
        yield* Effect.orDie(engine.createSome({ structure: imported, items: items(0, 82), writer }))
        const bulk = (from: number) =>
          Effect.gen(function* () {
            for (let i = from; i < from + IMPORTED; i += BULK) {
              const outcomes = yield* Effect.orDie(engine.createSome({ structure: imported, items: items(i, BULK), writer }))
              expect(outcomes.every(Result.isSuccess)).toBe(true)
            }
          })

        // a table never analyzed (a new node, the first import): the list scope's columns have no statistics at all
        yield* bulk(82)
        yield* expectIndexWalk(sql, imported, IMPORTED)

        // what autovacuum (or the embedded vacuum loop) leaves: statistics from when the structure had 82 records
        yield* Effect.orDie(sql`DELETE FROM records WHERE structure_id = ${imported.id} AND (data ->> 'n')::int >= 82`)
        yield* Effect.orDie(sql`ANALYZE records`)
        yield* bulk(100_000)
        yield* expectIndexWalk(sql, imported, IMPORTED)
      }),
    600_000
  )
})

/** EXPLAIN of a plain list page of `structure` (the list routes' own statement): an index walk, planned on a count
 * of at least half of `live` rows. */
const expectIndexWalk = (sql: SqlClient.SqlClient, structure: Structure, live: number) =>
  Effect.gen(function* () {
    const sort = parseSort("createdAt")
    if (Result.isFailure(sort)) return yield* Effect.die(sort.failure)
    const { page } = yield* Effect.orDie(
      listStatements(sql, {
        workspace: TEST_WORKSPACE,
        structure,
        where: Ast.and([]),
        whereParam: "filter",
        sort: sort.success,
        limit: 20,
        offset: 0,
        includeCount: false,
        includeDeleted: false
      })
    )
    const [text, params] = page.compile()
    const rows = yield* Effect.orDie(sql.unsafe<Record<string, string>>(`EXPLAIN ${text}`, params as Array<any>))
    const plan = rows.map((r) => Object.values(r)[0]).join("\n")
    const scan = /Index Scan using records_structure_created on records r\s+\(cost=[\d.]+ rows=(\d+)/.exec(plan)
    expect(scan, plan).not.toBeNull()
    expect(plan, plan).not.toMatch(/Sort/)
    // the cause, not only the symptom: the planner knows the structure's size (without the refresh a never analyzed
    // table planned it at 34 rows, a sequential scan and a sort; stale statistics at a few thousand)
    expect(Number(scan![1]), plan).toBeGreaterThanOrEqual(live / 2)
  })
