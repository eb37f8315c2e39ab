// LISTEN on a PostgreSQL channel: sql-pg's listener (one reserved connection, re-established when it drops). On
// PGlite, whose listeners are all in this process, an in-process listener the wake-ups of Wake.ts call directly.
// Notifications are wake-up hints: callers also poll.
import { PgClient } from "@effect/sql-pg"
import { Effect, Option, Schedule, type Scope, Stream } from "effect"
import { SqlClient } from "effect/sql"
import { listenLocally } from "./Wake.ts"

/** Calls `onNotify(payload)` for every NOTIFY on `channel` until the scope closes. */
export const listen = (
  channel: string,
  onNotify: (payload: string) => void
): Effect.Effect<void, never, Scope.Scope | SqlClient.SqlClient> =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    if (sql.driver === "pglite") {
      yield* Effect.acquireRelease(
        Effect.sync(() => listenLocally(channel, onNotify)),
        (stop) => Effect.sync(stop)
      )
      return
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
