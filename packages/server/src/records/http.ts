// Record routes of both generations. Handlers only translate: the body and status each route answers with, who is
// writing, and which read or write service call does the work.
//
// Bulk semantics (README, "Records"): at most MAX_BULK_ITEMS items (413 beyond), an empty list is a 400.
// - default (non-atomic): every item is its own transaction; the answer lists per-item results and errors.
//   All succeeded -> 201 (create) / 200; some failed -> 207 with the same body and `success: false`; all failed ->
//   the contract error body (the items' common status, else 400) whose `details` name each item (`records[3].data.x`).
// - `atomic: true`: one transaction for the whole batch (and its record.bulk.* event); the first bad item fails the
//   request with its own status and error, details prefixed with the item's path, and nothing is written.
import { Api } from "@troupe/api/Api"
import { can, CurrentPrincipal, type Principal } from "@troupe/api/Authorization"
import {
  badRequest,
  conflict,
  type ErrorDetail,
  forbidden,
  locked,
  notFound,
  payloadTooLarge,
  unprocessable
} from "@troupe/api/Errors"
import type { Structure } from "@troupe/api/structures/Structure"
import { Effect, Result } from "effect"
import { HttpServerRequest, HttpServerResponse } from "effect/http"
import { HttpApiBuilder } from "effect/http-api"
import { flag } from "../lib/rows.ts"
import * as Ast from "../query/Ast.ts"
import { parseExpressionA } from "../query/ExpressionParser.ts"
import { parseFilterB, parseSort } from "../query/FilterParser.ts"
import { StructureService } from "../structures/StructureService.ts"
import { isUuid, type RecordRow, toRecordA, toRecordB, type Writer } from "./model.ts"
import { RecordWriter } from "./RecordEntity.ts"
import { csvParam, fromResult, intParam, RecordQuery } from "./RecordQuery.ts"
import { bracketFilters, recordViews } from "./RecordViews.ts"
import { type BulkItemFailure, type RecordError, recordNotFound, RecordService, type WriteResult } from "./RecordService.ts"

export const MAX_BULK_ITEMS = 1000

/** Generation A bodies are flat: these system fields of a record read back are ignored unless the structure declares them. */
const SYSTEM_FIELDS = ["id", "createdAt", "updatedAt", "createdBy", "updatedBy", "version", "expiresAt", "deletedAt"]

const respond = (status: number, body: unknown, headers: Record<string, string> = {}) =>
  HttpServerResponse.jsonUnsafe(body, { status, headers })

const badParam = (field: string, message: string) =>
  badRequest({ message, code: "VALIDATION_ERROR", details: [{ field, property: field, message }] })

const numberParam = (name: string, raw: string | undefined) => {
  if (raw === undefined || raw === "") return Effect.succeed(undefined)
  const n = Number(raw)
  return Number.isFinite(n) ? Effect.succeed(n) : Effect.fail(badParam(name, `${name} must be a number`))
}

/**
 * Every query parameter as the router decoded it (as the fast routes decode them), a repeated one once per value:
 * the bracket filters are among them.
 */
const queryPairs = Effect.map(Effect.serviceOption(HttpServerRequest.ParsedSearchParams), (parsed) =>
  parsed._tag === "None"
    ? []
    : Object.entries(parsed.value).flatMap(([k, v]): Array<readonly [string, string]> =>
      Array.isArray(v) ? v.map((x) => [k, x] as const) : [[k, v as string] as const]))

/** The error constructor of each status a record error can have. */
const errorOf: Record<number, (i: { message: string; code?: string; details?: ReadonlyArray<ErrorDetail> }) => RecordError> = {
  400: badRequest,
  403: forbidden as any,
  404: notFound,
  409: conflict,
  413: payloadTooLarge as any,
  422: unprocessable,
  423: locked
}

interface BulkError {
  index: number
  id?: string
  code: string
  message: string
  details?: ReadonlyArray<ErrorDetail>
}

const bulkError = (index: number, e: RecordError, id?: string): BulkError => ({
  index,
  ...(id !== undefined ? { id } : {}),
  code: e.code,
  message: e.message,
  ...(e.details.length > 0 ? { details: e.details } : {})
})

