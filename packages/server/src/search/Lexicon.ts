// The search lexicon (each structure's words once, on a trigram index: the typo candidates of search/SearchService)
// is filled off the write path, in two steps. The outbox relay, when it hands on events of records with a new search
// document, queues those records' ids in its own transaction (`search_lexicon_queue`: at least once, one row per
// relay step). Every DRAIN_INTERVAL the search domain takes the queue's oldest rows and adds their records' words to
// the lexicon in one statement that also deletes the rows (so a node that dies mid-way leaves them queued; nodes
// share the queue with SKIP LOCKED). Batches of seconds look each known word up once rather than once per relay
// step (migration 0017 has the figures). Typo tolerance for a new word therefore follows the write by the relay's
// lag plus up to DRAIN_INTERVAL; exact and prefix matches read the vector and see the write at once. The re-indexer
// adds the words of the records it re-indexes itself (search/Reindexer.ts).
import { Duration, Effect, Layer, Schedule } from "effect"
import { SqlClient } from "effect/sql"
import type { SqlError } from "effect/sql/SqlError"
import type { EventHead } from "../events/OutboxRelay.ts"
import { EventConsumers } from "../events/OutboxRelay.ts"

/** Events whose record (`recordId`) has a new search document. */
const ONE = new Set(["record.created", "record.updated", "record.restored", "record.reverted"])
/** Events naming their records in `payload.data.recordIds`. */
const MANY = new Set(["record.bulk.created", "record.bulk.updated"])

const DRAIN_INTERVAL = Duration.seconds(1)
/** Queue rows per drain: a relay step queues at most its batch's records (1,000 when catching up). */
const DRAIN_ROWS = 20

/**
 * Words of 3 to 64 characters of the given rows' vectors, in a fixed order (two inserts never wait in a cycle).
 * Words with a digit are left out: numbers, codes and ids tolerate no typo (SearchText.typoBudget), and they are the
 * long tail that would make every write add words (an order number, a SKU).
 */
export const LEXICON_WORDS = `SELECT DISTINCT r.structure_id, w FROM written r, unnest(tsvector_to_array(r.search_vector)) AS w
  WHERE r.search_vector IS NOT NULL AND length(w) BETWEEN 3 AND 64 AND w !~ '[[:digit:]]' ORDER BY 1, 2`

/** The relay's part: queues the records of events with a new search document. */
export const LexiconLayer = Layer.effect(
  EventConsumers,
  Effect.gen(function* () {
    const before = yield* EventConsumers
    const sql = yield* SqlClient.SqlClient
    const heads = (events: ReadonlyArray<EventHead>) => {
      const one = events.filter((e) => e.recordId !== null && ONE.has(e.type)).map((e) => e.recordId!)
      const many = events.filter((e) => MANY.has(e.type)).map((e) => Number(e.id))
      if (one.length === 0 && many.length === 0) return Effect.void
      return sql`WITH ids AS (
          SELECT jsonb_array_elements_text(${JSON.stringify(one)}::jsonb)::uuid AS id
          UNION SELECT jsonb_array_elements_text(e.payload -> 'data' -> 'recordIds')::uuid FROM events e
            WHERE e.id = ANY(${`{${many.join(",")}}`}::bigint[])
        )
        INSERT INTO search_lexicon_queue (record_ids) SELECT array_agg(id) FROM ids HAVING count(*) > 0`.pipe(Effect.asVoid)
    }
    return [...before, { name: "search-lexicon", heads }]
  })
)

/** Adds the words of the oldest queued records to the lexicon; whether it took a full batch (more may wait). */
export const drainLexiconQueue: Effect.Effect<boolean, SqlError, SqlClient.SqlClient> = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  const rows = yield* sql<{ taken: number }>`WITH q AS (DELETE FROM search_lexicon_queue WHERE id IN (
        SELECT id FROM search_lexicon_queue ORDER BY id LIMIT ${DRAIN_ROWS} FOR UPDATE SKIP LOCKED) RETURNING record_ids),
      ids AS (SELECT DISTINCT unnest(record_ids) AS id FROM q),
      written AS (SELECT r.structure_id, r.search_vector FROM records r JOIN ids ON r.id = ids.id),
      words AS (INSERT INTO search_lexicon (structure_id, word) ${sql.unsafe(LEXICON_WORDS)} ON CONFLICT DO NOTHING)
    SELECT count(*)::int AS taken FROM q`
  return Number(rows[0]?.taken ?? 0) === DRAIN_ROWS
})

/** This node's drain loop: every DRAIN_INTERVAL, batches until the queue is short; a failure is logged. */
export const LexiconDrainLayer = Layer.effectDiscard(
  Effect.gen(function* () {
    while (yield* drainLexiconQueue) {
      /* next batch */
    }
  }).pipe(
    Effect.catchCause((cause) => Effect.logWarning("search: adding queued words to the lexicon failed", cause)),
    Effect.repeat(Schedule.spaced(DRAIN_INTERVAL)),
    Effect.forkScoped
  )
)
