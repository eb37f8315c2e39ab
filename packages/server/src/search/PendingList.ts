// Merges the search index's pending list (migration 0017) into the index off the write path. Writes append their
// entries to the list; this loop merges it every half second, in bulk, so no write waits on a merge unless the list
// filled up between two passes (then that write merges it, as GIN does by itself). Every node runs it: a pass that
// finds another node's merge under way waits for it and then finds the list empty, which costs a page read.
import { Duration, Effect, Layer, Schedule } from "effect"
import { SqlClient } from "effect/sql"
import type { SqlError } from "effect/sql/SqlError"

const INTERVAL = Duration.millis(500)

/** Merges the pending list now; the number of list pages merged (0 when the index is absent). */
export const mergePendingList: Effect.Effect<number, SqlError, SqlClient.SqlClient> = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  // to_regclass: the search bench drops the index for a while to measure writes without it
  const rows = yield* sql<{ pages: number }>`SELECT coalesce(gin_clean_pending_list(i), 0)::int AS pages
    FROM (SELECT to_regclass('records_search') AS i) x WHERE i IS NOT NULL`
  return Number(rows[0]?.pages ?? 0)
})

/** This node's merge loop; a failed pass is logged and tried again at the next. */
export const PendingListLayer = Layer.effectDiscard(
  mergePendingList.pipe(
    Effect.catchCause((cause) => Effect.logWarning("search: merging the index's pending list failed", cause)),
    Effect.repeat(Schedule.spaced(INTERVAL)),
    Effect.forkScoped
  )
)
