// The outbox relay: a cluster singleton (one owner node at a time; the next node takes over when it dies) that reads
// committed events in id order and hands each batch, in ONE transaction, to every consumer:
// - webhooks: a `webhook_deliveries` row per matching active webhook (durable; WebhookDispatcher sends them),
// - realtime: the event gets its `seq` (relay order) and a signal goes to every node's RealtimeHub,
// - anything registered in `EventConsumers` (event-driven triggers), inside the same transaction.
// The batch is read without payloads; only the events of workspaces with webhooks, and those a consumer selects,
// are read again with theirs (an event's payload is most of its row: skipping it spares both sides the JSON).
// Only then is the event marked processed, so a crash anywhere before the commit means the batch is read again
// (at least once). Woken by LISTEN troupe_events (appendEvent NOTIFYs on commit), with a poll as the fallback.
// The same singleton runs the webhook dispatcher and a retention sweep.
// Metrics: events relayed, and the relay's lag (the age of the oldest unprocessed event it has read, kept from the
// moment it reads a batch until a short batch commits, so a relay stuck on a failing batch shows a growing lag).
import { Clock, Context, Duration, Effect, type Layer, Metric, Queue, Schedule, Stream } from "effect"
import { type Sharding, Singleton } from "effect/cluster"
import { SqlClient } from "effect/sql"
import type { SqlError } from "effect/sql/SqlError"
import * as Crypto from "node:crypto"
import { iso, json, num } from "../lib/rows.ts"
import type { AppConfig } from "../platform/AppConfig.ts"
import { scrapedGauge } from "../platform/Metrics.ts"
import { Notifier } from "../platform/Notifier.ts"
import type { Secrets } from "../platform/Secrets.ts"
import { compileMatcher, type EventMatcher } from "./EventFilter.ts"
import { eventsRelayed, relayFailures, relayLag } from "./EventMetrics.ts"
import { listen } from "./Listen.ts"
import { EVENTS_CHANNEL, type EventPayload, type StoredEvent } from "./Outbox.ts"
import { deliveryPayload } from "./Payloads.ts"
import { type Dispatcher, makeDispatcher } from "./WebhookDispatcher.ts"
import { type NewDelivery, WebhookRepo, type WebhookRow } from "./WebhookRepo.ts"
import { KICK_TOPIC } from "./WebhookService.ts"

/** Notifier topic: events up to this `seq` were relayed (RealtimeHub listens on every node). */
export const RELAYED_TOPIC = "events.relayed"

/** A relayed event as the relay reads it first: everything but its payload. */
export type EventHead = Omit<StoredEvent, "payload">

/**
 * A consumer of relayed events. `heads` sees every batch as read, without payloads. `select` picks from it the
 * events `handle` needs (all of them when absent); `handle` gets those, payloads included (not called when there are
 * none). All run inside the relay's transaction: what they write commits together with the events being marked
 * processed, and a failure makes the whole batch retry. Keep it to durable enqueueing.
 */
export interface EventConsumer {
  readonly name: string
  readonly heads?: (events: ReadonlyArray<EventHead>) => Effect.Effect<void, SqlError>
  readonly select?: (events: ReadonlyArray<EventHead>) => Effect.Effect<ReadonlyArray<EventHead>, SqlError>
  readonly handle?: (events: ReadonlyArray<StoredEvent>) => Effect.Effect<void, SqlError>
}

/** Extra consumers (event-driven triggers): provide with `Layer.succeed(EventConsumers, [...])`. */
export const EventConsumers = Context.Reference<ReadonlyArray<EventConsumer>>("@troupe/server/events/EventConsumers", {
  defaultValue: () => []
})

