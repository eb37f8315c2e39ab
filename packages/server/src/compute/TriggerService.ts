// Triggers (README "Triggers"): create, read, list, update (every change a stored
// version; executionType never changes), delete (runs stay), pause/resume (scheduled only), execute (on-demand
// only) and publishing a trigger draft. `default-trigger` is the system trigger: readable, never changed.
// Metadata is validated per execution type and stored normalised: `webhook` becomes `http-trigger`, HTTP paths lose
// their slashes at both ends, event names take underscores (`record.created` becomes `record_created`), schedules
// get their type and time zone filled in.
import type { Principal } from "@troupe/api/Authorization"
import type { JobQueued, Trigger, TriggerCreate, TriggerUpdate } from "@troupe/api/compute/Compute"
import { TriggerCreate as TriggerCreateSchema } from "@troupe/api/compute/Compute"
import { type BadRequest, badRequest, type Conflict, conflict, type ErrorDetail, type NotFound, errorDetail } from "@troupe/api/Errors"
import { Clock, Context, Effect, Layer, Predicate } from "effect"
import { SqlClient } from "effect/sql"
import type { SqlError } from "effect/sql/SqlError"
import * as Crypto from "node:crypto"
import { Notifier } from "../platform/Notifier.ts"
import { StructureService } from "../structures/StructureService.ts"
import { DraftRepo } from "./DraftRepo.ts"
import { FunctionRepo } from "./FunctionRepo.ts"
import { type ListQuery, listSpecOf, publishDraft } from "./Listing.ts"
import { checkId, functionNotFound, invalid, invalidAll, isUuid, nameTaken, toTrigger, type TriggerRow, triggerNotFound } from "./model.ts"
import { RunService } from "./RunService.ts"
import { type TriggerFields, TriggerRepo, triggerSortFields } from "./TriggerRepo.ts"
import { TriggerParams } from "./TriggerParams.ts"
import { firstRun, parseSchedule } from "./TriggerSchedule.ts"

/** Notifier topic: scheduled triggers changed (payload: workspace/id); the scheduler reloads. */
export const SCHEDULE_TOPIC = "triggers.schedule"
/** Notifier topic: event-driven triggers of a workspace changed (payload: workspace). */
export const EVENT_TRIGGERS_TOPIC = "triggers.events"

/** Event names a trigger may subscribe to (underscore spelling); both spellings of the create failure are accepted. */
export const TriggerEvents = [
  "record_created",
  "record_updated",
  "record_deleted",
  "record_restored",
  "record_reverted",
  "record_create_failed",
  "record_created_failed",
  "record_updated_failed",
  "record_deleted_failed",
  "notification_sent",
  "notification_failed",
  "file_uploaded",
  "file_deleted",
  "anomaly_detected"
] as const
const triggerEvents: ReadonlySet<string> = new Set(TriggerEvents)

/** Events of a whole workspace rather than of a structure's records: their triggers name no recordSlug. */
export const workspaceTriggerEvents: ReadonlySet<string> = new Set([
  "notification_sent",
  "notification_failed",
  "file_uploaded",
  "file_deleted"
])

/** `record.created` is accepted for `record_created`. */
const eventName = (raw: string) => raw.trim().replace(/\./g, "_")

