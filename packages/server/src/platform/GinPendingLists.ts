// Merges the pending lists of GIN indexes that take writes through one (`fastupdate = on`) into the index, off the
// write path. A write appends its entries to the list, which costs a fraction of inserting each entry into the index
// (migration 0017 has the figures); a loop per domain merges its indexes' lists in bulk every half
// second, so no write waits on a merge unless a list filled up between two passes (then that write merges it, as
// GIN does by itself). Searches of an index scan its pending entries too: what a write added is found at once.
// Every node runs the loops: a pass that finds another node's merge under way waits for it, then finds the list
// empty, which costs a page read.
import { Duration, Effect, Layer, Schedule } from "effect"
import { SqlClient } from "effect/sql"
import type { SqlError } from "effect/sql/SqlError"

const INTERVAL = Duration.millis(500)

/** Merges the indexes' pending lists now; the number of list pages merged (an absent index counts none). */
export const mergePendingLists = (indexes: ReadonlyArray<string>): Effect.Effect<number, SqlError, SqlClient.SqlClient> =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    // to_regclass: the search bench drops its index for a while to measure writes without it
    const rows = yield* sql<{ pages: number }>`SELECT coalesce(sum(gin_clean_pending_list(i)), 0)::int AS pages
      FROM (SELECT to_regclass(name) AS i FROM unnest(${`{${indexes.join(",")}}`}::text[]) AS name) x WHERE i IS NOT NULL`
    return Number(rows[0]?.pages ?? 0)
  })

/** This node's merge loop for the indexes; a failed pass is logged and tried again at the next. */
export const GinPendingListsLayer = (indexes: ReadonlyArray<string>) =>
  Layer.effectDiscard(
    mergePendingLists(indexes).pipe(
      Effect.catchCause((cause) => Effect.logWarning(`merging the pending lists of ${indexes.join(", ")} failed`, cause)),
      Effect.repeat(Schedule.spaced(INTERVAL)),
      Effect.forkScoped
    )
  )
