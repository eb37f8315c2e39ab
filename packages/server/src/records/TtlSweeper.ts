// The TTL sweeper: one fiber in the whole cluster (a singleton) that removes expired records, live or soft-deleted,
// every few seconds. Reads hide an expired row at once; the sweeper only reclaims it and tells the world. Each batch
// is one transaction: rows are taken with SKIP LOCKED (a write holding one is not waited on and the row is swept
// next time), deleted (versions, changelog and unique values go by cascade), and a `record.expired` event per record
// is appended to the outbox, so the event exists exactly when the removal committed.
import { Clock, Effect, type Layer, Option, Schedule } from "effect"
import { type Sharding, Singleton } from "effect/cluster"
import { SqlClient } from "effect/sql"
import type { SqlError } from "effect/sql/SqlError"
import { appendEvents, recordEvent } from "../events/Outbox.ts"
import { json } from "../lib/rows.ts"
import { AppConfig } from "../platform/AppConfig.ts"
import { StructureService } from "../structures/StructureService.ts"
import { maskData } from "../structures/SecretPaths.ts"

export interface TtlSweeperOptions {
  /** Seconds between sweeps (TROUPE_TTL_SWEEP_SECONDS, default 5). */
  readonly intervalSeconds: number
  /** Records removed per transaction (TROUPE_TTL_SWEEP_BATCH, default 500). */
  readonly batchSize: number
}

const options = Effect.map(Effect.service(AppConfig), (c) => ({ intervalSeconds: c.ttlSweepSeconds, batchSize: c.ttlSweepBatch }))

type Sweep = Effect.Effect<number, SqlError, SqlClient.SqlClient | StructureService>

/** Removes up to `batchSize` expired records in one transaction; answers how many it removed. */
export const sweepBatch = (batchSize: number): Sweep =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const structures = yield* StructureService
    return yield* sql.withTransaction(
      Effect.gen(function* () {
        const rows = yield* sql`DELETE FROM records WHERE id IN (
          SELECT id FROM records WHERE expires_at <= now() ORDER BY expires_at LIMIT ${batchSize} FOR UPDATE SKIP LOCKED
        ) RETURNING id, workspace, structure_id, data`
        if (rows.length === 0) return 0
        const timestamp = new Date(yield* Clock.currentTimeMillis).toISOString()
        const events = yield* Effect.forEach(rows, (row: any) =>
          Effect.map(Effect.option(structures.get(row.workspace, row.structure_id)), (found) =>
            recordEvent({
              type: "record.expired",
              workspace: row.workspace,
              structure: { id: row.structure_id, slug: Option.isSome(found) ? found.value.recordSlug : row.structure_id },
              // without its structure the secret fields are unknown, so nothing of the data is shown
              record: {
                id: row.id,
                structureId: row.structure_id,
                data: Option.isSome(found) ? maskData(found.value, json(row.data)) : {}
              },
              previous: null,
              changes: {},
              metadata: { userId: "system", source: "ttl" },
              timestamp
            })
          )
        )
        yield* appendEvents(sql, events)
        return rows.length
      })
    )
  })

/** Sweeps batch after batch until a batch comes back short; answers the total removed. */
export const sweepExpired = (batchSize: number): Sweep =>
  Effect.gen(function* () {
    let total = 0
    while (true) {
      const n = yield* sweepBatch(batchSize)
      total += n
      if (n < batchSize) return total
    }
  })

/** The singleton's body: sweep, log what was removed, wait, forever; a failed sweep is logged and retried. */
export const runTtlSweeper = (opts: TtlSweeperOptions) =>
  sweepExpired(opts.batchSize).pipe(
    Effect.tap((n) => (n > 0 ? Effect.logDebug(`ttl sweeper removed ${n} expired record(s)`) : Effect.void)),
    Effect.catchCause((cause) => Effect.logWarning("ttl sweep failed", cause)),
    Effect.repeat(Schedule.spaced(Math.max(50, Math.round(opts.intervalSeconds * 1000)))),
    Effect.asVoid
  )

/** The sweeper as a cluster singleton; options from TROUPE_TTL_SWEEP_SECONDS / TROUPE_TTL_SWEEP_BATCH unless given. */
export const TtlSweeperLayer = (
  given?: Partial<TtlSweeperOptions>
): Layer.Layer<never, never, Sharding.Sharding | SqlClient.SqlClient | StructureService | AppConfig> =>
  Singleton.make(
    "troupe-ttl-sweeper",
    Effect.flatMap(options, (fromEnv) =>
      runTtlSweeper({
        intervalSeconds: given?.intervalSeconds ?? fromEnv.intervalSeconds,
        batchSize: Math.max(1, Math.floor(given?.batchSize ?? fromEnv.batchSize))
      })
    )
  )
