// A cluster-wide signal bus: `publish(topic, payload)` reaches `subscribe(topic)` on every node. On PostgreSQL it
// rides one LISTEN/NOTIFY channel (one reserved connection per node); on PGlite (one process) it is an in-process
// PubSub. Signals are hints (cache invalidation, wake-ups), never the data itself: a lost signal must only delay.
import { PgClient } from "@effect/sql-pg"
import { Context, Effect, Layer, Option, PubSub, Schedule, Stream } from "effect"
import { SqlClient } from "effect/sql"

const CHANNEL = "troupe_bus"
const SEP = "\u0001"

export interface Signal {
  readonly topic: string
  readonly payload: string
}

export class Notifier extends Context.Service<
  Notifier,
  {
    /** Sends after the surrounding transaction commits (at once outside one). */
    readonly publish: (topic: string, payload?: string) => Effect.Effect<void>
    readonly subscribe: (topic: string) => Stream.Stream<string>
  }
>()("@troupe/server/platform/Notifier") {
  static readonly layer = Layer.effect(
    Notifier,
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const pg = yield* Effect.serviceOption(PgClient.PgClient)
      const hub = yield* PubSub.unbounded<Signal>()
      const local = (signal: Signal) => PubSub.publish(hub, signal).pipe(Effect.asVoid)

      if (Option.isSome(pg) && sql.driver !== "pglite") {
        const client = pg.value
        // Keep one LISTEN connection per node, re-established if it drops.
        yield* Effect.scoped(
          Effect.gen(function* () {
            const queue = yield* client.listen(CHANNEL)
            yield* Stream.fromQueue(queue).pipe(
              Stream.runForEach((n) => {
                const at = n.payload.indexOf(SEP)
                return at < 0 ? Effect.void : local({ topic: n.payload.slice(0, at), payload: n.payload.slice(at + 1) })
              })
            )
          })
        ).pipe(
          Effect.catchCause((cause) => Effect.logWarning("notifier: LISTEN connection lost, reconnecting", cause)),
          Effect.repeat(Schedule.spaced("1 second")),
          Effect.forkScoped
        )
      }

      const send = (topic: string, payload: string) =>
        Option.isSome(pg) && sql.driver !== "pglite"
          ? pg.value
              .notify(CHANNEL, `${topic}${SEP}${payload}`)
              .pipe(Effect.catchCause((cause) => Effect.logWarning("notifier: NOTIFY failed", cause)))
          : local({ topic, payload })

      return Notifier.of({
        publish: (topic, payload = "") => sql.afterCommit(send(topic, payload)),
        subscribe: (topic) =>
          Stream.fromPubSub(hub).pipe(
            Stream.filter((s) => s.topic === topic),
            Stream.map((s) => s.payload)
          )
      })
    })
  )
}
