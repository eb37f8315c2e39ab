// Scheduled triggers (README "Triggers"): a cluster singleton (one node at a time; the
// next takes over when it dies) keeps the due times of every active scheduled trigger in memory and sleeps until the
// earliest. A tick is one transaction: a compare-and-set of the trigger's `next_run_at` from the due time to the next
// one (effect/Cron for cron, with the trigger's time zone; missed ticks collapse into one run) plus the run insert,
// unique on (trigger_id, scheduled_for). So a tick runs exactly once even while two schedulers overlap during a
// hand-over: the loser's compare-and-set matches nothing, and a duplicate insert is ignored.
// Changes (create, update, pause, resume, delete) reach the scheduler through the Notifier at once; a full reload
// every 30 s covers a lost signal. A tick also checks that the trigger's function still exists, so a deleted
// function's triggers stop at once, whatever the scheduler holds in memory (its tick then reloads).
import { Clock, Duration, Effect, Layer, Queue, Schedule, Stream } from "effect"
import { Singleton } from "effect/cluster"
import { SqlClient } from "effect/sql"
import { Notifier } from "../platform/Notifier.ts"
import { type TriggerRow, triggerRow } from "./model.ts"
import { type NewRun, RunRepo } from "./RunRepo.ts"
import { makeNewRun } from "./RunSpec.ts"
import { TriggerParams } from "./TriggerParams.ts"
import { SCHEDULE_TOPIC } from "./TriggerService.ts"
import { nextRun, parseSchedule } from "./TriggerSchedule.ts"

const RELOAD_INTERVAL = Duration.seconds(30)
/** Ticks due within this much of each other are written in one transaction. */
const BATCH_WINDOW_MS = 5

interface Entry {
  readonly trigger: TriggerRow
  readonly due: number
}

const runScheduler = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  const notifier = yield* Notifier
  const runs = yield* RunRepo
  const params = yield* TriggerParams
  const newRun = makeNewRun(params.encryptValue)
  yield* Effect.logInfo("scheduler: running on this node")
  yield* Effect.addFinalizer(() => Effect.logInfo("scheduler: stopped on this node"))

  const changed = yield* Queue.sliding<void>(1)
  yield* Effect.forkScoped(Stream.runForEach(notifier.subscribe(SCHEDULE_TOPIC), () => Queue.offer(changed, undefined)))
  yield* Effect.forkScoped(Effect.repeat(Queue.offer(changed, undefined), Schedule.spaced(RELOAD_INTERVAL)))

  // Active scheduled triggers whose function exists (a deleted function's triggers stop firing), earliest first.
  const load = Effect.map(
    sql`SELECT t.* FROM triggers t JOIN functions f ON f.id = t.function_id
      WHERE t.execution_type = 'scheduled' AND NOT t.paused AND t.next_run_at IS NOT NULL
      ORDER BY t.next_run_at`,
    (rows) =>
      rows.map((r): Entry => {
        const trigger = triggerRow(r)
        return { trigger, due: Date.parse(trigger.nextRunAt!) }
      })
  )

  /** One transaction for every tick due now: compare-and-set each trigger, then insert the runs of those that won. */
  const tick = (due: ReadonlyArray<Entry>, now: number) =>
    sql.withTransaction(
      Effect.gen(function* () {
        const moves = due.flatMap(({ trigger, due }) => {
          const parsed = parseSchedule(trigger.metadata, new Date(0))
          if (!parsed.ok) return []
          const next = nextRun(parsed.spec, new Date(due), new Date(now))
          return [
            { id: trigger.id, due: new Date(due).toISOString(), next: next?.toISOString() ?? null, complete: parsed.spec.type === "once" }
          ]
        })
        if (moves.length === 0) return []
        const won = yield* sql`UPDATE triggers t SET next_run_at = v.next,
          metadata = CASE WHEN v.complete THEN t.metadata || '{"completed": true}'::jsonb ELSE t.metadata END
        FROM jsonb_to_recordset(${JSON.stringify(moves)}::jsonb) AS v(id uuid, due timestamptz, next timestamptz, complete boolean)
        WHERE t.id = v.id AND t.next_run_at = v.due AND NOT t.paused
          AND EXISTS (SELECT 1 FROM functions f WHERE f.id = t.function_id)
        RETURNING t.id`
        const ids = new Set(won.map((r: any) => String(r.id)))
        const firedAt = new Date(now).toISOString()
        const pending: Array<NewRun> = due
          .filter((e) => ids.has(e.trigger.id))
          .map(({ trigger, due }) => {
            const scheduledFor = new Date(due).toISOString()
            return newRun({
              workspace: trigger.workspace,
              functionId: trigger.functionId,
              triggerId: trigger.id,
              source: "scheduled",
              executionParams: { triggerId: trigger.id, triggerName: trigger.name, scheduledFor, firedAt },
              actingAs: { kind: trigger.createdByKind ?? "user", id: trigger.createdBy ?? "" },
              executionContext: { triggerName: trigger.name, executionType: trigger.executionType, scheduledFor },
              scheduledFor,
              fired: { name: trigger.name, executionType: trigger.executionType }
            })
          })
        return yield* runs.enqueue(pending)
      })
    )

  let entries: Array<Entry> = yield* load
  const loop = Effect.gen(function* () {
    const now = yield* Clock.currentTimeMillis
    const due = entries.filter((e) => e.due <= now + BATCH_WINDOW_MS)
    if (due.length > 0) {
      const at = Math.max(now, ...due.map((e) => e.due))
      const done = yield* tick(due, at).pipe(Effect.result)
      if (done._tag === "Failure") {
        yield* Effect.logWarning("scheduler: a tick failed; retrying in 1 s", done.failure)
        yield* Effect.sleep("1 second")
        entries = yield* load
        return
      }
      const won = new Set(done.success.map((r) => r.triggerId))
      if (won.size < due.length) {
        // another scheduler moved some of them (a hand-over): read the truth back
        entries = yield* load
        return
      }
      // the ones that ticked move to their next due time; once triggers are done
      const moved = new Map(
        due.map((e) => {
          const parsed = parseSchedule(e.trigger.metadata, new Date(0))
          const next = parsed.ok ? nextRun(parsed.spec, new Date(e.due), new Date(at)) : undefined
          return [e.trigger.id, next?.getTime()] as const
        })
      )
      entries = entries
        .flatMap((e) => {
          if (!moved.has(e.trigger.id)) return [e]
          const next = moved.get(e.trigger.id)
          return next === undefined ? [] : [{ trigger: e.trigger, due: next }]
        })
        .sort((a, b) => a.due - b.due)
      return
    }
    const next = entries[0]?.due
    const wait = next === undefined ? RELOAD_INTERVAL : Duration.millis(Math.max(0, next - now))
    const signalled = yield* Effect.timeout(Queue.take(changed), wait).pipe(
      Effect.as(true),
      Effect.catch(() => Effect.succeed(false))
    )
    if (signalled) entries = yield* load
  }).pipe(
    Effect.catchCause((cause) => Effect.andThen(Effect.logWarning("scheduler: step failed", cause), Effect.sleep("1 second"))),
    Effect.forever
  )
  return yield* loop
})

/** The cluster singleton: started on whichever node owns its shard. */
export const SchedulerLayer = Singleton.make("troupe-scheduler", runScheduler).pipe(Layer.provide([RunRepo.layer, TriggerParams.layer]))