/** An item's error as details of the whole request: paths prefixed with the item (`records[3].data.name`). */
const itemDetails = (list: string, index: number, e: { message: string; details?: ReadonlyArray<ErrorDetail> }): Array<ErrorDetail> => {
  const at = `${list}[${index}]`
  return e.details !== undefined && e.details.length > 0
    ? e.details.map((d) => ({ field: `${at}.${d.field}`, property: `${at}.${d.field}`, message: d.message }))
    : [{ field: at, property: at, message: e.message }]
}

/** The failure of an atomic batch: the failing item's status and code, nothing written. */
const atomicFailure = (list: string, failure: BulkItemFailure | RecordError): RecordError => {
  if (!("index" in failure)) return failure
  const e = failure.error
  return (errorOf[e.statusCode] ?? badRequest)({
    message: `${list}[${failure.index}]: ${e.message} (atomic batch: nothing was written)`,
    code: e.code,
    details: itemDetails(list, failure.index, e)
  })
}

/** A non-atomic batch in which every item failed: one contract error naming each item. */
const allFailed = (list: string, errors: ReadonlyArray<{ index: number; error: RecordError }>): RecordError => {
  const statuses = new Set(errors.map((e) => e.error.statusCode))
  const codes = new Set(errors.map((e) => e.error.code))
  const status = statuses.size === 1 ? [...statuses][0]! : 400
  return (errorOf[status] ?? badRequest)({
    message: `All ${errors.length} items failed; nothing was written`,
    code: codes.size === 1 ? [...codes][0]! : "BULK_FAILED",
    details: errors.flatMap((e) => itemDetails(list, e.index, e.error)).slice(0, 1000)
  })
}

const bulkSize = (n: number, list: string) =>
  n > MAX_BULK_ITEMS
    ? Effect.fail(payloadTooLarge({ message: `At most ${MAX_BULK_ITEMS} items per bulk request, got ${n}`, code: "PAYLOAD_TOO_LARGE" }))
    : n === 0
    ? Effect.fail(badParam(list, `${list} must not be empty`))
    : Effect.void

