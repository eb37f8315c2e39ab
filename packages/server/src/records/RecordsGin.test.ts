// The GIN index on records.data takes its entries at once, not through a pending list (migration 0008): with a list,
// the write that overflows it merges everyone's entries before it commits (a stall of the whole group commit).
// Containment still finds what was just written. PGlite, or PostgreSQL with DATABASE_URL.
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { TEST_WORKSPACE } from "../../../../test/support/TestDatabase.ts"
import { owner, RecordServices, writer } from "../../../../test/support/TestRecords.ts"
import { StructureService } from "../structures/StructureService.ts"
import { RecordEngine } from "./write/Engine.ts"

layer(RecordServices())("records.data's GIN index", (it) => {
  it.effect("has no pending list, and containment finds records written just before", () =>
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const options = yield* sql<{ readonly reloptions: ReadonlyArray<string> | string | null }>`SELECT reloptions
        FROM pg_class WHERE relname = 'records_data_gin'`.pipe(Effect.orDie)
      expect(String(options[0]?.reloptions)).toContain("fastupdate=off")

      const structure = yield* Effect.orDie(
        (yield* StructureService).create(
          TEST_WORKSPACE,
          { name: "Gin", recordSlug: "gin", properties: [{ name: "tag", type: "string" }] },
          owner
        )
      )
      const engine = yield* RecordEngine
      for (let i = 0; i < 20; i++)
        yield* Effect.orDie(engine.create({ structure, input: { data: { tag: i % 2 === 0 ? "even" : "odd" } }, writer }))
      // the index scan (not a sequential one) must see them all
      yield* sql`SET enable_seqscan = off`.pipe(Effect.orDie)
      const found = yield* sql<{ readonly n: number | string }>`SELECT count(*) AS n FROM records
        WHERE structure_id = ${structure.id} AND data @> '{"tag":"even"}'::jsonb`.pipe(Effect.orDie)
      yield* sql`RESET enable_seqscan`.pipe(Effect.orDie)
      expect(Number(found[0]!.n)).toBe(10)
    })
  )
})
