// Every node's outbox worker (docs/ARCHITECTURE.md "Data flow of a message"): the run queue's pattern.
// - Woken by LISTEN troupe_notifications (NOTIFY after a send commits), with a 1 s poll for retries falling due and
//   wake-ups lost with a crash. It claims due messages `FOR UPDATE SKIP LOCKED` with a lease, as many as it has free
//   slots (TROUPE_NOTIFY_CONCURRENCY), visiting the workspaces in turn and holding at most
//   TROUPE_NOTIFY_WORKSPACE_CONCURRENCY of one workspace: a workspace's backlog or slow provider fills only its own
//   share of the slots, and the next claim goes on with the others.
// - A send accepted by this node while it has a free slot is stored already leased by it (NotificationService) and
//   handed over with `begin`: no NOTIFY, no claim; the claim loop serves the rest.
// - Each message goes to its channel's provider (Providers: the workspace's, the node's, or none: `captured`). Sent,
//   failed and captured messages, and those to retry (temporary failure, attempts left: back to `queued` with the
//   next attempt time of RetryPlan), are recorded in batches with their notification.* events: whatever finished
//   while the previous batch committed, and batches at most every OUTCOME_INTERVAL_MS, go into one statement.
// - Leases of messages in hand are renewed; any node queues again the messages whose lease expired (their node died
//   mid-send): such a message is sent again, at least once, with the same Message-ID.
import { Cause, Clock, Context, Deferred, Duration, Effect, Fiber, Layer, Option, Queue, Schedule } from "effect"
import { listen } from "../events/Listen.ts"
import { AppConfig } from "../platform/AppConfig.ts"
import { nodeName } from "../platform/Cluster.ts"
import type { Outgoing } from "./MailTransport.ts"
import type { MessageRow, Outcome } from "./model.ts"
import { NOTIFICATIONS_CHANNEL, NotificationRepo } from "./NotificationRepo.ts"
import { Providers } from "./Providers.ts"
import { retryDelay } from "./RetryPlan.ts"

const POLL_INTERVAL = Duration.seconds(1)
const SWEEP_INTERVAL = Duration.seconds(2)
/**
 * Outcome batches start at most this often. A batch writes its rows and their events in one statement and wakes the
 * events relay once; on a quiet machine the writer otherwise went round after every message or two, and each round
 * is a statement, a commit and a relay step (docs/benchmarks.md, fifth session). An outcome waits at most this much
 * longer to be recorded; its slot is free already.
 */
export const OUTCOME_INTERVAL_MS = 20

export class NotificationWorker extends Context.Service<
  NotificationWorker,
  {
    /** Messages this node holds now (claimed, not yet recorded). */
    readonly inHand: Effect.Effect<number>
    /** Slots taken now, and the most ever taken at once, in all and of one workspace (never above the caps). */
    readonly slots: Effect.Effect<{ readonly held: number; readonly peak: number; readonly peakOfWorkspace: number }>
    /**
     * Takes a slot for a message this node is about to store, when it has one free (and the workspace is under its
     * cap): the message is then stored already leased by this node and sent here at once, with no claim.
     */
    readonly reserve: (id: string, workspace: string) => boolean
    /** Gives back a reserved slot (the message was not stored). */
    readonly unreserve: (id: string, workspace: string) => void
    /** Sends a reserved message once its row committed. */
    readonly begin: (row: MessageRow) => Effect.Effect<void>
    /** This node's lease owner name. */
    readonly owner: string
  }
