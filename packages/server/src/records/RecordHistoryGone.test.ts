// A record's versions, changelog entries and unique claims have no foreign key to `records` (migration 0007): a
// statement-level trigger removes them with the record, however the record row goes (a delete of the row, or the
// cascade of its structure or workspace), and leaves every other record's alone. PGlite, or PostgreSQL with DATABASE_URL.
import type { Structure } from "@troupe/api/structures/Structure"
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { TEST_WORKSPACE } from "../../../../test/support/TestDatabase.ts"
import { owner, RecordServices, writer } from "../../../../test/support/TestRecords.ts"
import { StructureService } from "../structures/StructureService.ts"
import { RecordEngine } from "./write/Engine.ts"

const history = (sql: SqlClient.SqlClient, ids: ReadonlyArray<string>) =>
  Effect.map(
    sql`SELECT (SELECT count(*) FROM record_versions WHERE record_id IN ${sql.in(ids)}) AS versions,
        (SELECT count(*) FROM record_changelog WHERE record_id IN ${sql.in(ids)}) AS changelog,
        (SELECT count(*) FROM record_unique_values WHERE record_id IN ${sql.in(ids)}) AS claims`,
    (rows: ReadonlyArray<any>) => ({
      versions: Number(rows[0].versions),
      changelog: Number(rows[0].changelog),
      claims: Number(rows[0].claims)
    })
  ).pipe(Effect.orDie)

const none = { versions: 0, changelog: 0, claims: 0 }

/** A structure with a unique property in `workspace`, and `n` records of it, each updated once. */
const seed = (workspace: string, slug: string, n: number) =>
  Effect.gen(function* () {
    const engine = yield* RecordEngine
    const structure: Structure = yield* Effect.orDie(
      (yield* StructureService).create(
        workspace,
        {
          name: slug,
          recordSlug: slug,
          properties: [
            { name: "key", type: "string", isUnique: true },
            { name: "n", type: "number" }
          ]
        },
        { ...owner, workspace }
      )
    )
    const ids: Array<string> = []
    for (let i = 0; i < n; i++) {
      const { row } = yield* Effect.orDie(
        engine.create({ structure, input: { data: { key: `${slug}-${i}`, n: i } }, writer: { ...writer, workspace } })
      )
      yield* Effect.orDie(engine.update({ workspace, id: row.id, input: { data: { n: i + 100 } }, writer: { ...writer, workspace } }))
      ids.push(row.id)
    }
    return { structure, ids }
  })

layer(RecordServices())("a record's history goes with its row", (it) => {
  it.effect("a permanent delete, a plain DELETE of rows, a structure's and a workspace's cascade; other records keep theirs", () =>
    Effect.gen(function* () {
      const engine = yield* RecordEngine
      const sql = yield* SqlClient.SqlClient
      const kept = yield* seed(TEST_WORKSPACE, "kept", 2)
      const keptHistory = yield* history(sql, kept.ids)
      expect(keptHistory).toStrictEqual({ versions: 4, changelog: 4, claims: 2 })

      // the API's permanent delete of one record
      const a = yield* seed(TEST_WORKSPACE, "deleted-one", 2)
      expect(yield* history(sql, a.ids)).toStrictEqual({ versions: 4, changelog: 4, claims: 2 })
      yield* Effect.orDie(engine.remove({ workspace: TEST_WORKSPACE, id: a.ids[0]!, permanent: true, writer }))
      expect(yield* history(sql, [a.ids[0]!])).toStrictEqual(none)
      expect(yield* history(sql, [a.ids[1]!])).toStrictEqual({ versions: 2, changelog: 2, claims: 1 })
      // its unique value is free again
      const again = yield* Effect.orDie(engine.create({ structure: a.structure, input: { data: { key: "deleted-one-0", n: 0 } }, writer }))
      expect(again.row.data.key).toBe("deleted-one-0")

      // rows deleted by one statement (as the TTL sweep does)
      const b = yield* seed(TEST_WORKSPACE, "swept", 3)
      yield* sql`DELETE FROM records WHERE id IN ${sql.in(b.ids)}`.pipe(Effect.orDie)
      expect(yield* history(sql, b.ids)).toStrictEqual(none)

      // a structure's rows go by its foreign key's cascade
      const c = yield* seed(TEST_WORKSPACE, "dropped", 2)
      yield* sql`DELETE FROM structures WHERE id = ${c.structure.id}`.pipe(Effect.orDie)
      expect(yield* history(sql, c.ids)).toStrictEqual(none)

      // a workspace's: its structures, then their records
      yield* sql`INSERT INTO workspaces (slug, name) VALUES ('gone', 'Gone')`.pipe(Effect.orDie)
      const d = yield* seed("gone", "in-gone", 2)
      expect(yield* history(sql, d.ids)).toStrictEqual({ versions: 4, changelog: 4, claims: 2 })
      yield* sql`DELETE FROM workspaces WHERE slug = 'gone'`.pipe(Effect.orDie)
      expect(yield* history(sql, d.ids)).toStrictEqual(none)

      expect(yield* history(sql, kept.ids)).toStrictEqual(keptHistory)
    })
  )
})
