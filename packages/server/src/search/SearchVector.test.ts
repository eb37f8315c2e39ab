// A created record's search vector is made by the batch create statement itself (records/RecordBatchSql.ts), not by
// the row trigger (migration 0018): it must be the very vector the trigger's function makes for the same data, with
// its words, positions and weights, for single creates and bulks, any language, empty and non-string values.
import type { Structure } from "@troupe/api/structures/Structure"
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { TEST_WORKSPACE } from "../../../../test/support/TestDatabase.ts"
import { owner, RecordServices, writer } from "../../../../test/support/TestRecords.ts"
import { RecordEngine } from "../records/write/Engine.ts"
import { StructureService } from "../structures/StructureService.ts"

const documents: ReadonlyArray<Record<string, unknown>> = [
  { title: "The cats are on the", body: "dogs of the world running", tag: "x", n: 3 },
  { title: "", body: "only the body, twice: body", n: 1 },
  { title: "Résumé naïve café", tag: "a tag" },
  { n: 7 },
  { title: "one two two", body: "three ... one", tag: "two" }
]

/** Records whose stored vector differs from troupe_search_vector's for their data, and how many have words. */
const compared = (structure: Structure) =>
  Effect.flatMap(Effect.service(SqlClient.SqlClient), (sql) =>
    sql<{ differ: number; worded: number; total: number }>`SELECT
        count(*) FILTER (WHERE search_vector IS DISTINCT FROM troupe_search_vector(structure_id, data))::int AS differ,
        count(*) FILTER (WHERE length(search_vector) > 0)::int AS worded, count(*)::int AS total
      FROM records WHERE structure_id = ${structure.id}::uuid`.pipe(Effect.map((r) => r[0]!))
  )

layer(RecordServices(), { excludeTestServices: true, timeout: 120_000 })("search vectors of created records", (it) => {
  for (const language of ["simple", "english"]) {
    it.effect(`are the trigger's vectors (${language}), for single creates and bulks`, () =>
      Effect.gen(function* () {
        const structure: Structure = yield* Effect.orDie(
          (yield* StructureService).create(
            TEST_WORKSPACE,
            {
              name: `vectors ${language}`,
              recordSlug: `vectors-${language}`,
              properties: [
                { name: "title", type: "string" },
                { name: "body", type: "string" },
                { name: "tag", type: "string" },
                { name: "n", type: "number" }
              ],
              searchFields: [
                { name: "body", weight: 2 },
                { name: "title", weight: 4 },
                { name: "tag", weight: 1 }
              ],
              searchLanguage: language
            },
            owner
          )
        )
        const records = yield* RecordEngine
        for (const data of documents) yield* Effect.orDie(records.create({ structure, input: { data }, writer }))
        yield* Effect.orDie(records.createAll({ structure, items: documents.map((data) => ({ data })), writer }))
        expect(yield* compared(structure)).toStrictEqual({ differ: 0, worded: 8, total: 10 })
      })
    )
  }
})