>()("@troupe/server/notification/NotificationWorker") {
  static readonly layer = Layer.effect(
    NotificationWorker,
    Effect.gen(function* () {
      const config = yield* AppConfig
      const repo = yield* NotificationRepo
      const providers = yield* Providers
      const owner = nodeName(config)
      const { concurrency, workspaceConcurrency, leaseMs, timeoutMs } = config.notification
      const delays = config.webhookRetryDelays
      const layerScope = yield* Effect.scope

      /** id -> workspace of every message in hand */
      const held = new Map<string, string>()
      const busy = new Map<string, number>()
      const peak = { held: 0, workspace: 0 }
      // the claim in flight: the slots it may fill, and the busy counts it was given. A send reserved meanwhile
      // takes only what the claim cannot, or held would pass the caps when the claim returns.
      let claiming: { readonly n: number; readonly busy: ReadonlyMap<string, number> } | undefined
      let cursor = ""
      const signal = yield* Queue.sliding<void>(1)
      const poke = () => void Queue.offerUnsafe(signal, undefined)

      // ---------------------------------------------------------------- outcomes, in batches

      interface Pending {
        readonly outcome: Outcome
        readonly done: Deferred.Deferred<void>
      }
      const finishing = yield* Queue.unbounded<Pending>()
      // SQL failures are retried (an outcome must not be lost while the lease holds); the lease otherwise expires
      // and the message is sent again
      const writeBatch = (batch: ReadonlyArray<Pending>) =>
        repo
          .finish(
            owner,
            batch.map((p) => p.outcome)
          )
          .pipe(
            Effect.tapError((e) => Effect.logWarning("notifications: recording outcomes failed; retrying", e)),
            Effect.retry(Schedule.spaced("500 millis").pipe(Schedule.upTo({ duration: Duration.millis(leaseMs) }))),
            Effect.ignore,
            Effect.andThen(Effect.forEach(batch, (p) => Deferred.succeed(p.done, undefined), { discard: true }))
          )
      const writer = Effect.gen(function* () {
        const batch = yield* Queue.takeAll(finishing)
        const began = yield* Clock.currentTimeMillis
        yield* writeBatch(batch)
        const rest = OUTCOME_INTERVAL_MS - ((yield* Clock.currentTimeMillis) - began)
        if (rest > 0) yield* Effect.sleep(rest)
      })
      yield* Effect.forkScoped(Effect.forever(writer))

      /** ids whose outcome waits for its batch: their slot is free again, their lease is still renewed */
      const recording = new Set<string>()
      const record = (outcome: Outcome) =>
        Effect.gen(function* () {
          const done = yield* Deferred.make<void>()
          recording.add(outcome.id)
          yield* Queue.offer(finishing, { outcome, done })
          yield* Deferred.await(done)
        }).pipe(Effect.ensuring(Effect.sync(() => recording.delete(outcome.id))))

      // ---------------------------------------------------------------- one message

      const outgoing = (row: MessageRow, defaultFrom: string | null): Outgoing =>
        row.channel === "email"
          ? {
              channel: "email",
              from: row.from_address ?? defaultFrom ?? "no-reply@localhost",
              to: row.to_list,
              cc: row.cc_list,
              bcc: row.bcc_list,
              subject: row.subject ?? "",
              text: row.text_body,
              html: row.html_body,
              messageId: row.message_id ?? `<${row.id}@troupe.local>`
            }
          : { channel: "sms", from: row.from_address ?? defaultFrom ?? "Troupe", to: row.to_list[0] ?? "", text: row.text_body ?? "" }

      const outcome = (
        row: MessageRow,
        o: Omit<Outcome, "id" | "providerMessageId" | "retryInMs"> & Partial<Pick<Outcome, "providerMessageId" | "retryInMs">>
      ): Outcome => ({ id: row.id, providerMessageId: null, retryInMs: null, ...o })

      const attempt = (row: MessageRow): Effect.Effect<Outcome> =>
        Effect.gen(function* () {
          const provider = yield* providers.resolve(row.workspace, row.channel)
          if (provider.problem !== null) return outcome(row, { status: "failed", error: provider.problem, attempted: true })
          if (provider.transport === undefined) return outcome(row, { status: "captured", error: null, attempted: false })
          const sent = yield* provider.transport.send(outgoing(row, provider.from)).pipe(
            // nodemailer bounds every step; this bounds the whole exchange (a server that trickles)
            Effect.timeoutOption(Duration.millis(timeoutMs * 4)),
            Effect.map(Option.getOrElse(() => undefined)),
            Effect.result
          )
          if (sent._tag === "Success" && sent.success !== undefined) {
            const { providerMessageId, warning } = sent.success
            return outcome(row, { status: "sent", error: warning, providerMessageId, attempted: true })
          }
          const failure =
            sent._tag === "Failure" ? sent.failure : { temporary: true, reason: `no answer within ${(timeoutMs * 4) / 1000} s` }
          const attempts = row.attempts + 1
          const delay = failure.temporary ? yield* retryDelay(delays, attempts) : Option.none()
          return Option.match(delay, {
            onNone: () => outcome(row, { status: "failed", error: failure.reason, attempted: true }),
            onSome: (d) => outcome(row, { status: "queued", error: failure.reason, retryInMs: Duration.toMillis(d), attempted: true })
          })
        }).pipe(
          Effect.catchDefect((defect) =>
            Effect.as(
              Effect.logError("notifications: a send failed unexpectedly", defect),
              outcome(row, { status: "failed", error: "internal error while sending", attempted: true })
            )
          )
        )

      const take = (id: string, workspace: string) => {
        held.set(id, workspace)
        const n = (busy.get(workspace) ?? 0) + 1
        busy.set(workspace, n)
        peak.held = Math.max(peak.held, held.size)
        peak.workspace = Math.max(peak.workspace, n)
      }
      const give = (id: string, workspace: string) => {
        if (!held.delete(id)) return
        const n = (busy.get(workspace) ?? 1) - 1
        if (n <= 0) busy.delete(workspace)
        else busy.set(workspace, n)
        poke()
      }
      const release = (row: MessageRow) => Effect.sync(() => give(row.id, row.workspace))
      const reserve = (id: string, workspace: string) => {
        const claimable = claiming === undefined ? 0 : Math.min(claiming.n, workspaceConcurrency - (claiming.busy.get(workspace) ?? 0))
        if (held.size + (claiming?.n ?? 0) >= concurrency) return false
        if ((busy.get(workspace) ?? 0) + Math.max(0, claimable) >= workspaceConcurrency) return false
        take(id, workspace)
        return true
      }

      // in the layer's scope: a node shutting down interrupts its sends; their leases expire and another node
      // (or this one, restarted) sends them
      // the slot is given back once the provider answered: recording the outcome holds no provider connection
      const start = (row: MessageRow) => Effect.forkIn(Effect.flatMap(attempt(row).pipe(Effect.ensuring(release(row))), record), layerScope)

      // ---------------------------------------------------------------- the loop

      let maybeDue = true
      let notices = 0
      const onNotify = () => {
        maybeDue = true
        notices++
        poke()
      }

      const claimAndSend = Effect.gen(function* () {
        const free = concurrency - held.size
        if (free <= 0 || !maybeDue) return false
        const seen = notices
        claiming = { n: free, busy: new Map(busy) }
        const claimed = yield* repo.claim({ owner, cursor, busy: claiming.busy, cap: workspaceConcurrency, n: free, leaseMs })
        for (const row of claimed) {
          take(row.id, row.workspace)
          yield* start(row)
        }
        claiming = undefined
        // go on after the last workspace served, so the next claim starts with the others
        const served = [...new Set(claimed.map((r) => r.workspace))].sort()
        cursor = claimed.length === free && served.length === claimed.length ? served[served.length - 1]! : ""
        if (claimed.length < free && notices === seen) maybeDue = false
        return claimed.length === free
      }).pipe(Effect.ensuring(Effect.sync(() => (claiming = undefined))))

      const loop = Effect.gen(function* () {
        const more = yield* claimAndSend.pipe(
          Effect.catchCause((cause) => Effect.as(Effect.logWarning("notifications: claim failed", cause), false))
        )
        if (!more) {
          const signalled = yield* Queue.take(signal).pipe(
            Effect.timeout(POLL_INTERVAL),
            Effect.as(true),
            Effect.catch(() => Effect.succeed(false))
          )
          // the poll: retries falling due, a wake-up that was lost
          if (!signalled) maybeDue = true
        }
      }).pipe(Effect.forever)

      yield* listen(NOTIFICATIONS_CHANNEL, onNotify)
      const worker = yield* Effect.forkScoped(loop)
      yield* Effect.addFinalizer(() => Fiber.interrupt(worker))

      const renew = Effect.suspend(() => repo.renew(owner, [...held.keys(), ...recording], leaseMs)).pipe(
        Effect.catchCause((cause) => Effect.logWarning("notifications: lease renewal failed", cause)),
        Effect.repeat(Schedule.spaced(Duration.millis(Math.max(100, Math.floor(leaseMs / 3)))))
      )
      yield* Effect.forkScoped(renew)

      const sweep = repo.requeueLost(100).pipe(
        Effect.tap((n) => (n > 0 ? Effect.logWarning(`notifications: ${n} message(s) of a lost node queued again`) : Effect.void)),
        Effect.catchCause((cause) =>
          Cause.hasInterruptsOnly(cause) ? Effect.void : Effect.logWarning("notifications: lost-lease sweep failed", cause)
        ),
        Effect.repeat(Schedule.spaced(SWEEP_INTERVAL))
      )
      yield* Effect.forkScoped(sweep)

      return NotificationWorker.of({
        inHand: Effect.sync(() => held.size + recording.size),
        slots: Effect.sync(() => ({ held: held.size, peak: peak.held, peakOfWorkspace: peak.workspace })),
        reserve,
        unreserve: give,
        begin: (row) => Effect.asVoid(start(row)),
        owner
      })
    })
  )
}
