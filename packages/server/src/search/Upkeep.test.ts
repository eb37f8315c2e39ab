// The search domain's upkeep against a real database (PGlite, or PostgreSQL when DATABASE_URL is set): record writes
// leave their index entries in the GIN pending list, where searches already find them, until the merge moves them
// into the index; the relay queues the records it relayed, and the drain adds their words to the lexicon.
import type { Structure } from "@troupe/api/structures/Structure"
import { expect, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { TEST_WORKSPACE } from "../../../../test/support/TestDatabase.ts"
import { owner, RecordServices, writer } from "../../../../test/support/TestRecords.ts"
import { makeRelayStep } from "../events/OutboxRelay.ts"
import { mergePendingLists } from "../platform/GinPendingLists.ts"
import { WebhookRepo } from "../events/WebhookRepo.ts"
import { RecordEngine } from "../records/write/Engine.ts"
import { StructureService } from "../structures/StructureService.ts"
import { drainLexiconQueue, LexiconLayer } from "./Lexicon.ts"

const Services = LexiconLayer.pipe(Layer.provideMerge(WebhookRepo.layer), Layer.provideMerge(RecordServices()))

/** A structure searching `title`, with `n` records whose titles hold `word`. */
const seeded = (slug: string, word: string, n: number) =>
  Effect.gen(function* () {
    const structure: Structure = yield* Effect.orDie(
      (yield* StructureService).create(
        TEST_WORKSPACE,
        { name: slug, recordSlug: slug, properties: [{ name: "title", type: "string" }], searchFields: [{ name: "title", weight: 4 }] },
        owner
      )
    )
    const records = yield* RecordEngine
    for (let i = 0; i < n; i++) {
      yield* Effect.orDie(records.create({ structure, input: { data: { title: `${word} number ${i} of the ${slug} shelf` } }, writer }))
    }
    return structure
  })

const matching = (structure: Structure, word: string) =>
  Effect.flatMap(Effect.service(SqlClient.SqlClient), (sql) =>
    sql<{ n: number }>`SELECT count(*)::int AS n FROM records WHERE structure_id = ${structure.id}::uuid
      AND search_vector @@ to_tsquery('simple', ${word})`.pipe(Effect.map((r) => Number(r[0]!.n)))
  )

layer(Services, { excludeTestServices: true, timeout: 60_000 })("search upkeep", (it) => {
  it.effect("writes leave their entries pending; searches find them before and after the merge", () =>
    Effect.gen(function* () {
      yield* Effect.orDie(mergePendingLists(["records_search"]))
      const structure = yield* seeded("shelf", "quillwort", 40)
      expect(yield* matching(structure, "quillwort")).toBe(40)
      // the writes' entries were pending: the merge moves some pages, and the next one finds none
      expect(yield* Effect.orDie(mergePendingLists(["records_search"]))).toBeGreaterThan(0)
      expect(yield* Effect.orDie(mergePendingLists(["records_search"]))).toBe(0)
      expect(yield* matching(structure, "quillwort")).toBe(40)
    })
  )

  it.effect("the relay queues the written records; the drain adds their words to the lexicon and empties the queue", () =>
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const structure = yield* seeded("drawer", "marjoram", 5)
      const inLexicon = sql<{ n: number }>`SELECT count(*)::int AS n FROM search_lexicon
        WHERE structure_id = ${structure.id}::uuid AND word = 'marjoram'`.pipe(Effect.map((r) => Number(r[0]!.n)))
      const queued = sql<{ n: number }>`SELECT count(*)::int AS n FROM search_lexicon_queue`.pipe(Effect.map((r) => Number(r[0]!.n)))
      const step = yield* makeRelayStep
      while ((yield* Effect.orDie(step)).count > 0) {}
      expect(yield* Effect.orDie(queued)).toBeGreaterThan(0)
      expect(yield* Effect.orDie(inLexicon)).toBe(0)
      while (yield* Effect.orDie(drainLexiconQueue)) {}
      expect(yield* Effect.orDie(inLexicon)).toBe(1)
      expect(yield* Effect.orDie(queued)).toBe(0)
    })
  )
})
