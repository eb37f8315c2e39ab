import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { TestClock } from "effect/testing"
import { MigratedPglite } from "../../../../test/support/TestDatabase.ts"
import { makeRateLimiter } from "./RateLimiter.ts"

const limits = { reads: 5, writes: 3, bulk: 0, functions: 1, queries: 1, notifications: 2 }
const windowMs = 60_000

const status = <A, E>(e: Effect.Effect<A, E>) =>
  Effect.map(Effect.result(e), (r) => (r._tag === "Success" ? 200 : (r.failure as { statusCode: number }).statusCode))

const setup = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`DELETE FROM rate_counters`
})

layer(MigratedPglite())("RateLimiter", (it) => {
  it.effect("admits the limit per workspace and class, then 429 with Retry-After until the window ends", () =>
    Effect.gen(function* () {
      yield* setup
      yield* TestClock.setTime(10 * windowMs + 15_000)
      const limiter = yield* makeRateLimiter(limits, windowMs)
      for (let i = 0; i < 5; i++) expect(yield* status(limiter.hit("ws-a", "reads"))).toBe(200)
      const refused = yield* Effect.flip(limiter.hit("ws-a", "reads"))
      expect(refused.statusCode).toBe(429)
      expect(refused.code).toBe("QUOTA_EXCEEDED")
      expect((refused as unknown as { retryAfter: number }).retryAfter).toBe(45)
      // other classes and workspaces have their own budgets; 0 = off
      expect(yield* status(limiter.hit("ws-a", "writes"))).toBe(200)
      expect(yield* status(limiter.hit("ws-b", "reads"))).toBe(200)
      for (let i = 0; i < 500; i++) expect(yield* status(limiter.hit("ws-a", "bulk"))).toBe(200)
      // the next window starts afresh
      yield* TestClock.adjust("45 seconds")
      expect(yield* status(limiter.hit("ws-a", "reads"))).toBe(200)
    })
  )

  it.effect("nodes share their counts through the database", () =>
    Effect.gen(function* () {
      yield* setup
      yield* TestClock.setTime(20 * windowMs + 1000)
      const nodeA = yield* makeRateLimiter(limits, windowMs)
      const nodeB = yield* makeRateLimiter(limits, windowMs)
      for (let i = 0; i < 3; i++) expect(yield* status(nodeA.hit("ws", "reads"))).toBe(200)
      expect(yield* status(nodeB.hit("ws", "reads"))).toBe(200)
      yield* nodeA.sync
      yield* nodeB.sync
      // 4 of 5 used cluster-wide: each node now knows it
      expect(yield* status(nodeB.hit("ws", "reads"))).toBe(200)
      expect(yield* status(nodeB.hit("ws", "reads"))).toBe(429)
      yield* nodeB.sync
      yield* nodeA.sync
      expect(yield* status(nodeA.hit("ws", "reads"))).toBe(429)
      // a node with no count yet for this window reads the shared one before its first decision
      const nodeC = yield* makeRateLimiter(limits, windowMs)
      expect(yield* status(nodeC.hit("ws", "reads"))).toBe(429)
      const sql = yield* SqlClient.SqlClient
      const rows = yield* sql<{ count: number }>`
        SELECT count FROM rate_counters WHERE workspace = 'ws' AND class = 'reads'`
      expect(rows[0]?.count).toBe(5)
    })
  )
})
