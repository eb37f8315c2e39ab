// The embedded database's autovacuum (PGlite runs none of its own): PostgreSQL's default rules decide, and a round
// removes the dead rows of the tables that are due.
import { describe, expect, it, layer } from "@effect/vitest"
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { dueWork, vacuumRound } from "./EmbeddedVacuum.ts"
import * as PgliteClient from "./PgliteClient.ts"

describe("dueWork", () => {
  const stats = { table: "t", live: 10_000, dead: 0, insertedSinceVacuum: 0, modifiedSinceAnalyze: 0, xidAge: 1_000 }
  it("follows autovacuum's default thresholds: 50 rows plus a share of the live ones", () => {
    expect(dueWork(stats)).toBeUndefined()
    expect(dueWork({ ...stats, dead: 2_050 })).toBeUndefined()
    expect(dueWork({ ...stats, dead: 2_051 })).toBe("vacuum")
    expect(dueWork({ ...stats, insertedSinceVacuum: 3_001 })).toBe("vacuum")
    expect(dueWork({ ...stats, modifiedSinceAnalyze: 1_051 })).toBe("analyze")
    expect(dueWork({ ...stats, modifiedSinceAnalyze: 1_050 })).toBeUndefined()
    // past autovacuum_freeze_max_age, against transaction id wraparound
    expect(dueWork({ ...stats, xidAge: 200_000_001 })).toBe("vacuum")
  })
})

/** Real time: PGlite publishes a transaction's counts to pg_stat_user_tables shortly after it ends. */
const wait = (ms: number) => Effect.promise(() => new Promise((resolve) => setTimeout(resolve, ms)))

layer(PgliteClient.layer("memory://"))("vacuumRound on PGlite", (it) => {
  it.effect("vacuums a table whose updates left dead rows, and then leaves it alone", () =>
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      yield* sql`CREATE TABLE churn (id int PRIMARY KEY, v int)`
      yield* sql`INSERT INTO churn SELECT i, 0 FROM generate_series(1, 5000) i`
      for (let k = 0; k < 3; k++) yield* sql`UPDATE churn SET v = v + 1`
      const dead = () =>
        Effect.map(sql<{ dead: number }>`SELECT n_dead_tup::int AS dead FROM pg_stat_user_tables WHERE relname = 'churn'`, (rows) =>
          Number(rows[0]?.dead ?? 0)
        )
      let before = 0
      for (let k = 0; k < 50 && before === 0; k++) {
        yield* wait(100)
        before = yield* dead()
      }
      expect(before).toBeGreaterThan(10_000)
      expect(yield* vacuumRound).toContain("churn")
      yield* wait(200)
      expect(yield* dead()).toBe(0)
      expect(yield* vacuumRound).not.toContain("churn")
      expect(yield* sql`SELECT count(*)::int AS n, sum(v)::int AS total FROM churn`).toStrictEqual([{ n: 5000, total: 15_000 }])
    })
  )
})
