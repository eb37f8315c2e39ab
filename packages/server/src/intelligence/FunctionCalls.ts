// `api.intelligence.*` in functions (compute/ApiBridge.ts, docs/intelligence.md "Functions"): the routes of CONTRACT
// §8.4 as the run's principal, with the routes' permissions (read:structures to read; write:structures to start jobs
// and resolve; accepting a correction also write:records, a record update made as the run) and rate classes.
import { can, type Permission, type Principal, type RateClassName } from "@troupe/api/Authorization"
import { badRequest, details, forbidden } from "@troupe/api/Errors"
import { Effect } from "effect"
import { RateLimiter } from "../identity/RateLimiter.ts"
import { isObject } from "../lib/JsonPath.ts"
import type { Writer } from "../records/model.ts"
import { IntelligenceService, type ListParams } from "./IntelligenceService.ts"

/** Who a run's calls act as, and its writes' writer (source `function`, the run's id and depth). */
export interface CallContext {
  readonly workspace: string
  readonly principal: Principal
  readonly writer: Writer
}

const invalid = (field: string, problem: string) =>
  badRequest({ message: `Invalid ${field}: ${field} ${problem}`, code: "VALIDATION_ERROR", details: details([[field, problem]]) })

const textOf = (field: string, v: unknown) =>
  typeof v === "string" && v.length > 0 ? Effect.succeed(v) : Effect.fail(invalid(field, "must be a non-empty string"))

const wholeOf = (field: string, v: unknown, max: number) =>
  v === undefined || v === null
    ? Effect.succeed(undefined)
    : typeof v === "number" && Number.isInteger(v) && v >= 1 && v <= max
      ? Effect.succeed(v)
      : Effect.fail(invalid(field, `must be a whole number between 1 and ${max}`))

/** `{status, page, limit}` of the list routes' query. */
const listOf = (options: unknown) =>
  Effect.gen(function* () {
    if (options !== undefined && options !== null && !isObject(options)) return yield* invalid("options", "must be an object")
    const o = (options ?? {}) as Record<string, unknown>
    const status = o.status === undefined || o.status === null ? undefined : yield* textOf("status", o.status)
    return { status, page: yield* wholeOf("page", o.page, 1_000_000), limit: yield* wholeOf("limit", o.limit, 1000) } satisfies ListParams
  })

export const makeIntelligenceCalls = Effect.gen(function* () {
  const intel = yield* IntelligenceService
  const limiter = yield* RateLimiter

  return (ctx: CallContext) => {
    const { principal, workspace } = ctx
    const allowed = (permission: Permission) =>
      can(principal, permission)
        ? Effect.void
        : Effect.fail(forbidden(`This function acts as ${principal.name}, who lacks the permission "${permission}"`))
    const need = (permission: Permission, rate: RateClassName) => Effect.andThen(allowed(permission), limiter.hit(workspace, rate))
    const reading = need("read:structures", "reads")
    const writing = need("write:structures", "writes")
    /** The permission and rate first, then the argument: a structure's slug or id, or a finding's or job's id. */
    const structureArg = (gate: typeof reading, structure: unknown) => Effect.andThen(gate, textOf("structure", structure))
    const idArg = (gate: typeof reading, id: unknown) => Effect.andThen(gate, textOf("id", id))
    /** An optional structure filter of the workspace-wide lists. */
    const filterOf = (structure: unknown) =>
      structure === undefined || structure === null ? Effect.succeed(undefined) : textOf("structure", structure)

    /** Starts a job on a structure → `{jobId}` (`{batchId}` for a validation scan), as the routes answer. */
    const starting =
      <K extends string, E>(start: (workspace: string, structure: string, by: Principal) => Effect.Effect<string, E>, key: K) =>
      (structure: unknown) =>
        Effect.flatMap(structureArg(writing, structure), (s) =>
          Effect.map(start(workspace, s, principal), (id) => ({ [key]: id }) as Record<K, string>)
        )
    /** A workspace-wide list (insights, corrections), of one structure when one is named. */
    const across =
      <A, E>(list: (workspace: string, q: ListParams) => Effect.Effect<A, E>) =>
      (structure: unknown, options: unknown) =>
        Effect.gen(function* () {
          yield* reading
          const collection = yield* filterOf(structure)
          return yield* list(workspace, { ...(yield* listOf(options)), collection })
        })
    // a suggestion's id names its structure, so accepting and rejecting take the id alone (the routes nest it)
    const onSuggestion =
      <A, E>(resolve: (workspace: string, structureId: string, id: string, by: Principal) => Effect.Effect<A, E>) =>
      (id: unknown) =>
        Effect.gen(function* () {
          const suggestion = yield* intel.schemaSuggestion(workspace, yield* idArg(writing, id))
          return yield* resolve(workspace, suggestion.structureId, suggestion.id, principal)
        })

    return {
      intelligenceScan: starting(intel.scan, "jobId"),
      intelligenceTrigger: starting(intel.trigger, "jobId"),
      intelligenceAnalyze: starting(intel.analyse, "jobId"),
      intelligenceValidate: starting(intel.validate, "batchId"),
      intelligenceJob: (id: unknown) => Effect.flatMap(idArg(reading, id), (jobId) => intel.job(workspace, jobId)),

      intelligenceSuggestions: (structure: unknown, options: unknown) =>
        Effect.gen(function* () {
          const s = yield* structureArg(reading, structure)
          return yield* intel.schemaSuggestions(workspace, s, yield* listOf(options))
        }),
      intelligenceAcceptSuggestion: onSuggestion(intel.acceptSchema),
      intelligenceRejectSuggestion: onSuggestion(intel.rejectSchema),

      intelligenceInsights: across(intel.insights),
      intelligenceAcknowledgeInsight: (id: unknown) =>
        Effect.flatMap(idArg(writing, id), (i) => intel.resolveInsight(workspace, i, "acknowledged")),
      intelligenceDismissInsight: (id: unknown) =>
        Effect.flatMap(idArg(writing, id), (i) => intel.resolveInsight(workspace, i, "dismissed")),

      intelligenceCorrections: across(intel.validationSuggestions),
      intelligenceAcceptCorrection: (id: unknown) =>
        Effect.gen(function* () {
          const correction = yield* idArg(writing, id)
          yield* allowed("write:records")
          return yield* intel.acceptValidation(workspace, correction, ctx.writer)
        }),
      intelligenceRejectCorrection: (id: unknown) => Effect.flatMap(idArg(writing, id), (c) => intel.rejectValidation(workspace, c))
    }
  }
})
