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

    return {
      intelligenceScan: (structure: unknown) =>
        Effect.flatMap(structureArg(writing, structure), (s) => Effect.map(intel.scan(workspace, s, principal), (jobId) => ({ jobId }))),
      intelligenceTrigger: (structure: unknown) =>
        Effect.flatMap(structureArg(writing, structure), (s) => Effect.map(intel.trigger(workspace, s, principal), (jobId) => ({ jobId }))),
      intelligenceAnalyze: (structure: unknown) =>
        Effect.flatMap(structureArg(writing, structure), (s) => Effect.map(intel.analyse(workspace, s, principal), (jobId) => ({ jobId }))),
      intelligenceValidate: (structure: unknown) =>
        Effect.flatMap(structureArg(writing, structure), (s) =>
          Effect.map(intel.validate(workspace, s, principal), (batchId) => ({ batchId }))
        ),
      intelligenceJob: (id: unknown) => Effect.flatMap(idArg(reading, id), (jobId) => intel.job(workspace, jobId)),

      intelligenceSuggestions: (structure: unknown, options: unknown) =>
        Effect.gen(function* () {
          const s = yield* structureArg(reading, structure)
          return yield* intel.schemaSuggestions(workspace, s, yield* listOf(options))
        }),
      // a suggestion's id names its structure, so these take the id alone (the routes nest it under the structure)
      intelligenceAcceptSuggestion: (id: unknown) =>
        Effect.gen(function* () {
          const suggestion = yield* intel.schemaSuggestion(workspace, yield* idArg(writing, id))
          return yield* intel.acceptSchema(workspace, suggestion.structureId, suggestion.id, principal)
        }),
      intelligenceRejectSuggestion: (id: unknown) =>
        Effect.gen(function* () {
          const suggestion = yield* intel.schemaSuggestion(workspace, yield* idArg(writing, id))
          return yield* intel.rejectSchema(workspace, suggestion.structureId, suggestion.id, principal)
        }),

      intelligenceInsights: (structure: unknown, options: unknown) =>
        Effect.gen(function* () {
          yield* reading
          const filter = yield* filterOf(structure)
          return yield* intel.insights(workspace, { ...(yield* listOf(options)), collection: filter })
        }),
      intelligenceAcknowledgeInsight: (id: unknown) =>
        Effect.flatMap(idArg(writing, id), (i) => intel.resolveInsight(workspace, i, "acknowledged")),
      intelligenceDismissInsight: (id: unknown) =>
        Effect.flatMap(idArg(writing, id), (i) => intel.resolveInsight(workspace, i, "dismissed")),

      intelligenceCorrections: (structure: unknown, options: unknown) =>
        Effect.gen(function* () {
          yield* reading
          const filter = yield* filterOf(structure)
          return yield* intel.validationSuggestions(workspace, { ...(yield* listOf(options)), collection: filter })
        }),
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
