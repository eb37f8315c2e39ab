// The realtime hub, one per node. It follows the events table in relay order (`seq`): woken by the relay's
// "events.relayed" signal (NOTIFY on PostgreSQL, so every node hears it; in-process on PGlite) and polling as the
// fallback, it reads each newly relayed batch once and offers every event to the node's matching subscribers.
// Fan-out across nodes therefore costs one indexed query per batch per node, whatever the number of subscribers.
// Each subscriber has a bounded buffer (plus the one chunk its stream is writing); one that falls that far behind is
// dropped (its stream ends) rather than buffered without bound — it reconnects with Last-Event-ID and catches up from
// the table. On SIGTERM/SIGINT every stream ends at once, so the HTTP server can drain and clients move elsewhere.
// Resume: the subscriber registers first, then replays `seq > seq(Last-Event-ID)` from the table, then takes live
// events, skipping any seq it already sent, so nothing falls between replay and live.
import { type Cause, Context, Duration, Effect, Layer, Option, Queue, Stream } from "effect"
import { SqlClient } from "effect/sql"
import { num } from "../lib/rows.ts"
import { scrapedGauge } from "../platform/Metrics.ts"
import { Notifier } from "../platform/Notifier.ts"
import { sseClients } from "./EventMetrics.ts"
import type { StoredEvent } from "./Outbox.ts"
import { RELAYED_TOPIC, toStoredEvent } from "./OutboxRelay.ts"

export interface HubEvent {
  readonly seq: number
  readonly event: StoredEvent
}

export interface SubscribeOptions {
  readonly workspace: string
  /** structure slugs or ids; empty = all */
  readonly structures?: ReadonlySet<string> | undefined
  /** event names or `family.*`; empty = all */
  readonly events?: ReadonlyArray<string> | undefined
  /** resume after this event id */
  readonly lastEventId?: string | undefined
  /** compute events (`function.*`, `trigger.fired`) reach only subscribers who may read functions */
  readonly computeEvents?: boolean | undefined
  /** notification events (`notification.*`: recipients, subjects) reach only subscribers who may read notifications */
  readonly notificationEvents?: boolean | undefined
}

/** Events about functions and triggers rather than records. */
export const isComputeEvent = (type: string) => type.startsWith("function.") || type.startsWith("trigger.")

export interface RealtimeHubShape {
  /** Matching events from now (or after `lastEventId`) until the stream is dropped or its consumer stops. */
  readonly subscribe: (options: SubscribeOptions) => Stream.Stream<HubEvent>
  readonly subscriberCount: Effect.Effect<number>
}

/** Events a subscriber may have buffered before it is dropped. */
export const SUBSCRIBER_BUFFER = 1000
const PAGE = 500
const POLL_INTERVAL = Duration.seconds(1)

interface Subscriber {
  readonly queue: Queue.Queue<HubEvent, Cause.Done>
  readonly matches: (e: StoredEvent) => boolean
}

export const eventFilter = (options: SubscribeOptions) => {
  const structures = options.structures !== undefined && options.structures.size > 0 ? options.structures : undefined
  const names = options.events !== undefined && options.events.length > 0 ? options.events : undefined
  const compute = options.computeEvents !== false
  const notifications = options.notificationEvents !== false
  return (e: StoredEvent): boolean => {
    if (!compute && isComputeEvent(e.type)) return false
    if (!notifications && e.type.startsWith("notification.")) return false
    if (structures !== undefined && !e.type.startsWith("file.")) {
      const slug = e.recordSlug ?? (typeof e.payload.structure === "string" ? e.payload.structure : undefined)
      if (!(slug !== undefined && structures.has(slug)) && !(e.structureId !== null && structures.has(e.structureId))) return false
    }
    if (names !== undefined) {
      return names.some((n) => n === "*" || n === e.type || (n.endsWith(".*") && e.type.startsWith(n.slice(0, -1))))
    }
    return true
  }
}