export const BATCH_SIZE = 200
/** After a full batch the relay is behind (a bulk load): it reads this many at once until a batch comes back short. */
const CATCH_UP_SIZE = 1000
const POLL_INTERVAL = Duration.seconds(1)
const SCAN_INTERVAL = Duration.seconds(5)
/** Processed events are kept this long for SSE resume, then swept. */
const EVENT_RETENTION_DAYS = 3
/** Delivered and skipped deliveries are kept this long in the log; failed ones twice as long. */
const DELIVERY_RETENTION_DAYS = 7
const RELAY_LOCK = 7412007
/**
 * PGlite: after a step that relayed events, the next starts at least this long after it. A step is a transaction
 * of five statements, each a round trip to PGlite's thread, and holds the embedded database (one backend) the whole
 * time; under a steady write load the relay took a step per batch of creates, more of the database's time than the
 * creates themselves. Measured with 64 connections of single creates: 1,630/s without the gap, 2,060/s with 25 ms
 * (2,120/s with 50 ms). An event waits at most this much longer, and only while events keep coming.
 * A step under load took 25-30 ms, most of it waiting for round trips through a busy HTTP thread while holding the
 * database, so steps 25 ms apart still held it 55-65 % of the time (measured, 2026-11-28). The gap is therefore also
 * EMBEDDED_STEP_SHARE times the step's own length: the relay holds the database at most a third of the time while
 * writes keep coming. Measured, 64 connections of single creates, load ~3: 1,336-1,587/s with the 25 ms gap alone,
 * 1,894-2,225/s with the share (a fixed 100 ms gap: 1,924-2,389/s).
 */
const EMBEDDED_STEP_GAP_MS = 25
const EMBEDDED_STEP_SHARE = 3
/**
 * PostgreSQL: after a step that relayed events, the next starts at least this long after the previous began. A step
 * is about seven statements (and a `troupe_bus` NOTIFY every node hears) whatever its size; under a steady stream of
 * outcome batches or record writes the relay otherwise took a step per commit, ~40 % of the statements of a
 * notification sent end to end. An event waits at most this much longer, and only while events keep coming: the
 * first after a quiet spell is relayed at once, so writes 50 ms apart (the webhook latency figure) are not delayed.
 */
const POSTGRES_STEP_GAP_MS = 40

const toEventHead = (r: any): EventHead => ({
  id: String(r.id),
  workspace: r.workspace,
  type: r.type,
  structureId: r.structure_id === null || r.structure_id === undefined ? null : String(r.structure_id),
  recordSlug: r.record_slug ?? null,
  recordId: r.record_id === null || r.record_id === undefined ? null : String(r.record_id),
  createdAt: iso(r.created_at)
})

const payloadOf = (r: any) => (json<EventPayload>(r.payload) ?? {}) as EventPayload

export const toStoredEvent = (r: any): StoredEvent => ({ ...toEventHead(r), payload: payloadOf(r) })

export interface RelayResult {
  readonly count: number
  /** the batch was full: more events are waiting */
  readonly full: boolean
  readonly webhookIds: ReadonlySet<string>
}

/** Since when (node clock, ms) the oldest event the relay has read unprocessed has waited; undefined: caught up. */
export interface RelayBacklog {
  oldestSince: number | undefined
}

/**
 * One relay step: the next batch of unprocessed events, handed to every consumer and marked processed in one
 * transaction. The singleton calls it in a loop; `backlog` follows the relay's lag.
 */
