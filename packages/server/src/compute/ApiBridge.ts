// The host side of a function's `api` (README "`api`"): every async call the sandbox makes lands
// here as (method, JSON args) and runs as the run's principal through the same services and actors as HTTP:
// permissions, validation, secret masking, versions, events (writes carry `source: "function"` and the run's id and
// depth). Answers are `{ok, value}` or `{ok: false, error: {message, code, statusCode, details}}`, which the sandbox
// throws inside the function as an Error carrying those fields.
import { can, type Permission, type Principal } from "@troupe/api/Authorization"
import { badRequest, forbidden, errorDetail } from "@troupe/api/Errors"
import { AggregateRequest } from "@troupe/api/query/QueryApi"
import { Cause, Effect, Schema } from "effect"
import { schemaDetails } from "../platform/HttpEdge.ts"
import * as Ast from "../query/Ast.ts"
import { parseFilterObject } from "../query/FilterObject.ts"
import { parseSort } from "../query/FilterParser.ts"
import { QueryService } from "../query/QueryService.ts"
import { isUuid, toRecordB } from "../query/RecordRow.ts"
import type { Writer } from "../records/model.ts"
import { RecordWriter } from "../records/RecordEntity.ts"
import { fromResult, RecordQuery } from "../query/RecordQuery.ts"
import { RecordService } from "../records/RecordService.ts"
import { recordViews } from "../records/RecordViews.ts"
import { SearchService } from "../search/SearchService.ts"
import { StructureService } from "../structures/StructureService.ts"
import { makeNotificationCalls } from "../notification/FunctionCalls.ts"
import type { NotificationService } from "../notification/NotificationService.ts"
import { makeStorageCalls } from "../storage/FunctionCalls.ts"
import { makeIntelligenceCalls } from "../intelligence/FunctionCalls.ts"
import type { RateLimiter } from "../identity/RateLimiter.ts"
import type { FunctionHttpError, FunctionHttpRequest, FunctionHttpResponse } from "./FunctionHttp.ts"
import type { BridgeAnswer, HostBridge } from "./Sandbox.ts"
import { isObject } from "../lib/JsonPath.ts"

/** What one run's calls act as. */
export interface BridgeContext {
  readonly workspace: string
  readonly principal: Principal
  readonly runId: string
  readonly depth: number
}

/** Calls the bridge hands to other parts of compute (outbound HTTP, nested triggers). */
export interface BridgeExtras {
  readonly http: (request: FunctionHttpRequest) => Effect.Effect<FunctionHttpResponse, FunctionHttpError>
  readonly invokeTrigger: (name: string, params: unknown) => Effect.Effect<unknown, { readonly message: string; readonly code?: string }>
}

type CallError = { readonly message: string; readonly code?: string; readonly statusCode?: number; readonly details?: unknown }

const invalidArg = (field: string, message: string) =>
  badRequest({ message, code: "VALIDATION_ERROR", details: [errorDetail(field, message)] })

/** `queryRecords` options that are not bracket filters. */
const queryOptionNames = new Set([
  "filter",
  "search",
  "searchFields",
  "page",
  "pageSize",
  "limit",
  "sort",
  "includeDeleted",
  "includeTotal",
  "dateWindow",
  "fields",
  "expand"
])

const MAX_PAGE_SIZE = 1000

const positiveInt = (name: string, value: unknown, fallback: number, max: number) => {
  if (value === undefined || value === null) return Effect.succeed(fallback)
  return typeof value === "number" && Number.isInteger(value) && value >= 1 && value <= max
    ? Effect.succeed(value)
    : Effect.fail(invalidArg(name, `${name} must be a whole number between 1 and ${max}`))
}

