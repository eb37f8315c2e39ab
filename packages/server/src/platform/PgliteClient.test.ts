// The embedded client over its worker thread: errors keep their SQLSTATE class across the thread boundary (PGlite's
// errors carry functions that cannot cross), single statements run side by side, and a transaction has the session
// to itself: statements issued while it is open neither see its writes nor land inside it; its BEGIN, sent without
// waiting, guards the statements behind it.
import { expect, layer } from "@effect/vitest"
import { Effect, Fiber } from "effect"
import { SqlClient } from "effect/sql"
import * as PgliteClient from "./PgliteClient.ts"

/** Real time (the test clock stands still), for the worker thread's real concurrency. */
const wait = (ms: number) => Effect.promise(() => new Promise((resolve) => setTimeout(resolve, ms)))

layer(PgliteClient.layer("memory://"))("PgliteClient", (it) => {
  it.effect("rebuilds errors with their SQLSTATE: a unique violation, a syntax error, a bad value", () =>
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      yield* sql`CREATE TABLE errs (k text PRIMARY KEY)`
      yield* sql`INSERT INTO errs VALUES ('a')`
      const dup = yield* Effect.flip(sql`INSERT INTO errs VALUES ('a')`)
      expect(dup.reason._tag).toBe("UniqueViolation")
      const syntax = yield* Effect.flip(sql.unsafe("SELEC 1"))
      expect(syntax.reason._tag).toBe("SqlSyntaxError")
      const bad = yield* Effect.flip(sql`SELECT ${"0000-01-01"}::timestamptz`)
      expect(bad.message).toMatch(/date|time|range/i)
      // the client keeps working after each of them
      expect(yield* sql`SELECT count(*)::int AS n FROM errs`).toStrictEqual([{ n: 1 }])
    })
  )

  it.effect("statements run side by side, and none lands inside a transaction another fiber holds", () =>
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      yield* sql`CREATE TABLE iso (n int)`
      const answers = yield* Effect.forEach(
        Array.from({ length: 200 }, (_, i) => i),
        (i) => sql`SELECT ${i}::int AS n`,
        {
          concurrency: "unbounded"
        }
      )
      expect(answers.map((rows) => rows[0]!.n)).toStrictEqual(Array.from({ length: 200 }, (_, i) => i))

      // a transaction writes, then waits; meanwhile another fiber counts rows and inserts one of its own
      const tx = yield* sql
        .withTransaction(
          Effect.gen(function* () {
            yield* sql`INSERT INTO iso VALUES (1)`
            yield* wait(50)
            yield* Effect.fail("rolled back" as const)
          })
        )
        .pipe(Effect.flip, Effect.forkChild)
      yield* wait(10)
      const seen = yield* sql`SELECT count(*)::int AS n FROM iso`
      yield* sql`INSERT INTO iso VALUES (2)`
      expect(yield* Fiber.join(tx)).toBe("rolled back")
      // the outside count waited for the transaction (it saw neither row), and its insert survived the rollback
      expect(seen).toStrictEqual([{ n: 0 }])
      expect(yield* sql`SELECT n FROM iso`).toStrictEqual([{ n: 2 }])
    })
  )

  it.effect("a transaction's statements follow its unawaited BEGIN, and a failed BEGIN fails them all", () =>
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const db = yield* PgliteClient.Pglite
      yield* sql`CREATE TABLE tx (n int)`
      // 40 transactions at once, half failing after their insert: each sees only its own row, no row of a failed one stays
      const counts = yield* Effect.forEach(
        Array.from({ length: 40 }, (_, i) => i),
        (i) =>
          sql
            .withTransaction(
              Effect.gen(function* () {
                yield* sql`INSERT INTO tx VALUES (${i})`
                const n = (yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM tx WHERE n = ${i}`)[0]!.n
                if (i % 2 === 1) return yield* Effect.fail(n)
                return n
              })
            )
            .pipe(Effect.catch((n) => Effect.succeed(n))),
        { concurrency: "unbounded" }
      )
      expect(counts).toStrictEqual(Array.from({ length: 40 }, () => 1))
      expect((yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM tx`)[0]!.n).toBe(20)

      // a session left in a failed transaction makes the next BEGIN fail (25P02): the statements behind it fail too
      yield* Effect.promise(() => db.query("BEGIN", [], false))
      yield* Effect.promise(() => db.query("SELEC 1", [], false).catch(() => undefined))
      const failed = yield* Effect.flip(sql.withTransaction(sql`INSERT INTO tx VALUES (100)`))
      expect(failed.message).toMatch(/aborted/i)
      // the transaction's end rolled the session back: the next one works, and the refused insert is nowhere
      yield* sql.withTransaction(sql`INSERT INTO tx VALUES (101)`)
      expect(yield* sql`SELECT n FROM tx WHERE n >= 100`).toStrictEqual([{ n: 101 }])
    })
  )
})
