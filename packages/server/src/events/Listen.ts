// LISTEN on a PostgreSQL channel from either backend: sql-pg's listener (one reserved connection, re-established
// when it drops) or PGlite's in-process listener (registered while holding the client's single connection, so it
// never lands inside someone else's transaction). Notifications are wake-up hints: callers also poll.
import { PgClient } from "@effect/sql-pg"
import { Effect, Option, Schedule, type Scope, Stream } from "effect"
import { SqlClient } from "effect/sql"
import { Pglite } from "../platform/PgliteClient.ts"

/** Calls `onNotify(payload)` for every NOTIFY on `channel` until the scope closes. */
export const listen = (
  channel: string,
  onNotify: (payload: string) => void
): Effect.Effect<void, never, Scope.Scope | SqlClient.SqlClient> =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const pglite = yield* Effect.serviceOption(Pglite)
    if (sql.driver === "pglite" && Option.isSome(pglite)) {
      const db = pglite.value
      const unlisten = yield* Effect.acquireRelease(
        Effect.scoped(
          Effect.andThen(
            sql.reserve,
            Effect.promise(() => db.listen(channel, onNotify))
          )
        ),
        (stop) =>
          Effect.scoped(
            Effect.andThen(
              sql.reserve,
              Effect.promise(() => stop())
            )
          ).pipe(Effect.ignore)
      ).pipe(Effect.orDie)
      return void unlisten
    }
    const pg = yield* Effect.serviceOption(PgClient.PgClient)
    if (Option.isNone(pg)) return
    yield* Effect.scoped(
      Effect.gen(function* () {
        const queue = yield* pg.value.listen(channel)
        yield* Stream.fromQueue(queue).pipe(Stream.runForEach((n) => Effect.sync(() => onNotify(n.payload))))
      })
    ).pipe(
      Effect.catchCause((cause) => Effect.logWarning(`LISTEN ${channel} lost, reconnecting`, cause)),
      Effect.repeat(Schedule.spaced("1 second")),
      Effect.forkScoped
    )
  })