/** `sort`: "-price,name", or [{field, direction}]. */
const sortOf = (sort: unknown) =>
  Effect.gen(function* () {
    if (sort === undefined || sort === null) return yield* fromResult("sort", parseSort("createdAt"))
    if (typeof sort === "string") return yield* fromResult("sort", parseSort(sort))
    if (!Array.isArray(sort)) return yield* invalidArg("sort", "sort must be a string or an array of {field, direction}")
    const keys: Array<Ast.SortKey> = []
    for (const [i, k] of sort.entries()) {
      if (!isObject(k) || typeof k.field !== "string" || k.field === "") {
        return yield* invalidArg(`sort[${i}]`, "each sort key is {field, direction}")
      }
      const direction = k.direction === undefined ? "asc" : String(k.direction).toLowerCase()
      if (direction !== "asc" && direction !== "desc") return yield* invalidArg(`sort[${i}].direction`, "direction is asc or desc")
      keys.push({ field: Ast.fieldRef(k.field), direction })
    }
    return keys
  })

/** Data given as `{data: {...}}` (the HTTP body shape) is unwrapped unless the structure has a `data` property. */
const unwrap = (value: Record<string, unknown>, properties: ReadonlyArray<{ readonly name: string }>) =>
  Object.keys(value).length === 1 && isObject(value.data) && !properties.some((p) => p.name === "data") ? value.data : value

