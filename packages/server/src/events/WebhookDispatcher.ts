// Sends queued webhook deliveries. Runs inside the events singleton (one node at a time). The queue is the
// `webhook_deliveries` table, so nothing is lost with a node: the next owner picks up every pending or retrying row
// and honours its stored next attempt time.
// - One worker fiber per webhook sends that webhook's deliveries one at a time, in queue (= event) order; workers
//   of different webhooks run concurrently, bounded by two semaphores on open requests: one per workspace
//   (TROUPE_WEBHOOK_WORKSPACE_CONCURRENCY, 16) taken first, then the global one (TROUPE_WEBHOOK_CONCURRENCY, 128).
//   A workspace whose receivers never answer therefore holds at most its own share of the global permits, and the
//   other workspaces' deliveries go on. A request waiting for its workspace's permit holds no global one.
// - The signing secret is stored encrypted (SigningSecret.ts) and decrypted only to sign an attempt.
// - A failed attempt is retried after the configured delays (default 1, 5, 15 s) by `Effect.retry` with a Schedule;
//   each attempt's outcome and the next attempt time are written before waiting, so a restart resumes the schedule.
// - After the last attempt the delivery is `failed`, the webhook `failed`, and its other queued deliveries
//   `skipped` (WebhookRepo.markFailed).
// - Successes are recorded in batches (one UPDATE per up to 20 deliveries or 200 ms, and before the worker looks at
//   its queue again): a crash in between only means those deliveries are sent again, which at-least-once allows.
// - Metrics: each attempt's outcome (delivered, retried, failed) and the requests in flight (events/EventMetrics.ts).
import { Clock, Data, DateTime, Duration, Effect, Metric, Schedule, type Scope, Semaphore } from "effect"
import { AppConfig } from "../platform/AppConfig.ts"
import { scrapedGauge } from "../platform/Metrics.ts"
import { Secrets } from "../platform/Secrets.ts"
import { webhookDelivered, webhookFailed, webhookInFlight, webhookRetried } from "./EventMetrics.ts"
import { post, type PostResult } from "./HttpPost.ts"
import { deliveryHeaders } from "./Signature.ts"
import { openSigningSecret } from "./SigningSecret.ts"
import { DELIVERY_TIMEOUT_MS } from "./WebhookService.ts"
import { type DeliveredMark, type QueuedDelivery, WebhookRepo } from "./WebhookRepo.ts"

class RetryLater extends Data.TaggedError("RetryLater")<{}> {}

/** The retry schedule for the delays still ahead: one recurrence per delay, in order. */
export const retrySchedule = (delaysSeconds: ReadonlyArray<number>): Schedule.Schedule<unknown, unknown> =>
  delaysSeconds.length === 0
    ? Schedule.recurs(0)
    : delaysSeconds
        .map((s): Schedule.Schedule<unknown, unknown> => Schedule.duration(Duration.millis(Math.round(s * 1000))))
        .reduce((a, b) => Schedule.concat(a, b))

export type DeliveryOutcome = "delivered" | "failed" | "inactive" | "retrying"

export interface Dispatcher {
  /** These webhooks have new queued deliveries. */
  readonly kick: (webhookIds: Iterable<string>) => Effect.Effect<void>
  /** Starts workers for every webhook with a queue (at start, and periodically as a safety net). */
  readonly scan: Effect.Effect<void>
}

const BATCH = 50
const MARK_BATCH = 20
const MARK_DELAY_MS = 200