export class RealtimeHub extends Context.Service<RealtimeHub, RealtimeHubShape>()("@troupe/server/events/RealtimeHub") {
  static readonly layer = Layer.effect(
    RealtimeHub,
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const notifier = yield* Notifier
      const byWorkspace = new Map<string, Set<Subscriber>>()
      let count = 0
      yield* scrapedGauge(sseClients, () => count)

      const maxSeq = sql`SELECT coalesce(max(seq), 0) AS seq FROM events WHERE seq IS NOT NULL`.pipe(
        Effect.map((rows) => num((rows[0] as any).seq))
      )
      let cursor = yield* Effect.orDie(maxSeq)

      const drop = (workspace: string, sub: Subscriber) => {
        const set = byWorkspace.get(workspace)
        if (set?.delete(sub)) {
          count--
          if (set.size === 0) byWorkspace.delete(workspace)
        }
      }

      const dispatch = (rows: ReadonlyArray<any>) => {
        for (const row of rows) {
          const seq = num(row.seq)
          if (seq > cursor) cursor = seq
          const set = byWorkspace.get(row.workspace)
          if (set === undefined) continue
          const event = toStoredEvent(row)
          for (const sub of set) {
            if (!sub.matches(event)) continue
            if (!Queue.offerUnsafe(sub.queue, { seq, event })) {
              // too slow: end its stream after what it already has; it resumes from its last id
              Queue.endUnsafe(sub.queue)
              drop(row.workspace, sub)
            }
          }
        }
      }

      // With no subscribers the hub reads nothing: the relay's signal carries the last seq. A lost signal can only
      // leave the cursor behind (a new subscriber then sees a few older events), so it is re-read now and then.
      let signalled = cursor
      let idleRounds = 0
      const follow = Effect.gen(function* () {
        if (count === 0) {
          cursor = Math.max(cursor, signalled)
          if (++idleRounds % 30 === 0) cursor = Math.max(cursor, yield* maxSeq)
          return
        }
        while (true) {
          const rows = yield* sql`SELECT id, seq, workspace, type, structure_id, record_slug, record_id, payload, created_at
          FROM events WHERE seq > ${cursor} ORDER BY seq LIMIT ${PAGE}`
          dispatch(rows)
          if (rows.length < PAGE) return
        }
      })

      // A stream never finishes by itself, and the HTTP server drains open requests before the layers below it stop:
      // end every stream as soon as the process is asked to stop, so clients reconnect (to another node) at once.
      let closing = false
      const endAll = () => {
        closing = true
        for (const [workspace, set] of byWorkspace) {
          for (const sub of set) {
            Queue.endUnsafe(sub.queue)
            drop(workspace, sub)
          }
        }
      }
      yield* Effect.acquireRelease(
        Effect.sync(() => {
          process.on("SIGTERM", endAll)
          process.on("SIGINT", endAll)
        }),
        () =>
          Effect.sync(() => {
            process.off("SIGTERM", endAll)
            process.off("SIGINT", endAll)
            endAll()
          })
      )

      const wake = yield* Queue.sliding<void>(1)
      yield* Stream.runForEach(notifier.subscribe(RELAYED_TOPIC), (payload) => {
        const seq = Number(payload)
        if (Number.isFinite(seq) && seq > signalled) signalled = seq
        return Queue.offer(wake, undefined)
      }).pipe(Effect.forkScoped)
      yield* Effect.gen(function* () {
        yield* follow
        yield* Effect.ignore(Effect.timeout(Queue.take(wake), POLL_INTERVAL))
      }).pipe(
        Effect.catchCause((cause) => Effect.andThen(Effect.logWarning("realtime hub: read failed", cause), Effect.sleep("1 second"))),
        Effect.forever,
        Effect.forkScoped
      )

      // The seq to resume after: that of the given event; for an id no longer (or never) stored, just before the
      // first retained event with a larger id (so `0` replays everything retained).
      const seqOf = (workspace: string, id: string) =>
        /^\d{1,18}$/.test(id)
          ? sql`SELECT coalesce(
              (SELECT seq FROM events WHERE id = ${id}::bigint AND workspace = ${workspace} AND seq IS NOT NULL),
              (SELECT min(seq) - 1 FROM events WHERE workspace = ${workspace} AND id > ${id}::bigint AND seq IS NOT NULL)
            ) AS seq`.pipe(
              Effect.map((rows) => {
                const seq = (rows[0] as any)?.seq
                return seq === null || seq === undefined ? Option.none<number>() : Option.some(num(seq))
              })
            )
          : Effect.succeed(Option.none<number>())

      const replay = (workspace: string, after: number, matches: (e: StoredEvent) => boolean) =>
        Stream.paginate(after, (from: number) =>
          sql`SELECT id, seq, workspace, type, structure_id, record_slug, record_id, payload, created_at
          FROM events WHERE workspace = ${workspace} AND seq > ${from} ORDER BY seq LIMIT ${PAGE}`.pipe(
            Effect.map((rows) => {
              const out: Array<HubEvent> = []
              for (const row of rows) {
                const event = toStoredEvent(row)
                if (matches(event)) out.push({ seq: num(row.seq), event })
              }
              const last = rows.length > 0 ? num((rows[rows.length - 1] as any).seq) : from
              return [out, rows.length < PAGE ? Option.none<number>() : Option.some(last)] as const
            })
          )
        )

      const subscribe = (options: SubscribeOptions): Stream.Stream<HubEvent> =>
        Stream.unwrap(
          Effect.gen(function* () {
            const matches = eventFilter(options)
            const queue = yield* Queue.bounded<HubEvent, Cause.Done>(SUBSCRIBER_BUFFER)
            const sub: Subscriber = { queue, matches }
            if (closing) return Stream.empty
            yield* Effect.acquireRelease(
              Effect.sync(() => {
                let set = byWorkspace.get(options.workspace)
                if (set === undefined) byWorkspace.set(options.workspace, (set = new Set()))
                set.add(sub)
                count++
              }),
              () => Effect.sync(() => drop(options.workspace, sub))
            )
            const live = Stream.fromQueue(queue)
            if (options.lastEventId === undefined) return live
            const from = yield* Effect.orDie(seqOf(options.workspace, options.lastEventId))
            if (Option.isNone(from)) return live
            let sent = from.value
            const track = (e: HubEvent) => {
              if (e.seq <= sent) return false
              sent = e.seq
              return true
            }
            return Stream.concat(replay(options.workspace, from.value, matches).pipe(Stream.orDie), live).pipe(Stream.filter(track))
          })
        )

      return RealtimeHub.of({ subscribe, subscriberCount: Effect.sync(() => count) })
    })
  )
}