export const makeRelayStepWith = (backlog: RelayBacklog) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const repo = yield* WebhookRepo
    const notifier = yield* Notifier
    const consumers = yield* EventConsumers
    // compiled filters per webhook, rebuilt when the webhook changes
    const matchers = new Map<string, { readonly updatedAt: string; readonly matcher: EventMatcher }>()
    const matcherOf = (hook: WebhookRow) => {
      const cached = matchers.get(hook.id)
      if (cached !== undefined && cached.updatedAt === hook.updatedAt) return cached.matcher
      const matcher = compileMatcher(hook.events, hook.filters)
      matchers.set(hook.id, { updatedAt: hook.updatedAt, matcher })
      return matcher
    }

    let limit = BATCH_SIZE
    const step = sql.withTransaction(
      Effect.gen(function* () {
        // Serialises relays if two ever overlap (a singleton hand-over): seq stays in commit order.
        if (sql.driver !== "pglite") yield* sql`SELECT pg_advisory_xact_lock(${RELAY_LOCK})`
        // whether the event's workspace has an active webhook, in the same statement: most steps need no webhook
        // lookup, and on PGlite each statement is a round trip while the step holds the database
        const rows = yield* sql`SELECT id, workspace, type, structure_id, record_slug, record_id, created_at,
        extract(epoch FROM now() - created_at)::float8 AS waited,
        EXISTS (SELECT 1 FROM webhooks w WHERE w.workspace = events.workspace AND w.enabled AND w.status = 'active') AS hooked
      FROM events WHERE processed_at IS NULL ORDER BY id LIMIT ${limit}`
        if (rows.length === 0) return { count: 0, full: false, webhookIds: new Set<string>() }
        // the age by the database's clock, placed on the node's (the two may disagree)
        const waited = Math.max(0, num((rows[0] as any).waited)) * 1000
        backlog.oldestSince = (yield* Clock.currentTimeMillis) - waited
        const events = rows.map(toEventHead)

        // Payloads only for the events something reads them for: webhooks of their workspace, or a consumer
        const hooks = yield* repo.activeIn([...new Set(rows.filter((r: any) => r.hooked === true).map((r: any) => String(r.workspace)))])
        const hooked = new Set(hooks.map((h) => h.workspace))
        const selected: Array<ReadonlyArray<EventHead>> = []
        for (const consumer of consumers) {
          if (consumer.heads !== undefined) yield* consumer.heads(events)
          selected.push(consumer.handle === undefined ? [] : consumer.select === undefined ? events : yield* consumer.select(events))
        }
        const needed = new Set([...events.filter((e) => hooked.has(e.workspace)), ...selected.flat()].map((e) => e.id))
        const payloads =
          needed.size === 0
            ? new Map<string, EventPayload>()
            : new Map(
                (yield* sql`SELECT id, payload FROM events WHERE id IN ${sql.in([...needed].map(Number))}`).map(
                  (r: any) => [String(r.id), payloadOf(r)] as const
                )
              )
        const stored = (e: EventHead): StoredEvent => ({ ...e, payload: payloads.get(e.id) ?? {} })

        // Webhooks
        const deliveries: Array<NewDelivery> = []
        const webhookIds = new Set<string>()
        if (hooks.length > 0) {
          for (const e of events.filter((e) => hooked.has(e.workspace)).map(stored)) {
            for (const hook of hooks) {
              if (hook.workspace !== e.workspace || !matcherOf(hook).test(e)) continue
              webhookIds.add(hook.id)
              deliveries.push({ id: Crypto.randomUUID(), webhookId: hook.id, eventId: e.id, event: e.type, payload: deliveryPayload(e) })
            }
          }
          yield* repo.insertDeliveries(deliveries)
        }

        // Other consumers (triggers)
        for (const [k, consumer] of consumers.entries()) {
          if (consumer.handle !== undefined && selected[k]!.length > 0) yield* consumer.handle(selected[k]!.map(stored))
        }

        // Realtime order + done: a block of `events_seq` (safe: relays never run at once), numbered in id order.
        const n = events.length
        const assigned = events.map((e, i) => ({ id: Number(e.id), i }))
        // Planned for each step (unprepared) with `LIMIT n` (all of them), which tells the planner how many rows the
        // JSON holds (it assumes 100). Prepared, the plan made while `events` was a page or two (a new database)
        // stayed a sequential scan of the whole table at every step until the next ANALYZE, which on a server without
        // autovacuum never came: about a third of PostgreSQL's CPU per function run in the compute bench.
        const updated = yield* sql`WITH block AS (SELECT setval('events_seq', nextval('events_seq') + ${n - 1}) - ${n - 1} AS base)
      UPDATE events SET processed_at = now(), seq = block.base + v.i
      FROM block, (SELECT * FROM json_to_recordset(${JSON.stringify(assigned)}::json) AS v(id bigint, i int) LIMIT ${n}) v
      WHERE events.id = v.id
      RETURNING events.seq`.unprepared
        const last = updated.reduce((max, r: any) => Math.max(max, num(r.seq)), 0)
        yield* notifier.publish(RELAYED_TOPIC, String(last))
        return { count: events.length, full: events.length === limit, webhookIds }
      })
    )
    return Effect.tap(step, (result) =>
      Effect.andThen(
        Metric.update(eventsRelayed, result.count),
        Effect.sync(() => {
          limit = result.full ? CATCH_UP_SIZE : BATCH_SIZE
          // Committed. A short batch took everything committed when it read: caught up. After a full one the next
          // read (at once) finds the new oldest.
          backlog.oldestSince = undefined
        })
      )
    )
  })

