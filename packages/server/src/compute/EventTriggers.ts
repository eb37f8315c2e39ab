// Event-driven triggers (README "Triggers").
// - Record events reach triggers through the outbox relay's EventConsumers hook: inside the relay's transaction the
//   consumer only inserts runs (and their trigger.fired events), so an event is handed to its triggers exactly when it
//   is marked relayed. `record.expired` fires record_deleted. Every bulk write also writes the per-record events
//   (record.created, ...) beside its `record.bulk.*` summary: those fire the per-record triggers, once per record.
// - Failed writes (record_create_failed / record_created_failed, record_updated_failed, record_deleted_failed) come
//   from the record engine's failure hook, after the failed transaction rolled back. Each node keeps, per workspace,
//   which (structure, failure event) pairs some trigger subscribes to, so a refused write costs nothing otherwise.
// - A run whose own write fires a trigger passes its depth on; past MAX_RUN_DEPTH the triggered run is stored
//   already failed, which ends a function that keeps writing to its own trigger's structure.
import type { Structure } from "@troupe/api/structures/Structure"
import { Clock, Context, Effect, Layer, Predicate, Stream } from "effect"
import type { StoredEvent } from "../events/Outbox.ts"
import { type EventConsumer, EventConsumers, type EventHead } from "../events/OutboxRelay.ts"
import { isoString } from "../lib/rows.ts"
import { Notifier } from "../platform/Notifier.ts"
import { type RecordFailure, RecordFailureHook } from "../records/RecordFailures.ts"
import { MAX_RUN_DEPTH, type TriggerRow } from "./model.ts"
import { type NewRun, RunRepo } from "./RunRepo.ts"
import { makeNewRun, type RunSpec } from "./RunSpec.ts"
import { TriggerParams } from "./TriggerParams.ts"
import { TriggerRepo } from "./TriggerRepo.ts"
import { EVENT_TRIGGERS_TOPIC, workspaceTriggerEvents } from "./TriggerService.ts"

/** The trigger event (underscore spelling) each relayed event type fires. */
const triggerEventOf: Readonly<Record<string, string>> = {
  "record.created": "record_created",
  "record.updated": "record_updated",
  "record.deleted": "record_deleted",
  "record.restored": "record_restored",
  "record.reverted": "record_reverted",
  "record.expired": "record_deleted",
  "notification.sent": "notification_sent",
  "notification.failed": "notification_failed",
  "file.uploaded": "file_uploaded",
  "file.deleted": "file_deleted",
  "anomaly.detected": "anomaly_detected"
}

/** The trigger events of each kind of failed write (both spellings of the create failure). */
const failureEvents = {
  create: ["record_create_failed", "record_created_failed"],
  update: ["record_updated_failed"],
  delete: ["record_deleted_failed"]
} as const

interface Firing {
  readonly workspace: string
  /** null for the events of a whole workspace (workspaceTriggerEvents) */
  readonly recordSlug: string | null
  readonly event: string
  readonly recordId: string | null
  readonly timestamp: string
  readonly data: unknown
  /** depth of the run whose write this was (-1: not a run's write) */
  readonly parentDepth: number
  readonly eventId?: string | undefined
}

/** The function's executionParams for a firing. */
const paramsOf = (f: Firing) => ({
  event: f.event,
  workspaceSlug: f.workspace,
  recordSlug: f.recordSlug,
  recordId: f.recordId,
  timestamp: f.timestamp,
  data: f.data
})

const depthOf = (payload: unknown): number => {
  const metadata =
    Predicate.isObject(payload) && Predicate.isObject(payload.data) && Predicate.isObject(payload.data.metadata)
      ? payload.data.metadata
      : undefined
  return metadata !== undefined && typeof metadata.runId === "string" && typeof metadata.depth === "number" ? metadata.depth : -1
}

