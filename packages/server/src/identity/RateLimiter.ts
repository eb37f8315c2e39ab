// Per-workspace, per-class request limits (README "Rate limits": reads, writes, bulk, functions, queries per minute;
// 0 = off), counted in fixed windows aligned to the clock.
// No query per request: each node counts in memory and, about once a second, adds its new hits to the shared row
// in `rate_counters` and reads back the cluster-wide total; a counter that has not synced for 2 s (new window, idle
// workspace) reads the total once before deciding. A node thus decides with the others' counts at most ~2 s old:
// the cluster may admit up to about (nodes - 1) x one second of extra traffic per window; one node alone is exact.
// TROUPE_LIMIT_WINDOW_SECONDS (default 60) shortens the window for tests.
import { tooManyRequests, type TooManyRequests } from "@troupe/api/Errors"
import { Clock, Context, Effect, Layer, Schedule } from "effect"
import { SqlClient } from "effect/sql"
import { AppConfig } from "../platform/AppConfig.ts"

import type { RateClassName } from "@troupe/api/Authorization"

interface Counter {
  readonly workspace: string
  readonly rateClass: RateClassName
  window: number
  /** hits on this node not yet added to the shared row */
  pending: number
  /** the cluster-wide count as of the last sync (includes this node's synced hits) */
  shared: number
  /** last time a request touched it, to stop syncing idle counters */
  touched: number
  /** last time it learnt the cluster-wide count */
  syncedAt: number
}

/** A counter whose cluster-wide count is older than this reads it before deciding. */
const staleAfterMs = 2000

export interface RateLimiterShape {
  /** Counts one request, or fails with 429 QUOTA_EXCEEDED (`retryAfter` seconds) when over the limit. */
  readonly hit: (workspace: string, rateClass: RateClassName) => Effect.Effect<void, TooManyRequests>
  /** Pushes local counts to the database and reads the shared totals (runs every second; exposed for tests). */
  readonly sync: Effect.Effect<void>
}

export const makeRateLimiter = (limits: Readonly<Record<RateClassName, number>>, windowMs: number) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const counters = new Map<string, Counter>()

    const select = (c: Counter) =>
      sql<{ count: number }>`
        SELECT count::int AS count FROM rate_counters
        WHERE workspace = ${c.workspace} AND class = ${c.rateClass} AND window_start = ${c.window * windowMs}`

    /** A counter not synced lately (new window, idle) first learns the cluster's count: one query, not per request. */
    const catchUp = (c: Counter, now: number) => {
      c.syncedAt = now
      const window = c.window
      return select(c).pipe(
        Effect.map((rows) => {
          if (c.window === window) c.shared = Math.max(c.shared, Number(rows[0]?.count ?? 0))
        }),
        Effect.catchCause(() => Effect.void)
      )
    }

    const hit = (workspace: string, rateClass: RateClassName) =>
      Effect.flatMap(Clock.currentTimeMillis, (now) => {
        const limit = limits[rateClass]
        if (!(limit > 0)) return Effect.void
        const window = Math.floor(now / windowMs)
        const k = `${workspace}\u0000${rateClass}`
        let c = counters.get(k)
        if (c === undefined) {
          c = { workspace, rateClass, window, pending: 0, shared: 0, touched: now, syncedAt: 0 }
          counters.set(k, c)
        }
        if (c.window !== window) {
          c.window = window
          c.pending = 0
          c.shared = 0
          c.syncedAt = 0
        }
        c.touched = now
        const counter = c
        const decide = Effect.suspend(() => {
          if (counter.shared + counter.pending >= limit) {
            const retryAfter = Math.max(1, Math.ceil(((window + 1) * windowMs - now) / 1000))
            return Effect.fail(
              Object.assign(
                tooManyRequests(`Rate limit exceeded: ${limit} ${rateClass} per ${windowMs / 1000} s for workspace ${workspace}`),
                { retryAfter }
              )
            )
          }
          counter.pending++
          return Effect.void
        })
        return now - c.syncedAt > staleAfterMs ? Effect.andThen(catchUp(c, now), decide) : decide
      })

    const sync = Effect.gen(function* () {
      const now = yield* Clock.currentTimeMillis
      const window = Math.floor(now / windowMs)
      for (const [k, c] of counters) {
        if (c.window !== window) {
          if (now - c.touched > 2 * windowMs) counters.delete(k)
          continue
        }
        const delta = c.pending
        // an idle counter needs no news of other nodes until it is used again
        if (delta === 0 && now - c.touched > 5000) continue
        const windowStart = c.window * windowMs
        c.syncedAt = now
        const rows =
          delta > 0
            ? yield* sql<{ count: number }>`
              INSERT INTO rate_counters (workspace, class, window_start, count)
              VALUES (${c.workspace}, ${c.rateClass}, ${windowStart}, ${delta})
              ON CONFLICT (workspace, class, window_start) DO UPDATE SET count = rate_counters.count + ${delta}
              RETURNING count::int AS count`
            : yield* select(c)
        // Requests counted while the statement ran stay pending for the next sync.
        if (c.window === window) {
          c.pending -= delta
          c.shared = Math.max(c.shared, Number(rows[0]?.count ?? 0))
        }
      }
    })

    const cleanup = Effect.gen(function* () {
      const now = yield* Clock.currentTimeMillis
      const before = (Math.floor(now / windowMs) - 2) * windowMs
      yield* sql`DELETE FROM rate_counters WHERE window_start < ${before}`
    })

    return {
      hit,
      sync: Effect.catchCause(sync, (cause) => Effect.logWarning("rate counter sync failed", cause)),
      cleanup: Effect.catchCause(cleanup, () => Effect.void)
    }
  })

export class RateLimiter extends Context.Service<RateLimiter, RateLimiterShape>()("@troupe/server/identity/RateLimiter") {
  static readonly layer: Layer.Layer<RateLimiter, never, AppConfig | SqlClient.SqlClient> = Layer.effect(
    RateLimiter,
    Effect.gen(function* () {
      const config = yield* AppConfig
      const windowSeconds = config.limitWindowSeconds
      const limiter = yield* makeRateLimiter(config.limits, Math.max(1, windowSeconds) * 1000)
      yield* Effect.forkScoped(Effect.repeat(limiter.sync, Schedule.spaced("1 second")))
      yield* Effect.forkScoped(Effect.repeat(limiter.cleanup, Schedule.spaced("1 minute")))
      return RateLimiter.of({ hit: limiter.hit, sync: limiter.sync })
    })
  )
}
