// Keeps the planner's picture of `records` current after creates that change it a lot (a bulk, an import, a
// structure's first thousands of records), instead of leaving it to autovacuum (PostgreSQL, up to a minute later) or
// the embedded vacuum loop (PGlite, once a minute). The cliff it removes: right after 20,000 records were created in
// a structure the planner still believed had 82, a plain list page (`structure_id = $1 ORDER BY created_at DESC, id
// DESC LIMIT 21`) sorted all 20,000 rows (42-78 ms on both backends) instead of walking the
// `(structure_id, created_at, id)` index (0.1 ms).
//
// How: every create counts, per structure, the rows this node wrote since it last analyzed. When a structure's count
// reaches 1,000, then 2,000, 4,000… (one look-up each, never per request), the planner's own estimate of that
// structure's rows is read from pg_stats (its most common values, or the share of the others) and pg_class (scaled
// to the table's current size, as the planner scales it). When this node alone wrote more rows since the last
// ANALYZE than the planner believes the structure holds, `ANALYZE records (structure_id, deleted_at, expires_at,
// created_at)` runs: the columns of a list page's scope and order, cheap ones (no jsonb statistics; `data` keeps
// what the last full analyze found, and on PostgreSQL 15 this resets the table's change counter, so autovacuum's next
// full analyze comes 10 % of changes later, as after any analyze). (On a table never analyzed, the
// structure alone is not enough: `deleted_at IS NULL` and the expiry test without statistics are guessed at 0.5 %,
// and a page of 20,000 fresh records was planned as 34 rows: a sequential scan and a sort, 115 ms.) A bulk request
// waits for it (the next page is planned right); a group-committed create does not.
import { Effect, type Scope, Semaphore } from "effect"
import type { SqlClient } from "effect/sql"

/** Rows written to one structure before the first look at the planner's estimate. */
const FIRST_LOOK = 1000
/** Structures tracked at once (the counts are dropped past it; the next look simply comes later). */
const MAX_TRACKED = 10_000

export interface PlannerStats {
  /**
   * `rows` records were created in `structureId` (committed); analyzes when the planner's estimate fell far behind,
   * waiting for it, or (`background`) in the layer's scope.
   */
  readonly wrote: (structureId: string, rows: number, background?: boolean) => Effect.Effect<void>
}

/** The planner's estimate of a structure's live rows, or undefined when `records` has no statistics yet. */
const estimate = (sql: SqlClient.SqlClient, structureId: string) =>
  Effect.map(
    sql<{
      rows: number | null
      null_frac: number | null
      n_distinct: number | null
      freq: number | null
      mcv_total: number | null
      least: number | null
      n_mcv: number
    }>`SELECT CASE WHEN c.reltuples < 0 THEN NULL WHEN c.relpages = 0 THEN c.reltuples::float8
        ELSE c.reltuples::float8 / c.relpages * (pg_relation_size(c.oid) / current_setting('block_size')::float8) END AS rows,
      s.null_frac::float8 AS null_frac, s.n_distinct::float8 AS n_distinct,
      (SELECT m.f FROM unnest(s.most_common_vals::text::uuid[], s.most_common_freqs) AS m(v, f) WHERE m.v = ${structureId}::uuid)::float8 AS freq,
      (SELECT sum(f) FROM unnest(s.most_common_freqs) f)::float8 AS mcv_total,
      (SELECT min(f) FROM unnest(s.most_common_freqs) f)::float8 AS least,
      coalesce(cardinality(s.most_common_freqs), 0)::int AS n_mcv
    FROM pg_class c
    LEFT JOIN pg_stats s ON s.schemaname = current_schema() AND s.tablename = 'records' AND s.attname = 'structure_id'
    WHERE c.oid = 'records'::regclass`,
    ([r]) => {
      if (r === undefined || r.rows === null || r.n_distinct === null) return undefined
      const rows = Number(r.rows)
      if (r.freq !== null) return Number(r.freq) * rows
      // a value outside the most common ones: the rest shared evenly by the other distinct values (PostgreSQL's
      // var_eq_const), at most the least common value's share
      const distinct = Number(r.n_distinct) < 0 ? -Number(r.n_distinct) * rows : Number(r.n_distinct)
      const others = distinct - Number(r.n_mcv)
      let share = Math.max(0, 1 - Number(r.mcv_total ?? 0) - Number(r.null_frac ?? 0))
      if (others > 1) share /= others
      if (r.least !== null) share = Math.min(share, Number(r.least))
      return share * rows
    }
  )

export const makePlannerStats = (sql: SqlClient.SqlClient): Effect.Effect<PlannerStats, never, Scope.Scope> =>
  Effect.gen(function* () {
    const scope = yield* Effect.scope
    /** rows this node created per structure since it last analyzed */
    const written = new Map<string, number>()
    /** the count at which each structure is looked at next */
    const nextLook = new Map<string, number>()
    // one look or ANALYZE at a time on a node: two at once would only repeat the same work
    const lock = yield* Semaphore.make(1)

    const look = (structureId: string) =>
      lock
        .withPermit(
          Effect.gen(function* () {
            const since = written.get(structureId) ?? 0
            const planned = yield* estimate(sql, structureId)
            if (planned !== undefined && since <= planned) {
              nextLook.set(structureId, since * 2)
              return
            }
            yield* sql`ANALYZE records (structure_id, deleted_at, expires_at, created_at)`
            // every structure's estimate is fresh now
            written.clear()
            nextLook.clear()
          })
        )
        .pipe(
          Effect.catchCause((cause) =>
            Effect.andThen(
              Effect.sync(() => nextLook.set(structureId, (written.get(structureId) ?? 0) * 2)),
              Effect.logWarning("records: refreshing the planner's statistics failed", cause)
            )
          )
        )

    const wrote = (structureId: string, rows: number, background = false) =>
      Effect.suspend(() => {
        if (rows <= 0) return Effect.void
        if (written.size >= MAX_TRACKED && !written.has(structureId)) {
          written.clear()
          nextLook.clear()
        }
        const since = (written.get(structureId) ?? 0) + rows
        written.set(structureId, since)
        if (since < (nextLook.get(structureId) ?? FIRST_LOOK)) return Effect.void
        nextLook.set(structureId, Number.POSITIVE_INFINITY) // one look at a time per structure
        return background ? Effect.asVoid(Effect.forkIn(look(structureId), scope)) : look(structureId)
      })

    return { wrote }
  })
