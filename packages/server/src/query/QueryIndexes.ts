// Index policy (README, "Queries"): equality on typed data fields is containment (`data @> {...}`), served by the one
// GIN index on `records.data`. Ranges and sorts need btree indexes on the exact expressions the compiler emits, so
// every top-level property marked `indexed: true` gets one partial expression index per structure:
//   number             ((CASE WHEN jsonb_typeof(data -> 'f') = 'number' THEN (data -> 'f')::numeric END), id)
//   string, reference  ((data ->> 'f'), id)
//   datetime           (troupe_datetime(data ->> 'f'), id)   (migration 0004: ISO text as an instant, UTC by default)
// both `WHERE structure_id = '<id>' AND deleted_at IS NULL`, the scope every list and query runs with. Index names
// are derived from the structure id and a hash of the property (`rq_<id hex>_<hash>`), never from user text, and the
// property name inside the expression is checked against the property-name rule before it is quoted.
//
// The indexes are partial (one structure each), and PostgreSQL ignores the expression statistics of partial
// indexes: without more, every range on such a field is estimated at a fixed 0.5 % of the rows, and the planner
// flips between walking the index in order (fast) and fetching the whole range to sort it (30x slower) on noise.
// So each index comes with extended statistics on its expression (`CREATE STATISTICS ... ON (expr)`, PostgreSQL
// 14+), which ANALYZE (or autovacuum) fills from the whole table.
//
// Indexes follow the definitions: a structure change (Notifier "structures", every node) reconciles that structure,
// and a start reconciles all of them. On PostgreSQL the work holds an advisory lock, so one node at a time builds,
// and builds CONCURRENTLY, so record writes never wait for it.
import { Effect, Layer, Schedule, Semaphore, Stream } from "effect"
import { SqlClient } from "effect/sql"
import * as Crypto from "node:crypto"
import { json } from "../lib/rows.ts"
import { isUuid } from "../lib/Uuid.ts"
import { Notifier } from "../platform/Notifier.ts"

const PREFIX = "rq_"
const LOCK_KEY = 7412011
const SAFE_NAME = /^[A-Za-z_][A-Za-z0-9_-]{0,63}$/
/** A structure id as the database writes it (lowercase): index names carry its hex digits. */
const isStoredUuid = (id: string) => isUuid(id) && id === id.toLowerCase()

interface PropertyLike {
  readonly name?: unknown
  readonly type?: unknown
  readonly indexed?: unknown
  readonly isSecret?: unknown
  readonly relationship?: unknown
  readonly computedMode?: unknown
  readonly expression?: unknown
}

export interface IndexSpec {
  readonly name: string
  readonly ddl: (concurrently: boolean) => string
  /** Extended statistics on the same expression (`<index name>_s`): see the top of this file. */
  readonly statistics: { readonly name: string; readonly ddl: string }
}

const quote = (s: string) => `'${s.replace(/'/g, "''")}'`

/** The SQL expression the compiler's typed value of a top-level field reduces to once parameters are bound. */
export const indexExpression = (kind: IndexKind, field: string): string => {
  const key = `${quote(field)}::text`
  return kind === "numeric"
    ? `(CASE WHEN jsonb_typeof((data -> ${key})) = 'number'::text THEN ((data -> ${key}))::numeric END)`
    : kind === "datetime"
      ? `troupe_datetime((data ->> ${key}))`
      : `((data ->> ${key}))`
}

type IndexKind = "numeric" | "text" | "datetime"

const kindOf = (p: PropertyLike): IndexKind | undefined => {
  if (p.indexed !== true || typeof p.name !== "string" || !SAFE_NAME.test(p.name)) return undefined
  if (p.isSecret === true) return undefined
  // virtual computed values are not stored
  if (p.expression !== undefined && p.computedMode === "virtual") return undefined
  if (p.type === "number" || p.type === "integer") return "numeric"
  if (p.type === "string") return "text"
  if (p.type === "datetime") return "datetime"
  if (p.type === "reference" && p.relationship !== "many-to-many") return "text"
  return undefined
}