export const RecordsHandlers = HttpApiBuilder.group(Api, "records", Effect.fn(function*(handlers) {
  const records = yield* RecordService
  const writerService = yield* RecordWriter
  const query = yield* RecordQuery
  const structures = yield* StructureService
  const { resolve, shown, listRows, project, listB } = recordViews(records, query, structures)

  const context = Effect.gen(function*() {
    const principal = yield* Effect.service(CurrentPrincipal)
    const request = yield* HttpServerRequest.HttpServerRequest
    const forwarded = request.headers["x-forwarded-for"]?.split(",")[0]?.trim()
    const address = forwarded || (request.remoteAddress._tag === "Some" ? request.remoteAddress.value : undefined)
    const writer: Writer = {
      workspace: principal.workspace,
      userId: principal.id,
      userName: principal.name,
      source: principal.kind === "service" ? "service-account" : "api",
      ...(address ? { clientAddress: address.slice(0, 100) } : {}),
      ...(request.headers["user-agent"] ? { userAgent: request.headers["user-agent"].slice(0, 200) } : {}),
      canSkipValidation: can(principal, "write:structures")
    }
    return { principal, request, writer }
  })

  const withContext = <A, E, R>(f: (c: Effect.Success<typeof context>) => Effect.Effect<A, E, R>) => Effect.flatMap(context, f)

  /** skipValidation is for callers who may change structures (they could relax the rules anyway). */
  const mayskip = (principal: Principal, requested: boolean | undefined) =>
    requested === true && !can(principal, "write:structures")
      ? Effect.fail(forbidden({ message: "skipValidation needs the write:structures permission", code: "PERMISSION_DENIED" }))
      : Effect.void

  const recordB = (structure: Structure, row: RecordRow, principal: Principal, reveal: boolean, extra: Record<string, unknown> = {}) =>
    Effect.map(shown(structure, row.data, principal, reveal), (data) => toRecordB(row, data, extra))

  const recordA = (structure: Structure, row: RecordRow, principal: Principal, reveal: boolean) =>
    Effect.map(shown(structure, row.data, principal, reveal), (data) => toRecordA(row, data))

  /** `If-Match: <version>` (quotes and W/ tolerated; `*` matches any version) or the body's expectedVersion. */
  const ifMatch = (request: HttpServerRequest.HttpServerRequest, body: number | undefined) => {
    const header = request.headers["if-match"]?.trim()
    if (header === undefined || header === "*") return Effect.succeed(body)
    const text = header.replace(/^W\//, "").replace(/"/g, "")
    const v = Number(text)
    return /^\d+$/.test(text) && Number.isSafeInteger(v)
      ? Effect.succeed(v)
      : Effect.fail(badParam("If-Match", "If-Match must be a record version number"))
  }

  /** Generation A data: the flat body without the system fields a client may echo back. */
  const flatData = (structure: Structure, body: Record<string, unknown>) => {
    const declared = new Set(structure.properties.map((p) => p.name))
    const out: Record<string, unknown> = {}
    for (const [k, v] of Object.entries(body)) if (declared.has(k) || !SYSTEM_FIELDS.includes(k)) out[k] = v
    return out
  }

  /** The structure a generation A route names, and the record must belong to it. */
  const ofStructure = (workspace: string, slug: string, id: string) =>
    Effect.gen(function*() {
      const structure = yield* resolve(workspace, slug)
      const { row } = yield* records.get(workspace, id)
      if (row.structureId !== structure.id) return yield* recordNotFound(id)
      return { structure, row }
    })

  // ------------------------------------------------------------------ lists

  /** `GET /records/slug/{slug}` and `GET /records/{slug}`: page/pageSize, bracket filters, search, projection. */
  const slugList = (workspace: string, slug: string, q: Record<string, string | undefined>) =>
    withContext(({ principal }) =>
      Effect.gen(function*() {
        const structure = yield* resolve(workspace, slug)
        const page = yield* intParam("page", q.page, 1, 1, 1_000_000)
        const pageSize = yield* intParam(q.pageSize !== undefined ? "pageSize" : "limit", q.pageSize ?? q.limit, 50, 1, 500)
        const conditions: Array<Ast.Expr> = [yield* bracketFilters(yield* queryPairs, structure)]
        if (q.filter) conditions.push(yield* fromResult("filter", parseFilterB(q.filter)))
        if (q.query) conditions.push(yield* fromResult("query", parseExpressionA(q.query)))
        if (q.search) conditions.push(Ast.search(q.search, csvParam(q.searchFields).map(Ast.fieldRef)))
        const sort = yield* fromResult("sort", parseSort(q.sort ?? "-createdAt"))
        const fields = csvParam(q.fields)
        const { result, items } = yield* listRows({
          workspace,
          structure,
          where: Ast.and(conditions),
          whereParam: "filters",
          sort,
          limit: pageSize,
          offset: (page - 1) * pageSize,
          includeCount: true,
          includeDeleted: flag(q.all) || flag(q.includeDeleted)
        }, principal, flag(q.reveal), csvParam(q.expand))
        return {
          data: items.map((i) => toRecordB(i.row, project(i.data, fields))),
          meta: { total: result.total ?? 0, page, pageSize }
        }
      }))

  const getOne = (workspace: string, id: string, q: Record<string, string | undefined>) =>
    withContext(({ principal }) =>
      Effect.gen(function*() {
        const version = yield* numberParam("version", q.version)
        const { row, structure } = version !== undefined
          ? yield* records.getVersion(workspace, id, version)
          : yield* records.get(workspace, id, { includeDeleted: flag(q.includeDeleted) || flag(q.all) })
        const data = yield* shown(structure, row.data, principal, flag(q.reveal))
        const expand = csvParam(q.expand)
        if (expand.length > 0) yield* query.expand(structure, [{ id: row.id, data }], expand)
        const extra: Record<string, unknown> = {}
        if (flag(q.includeHistory)) extra.history = (yield* records.history(workspace, id)).versions
        if (flag(q.includeChangelog)) extra.changelog = (yield* records.changelog(workspace, id, {})).entries
        return toRecordB(row, data, extra)
      }))

  // ------------------------------------------------------------------ bulk

  interface CreateItem {
    readonly data: Record<string, unknown>
    readonly metadata?: Record<string, unknown> | undefined
  }

  const bulkCreate = (structure: Structure, items: ReadonlyArray<CreateItem>, options: { skipValidation: boolean; atomic: boolean; returnRecords: boolean; gen: "A" | "B" }) =>
    withContext(({ principal, writer }) =>
      Effect.gen(function*() {
        yield* bulkSize(items.length, "records")
        yield* mayskip(principal, options.skipValidation)
        const bulkWriter: Writer = { ...writer, source: "bulk" }
        const inputs = items.map((item) => ({ data: item.data, metadata: item.metadata, skipValidation: options.skipValidation }))
        const shownRow = (row: RecordRow): Effect.Effect<unknown> =>
          options.gen === "B" ? recordB(structure, row, principal, false) : recordA(structure, row, principal, false)
        if (options.atomic) {
          const written = yield* records.createAll(structure, inputs, bulkWriter).pipe(Effect.mapError((f) => atomicFailure("records", f)))
          const shownRecords = options.returnRecords ? yield* Effect.forEach(written, (w) => shownRow(w.row)) : []
          return respond(201, { success: true, created: written.length, failed: 0, records: shownRecords, errors: [] })
        }
        const created: Array<unknown> = []
        const ids: Array<string> = []
        const failures: Array<{ index: number; error: RecordError }> = []
        // the items go in together, so they share group commits; each keeps its own outcome, in item order
        const outcomes = yield* Effect.forEach(inputs, (input) => Effect.result(records.create(structure, input, bulkWriter)), { concurrency: 64 })
        for (let i = 0; i < inputs.length; i++) {
          const outcome = outcomes[i]!
          if (Result.isSuccess(outcome)) {
            ids.push(outcome.success.row.id)
            if (options.returnRecords) created.push(yield* shownRow(outcome.success.row))
          } else failures.push({ index: i, error: outcome.failure })
        }
        if (ids.length === 0) return yield* allFailed("records", failures)
        yield* records.publishBulk(structure, "record.bulk.created", ids, writer)
        const body = {
          success: failures.length === 0,
          created: ids.length,
          failed: failures.length,
          records: created,
          errors: failures.map((f) => bulkError(f.index, f.error))
        }
        return respond(failures.length === 0 ? 201 : 207, body)
      }))

  interface UpdateItem {
    readonly id: string
    readonly data: Record<string, unknown>
    readonly expectedVersion?: number | undefined
  }

  /** `expectStructure`: generation A batches may only touch records of the structure in the path. */
  const bulkUpdate = (
    workspace: string,
    items: ReadonlyArray<UpdateItem>,
    options: { skipValidation?: boolean | undefined; createVersions?: boolean | undefined; atomic?: boolean | undefined },
    list: string,
    expectStructure?: Structure
  ) =>
    withContext(({ principal, writer }) =>
      Effect.gen(function*() {
        if (expectStructure === undefined || items.length > 0) yield* bulkSize(items.length, list)
        yield* mayskip(principal, options.skipValidation)
        const bulkWriter: Writer = { ...writer, source: "bulk" }
        const inputOf = (u: UpdateItem) => ({
          data: u.data,
          expectedVersion: u.expectedVersion,
          skipValidation: options.skipValidation,
          createVersion: options.createVersions
        })
        const shownAll = (written: ReadonlyArray<Pick<WriteResult, "row">>) =>
          Effect.forEach(written, (w) =>
            Effect.flatMap(structures.get(workspace, w.row.structureId), (s): Effect.Effect<unknown> =>
              expectStructure !== undefined ? recordA(s, w.row, principal, false) : recordB(s, w.row, principal, false)))
        if (items.length === 0) return respond(200, { success: true, updated: 0, failed: 0, results: [], errors: [] })
        if (options.atomic === true) {
          const written = yield* records.updateAll(workspace, items.map((u) => ({ id: u.id, input: inputOf(u) })), bulkWriter, expectStructure?.id).pipe(
            Effect.mapError((f) => atomicFailure(list, f))
          )
          return respond(200, { success: true, updated: written.length, failed: 0, results: yield* shownAll(written), errors: [] })
        }
        const written: Array<{ row: RecordRow }> = []
        const failures: Array<{ index: number; error: RecordError; id: string }> = []
        const groups = new Map<string, Array<string>>()
        for (let i = 0; i < items.length; i++) {
          const u = items[i]!
          const outcome = yield* Effect.result(Effect.gen(function*() {
            if (expectStructure !== undefined) {
              const { row } = yield* records.get(workspace, u.id)
              if (row.structureId !== expectStructure.id) return yield* recordNotFound(u.id)
            }
            return yield* writerService.update(workspace, u.id, inputOf(u), bulkWriter)
          }))
          if (Result.isSuccess(outcome)) {
            const row = outcome.success.row
            written.push({ row })
            groups.set(row.structureId, [...(groups.get(row.structureId) ?? []), row.id])
          } else failures.push({ index: i, error: outcome.failure, id: u.id })
        }
        if (written.length === 0) return yield* allFailed(list, failures)
        for (const [structureId, ids] of groups) {
          const structure = yield* structures.get(workspace, structureId)
          yield* records.publishBulk(structure, "record.bulk.updated", ids, writer)
        }
        const body = {
          success: failures.length === 0,
          updated: written.length,
          failed: failures.length,
          results: yield* shownAll(written),
          errors: failures.map((f) => bulkError(f.index, f.error, f.id))
        }
        return respond(failures.length === 0 ? 200 : 207, body)
      }))

  const bulkDelete = (workspace: string, ids: ReadonlyArray<string>, permanent: boolean, atomic: boolean, list: string, expectStructure?: Structure) =>
    withContext(({ writer }) =>
      Effect.gen(function*() {
        if (expectStructure === undefined || ids.length > 0) yield* bulkSize(ids.length, list)
        if (ids.length === 0) return respond(200, { success: true, deleted: 0, failed: 0, results: [], errors: [] })
        const bulkWriter: Writer = { ...writer, source: "bulk" }
        if (atomic) {
          const removed = yield* records.removeAll(workspace, ids, permanent, bulkWriter, expectStructure?.id).pipe(
            Effect.mapError((f) => atomicFailure(list, f))
          )
          return respond(200, { success: true, deleted: removed.length, failed: 0, results: removed.map((r) => ({ id: r.id, deletedAt: r.deletedAt })), errors: [] })
        }
        const failures: Array<{ index: number; error: RecordError; id: string }> = []
        const removed: Array<{ id: string; deletedAt: string; structureId: string }> = []
        for (let i = 0; i < ids.length; i++) {
          const id = ids[i]!
          const outcome = yield* Effect.result(Effect.gen(function*() {
            if (expectStructure !== undefined) {
              const { row } = yield* records.get(workspace, id)
              if (row.structureId !== expectStructure.id) return yield* recordNotFound(id)
            }
            return yield* writerService.remove(workspace, id, permanent, bulkWriter)
          }))
          if (Result.isSuccess(outcome)) removed.push(outcome.success)
          else failures.push({ index: i, error: outcome.failure, id })
        }
        if (removed.length === 0) return yield* allFailed(list, failures)
        const groups = new Map<string, Array<string>>()
        for (const r of removed) groups.set(r.structureId, [...(groups.get(r.structureId) ?? []), r.id])
        for (const [structureId, done] of groups) {
          const structure = yield* structures.get(workspace, structureId).pipe(Effect.orElseSucceed(() => undefined))
          if (structure) yield* records.publishBulk(structure, "record.bulk.deleted", done, writer)
        }
        const body = {
          success: failures.length === 0,
          deleted: removed.length,
          failed: failures.length,
          results: removed.map((r) => ({ id: r.id, deletedAt: r.deletedAt })),
          errors: failures.map((f) => bulkError(f.index, f.error, f.id))
        }
        return respond(failures.length === 0 ? 200 : 207, body)
      }))

  /** Ids of the live records of a structure matching a generation A `query`: `*` is every record, an empty query is refused. */
  const matching = (structure: Structure, expression: string) =>
    Effect.gen(function*() {
      const text = expression.trim()
      if (text === "") return yield* badParam("query", "query is required (\"*\" matches every record)")
      const where = text === "*" ? Ast.all : yield* fromResult("query", parseExpressionA(text))
      const result = yield* query.list({
        workspace: structure.workspaceSlug,
        structure,
        where,
        whereParam: "query",
        sort: [],
        limit: MAX_BULK_ITEMS,
        offset: 0,
        includeCount: false,
        includeDeleted: false
      })
      if (result.hasMore) {
        return yield* payloadTooLarge({ message: `The query matches more than ${MAX_BULK_ITEMS} records; narrow it`, code: "PAYLOAD_TOO_LARGE" })
      }
      return result.rows.map((r) => r.id)
    })

  return handlers
    .handle("create", ({ params, query: q, payload }) =>
      withContext(({ principal, writer }) =>
        Effect.gen(function*() {
          const structure = yield* resolve(params.workspace, payload.structureId)
          const { row } = yield* records.create(structure, {
            data: payload.data,
            metadata: payload.metadata,
            ttlSeconds: yield* numberParam("ttlSeconds", q.ttlSeconds),
            expiresAt: q.expiresAt
          }, writer)
          return respond(201, yield* recordB(structure, row, principal, flag(q.reveal)))
        })))
    .handle("bulkCreate", ({ params, payload }) =>
      Effect.flatMap(resolve(params.workspace, payload.structureId), (structure) =>
        bulkCreate(structure, payload.records, {
          skipValidation: payload.options?.skipValidation === true,
          atomic: payload.options?.atomic === true,
          returnRecords: payload.options?.returnRecords !== false,
          gen: "B"
        })))
    .handle("bulkUpdate", ({ params, payload }) => bulkUpdate(params.workspace, payload.updates, payload.options ?? {}, "updates"))
    .handle("bulkDelete", ({ params, payload }) =>
      bulkDelete(params.workspace, payload.ids, payload.permanent === true, payload.atomic === true, "ids"))
    .handle("list", ({ params, query: q }) =>
      withContext(({ principal }) =>
        Effect.map(Effect.flatMap(queryPairs, (pairs) => listB(params.workspace, q, pairs, principal)), (body) => respond(200, body))))
    .handle("upsert", ({ params, payload }) =>
      withContext(({ request, writer }) =>
        Effect.gen(function*() {
          const structure = yield* resolve(params.workspace, params.slug)
          const key = request.headers["idempotency-key"]
          if (key !== undefined && (key.length === 0 || key.length > 255)) {
            return yield* badParam("Idempotency-Key", "Idempotency-Key must be 1 to 255 characters")
          }
          const result = yield* writerService.upsert(params.workspace, structure.id, payload.match, payload.data, writer, key)
          return respond(result.status, result.body, result.replayed ? { "idempotent-replayed": "true" } : {})
        })))
    .handle("listBySlug", ({ params, query: q }) => slugList(params.workspace, params.slug, q).pipe(Effect.map((b) => respond(200, b))))
    .handle("get", ({ params, query: q }) =>
      Effect.gen(function*() {
        const body: unknown = isUuid(params.id)
          ? yield* getOne(params.workspace, params.id, q)
          : yield* slugList(params.workspace, params.id, q)
        return respond(200, body)
      }))
    .handle("update", ({ params, query: q, payload }) =>
      withContext(({ principal, request, writer }) =>
        Effect.gen(function*() {
          yield* mayskip(principal, payload.options?.skipValidation)
          const written = yield* writerService.update(params.workspace, params.id, {
            data: payload.data,
            metadata: payload.metadata,
            expectedVersion: yield* ifMatch(request, payload.expectedVersion),
            createVersion: payload.options?.createVersion,
            skipValidation: payload.options?.skipValidation,
            ttlSeconds: yield* numberParam("ttlSeconds", q.ttlSeconds),
            expiresAt: q.expiresAt,
            clearTtl: flag(q.clearTtl),
            reason: payload.reason
          }, writer)
          const structure = yield* structures.get(params.workspace, written.row.structureId)
          return respond(200, yield* recordB(structure, written.row, principal, flag(q.reveal), { previousVersion: written.previousVersion }))
        })))
    .handle("replace", ({ params, query: q, payload }) =>
      withContext(({ principal, request, writer }) =>
        Effect.gen(function*() {
          const written = yield* writerService.update(params.workspace, params.id, {
            data: payload.data,
            metadata: payload.metadata,
            expectedVersion: yield* ifMatch(request, payload.expectedVersion),
            replace: true,
            reason: payload.reason
          }, writer)
          const structure = yield* structures.get(params.workspace, written.row.structureId)
          return respond(200, yield* recordB(structure, written.row, principal, flag(q.reveal), { previousVersion: written.previousVersion }))
        })))
    .handle("delete", ({ params, query: q }) =>
      withContext(({ writer }) =>
        Effect.map(writerService.remove(params.workspace, params.id, flag(q.permanent), writer, q.reason), (r) =>
          respond(200, { success: true, id: r.id, deletedAt: r.deletedAt }))))
    .handle("history", ({ params }) =>
      withContext(() => Effect.map(records.history(params.workspace, params.id), ({ versions }) => respond(200, { versions }))))
    .handle("changelog", ({ params, query: q }) =>
      withContext(() =>
        Effect.gen(function*() {
          const limit = yield* intParam("limit", q.limit, 100, 1, 1000)
          const { entries } = yield* records.changelog(params.workspace, params.id, {
            limit,
            ...(q.startDate ? { startDate: q.startDate } : {}),
            ...(q.endDate ? { endDate: q.endDate } : {})
          })
          return respond(200, { entries })
        })))
    .handle("restore", ({ params, payload }) =>
      withContext(({ principal, writer }) =>
        Effect.gen(function*() {
          const written = yield* writerService.restore(params.workspace, params.id, payload.version, payload.reason, writer)
          const structure = yield* structures.get(params.workspace, written.row.structureId)
          const data = yield* shown(structure, written.row.data, principal, false)
          return respond(200, { id: written.row.id, version: written.row.version, restoredFrom: written.restoredFrom ?? null, data })
        })))
    .handle("revert", ({ params, payload }) =>
      withContext(({ principal, writer }) =>
        Effect.gen(function*() {
          const written = yield* writerService.revert(params.workspace, params.id, payload.reason, writer)
          const structure = yield* structures.get(params.workspace, written.row.structureId)
          return respond(200, yield* recordB(structure, written.row, principal, false, { previousVersion: written.previousVersion, restoredFrom: written.restoredFrom }))
        })))
    // ---------------------------------------------------------------- generation A
    .handle("createA", ({ params, query: q, payload }) =>
      withContext(({ principal, writer }) =>
        Effect.gen(function*() {
          const structure = yield* resolve(params.workspace, params.slug)
          const { row } = yield* records.create(structure, {
            data: flatData(structure, payload),
            ttlSeconds: yield* numberParam("ttlSeconds", q.ttlSeconds),
            expiresAt: q.expiresAt
          }, writer)
          return respond(201, yield* recordA(structure, row, principal, false))
        })))
    .handle("bulkCreateA", ({ params, payload }) =>
      Effect.flatMap(resolve(params.workspace, params.slug), (structure) =>
        bulkCreate(structure, payload.records.map((data) => ({ data: flatData(structure, data) })), {
          skipValidation: false,
          atomic: payload.atomic === true,
          returnRecords: true,
          gen: "A"
        })))
    .handle("bulkUpdateA", ({ params, payload }) =>
      withContext(() =>
        Effect.gen(function*() {
          const structure = yield* resolve(params.workspace, params.slug)
          const ids = yield* matching(structure, payload.query)
          const data = flatData(structure, payload.updates)
          return yield* bulkUpdate(params.workspace, ids.map((id) => ({ id, data })), { atomic: payload.atomic }, "records", structure)
        })))
    .handle("bulkDeleteA", ({ params, payload }) =>
      withContext(() =>
        Effect.gen(function*() {
          const structure = yield* resolve(params.workspace, params.slug)
          const ids = yield* matching(structure, payload.query)
          return yield* bulkDelete(params.workspace, ids, payload.permanent === true, payload.atomic === true, "records", structure)
        })))
    .handle("listA", ({ params, query: q }) =>
      withContext(({ principal }) =>
        Effect.gen(function*() {
          const structure = yield* resolve(params.workspace, params.slug)
          const limit = yield* intParam(q.limit !== undefined ? "limit" : "pageSize", q.limit ?? q.pageSize, 50, 1, 500)
          const page = yield* intParam("page", q.page, 1, 1, 1_000_000)
          const offset = q.offset !== undefined ? yield* intParam("offset", q.offset, 0, 0, Number.MAX_SAFE_INTEGER) : (page - 1) * limit
          const conditions: Array<Ast.Expr> = [yield* bracketFilters(yield* queryPairs, structure)]
          if (q.query) conditions.push(yield* fromResult("query", parseExpressionA(q.query)))
          if (q.filter) conditions.push(yield* fromResult("filter", parseFilterB(q.filter)))
          if (q.search) conditions.push(Ast.search(q.search, csvParam(q.searchFields).map(Ast.fieldRef)))
          const sort = yield* fromResult("sort", parseSort(q.sort ?? "createdAt"))
          const result = yield* query.list({
            workspace: params.workspace,
            structure,
            where: Ast.and(conditions),
            whereParam: "query",
            sort,
            limit,
            offset,
            includeCount: true,
            includeDeleted: flag(q.all)
          })
          const flat = yield* Effect.forEach(result.rows, (row) => recordA(structure, row, principal, flag(q.reveal)))
          const populate = csvParam(q.populate)
          if (populate.length > 0) yield* query.populate(structure, flat, populate)
          return respond(200, { records: flat, total: result.total ?? flat.length, limit, offset })
        })))
    .handle("getA", ({ params, query: q }) =>
      withContext(({ principal }) =>
        Effect.gen(function*() {
          const { structure, row } = yield* ofStructure(params.workspace, params.slug, params.id)
          const flat = yield* recordA(structure, row, principal, flag(q.reveal))
          const populate = csvParam(q.populate)
          if (populate.length > 0) yield* query.populate(structure, [flat], populate)
          return respond(200, flat)
        })))
    .handle("updateA", ({ params, payload }) =>
      withContext(({ principal, request, writer }) =>
        Effect.gen(function*() {
          const { structure } = yield* ofStructure(params.workspace, params.slug, params.id)
          const written = yield* writerService.update(params.workspace, params.id, {
            data: flatData(structure, payload),
            expectedVersion: yield* ifMatch(request, undefined)
          }, writer)
          return respond(200, yield* recordA(structure, written.row, principal, false))
        })))
    .handle("replaceA", ({ params, payload }) =>
      withContext(({ principal, request, writer }) =>
        Effect.gen(function*() {
          const { structure } = yield* ofStructure(params.workspace, params.slug, params.id)
          const written = yield* writerService.update(params.workspace, params.id, {
            data: flatData(structure, payload),
            replace: true,
            expectedVersion: yield* ifMatch(request, undefined)
          }, writer)
          return respond(200, yield* recordA(structure, written.row, principal, false))
        })))
    .handle("deleteA", ({ params, query: q }) =>
      withContext(({ writer }) =>
        Effect.gen(function*() {
          yield* ofStructure(params.workspace, params.slug, params.id)
          const r = yield* writerService.remove(params.workspace, params.id, flag(q.permanent), writer, q.reason)
          return respond(200, { success: true, id: r.id, deletedAt: r.deletedAt })
        })))
    .handle("historyA", ({ params }) =>
      withContext(() =>
        Effect.gen(function*() {
          yield* ofStructure(params.workspace, params.slug, params.id)
          const { versions } = yield* records.history(params.workspace, params.id)
          return respond(200, {
            history: versions.map((v: any) => ({ version: v.version, changes: v.changes, changedBy: v.updatedBy, changedAt: v.updatedAt }))
          })
        })))
}))

export type { RecordError }
