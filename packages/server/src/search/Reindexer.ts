// Re-indexing after a structure's search fields or language changed (structures/SearchSettings.ts sets
// `search_configs.reindex_after` to the zero uuid). Every node runs this loop; a structure's re-index is claimed
// `FOR UPDATE SKIP LOCKED` one batch at a time, so nodes share the work and a node that dies leaves only its
// uncommitted batch. Each batch recomputes the search_vector of the next BATCH records by id and moves the cursor:
// resumable, and writes keep working (a record written meanwhile is indexed with the new configuration already: the
// batch create statement share-locks the configuration it reads, the row triggers read it at the write). A configuration changed again mid-way starts over from the zero uuid. The batch's words
// go to the lexicon in the same statement.
import { Duration, Effect, Layer, Schedule } from "effect"
import { SqlClient } from "effect/sql"
import type { SqlError } from "effect/sql/SqlError"
import { LEXICON_WORDS } from "./Lexicon.ts"

const BATCH = 500
const POLL = Duration.seconds(1)

/** Re-indexes one batch of one structure waiting for it; answers false when none waits. */
export const reindexBatch: Effect.Effect<boolean, SqlError, SqlClient.SqlClient> = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  return yield* sql.withTransaction(
    Effect.gen(function* () {
      const claimed = yield* sql`SELECT structure_id::text AS sid, reindex_after::text AS after FROM search_configs
        WHERE reindex_after IS NOT NULL ORDER BY updated_at LIMIT 1 FOR UPDATE SKIP LOCKED`
      if (claimed.length === 0) return false
      const { sid, after } = claimed[0] as { sid: string; after: string }
      const done = yield* sql`WITH b AS (SELECT id FROM records WHERE structure_id = ${sid} AND id > ${after}::uuid
          ORDER BY id LIMIT ${BATCH}),
        u AS (UPDATE records r SET search_vector = troupe_search_vector(r.structure_id, r.data) FROM b WHERE r.id = b.id
          RETURNING r.id, r.structure_id, r.search_vector),
        written AS (SELECT structure_id, search_vector FROM u),
        words AS (INSERT INTO search_lexicon (structure_id, word) ${sql.unsafe(LEXICON_WORDS)} ON CONFLICT DO NOTHING)
        SELECT (SELECT id::text FROM b ORDER BY id DESC LIMIT 1) AS last, (SELECT count(*) FROM u)::int AS n`
      const { last, n } = done[0] as { last: string | null; n: number }
      const next = last === null || Number(n) < BATCH ? null : last
      yield* sql`UPDATE search_configs SET reindex_after = ${next}::uuid WHERE structure_id = ${sid}`
      return true
    })
  )
})

/** Runs batches until none waits. */
export const reindexAll = Effect.gen(function* () {
  while (yield* reindexBatch) {
    /* next batch */
  }
})

/** This node's re-index loop: a pass every second; a failed pass is logged and tried again. */
export const ReindexerLayer = Layer.effectDiscard(
  reindexAll.pipe(
    Effect.catchCause((cause) => Effect.logWarning("search: re-index pass failed", cause)),
    Effect.repeat(Schedule.spaced(POLL)),
    Effect.forkScoped
  )
)