const make = Layer.effectContext(
  Effect.gen(function* () {
    const triggers = yield* TriggerRepo
    const runs = yield* RunRepo
    const params = yield* TriggerParams
    const notifier = yield* Notifier
    const newRun = makeNewRun(params.encryptValue)

    /** One run per trigger that listens to this firing (or a stored failure past the depth limit). */
    const runsFor = (firing: Firing, listening: ReadonlyArray<TriggerRow>): Array<NewRun> =>
      listening.flatMap((t) => {
        if (t.workspace !== firing.workspace || t.recordSlug !== firing.recordSlug || t.event !== firing.event) return []
        if (t.functionId === null || t.createdBy === null) return []
        const depth = firing.parentDepth + 1
        const spec: RunSpec = {
          workspace: t.workspace,
          functionId: t.functionId,
          triggerId: t.id,
          source: "trigger",
          executionParams: paramsOf(firing),
          actingAs: { kind: t.createdByKind ?? "user", id: t.createdBy },
          executionContext: {
            triggerName: t.name,
            executionType: t.executionType,
            event: firing.event,
            ...(firing.eventId !== undefined ? { eventId: firing.eventId } : {})
          },
          depth,
          fired: { name: t.name, executionType: t.executionType },
          ...(depth > MAX_RUN_DEPTH
            ? { error: `Not run: trigger chain depth limit (${MAX_RUN_DEPTH}) reached — a function's writes keep firing triggers` }
            : {})
        }
        return [newRun(spec)]
      })

    const firingsOf = (e: StoredEvent): Array<Firing> => {
      const event = triggerEventOf[e.type]
      if (event === undefined) return []
      const timestamp = typeof e.payload.timestamp === "string" ? e.payload.timestamp : e.createdAt
      const data = Predicate.isObject(e.payload.data) ? e.payload.data : {}
      if (workspaceTriggerEvents.has(event)) {
        return [
          {
            workspace: e.workspace,
            recordSlug: null,
            event,
            timestamp,
            parentDepth: depthOf(e.payload),
            eventId: e.id,
            recordId: null,
            data
          }
        ]
      }
      if (e.recordSlug === null) return []
      const base = { workspace: e.workspace, recordSlug: e.recordSlug, event, timestamp, parentDepth: depthOf(e.payload), eventId: e.id }
      const record = Predicate.isObject(data.record) ? data.record : { id: e.recordId }
      if (event === "record_created" || event === "record_deleted") return [{ ...base, recordId: e.recordId, data: record }]
      const before = Predicate.isObject(data.previous) ? { id: record.id, structureId: record.structureId, data: data.previous.data } : null
      return [{ ...base, recordId: e.recordId, data: { before, after: record } }]
    }

    /** The events some event-driven trigger listens to, and those triggers. */
    const listenedTo = <E extends EventHead>(events: ReadonlyArray<E>) =>
      Effect.gen(function* () {
        const relevant = events.filter((e) => triggerEventOf[e.type] !== undefined)
        if (relevant.length === 0) return { matching: [], listening: [] }
        const listening = yield* triggers.eventDriven([...new Set(relevant.map((e) => e.workspace))])
        const wanted = new Set(listening.map((t) => `${t.workspace}\u0000${t.recordSlug}\u0000${t.event}`))
        const matching = relevant.filter((e) => wanted.has(`${e.workspace}\u0000${e.recordSlug}\u0000${triggerEventOf[e.type]}`))
        return { matching, listening }
      })

    const consumer: EventConsumer = {
      name: "event-driven triggers",
      // only the events a trigger listens to are read with their payload
      select: (events) => Effect.map(listenedTo(events), ({ matching }) => matching),
      handle: (events) =>
        Effect.gen(function* () {
          const { listening, matching } = yield* listenedTo(events)
          if (matching.length === 0) return
          yield* runs.enqueue(matching.flatMap((e) => firingsOf(e).flatMap((f) => runsFor(f, listening))))
        })
    }

    // ---------------------------------------------------------------- failed writes

    /** Per workspace: "<recordSlug>\0<event>" of the failure events some trigger listens to (loaded on first use). */
    const subscribed = new Map<string, ReadonlySet<string>>()
    const failureTriggers = (workspace: string) =>
      Effect.gen(function* () {
        const cached = subscribed.get(workspace)
        if (cached !== undefined) return cached
        const rows = yield* Effect.orDie(triggers.eventDriven([workspace]))
        const keys = new Set(rows.filter((t) => t.event?.endsWith("_failed")).map((t) => `${t.recordSlug}\u0000${t.event}`))
        subscribed.set(workspace, keys)
        return keys
      })
    yield* Effect.forkScoped(
      Stream.runForEach(notifier.subscribe(EVENT_TRIGGERS_TOPIC), (workspace) => Effect.sync(() => void subscribed.delete(workspace)))
    )

    const onFailure = (failure: RecordFailure) =>
      Effect.gen(function* () {
        const structure: Structure = failure.structure
        const workspace = structure.workspaceSlug
        const keys = yield* failureTriggers(workspace)
        const events = failureEvents[failure.kind].filter((event) => keys.has(`${structure.recordSlug}\u0000${event}`))
        if (events.length === 0) return
        const listening = (yield* Effect.orDie(triggers.eventDriven([workspace]))).filter((t) => t.recordSlug === structure.recordSlug)
        const timestamp = isoString(new Date(yield* Clock.currentTimeMillis))
        const data = {
          error: { code: failure.error.code, message: failure.error.message, details: failure.error.details },
          input: failure.input
        }
        const parentDepth = failure.writer.runId !== undefined ? (failure.writer.depth ?? 0) : -1
        const pending = events.flatMap((event) =>
          runsFor(
            { workspace, recordSlug: structure.recordSlug, event, recordId: failure.recordId ?? null, timestamp, data, parentDepth },
            listening
          )
        )
        yield* Effect.orDie(runs.enqueue(pending))
      }).pipe(Effect.catchCause((cause) => Effect.logWarning("event-driven triggers: a failed write could not fire its triggers", cause)))

    return Context.make(EventConsumers, [consumer]).pipe(Context.add(RecordFailureHook, onFailure))
  })
)

/** Provides EventConsumers (for the outbox relay) and RecordFailureHook (for the record engine). */
export const EventTriggersLayer = make.pipe(Layer.provide([TriggerRepo.layer, RunRepo.layer, TriggerParams.layer]))