/** One relay step that nobody measures (tests). */
export const makeRelayStep = makeRelayStepWith({ oldestSince: undefined })

const runRelay = (dispatcher: Dispatcher) =>
  Effect.gen(function* () {
    const backlog: RelayBacklog = { oldestSince: undefined }
    yield* scrapedGauge(relayLag, (now) => (backlog.oldestSince === undefined ? 0 : Math.max(0, now - backlog.oldestSince) / 1000))
    yield* Metric.update(relayFailures, 0)
    const step = yield* makeRelayStepWith(backlog)
    const wake = yield* Queue.sliding<void>(1)
    yield* listen(EVENTS_CHANNEL, () => void Queue.offerUnsafe(wake, undefined))
    const sql = yield* SqlClient.SqlClient
    const embedded = sql.driver === "pglite"
    const gap = embedded ? EMBEDDED_STEP_GAP_MS : POSTGRES_STEP_GAP_MS
    const share = embedded ? EMBEDDED_STEP_SHARE : 0
    const loop = Effect.gen(function* () {
      const started = yield* Clock.currentTimeMillis
      const result = yield* step
      if (result.webhookIds.size > 0) yield* dispatcher.kick(result.webhookIds)
      if (!result.full) {
        if (result.count > 0) {
          const took = (yield* Clock.currentTimeMillis) - started
          const rest = Math.max(gap, share * took) - took
          if (rest > 0) yield* Effect.sleep(rest)
        }
        yield* Effect.ignore(Effect.timeout(Queue.take(wake), POLL_INTERVAL))
      }
    }).pipe(
      Effect.catchCause((cause) =>
        Effect.logWarning("outbox relay step failed; retrying", cause).pipe(
          Effect.andThen(Metric.update(relayFailures, 1)),
          Effect.andThen(Effect.sleep("1 second"))
        )
      ),
      Effect.forever
    )
    return yield* loop
  })

const runSweeper = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`DELETE FROM events WHERE processed_at < now() - make_interval(days => ${EVENT_RETENTION_DAYS})`
  yield* sql`DELETE FROM webhook_deliveries WHERE status IN ('delivered', 'skipped')
    AND updated_at < now() - make_interval(days => ${DELIVERY_RETENTION_DAYS})`
  yield* sql`DELETE FROM webhook_deliveries WHERE status = 'failed'
    AND updated_at < now() - make_interval(days => ${DELIVERY_RETENTION_DAYS * 2})`
}).pipe(
  Effect.catchCause((cause) => Effect.logWarning("events retention sweep failed", cause)),
  Effect.repeat(Schedule.spaced("10 minutes"))
)

/** Everything the singleton owner runs: relay, dispatcher (with its kick listener and safety scan), sweeper. */
export const runEventsSingleton = Effect.gen(function* () {
  yield* Effect.logInfo("events: outbox relay and webhook dispatcher running on this node")
  yield* Effect.addFinalizer(() => Effect.logInfo("events: outbox relay and webhook dispatcher stopped on this node"))
  const notifier = yield* Notifier
  const dispatcher = yield* makeDispatcher
  yield* Effect.forkScoped(runRelay(dispatcher))
  yield* Effect.forkScoped(Stream.runForEach(notifier.subscribe(KICK_TOPIC), (id) => dispatcher.kick([id])))
  yield* Effect.forkScoped(Effect.repeat(dispatcher.scan, Schedule.spaced(SCAN_INTERVAL)))
  yield* Effect.forkScoped(runSweeper)
  return yield* Effect.never
})

/** The cluster singleton: started on whichever node owns its shard. */
export const EventsSingletonLayer: Layer.Layer<
  never,
  never,
  Sharding.Sharding | SqlClient.SqlClient | Notifier | WebhookRepo | AppConfig | Secrets
> = Singleton.make("troupe-events", runEventsSingleton)