/** An HTTP path as stored: no slashes at either end (`x` and `/x` are one path), no `..`, URL path characters. */
export const normalizePath = (raw: string) => raw.trim().replace(/^\/+|\/+$/g, "")
const pathProblem = (path: string): string | undefined =>
  path.length === 0
    ? "path is required"
    : path.length > 500
      ? "path must be at most 500 characters"
      : path.split("/").some((s) => s === ".." || s === ".")
        ? "path must not contain '..' or '.' segments"
        : path.includes("//")
          ? "path must not contain empty segments"
          : !/^[A-Za-z0-9._~!$&'()*+,;=:@%/-]+$/.test(path)
            ? "path may contain only URL path characters"
            : undefined

type ExecutionType = Trigger["executionType"]

type TriggerError = BadRequest | NotFound | Conflict

export class TriggerService extends Context.Service<
  TriggerService,
  {
    readonly create: (workspace: string, input: TriggerCreate, by: Principal) => Effect.Effect<Trigger, TriggerError>
    readonly get: (workspace: string, id: string) => Effect.Effect<Trigger, BadRequest | NotFound>
    readonly list: (
      workspace: string,
      query: ListQuery
    ) => Effect.Effect<{ triggers: ReadonlyArray<Trigger>; total: number; page: number; limit: number }, BadRequest>
    readonly update: (workspace: string, id: string, input: TriggerUpdate, by: Principal) => Effect.Effect<Trigger, TriggerError>
    readonly delete: (workspace: string, id: string) => Effect.Effect<{ success: boolean; message: string }, BadRequest | NotFound>
    readonly versions: (workspace: string, id: string) => Effect.Effect<{ versions: ReadonlyArray<any> }, BadRequest | NotFound>
    readonly pause: (
      workspace: string,
      id: string
    ) => Effect.Effect<{ success: boolean; message: string; trigger: Trigger }, BadRequest | NotFound>
    readonly resume: (
      workspace: string,
      id: string
    ) => Effect.Effect<{ success: boolean; message: string; trigger: Trigger }, BadRequest | NotFound>
    readonly execute: (
      workspace: string,
      id: string,
      params: Record<string, unknown>,
      by: Principal
    ) => Effect.Effect<JobQueued, BadRequest | NotFound>
    readonly publish: (workspace: string, draftId: string, by: Principal) => Effect.Effect<Trigger, TriggerError>
    /** A draft's data checked as a trigger create would check it (drafts are validated when published). */
    readonly find: (workspace: string, id: string) => Effect.Effect<TriggerRow | undefined>
  }
>()("@troupe/server/compute/TriggerService") {
  static readonly layerNoDeps = Layer.effect(
    TriggerService,
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const repo = yield* TriggerRepo
      const functions = yield* FunctionRepo
      const drafts = yield* DraftRepo
      const params = yield* TriggerParams
      const structures = yield* StructureService
      const notifier = yield* Notifier
      const runs = yield* RunService

      const found = (workspace: string, id: string) =>
        Effect.gen(function* () {
          yield* checkId("trigger", id)
          const row = yield* Effect.orDie(repo.get(workspace, id))
          if (row === undefined) return yield* triggerNotFound(id)
          return row
        })

      const system = (row: TriggerRow, what: string) =>
        row.isSystem ? Effect.fail(badRequest({ message: `default-trigger is the system trigger and cannot be ${what}` })) : Effect.void

      const functionExists = (workspace: string, id: string) =>
        Effect.gen(function* () {
          if (!isUuid(id)) return yield* invalid("functionId", "functionId must be the UUID of a function")
          const fn = yield* Effect.orDie(functions.get(workspace, id))
          if (fn === undefined) return yield* functionNotFound(id)
        })

      /** Validates metadata for `type` and derives the lookup columns. */
      const fieldsOf = (workspace: string, type: ExecutionType, raw: Record<string, unknown>, now: Date) =>
        Effect.gen(function* () {
          const problems: Array<ErrorDetail> = []
          const metadata: Record<string, unknown> = { ...raw }
          let httpPath: string | null = null
          let event: string | null = null
          let recordSlug: string | null = null
          let nextRunAt: string | null = null
          if (metadata.params !== undefined && !Predicate.isObject(metadata.params)) {
            problems.push(errorDetail("triggerMetadata.params", "params must be an object"))
          }
          if (type === "event-driven") {
            if (typeof metadata.event !== "string" || metadata.event.trim() === "") {
              problems.push(errorDetail("triggerMetadata.event", `event is required: one of ${TriggerEvents.join(", ")}`))
            } else if (!triggerEvents.has(eventName(metadata.event))) {
              problems.push(
                errorDetail("triggerMetadata.event", `unknown event "${metadata.event}": expected one of ${TriggerEvents.join(", ")}`)
              )
            } else {
              event = eventName(metadata.event)
              metadata.event = event
            }
            if (event !== null && workspaceTriggerEvents.has(event)) {
              delete metadata.recordSlug
            } else if (typeof metadata.recordSlug !== "string" || metadata.recordSlug.trim() === "") {
              problems.push(errorDetail("triggerMetadata.recordSlug", "recordSlug is required: the slug of a structure"))
            } else {
              const structure = yield* Effect.result(structures.getBySlug(workspace, metadata.recordSlug.trim()))
              if (structure._tag === "Failure") {
                problems.push(errorDetail("triggerMetadata.recordSlug", `no structure has the recordSlug "${metadata.recordSlug}"`))
              } else {
                recordSlug = structure.success.recordSlug
                metadata.recordSlug = recordSlug
              }
            }
          } else if (type === "http-trigger") {
            if (typeof metadata.path !== "string") {
              problems.push(errorDetail("triggerMetadata.path", "path is required: the URL path that runs the trigger"))
            } else {
              const path = normalizePath(metadata.path)
              const problem = pathProblem(path)
              if (problem !== undefined) problems.push(errorDetail("triggerMetadata.path", problem))
              else {
                httpPath = path
                metadata.path = `/${path}`
              }
            }
          } else if (type === "scheduled") {
            const schedule = parseSchedule(metadata, now)
            if (!schedule.ok) problems.push(...schedule.problems.map((p) => errorDetail(p.field, p.message)))
            else {
              Object.assign(metadata, schedule.normalized)
              if (schedule.spec.type === "once" && metadata.completed === true) nextRunAt = null
              else {
                delete metadata.completed
                const first = firstRun(schedule.spec, now)
                nextRunAt = first === undefined ? null : first.toISOString()
              }
            }
          }
          if (problems.length > 0) return yield* invalidAll(problems)
          if (metadata.params !== undefined) metadata.params = yield* params.seal(workspace, metadata.params, "triggerMetadata.params")
          return { metadata, httpPath, event, recordSlug, nextRunAt }
        })

      const pathTaken = (path: string | null) =>
        conflict({ message: `Another trigger of this workspace already has the path "/${path ?? ""}"` })

      /** Unique violations: the name, or (for HTTP triggers) the path. */
      const onUnique =
        (name: string, path: string | null) =>
        <A, E, R>(effect: Effect.Effect<A, E | SqlError, R>) =>
          effect.pipe(
            Effect.catchIf(
              (e): e is SqlError => (e as any)?._tag === "SqlError",
              (e) => {
                const reason = (e as SqlError).reason
                if (reason._tag !== "UniqueViolation") return Effect.die(e)
                return Effect.fail<Conflict>(
                  String((reason as any).constraint ?? "").includes("http_path") ? pathTaken(path) : nameTaken("Trigger", name)
                )
              }
            )
          ) as Effect.Effect<A, Exclude<E, SqlError> | Conflict, R>

      const signal = (row: TriggerRow) =>
        row.executionType === "scheduled"
          ? notifier.publish(SCHEDULE_TOPIC, `${row.workspace}/${row.id}`)
          : row.executionType === "event-driven"
            ? notifier.publish(EVENT_TRIGGERS_TOPIC, row.workspace)
            : Effect.void

      const insert = (workspace: string, input: TriggerCreate, by: Principal) =>
        Effect.gen(function* () {
          const type: ExecutionType = input.executionType === "webhook" ? "http-trigger" : input.executionType
          yield* functionExists(workspace, input.functionId)
          const now = new Date(yield* Clock.currentTimeMillis)
          const fields = yield* fieldsOf(workspace, type, input.triggerMetadata ?? {}, now)
          const name = input.name.trim()
          const row = yield* repo
            .insert({
              id: Crypto.randomUUID(),
              workspace,
              name,
              description: input.description ?? null,
              functionId: input.functionId.toLowerCase(),
              executionType: type,
              ...fields,
              by: by.id,
              byKind: by.kind
            })
            .pipe(onUnique(name, fields.httpPath))
          yield* signal(row)
          return toTrigger(row)
        })

      const create = Effect.fn("TriggerService.create")(insert)

      const get = Effect.fn("TriggerService.get")(function* (workspace: string, id: string) {
        return toTrigger(yield* found(workspace, id))
      })

      const list = Effect.fn("TriggerService.list")(function* (workspace: string, query: ListQuery) {
        const { page, limit, spec } = yield* listSpecOf(query, triggerSortFields)
        const { rows, total } = yield* Effect.orDie(repo.list(workspace, spec))
        return { triggers: rows.map(toTrigger), total, page, limit }
      })

      const update = Effect.fn("TriggerService.update")(function* (workspace: string, id: string, input: TriggerUpdate, by: Principal) {
        const row = yield* found(workspace, id)
        yield* system(row, "updated")
        if (input.executionType !== undefined) {
          const requested = input.executionType === "webhook" ? "http-trigger" : input.executionType
          if (requested !== row.executionType) {
            return yield* invalid(
              "executionType",
              `executionType cannot be changed (it is ${row.executionType}); delete the trigger and create a new one`
            )
          }
        }
        if (input.functionId !== undefined) yield* functionExists(workspace, input.functionId)
        const now = new Date(yield* Clock.currentTimeMillis)
        const metadata = input.triggerMetadata ?? row.metadata
        const derived = yield* fieldsOf(workspace, row.executionType, metadata, now)
        // a schedule whose timing did not change keeps its next due time
        const timing = ["scheduleType", "interval", "cronExpression", "scheduledAt", "timezone"]
        const sameTiming =
          row.executionType === "scheduled" && timing.every((k) => JSON.stringify(row.metadata[k]) === JSON.stringify(derived.metadata[k]))
        const fields: TriggerFields = {
          name: input.name?.trim() ?? row.name,
          description: input.description !== undefined ? input.description : row.description,
          functionId: input.functionId?.toLowerCase() ?? row.functionId,
          metadata: sameTiming && row.metadata.completed === true ? { ...derived.metadata, completed: true } : derived.metadata,
          httpPath: derived.httpPath,
          event: derived.event,
          recordSlug: derived.recordSlug,
          nextRunAt: sameTiming ? row.nextRunAt : derived.nextRunAt
        }
        const updated = yield* repo.update(workspace, id, fields, by.id).pipe(onUnique(fields.name, fields.httpPath))
        if (updated === undefined) return yield* triggerNotFound(id)
        yield* signal(updated)
        return toTrigger(updated)
      })

      const del = Effect.fn("TriggerService.delete")(function* (workspace: string, id: string) {
        const row = yield* found(workspace, id)
        yield* system(row, "deleted")
        const deleted = yield* Effect.orDie(repo.delete(workspace, id))
        if (!deleted) return yield* triggerNotFound(id)
        yield* signal(row)
        return { success: true, message: `Trigger ${id} deleted; its runs are kept` }
      })

      const versions = Effect.fn("TriggerService.versions")(function* (workspace: string, id: string) {
        yield* found(workspace, id)
        return { versions: yield* Effect.orDie(repo.versions(id)) }
      })

      const setPaused = (workspace: string, id: string, paused: boolean) =>
        Effect.gen(function* () {
          const row = yield* found(workspace, id)
          yield* system(row, paused ? "paused" : "resumed")
          if (row.executionType !== "scheduled") {
            return yield* badRequest({
              message: `Only scheduled triggers can be ${paused ? "paused" : "resumed"}; this one is ${row.executionType}`
            })
          }
          let next: string | null = null
          if (!paused) {
            const schedule = parseSchedule(row.metadata, new Date(0))
            const now = new Date(yield* Clock.currentTimeMillis)
            const first = schedule.ok && row.metadata.completed !== true ? firstRun(schedule.spec, now) : undefined
            next = first === undefined ? null : first.toISOString()
          }
          const updated = yield* Effect.orDie(repo.setPaused(workspace, id, paused, next))
          if (updated === undefined) return yield* triggerNotFound(id)
          yield* signal(updated)
          return {
            success: true,
            message: paused ? "Trigger paused: it stays configured and stops running" : "Trigger resumed: it runs on schedule again",
            trigger: toTrigger(updated)
          }
        })

      const execute = Effect.fn("TriggerService.execute")(function* (
        workspace: string,
        id: string,
        executionParams: Record<string, unknown>,
        by: Principal
      ) {
        const row = yield* found(workspace, id)
        if (row.isSystem) {
          return yield* badRequest({
            message: "default-trigger runs test executions only: use POST /compute-functions/test"
          })
        }
        if (row.executionType !== "on-demand") {
          return yield* badRequest({
            message: `Execute works only for on-demand triggers; this one is ${row.executionType}`
          })
        }
        const fn = row.functionId === null ? undefined : yield* Effect.orDie(functions.get(workspace, row.functionId))
        if (fn === undefined) return yield* badRequest({ message: `Function not found for trigger: ${row.id}` })
        return yield* runs.enqueue({
          workspace,
          functionId: fn.id,
          triggerId: row.id,
          source: "manual",
          executionParams,
          actingAs: { kind: by.kind, id: by.id },
          executionContext: { triggerName: row.name, executionType: row.executionType },
          fired: { name: row.name, executionType: row.executionType }
        })
      })

      const publish = Effect.fn("TriggerService.publish")((workspace: string, draftId: string, by: Principal) =>
        publishDraft(sql, drafts, "function-triggers", TriggerCreateSchema, (input: TriggerCreate) => insert(workspace, input, by))(
          workspace,
          draftId
        )
      )

      return TriggerService.of({
        create,
        get,
        list,
        update,
        delete: del,
        versions,
        pause: Effect.fn("TriggerService.pause")((workspace: string, id: string) => setPaused(workspace, id, true)),
        resume: Effect.fn("TriggerService.resume")((workspace: string, id: string) => setPaused(workspace, id, false)),
        execute,
        publish,
        find: (workspace, id) => (isUuid(id) ? Effect.orDie(repo.get(workspace, id)) : Effect.succeed(undefined))
      })
    })
  )

  static readonly layer = this.layerNoDeps.pipe(Layer.provide([TriggerRepo.layer, FunctionRepo.layer, DraftRepo.layer]))
}