export const makeBridgeFactory = Effect.gen(function* () {
  const records = yield* RecordService
  const writers = yield* RecordWriter
  const query = yield* RecordQuery
  const structures = yield* StructureService
  const queries = yield* QueryService
  const context = yield* Effect.context<never>()
  const run = Effect.runPromiseWith(context)
  const { resolve, shown, listRows } = recordViews(records, query, structures)
  const decodeAggregate = Schema.decodeUnknownEffect(AggregateRequest)
  const notificationCalls = yield* makeNotificationCalls
  const storageCalls = yield* makeStorageCalls
  const intelligenceCalls = yield* makeIntelligenceCalls
  const searches = yield* SearchService

  return (ctx: BridgeContext, extras: BridgeExtras): HostBridge => {
    const { workspace, principal } = ctx
    const writer: Writer = {
      workspace,
      userId: principal.id,
      userName: principal.name,
      source: "function",
      canSkipValidation: false,
      runId: ctx.runId,
      depth: ctx.depth
    }
    const need = (permission: Permission) =>
      can(principal, permission)
        ? Effect.void
        : Effect.fail(forbidden(`This function acts as ${principal.name}, who lacks the permission "${permission}"`))

    const view = (row: Parameters<typeof toRecordB>[0]) =>
      Effect.gen(function* () {
        const structure = yield* structures.get(workspace, row.structureId)
        return toRecordB(row, yield* shown(structure, row.data, principal, false))
      })

    const text = (name: string, value: unknown) =>
      typeof value === "string" && value.length > 0
        ? Effect.succeed(value)
        : Effect.fail(invalidArg(name, `${name} must be a non-empty string`))
    const object = (name: string, value: unknown) =>
      isObject(value) ? Effect.succeed(value) : Effect.fail(invalidArg(name, `${name} must be an object`))

    const queryRecords = (slug: unknown, options: unknown) =>
      Effect.gen(function* () {
        yield* need("read:records")
        const structure = yield* resolve(workspace, yield* text("recordSlug", slug))
        const o = options === undefined || options === null ? {} : yield* object("options", options)
        const conditions: Array<Ast.Expr> = []
        const bracket = Object.fromEntries(Object.entries(o).filter(([k]) => !queryOptionNames.has(k)))
        const filter = o.filter === undefined || o.filter === null ? {} : yield* object("filter", o.filter)
        conditions.push(yield* fromResult("filter", parseFilterObject({ ...filter, ...bracket })))
        if (o.search !== undefined && o.search !== null && o.search !== "") {
          const fields = o.searchFields === undefined ? [] : o.searchFields
          if (!Array.isArray(fields) || fields.some((f) => typeof f !== "string")) {
            return yield* invalidArg("searchFields", "searchFields must be an array of field names")
          }
          conditions.push(Ast.search(String(o.search), (fields as Array<string>).map(Ast.fieldRef)))
        }
        if (o.dateWindow !== undefined && o.dateWindow !== null) {
          const w = yield* object("dateWindow", o.dateWindow)
          const field = Ast.fieldRef(yield* text("dateWindow.field", w.field))
          for (const [bound, op] of [
            ["from", "gte"],
            ["to", "lte"]
          ] as const) {
            const v = w[bound]
            if (v === undefined || v === null) continue
            if (typeof v !== "string" || Number.isNaN(Date.parse(v))) {
              return yield* invalidArg(`dateWindow.${bound}`, `dateWindow.${bound} must be an ISO 8601 date-time`)
            }
            conditions.push(Ast.compare(op, field, Ast.literal(v)))
          }
        }
        const page = yield* positiveInt("page", o.page, 1, 1_000_000)
        const pageSize = yield* positiveInt("pageSize", o.pageSize ?? o.limit, 50, MAX_PAGE_SIZE)
        const includeTotal = o.includeTotal === true
        const { result, items } = yield* listRows(
          {
            workspace,
            structure,
            where: Ast.and(conditions),
            whereParam: "filter",
            sort: yield* sortOf(o.sort),
            limit: pageSize,
            offset: (page - 1) * pageSize,
            includeCount: includeTotal,
            includeDeleted: o.includeDeleted === true
          },
          principal,
          false,
          []
        )
        return {
          items: items.map((i) => toRecordB(i.row, i.data)),
          ...(includeTotal ? { total: result.total ?? 0 } : {}),
          page,
          pageSize
        }
      })

    const aggregateRecords = (slug: unknown, params: unknown) =>
      Effect.gen(function* () {
        yield* need("read:records")
        const body = yield* decodeAggregate(params ?? {}, { errors: "all" }).pipe(
          Effect.mapError((e) => badRequest({ message: "Invalid aggregate request", code: "VALIDATION_ERROR", details: schemaDetails(e) }))
        )
        return { results: yield* queries.aggregate(workspace, yield* text("recordSlug", slug), body) }
      })

    const fetchRecord = (id: unknown) =>
      Effect.gen(function* () {
        yield* need("read:records")
        const recordId = yield* text("recordId", id)
        if (!isUuid(recordId)) return null
        const found = yield* Effect.result(records.get(workspace, recordId))
        if (found._tag === "Failure") return found.failure.statusCode === 404 ? null : yield* found.failure
        return toRecordB(found.success.row, yield* shown(found.success.structure, found.success.row.data, principal, false))
      })

    const fetchRecordByUniqueField = (slug: unknown, field: unknown, value: unknown) =>
      Effect.gen(function* () {
        yield* need("read:records")
        const structure = yield* resolve(workspace, yield* text("recordSlug", slug))
        const name = yield* text("field", field)
        if (value === undefined || (value !== null && typeof value === "object")) {
          return yield* invalidArg("value", "value must be a string, number, boolean or null")
        }
        const { items } = yield* listRows(
          {
            workspace,
            structure,
            where:
              value === null ? Ast.isNull(Ast.fieldRef(name)) : Ast.compare("eq", Ast.fieldRef(name), Ast.literal(value as Ast.Scalar)),
            whereParam: "field",
            sort: [],
            limit: 1,
            offset: 0,
            includeCount: false,
            includeDeleted: false
          },
          principal,
          false,
          []
        )
        const first = items[0]
        return first === undefined ? null : toRecordB(first.row, first.data)
      })

    const createRecord = (slug: unknown, data: unknown) =>
      Effect.gen(function* () {
        yield* need("write:records")
        const structure = yield* resolve(workspace, yield* text("recordSlug", slug))
        const input = unwrap(yield* object("data", data), structure.properties)
        const written = yield* writers.create({ structure, input: { data: input }, writer })
        return toRecordB(written.row, yield* shown(structure, written.row.data, principal, false))
      })

    const updateRecord = (id: unknown, updates: unknown) =>
      Effect.gen(function* () {
        yield* need("write:records")
        const recordId = yield* text("recordId", id)
        const patch = yield* object("updates", updates)
        const current = yield* records.get(workspace, recordId)
        const written = yield* writers.update({
          workspace,
          id: recordId,
          input: { data: unwrap(patch, current.structure.properties) },
          writer
        })
        return yield* view(written.row)
      })

    const deleteRecord = (id: unknown, hardDelete: unknown) =>
      Effect.gen(function* () {
        yield* need("write:records")
        const removed = yield* writers.remove({ workspace, id: yield* text("recordId", id), permanent: hardDelete === true, writer })
        return { success: true, id: removed.id, deletedAt: removed.deletedAt, permanent: hardDelete === true }
      })

    const increment = (sign: 1 | -1) => (id: unknown, field: unknown, value: unknown) =>
      Effect.gen(function* () {
        yield* need("write:records")
        const amount = value === undefined || value === null ? 1 : value
        if (typeof amount !== "number" || !Number.isFinite(amount)) return yield* invalidArg("value", "value must be a finite number")
        const written = yield* writers.increment({
          workspace,
          id: yield* text("recordId", id),
          field: yield* text("field", field),
          by: sign * amount,
          writer
        })
        return yield* view(written.row)
      })

    const http = (spec: unknown) =>
      Effect.gen(function* () {
        const s = yield* object("request", spec)
        return yield* extras.http(s as unknown as FunctionHttpRequest)
      })

    /** api.search(q, {structures, limit, offset}) or api.search({q, …}): GET /search's answer, as the caller. */
    const search = (q: unknown, options: unknown) =>
      Effect.gen(function* () {
        yield* need("read:records")
        const o = (isObject(q) ? q : isObject(options) ? options : {}) as Record<string, unknown>
        const text = (v: unknown) => (v === undefined || v === null ? undefined : Array.isArray(v) ? v.map(String).join(",") : String(v))
        return yield* searches.search(workspace, {
          q: text(isObject(q) ? o.q : q),
          structures: text(o.structures),
          limit: text(o.limit),
          offset: text(o.offset)
        })
      })

    const methods: Record<string, (...args: ReadonlyArray<unknown>) => Effect.Effect<unknown, CallError>> = {
      queryRecords,
      aggregateRecords,
      fetchRecord,
      fetchRecordByUniqueField,
      createRecord,
      updateRecord,
      deleteRecord,
      incrementField: increment(1),
      decrementField: increment(-1),
      http,
      invokeTrigger: (name, params) => Effect.flatMap(text("name", name), (n) => extras.invokeTrigger(n, params ?? {})),
      // notifications: api.sendEmail, api.sendSms (notification/FunctionCalls.ts)
      ...notificationCalls(ctx),
      // files: api.storage.* (storage/FunctionCalls.ts)
      ...storageCalls(ctx),
      // data intelligence: api.intelligence.* (intelligence/FunctionCalls.ts)
      ...intelligenceCalls({ workspace, principal, writer }),
      search
    }

    const answer = (method: string, args: ReadonlyArray<unknown>): Effect.Effect<BridgeAnswer> => {
      const f = methods[method]
      if (f === undefined) return Effect.succeed({ ok: false, error: { message: `api.${method} does not exist`, code: "UNKNOWN_METHOD" } })
      return f(...args).pipe(
        Effect.map((value): BridgeAnswer => ({ ok: true, value: value === undefined ? null : value })),
        Effect.catchCause((cause) => {
          const failure = cause.reasons.find(Cause.isFailReason)?.error as CallError | undefined
          if (failure !== undefined && typeof failure.message === "string") {
            return Effect.succeed<BridgeAnswer>({
              ok: false,
              error: {
                message: failure.message,
                ...(failure.code !== undefined ? { code: failure.code } : {}),
                ...(failure.statusCode !== undefined ? { statusCode: failure.statusCode } : {}),
                ...(Array.isArray(failure.details) && failure.details.length > 0 ? { details: failure.details } : {})
              }
            })
          }
          return Effect.as(Effect.logError(`api.${method} failed unexpectedly`, cause), {
            ok: false,
            error: { message: `api.${method} failed: internal error`, code: "INTERNAL", statusCode: 500 }
          } as BridgeAnswer)
        })
      )
    }

    return { call: (method, args) => run(answer(method, args)) }
  }
})

export type BridgeFactory = Effect.Success<typeof makeBridgeFactory>

/** The services a bridge needs, for layers that build one. */
export type BridgeServices =
  | RecordService
  | RecordWriter
  | RecordQuery
  | StructureService
  | QueryService
  | NotificationService
  | RateLimiter
