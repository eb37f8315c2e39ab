// Autovacuum for the embedded database. PGlite runs PostgreSQL as one backend without a postmaster, so its
// autovacuum never runs (measured: 100,000 dead rows of an updated table still there after 70 s, `last_autovacuum`
// null, `autovacuum` on). Without it no updated or deleted row is ever reclaimed: the relay's update of every
// event, every patch, swept events and runs. Tables and indexes only grow, and every scan walks the dead rows (the
// relay's read of pending events goes through one index entry per event ever relayed). This loop does the job on
// PGlite with PostgreSQL's own default rules (dead rows, inserts, changes to analyze, transaction id age) and
// naptime (a minute). Unlike autovacuum it runs on the database's only backend, so each round holds every other
// statement up while it works: rounds every few seconds measured about a fifth fewer creates per second on a fresh,
// fast-growing database (an ANALYZE of each growing table per round).
import { Effect, Layer, Schedule } from "effect"
import { SqlClient } from "effect/sql"

const INTERVAL = "1 minute"

/** PostgreSQL's defaults: autovacuum_vacuum_threshold / _scale_factor, _insert_, and autovacuum_analyze_. */
const VACUUM_THRESHOLD = 50
const VACUUM_SCALE = 0.2
const INSERT_THRESHOLD = 1000
const INSERT_SCALE = 0.2
const ANALYZE_THRESHOLD = 50
const ANALYZE_SCALE = 0.1
/** autovacuum_freeze_max_age: a table whose oldest unfrozen transaction id is older is vacuumed (wraparound). */
const FREEZE_MAX_AGE = 200_000_000

export interface TableStats {
  readonly table: string
  readonly live: number
  readonly dead: number
  readonly insertedSinceVacuum: number
  readonly modifiedSinceAnalyze: number
  /** age(relfrozenxid): transactions since the table's rows were last frozen */
  readonly xidAge: number
}

/** What autovacuum would do to a table now: vacuum (with analyze), analyze only, or nothing. */
export const dueWork = (t: TableStats): "vacuum" | "analyze" | undefined => {
  if (t.xidAge > FREEZE_MAX_AGE) return "vacuum"
  if (t.dead > VACUUM_THRESHOLD + VACUUM_SCALE * t.live) return "vacuum"
  if (t.insertedSinceVacuum > INSERT_THRESHOLD + INSERT_SCALE * t.live) return "vacuum"
  if (t.modifiedSinceAnalyze > ANALYZE_THRESHOLD + ANALYZE_SCALE * t.live) return "analyze"
  return undefined
}

/** One round: every table of the public schema that is due is vacuumed and analyzed, or analyzed; their names. */
export const vacuumRound = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  const rows = yield* sql<{ table: string; live: number; dead: number; inserted: number; modified: number; xid_age: number }>`
    SELECT s.relname AS table, s.n_live_tup::float8 AS live, s.n_dead_tup::float8 AS dead,
      s.n_ins_since_vacuum::float8 AS inserted, s.n_mod_since_analyze::float8 AS modified,
      age(c.relfrozenxid)::float8 AS xid_age
    FROM pg_stat_user_tables s JOIN pg_class c ON c.oid = s.relid WHERE s.schemaname = 'public'`
  const done: Array<string> = []
  for (const r of rows) {
    const work = dueWork({
      table: r.table,
      live: Number(r.live),
      dead: Number(r.dead),
      insertedSinceVacuum: Number(r.inserted),
      modifiedSinceAnalyze: Number(r.modified),
      xidAge: Number(r.xid_age)
    })
    if (work === undefined) continue
    // a table name from the catalog, quoted as an identifier
    const name = `"${r.table.replaceAll('"', '""')}"`
    yield* sql.unsafe(work === "vacuum" ? `VACUUM (ANALYZE) ${name}` : `ANALYZE ${name}`)
    done.push(r.table)
  }
  return done
})

/** The loop, on PGlite only (PostgreSQL has its own autovacuum); a failed round is logged and the next one runs. */
export const EmbeddedVacuumLayer = Layer.effectDiscard(
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    if (sql.driver !== "pglite") return
    yield* vacuumRound.pipe(
      Effect.tap((tables) => (tables.length > 0 ? Effect.logDebug(`embedded vacuum: ${tables.join(", ")}`) : Effect.void)),
      Effect.catchCause((cause) => Effect.logWarning("embedded vacuum failed", cause)),
      Effect.repeat(Schedule.spaced(INTERVAL)),
      Effect.forkScoped
    )
  })
)
