// The search lexicon (each structure's words once, on a trigram index: the typo candidates of search/SearchService)
// is filled off the write path. A write pays for its record's vector and GIN entry; the words of the records it
// wrote reach the lexicon when the outbox relay hands on its events, in the relay's transaction (so at least once,
// and by one node at a time: the relay is a singleton). Typo tolerance for a new word therefore follows the write by
// the relay's lag; exact and prefix matches read the vector and see the write at once. The re-indexer adds the
// words of the records it re-indexes itself (search/Reindexer.ts).
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import type { EventHead } from "../events/OutboxRelay.ts"
import { EventConsumers } from "../events/OutboxRelay.ts"

/** Events whose record (`recordId`) has a new search document. */
const ONE = new Set(["record.created", "record.updated", "record.restored", "record.reverted"])
/** Events naming their records in `payload.data.recordIds`. */
const MANY = new Set(["record.bulk.created", "record.bulk.updated"])

/**
 * Words of 3 to 64 characters of the given rows' vectors, in a fixed order (two inserts never wait in a cycle).
 * Words with a digit are left out: numbers, codes and ids tolerate no typo (SearchText.typoBudget), and they are the
 * long tail that would make every write add words (an order number, a SKU).
 */
export const LEXICON_WORDS = `SELECT DISTINCT r.structure_id, w FROM written r, unnest(tsvector_to_array(r.search_vector)) AS w
  WHERE r.search_vector IS NOT NULL AND length(w) BETWEEN 3 AND 64 AND w !~ '[[:digit:]]' ORDER BY 1, 2`

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
        ), written AS (SELECT r.structure_id, r.search_vector FROM records r JOIN ids ON r.id = ids.id)
        INSERT INTO search_lexicon (structure_id, word) ${sql.unsafe(LEXICON_WORDS)} ON CONFLICT DO NOTHING`.pipe(Effect.asVoid)
    }
    return [...before, { name: "search-lexicon", heads }]
  })
)
