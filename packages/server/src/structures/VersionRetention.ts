// Structure version retention: one fiber in the whole cluster (a singleton) that applies each structure's
// retentionPolicy every `cleanupIntervalHours` (default 24), so versions age out even when nobody writes. Writes
// apply the policy too (StructureService), so maxVersions holds at once; this catches maxAgeDays.
// It wakes every TROUPE_STRUCTURE_RETENTION_TICK_SECONDS (default 300) and cleans the structures that are due;
// when the singleton moves to another node, the first tick there cleans every structure once.
import { Clock, Effect, type Layer, Schedule } from "effect"
import { AppConfig } from "../platform/AppConfig.ts"
import { type Sharding, Singleton } from "effect/cluster"
import { SqlClient } from "effect/sql"
import { json } from "../lib/rows.ts"
import { effectiveRetention, pruneVersions } from "./StructureVersions.ts"

const tickSeconds = Effect.map(Effect.service(AppConfig), (c) => c.structureRetentionTickSeconds)

/** One pass: prunes the versions of every structure whose cleanup interval has elapsed since `lastRun`. */
export const retentionPass = (lastRun: Map<string, number>, now: number) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const rows = yield* sql`SELECT id, definition -> 'retentionPolicy' AS policy FROM structures
      WHERE jsonb_typeof(definition -> 'retentionPolicy') = 'object'`
    let removed = 0
    const live = new Set((rows as ReadonlyArray<{ id: string }>).map((r) => r.id))
    for (const id of [...lastRun.keys()]) if (!live.has(id)) lastRun.delete(id) // removed structures or policies
    for (const row of rows as ReadonlyArray<{ id: string; policy: unknown }>) {
      const policy = json<Record<string, unknown>>(row.policy)
      const interval = effectiveRetention(policy).cleanupIntervalHours * 3_600_000
      const last = lastRun.get(row.id)
      if (last !== undefined && now - last < interval) continue
      lastRun.set(row.id, now)
      removed += yield* pruneVersions(sql, row.id, policy)
    }
    return removed
  })

/** The singleton's body: a pass per tick, forever; a failed pass is logged and the next tick tries again. */
export const runVersionRetention = (seconds: number) =>
  Effect.gen(function* () {
    const lastRun = new Map<string, number>()
    yield* Effect.flatMap(Clock.currentTimeMillis, (now) => retentionPass(lastRun, now)).pipe(
      Effect.tap((n) => (n > 0 ? Effect.logDebug(`structure retention removed ${n} version(s)`) : Effect.void)),
      Effect.catchCause((cause) => Effect.logWarning("structure version retention failed", cause)),
      Effect.repeat(Schedule.spaced(Math.max(100, Math.round(seconds * 1000))))
    )
  })

/** The retention cleaner as a cluster singleton (tick from TROUPE_STRUCTURE_RETENTION_TICK_SECONDS unless given). */
export const VersionRetentionLayer = (given?: {
  readonly tickSeconds?: number
}): Layer.Layer<never, never, Sharding.Sharding | SqlClient.SqlClient | AppConfig> =>
  Singleton.make(
    "troupe-structure-version-retention",
    Effect.flatMap(tickSeconds, (fromEnv) => runVersionRetention(given?.tickSeconds ?? fromEnv))
  )