export const makeDispatcher: Effect.Effect<Dispatcher, never, Scope.Scope | WebhookRepo | AppConfig | Secrets> = Effect.gen(function* () {
  const repo = yield* WebhookRepo
  const config = yield* AppConfig
  const secrets = yield* Secrets
  const delays = config.webhookRetryDelays
  const allowPrivate = !config.production
  const open = yield* Semaphore.make(config.webhookConcurrency)
  // workspace -> its share of the open requests (made on first use; a few bytes per workspace)
  const shares = new Map<string, Semaphore.Semaphore>()
  const shareOf = (workspace: string) => {
    let share = shares.get(workspace)
    if (share === undefined) shares.set(workspace, (share = Semaphore.makeUnsafe(config.webhookWorkspaceConcurrency)))
    return share
  }
  const scope = yield* Effect.scope
  // webhook id -> its worker's state; `dirty` = kicked while running, so look at the queue again before exiting
  const workers = new Map<string, { dirty: boolean }>()
  let inFlight = 0
  yield* scrapedGauge(webhookInFlight, () => inFlight)
  // every outcome's series from the start, so rates read 0 rather than nothing
  yield* Effect.forEach([webhookDelivered, webhookRetried, webhookFailed], (outcome) => Metric.update(outcome, 0), { discard: true })

  const attemptOnce = (row: QueuedDelivery, target: { url: string; secret: string }) =>
    Effect.gen(function* () {
      const secret = yield* openSigningSecret(secrets, row.webhookId, target.secret).pipe(Effect.option)
      if (secret._tag === "None") {
        // the key that sealed it is gone (TROUPE_ENCRYPTION_KEY replaced without the old one): nothing to sign with
        const failed: PostResult = { ok: false, status: null, error: "signing secret cannot be decrypted", durationMs: 0, body: "" }
        return failed
      }
      const body = JSON.stringify(row.payload)
      const seconds = Math.floor((yield* Clock.currentTimeMillis) / 1000)
      const headers = deliveryHeaders({
        secret: secret.value,
        deliveryId: row.redeliveryOf ?? row.id,
        event: row.event,
        body,
        timestampSeconds: seconds
      })
      const request = Effect.acquireUseRelease(
        Effect.sync(() => inFlight++),
        () => post(target.url, body, headers, { timeoutMs: DELIVERY_TIMEOUT_MS, allowPrivate }),
        () => Effect.sync(() => inFlight--)
      )
      return yield* shareOf(row.workspace).withPermits(1)(open.withPermits(1)(request))
    })

  /** Sends one delivery through all its remaining attempts; a success is handed to `delivered` to record. */
  const deliver = (
    row: QueuedDelivery,
    delivered: (mark: DeliveredMark) => Effect.Effect<void, unknown>,
    flush: Effect.Effect<void, unknown>
  ): Effect.Effect<DeliveryOutcome, unknown> =>
    Effect.gen(function* () {
      const maxAttempts = Math.max(1 + delays.length, row.attempts + 1)
      let attempts = row.attempts
      let target: { url: string; secret: string } = { url: row.url, secret: row.secret }
      // a stored retry waits for its time (a fresh delivery never does: the database clock may run ahead)
      if (row.attempts > 0 && row.nextAttemptAt !== null) {
        const wait = Date.parse(row.nextAttemptAt) - (yield* Clock.currentTimeMillis)
        if (wait > 0) yield* Effect.andThen(flush, Effect.sleep(Duration.millis(wait)))
      }
      let fresh = row.attempts === 0
      const attempt = Effect.gen(function* () {
        if (!fresh) {
          // a retry, or a resumed delivery: the webhook may have changed or stopped meanwhile
          const current = yield* repo.target(row.webhookId)
          if (current === undefined || !current.active) return "inactive" as const
          target = current
        }
        fresh = false
        const result = yield* attemptOnce(row, target)
        attempts += 1
        if (result.ok) {
          const at = DateTime.formatIso(yield* DateTime.now)
          yield* delivered({ id: row.id, attempts, status: result.status, durationMs: result.durationMs, at })
          yield* Metric.update(webhookDelivered, 1)
          return "delivered" as const
        }
        // earlier successes are recorded first: they must not be taken for queued deliveries
        yield* flush
        if (attempts >= maxAttempts) {
          yield* repo.markFailed(row.id, row.webhookId, attempts, result.status, result.error, result.durationMs)
          yield* Metric.update(webhookFailed, 1)
          return "failed" as const
        }
        const delay = delays[attempts - 1] ?? delays[delays.length - 1] ?? 1
        yield* repo.markRetrying(row.id, attempts, result.status, result.error, result.durationMs, delay * 1000)
        yield* Metric.update(webhookRetried, 1)
        return yield* Effect.fail(new RetryLater())
      })
      return yield* attempt.pipe(
        Effect.retry({ schedule: retrySchedule(delays.slice(row.attempts)), while: (e) => e instanceof RetryLater }),
        Effect.catchIf(
          (e): e is RetryLater => e instanceof RetryLater,
          () => Effect.succeed("retrying" as const)
        )
      )
    })

  const worker = (webhookId: string, state: { dirty: boolean }): Effect.Effect<void> => {
    const marks: Array<DeliveredMark> = []
    let oldest = 0
    const flush = Effect.suspend(() => (marks.length === 0 ? Effect.void : repo.markDelivered(marks.splice(0))))
    const delivered = (mark: DeliveredMark) =>
      Effect.suspend(() => {
        if (marks.length === 0) oldest = performance.now()
        marks.push(mark)
        return marks.length >= MARK_BATCH || performance.now() - oldest >= MARK_DELAY_MS ? flush : Effect.void
      })
    return Effect.gen(function* () {
      while (true) {
        state.dirty = false
        yield* flush
        const batch = yield* repo.queue(webhookId, BATCH)
        if (batch.length === 0 || !batch[0]!.webhookActive) {
          // Leave the map in the same synchronous step as the last look, so a kick never falls in between.
          const done = yield* Effect.sync(() => {
            if (batch.length === 0 && state.dirty) return false
            if (workers.get(webhookId) === state) workers.delete(webhookId)
            return true
          })
          if (done) return
          continue
        }
        for (const row of batch) {
          const outcome = yield* deliver(row, delivered, flush)
          if (outcome === "failed" || outcome === "inactive" || outcome === "retrying") return
        }
      }
    }).pipe(
      Effect.ensuring(Effect.ignore(flush)),
      Effect.catchCause((cause) => Effect.logWarning(`webhook ${webhookId}: delivery worker stopped`, cause)),
      Effect.ensuring(
        Effect.sync(() => {
          if (workers.get(webhookId) === state) workers.delete(webhookId)
        })
      )
    )
  }

  const start = (webhookId: string) =>
    Effect.suspend(() => {
      const running = workers.get(webhookId)
      if (running !== undefined) {
        running.dirty = true
        return Effect.void
      }
      const state = { dirty: false }
      workers.set(webhookId, state)
      return Effect.asVoid(Effect.forkIn(worker(webhookId, state), scope))
    })

  const kick = (webhookIds: Iterable<string>) => Effect.forEach(webhookIds, start, { discard: true })

  const scan = repo.webhooksWithQueue.pipe(
    Effect.flatMap(kick),
    Effect.catchCause((cause) => Effect.logWarning("webhook queue scan failed", cause))
  )

  return { kick, scan }
})