const hexOf = (structureId: string) => structureId.replace(/-/g, "")

/** The indexes a structure's definition asks for. */
export const desiredIndexes = (structureId: string, properties: ReadonlyArray<PropertyLike>): Array<IndexSpec> => {
  if (!isStoredUuid(structureId)) return []
  const specs: Array<IndexSpec> = []
  for (const p of properties) {
    const kind = kindOf(p)
    if (kind === undefined) continue
    const field = p.name as string
    const hash = Crypto.createHash("sha256").update(`${kind}:${field}`).digest("hex").slice(0, 12)
    const name = `${PREFIX}${hexOf(structureId)}_${hash}`
    specs.push({
      name,
      ddl: (concurrently) =>
        `CREATE INDEX ${concurrently ? "CONCURRENTLY " : ""}IF NOT EXISTS ${name} ON records ` +
        `(${indexExpression(kind, field)}, id) WHERE structure_id = ${quote(structureId)}::uuid AND deleted_at IS NULL`,
      statistics: {
        name: `${name}_s`,
        ddl: `CREATE STATISTICS IF NOT EXISTS ${name}_s ON (${indexExpression(kind, field)}) FROM records`
      }
    })
  }
  return specs
}

const structureIdOf = (indexName: string): string | undefined => {
  const m = /^rq_([0-9a-f]{32})_[0-9a-f]{12}(?:_s)?$/.exec(indexName)
  if (m === null) return undefined
  const h = m[1]!
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`
}

/** Keeps the per-property indexes in step with the structure definitions (see the top of this file). */
export const QueryIndexesLayer = Layer.effectDiscard(
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const notifier = yield* Notifier
    const pg = sql.driver !== "pglite"
    const local = yield* Semaphore.make(1)

    /** Runs `work` on one connection, one node at a time. */
    const withLock = <A>(work: (run: (text: string) => Effect.Effect<ReadonlyArray<any>, unknown>) => Effect.Effect<A, unknown>) =>
      pg
        ? Effect.scoped(
            Effect.gen(function* () {
              const conn = yield* sql.reserve
              const run = (text: string) => conn.executeUnprepared(text, [], undefined)
              // try-lock and poll: a session blocked inside pg_advisory_lock holds a snapshot, which a CONCURRENTLY
              // build on the lock holder would wait for (a deadlock)
              const acquire = run(`SELECT pg_try_advisory_lock(${LOCK_KEY}) AS ok`).pipe(
                Effect.flatMap((rows) => (rows[0]?.ok === true ? Effect.void : Effect.fail("busy" as const))),
                Effect.retry(Schedule.spaced("500 millis"))
              )
              yield* Effect.acquireRelease(acquire, () => Effect.ignore(run(`SELECT pg_advisory_unlock(${LOCK_KEY})`)))
              return yield* work(run)
            })
          )
        : work((text) => sql.unsafe(text))

    const existing = (run: (text: string) => Effect.Effect<ReadonlyArray<any>, unknown>, structureId?: string) =>
      run(
        `SELECT c.relname AS name, i.indisvalid AS valid FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
       WHERE i.indrelid = 'records'::regclass AND starts_with(c.relname, ${quote(
         structureId === undefined ? PREFIX : `${PREFIX}${hexOf(structureId)}_`
       )})`
      ).pipe(Effect.map((rows) => rows.map((r) => ({ name: String(r.name), valid: r.valid === true || r.valid === "t" }))))

    const existingStatistics = (run: (text: string) => Effect.Effect<ReadonlyArray<any>, unknown>, structureId?: string) =>
      run(
        `SELECT stxname AS name FROM pg_statistic_ext WHERE stxrelid = 'records'::regclass AND starts_with(stxname, ${quote(
          structureId === undefined ? PREFIX : `${PREFIX}${hexOf(structureId)}_`
        )})`
      ).pipe(Effect.map((rows) => rows.map((r) => String(r.name))))

    const apply = (
      run: (text: string) => Effect.Effect<ReadonlyArray<any>, unknown>,
      desired: ReadonlyArray<IndexSpec>,
      present: ReadonlyArray<{ name: string; valid: boolean }>,
      presentStatistics: ReadonlyArray<string>
    ) =>
      Effect.gen(function* () {
        const wantedStatistics = new Set(desired.map((d) => d.statistics.name))
        for (const name of presentStatistics) {
          if (!wantedStatistics.has(name)) yield* run(`DROP STATISTICS IF EXISTS ${name}`)
        }
        for (const d of desired) {
          if (!presentStatistics.includes(d.statistics.name)) yield* run(d.statistics.ddl)
        }
        const wanted = new Set(desired.map((d) => d.name))
        const valid = new Set(present.filter((p) => p.valid).map((p) => p.name))
        for (const p of present) {
          // an invalid index is what an interrupted CONCURRENTLY build leaves: drop it and build again
          if (!wanted.has(p.name) || !p.valid) {
            yield* run(`DROP INDEX ${pg ? "CONCURRENTLY " : ""}IF EXISTS ${p.name}`)
          }
        }
        for (const d of desired) {
          if (!valid.has(d.name)) yield* run(d.ddl(pg))
        }
      })

    const definitionOf = (run: (text: string) => Effect.Effect<ReadonlyArray<any>, unknown>, structureId: string) =>
      run(`SELECT is_deleted, definition FROM structures WHERE id = ${quote(structureId)}::uuid`).pipe(
        Effect.map((rows) => {
          const row = rows[0]
          if (row === undefined || row.is_deleted === true) return []
          const definition = json<{ properties?: ReadonlyArray<PropertyLike> }>(row.definition)
          return Array.isArray(definition.properties) ? definition.properties : []
        })
      )

    const reconcile = (structureId: string) =>
      isStoredUuid(structureId)
        ? withLock((run) =>
            Effect.gen(function* () {
              const properties = yield* definitionOf(run, structureId)
              yield* apply(
                run,
                desiredIndexes(structureId, properties),
                yield* existing(run, structureId),
                yield* existingStatistics(run, structureId)
              )
            })
          )
        : Effect.void

    const reconcileAll = withLock((run) =>
      Effect.gen(function* () {
        const present = yield* existing(run)
        const presentStatistics = yield* existingStatistics(run)
        const rows = yield* run(
          `SELECT id::text AS id FROM structures WHERE NOT is_deleted AND definition -> 'properties' @> '[{"indexed": true}]'`
        )
        const ids = new Set([
          ...rows.map((r) => String(r.id)),
          ...[...present.map((p) => p.name), ...presentStatistics].flatMap((name) => structureIdOf(name) ?? [])
        ])
        for (const id of ids) {
          const properties = yield* definitionOf(run, id)
          yield* apply(
            run,
            desiredIndexes(id, properties),
            present.filter((p) => structureIdOf(p.name) === id),
            presentStatistics.filter((name) => structureIdOf(name) === id)
          )
        }
      })
    )

    // A build can lose a lock race (a manual ANALYZE, a deadlock victim): try again a few times, then wait for the
    // next change or start.
    const guarded = (what: string, effect: Effect.Effect<void, unknown>) =>
      local
        .withPermits(1)(effect)
        .pipe(
          Effect.retry({ schedule: Schedule.exponential("1 second"), times: 4 }),
          Effect.catchCause((cause) => Effect.logWarning(`query indexes: ${what} failed`, cause))
        )

    yield* notifier.subscribe("structures").pipe(
      Stream.runForEach((id) => guarded(`reconcile ${id}`, reconcile(id))),
      Effect.forkScoped
    )
    yield* Effect.forkScoped(guarded("start-up reconcile", reconcileAll))
  })
)
