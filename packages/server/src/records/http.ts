// Record routes of both generations. Handlers only translate: the body and status each route answers with, who is
// writing, and which read or write service call does the work.
import { Api } from "@troupe/api/Api"
import { can, CurrentPrincipal, type Principal } from "@troupe/api/Authorization"
import { badRequest, type ErrorDetail, payloadTooLarge } from "@troupe/api/Errors"
import type { Structure } from "@troupe/api/structures/Structure"
import { Effect, Result } from "effect"
import { HttpServerRequest, HttpServerResponse } from "effect/http"
import { HttpApiBuilder } from "effect/http-api"
import { SqlClient } from "effect/sql"
import { appendEvent } from "../events/Outbox.ts"
import { flag } from "../lib/rows.ts"
import * as Ast from "../query/Ast.ts"
import { parseExpressionA } from "../query/ExpressionParser.ts"
import { parseBracketParams, parseFilterB, parseSort, reservedParams } from "../query/FilterParser.ts"
import { StructureService } from "../structures/StructureService.ts"
import { applyVirtual } from "../structures/Validator.ts"
import { isUuid, maskData, type RecordRow, toRecordA, toRecordB, type Writer } from "./model.ts"
import { RecordWriter } from "./RecordEntity.ts"
import { csvParam, fromResult, intParam, type ListSpec, RecordQuery } from "./RecordQuery.ts"
import { type RecordError, recordNotFound, RecordService } from "./RecordService.ts"

export const MAX_BULK_ITEMS = 1000

const respond = (status: number, body: unknown) => HttpServerResponse.jsonUnsafe(body, { status })

const badParam = (field: string, message: string) =>
  badRequest({ message, code: "VALIDATION_ERROR", details: [{ field, property: field, message }] })

const numberParam = (name: string, raw: string | undefined) => {
  if (raw === undefined || raw === "") return Effect.succeed(undefined)
  const n = Number(raw)
  return Number.isFinite(n) ? Effect.succeed(n) : Effect.fail(badParam(name, `${name} must be a number`))
}

const rawParams = (request: HttpServerRequest.HttpServerRequest): Array<[string, string]> => {
  const at = request.url.indexOf("?")
  return at < 0 ? [] : [...new URLSearchParams(request.url.slice(at + 1)).entries()]
}

const bulkLimit = (n: number) =>
  n > MAX_BULK_ITEMS
    ? Effect.fail(payloadTooLarge({ message: `At most ${MAX_BULK_ITEMS} items per bulk request`, code: "PAYLOAD_TOO_LARGE" }))
    : Effect.void

interface BulkError {
  index: number
  id?: string
  code: string
  message: string
  details?: ReadonlyArray<ErrorDetail>
}

const bulkError = (index: number, e: any, id?: string): BulkError => ({
  index,
  ...(id !== undefined ? { id } : {}),
  code: e?.code ?? "INTERNAL",
  message: e?.message ?? String(e),
  ...(e?.details?.length ? { details: e.details } : {})
})

export const RecordsHandlers = HttpApiBuilder.group(Api, "records", Effect.fn(function*(handlers) {
  const sql = yield* SqlClient.SqlClient
  const records = yield* RecordService
  const writerService = yield* RecordWriter
  const query = yield* RecordQuery
  const structures = yield* StructureService

  const context = Effect.gen(function*() {
    const principal = yield* Effect.service(CurrentPrincipal)
    const request = yield* HttpServerRequest.HttpServerRequest
    const address = request.headers["x-forwarded-for"]?.split(",")[0]?.trim() ?? request.remoteAddress.pipe((o) => (o._tag === "Some" ? o.value : undefined))
    const writer: Writer = {
      workspace: principal.workspace,
      userId: principal.id,
      userName: principal.name,
      source: principal.kind === "service" ? "service-account" : "api",
      ...(address ? { clientAddress: address } : {}),
      ...(request.headers["user-agent"] ? { userAgent: request.headers["user-agent"].slice(0, 200) } : {}),
      canSkipValidation: can(principal, "write:structures")
    }
    return { principal, request, writer }
  })

  /** What a caller sees of stored data: secrets masked (or revealed), virtual computed fields added. */
  const shown = (structure: Structure, data: Record<string, unknown>, principal: Principal, reveal: boolean) =>
    Effect.map(
      reveal && can(principal, "secrets:reveal") ? records.reveal(structure, data) : Effect.succeed(maskData(structure, data)),
      (d) => applyVirtual(structure, d, new Date())
    )

  const recordB = (structure: Structure, row: RecordRow, principal: Principal, reveal: boolean, extra: Record<string, unknown> = {}) =>
    Effect.map(shown(structure, row.data, principal, reveal), (data) => toRecordB(row, data, extra))

  const recordA = (structure: Structure, row: RecordRow, principal: Principal, reveal: boolean) =>
    Effect.map(shown(structure, row.data, principal, reveal), (data) => toRecordA(row, data))

  const ifMatch = (request: HttpServerRequest.HttpServerRequest, body: number | undefined) => {
    const header = request.headers["if-match"]
    if (header === undefined) return Effect.succeed(body)
    const v = Number(header.replace(/^W\//, "").replace(/"/g, ""))
    return Number.isInteger(v) ? Effect.succeed(v) : Effect.fail(badParam("If-Match", "If-Match must be a record version number"))
  }

  /** The structure a generation A route names, and the record must belong to it. */
  const ofStructure = (workspace: string, slug: string, id: string) =>
    Effect.gen(function*() {
      const structure = yield* structures.resolve(workspace, slug)
      const { row } = yield* records.get(workspace, id)
      if (row.structureId !== structure.id) return yield* recordNotFound(id)
      return { structure, row }
    })

  // ------------------------------------------------------------------ lists

  const listRows = (spec: ListSpec, principal: Principal, reveal: boolean, expand: ReadonlyArray<string>) =>
    Effect.gen(function*() {
      const result = yield* query.list(spec)
      const items = yield* Effect.forEach(result.rows, (row) =>
        Effect.gen(function*() {
          const structure = spec.structure ?? (yield* structures.get(spec.workspace, row.structureId))
          return { structure, row, data: yield* shown(structure, row.data, principal, reveal) }
        }))
      if (expand.length > 0 && spec.structure) {
        yield* query.expand(spec.structure, items.map((i) => ({ id: i.row.id, data: i.data })), expand)
      }
      return { result, items }
    })

  const project = (data: Record<string, unknown>, fields: ReadonlyArray<string>) =>
    fields.length === 0 ? data : Object.fromEntries(fields.filter((f) => f in data).map((f) => [f, data[f]]))

  /** `GET /records/slug/{slug}` and `GET /records/{slug}`: page/pageSize, bracket filters, search, projection. */
  const slugList = (workspace: string, slug: string, q: Record<string, string | undefined>, request: HttpServerRequest.HttpServerRequest) =>
    Effect.gen(function*() {
      const { principal } = yield* context
      const structure = yield* structures.resolve(workspace, slug)
      const page = yield* intParam("page", q.page, 1, 1, Number.MAX_SAFE_INTEGER)
      const pageSize = yield* intParam("pageSize", q.pageSize ?? q.limit, 50, 1, 500)
      const conditions: Array<Ast.Expr> = []
      const params = rawParams(request).filter(([k]) => !reservedParams.includes(k) && k !== "access_token")
      if (params.length > 0) {
        conditions.push(yield* fromResult("filters", parseBracketParams(params, { knownFields: new Set(structure.properties.map((p) => p.name)) })))
      }
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
        includeDeleted: flag(q.all)
      }, principal, flag(q.reveal), csvParam(q.expand))
      return {
        data: items.map((i) => toRecordB(i.row, project(i.data, fields))),
        meta: { total: result.total ?? 0, page, pageSize }
      }
    })

  const getOne = (workspace: string, id: string, q: Record<string, string | undefined>) =>
    Effect.gen(function*() {
      const { principal } = yield* context
      const version = yield* numberParam("version", q.version)
      const { row, structure } = version !== undefined
        ? yield* records.getVersion(workspace, id, version)
        : yield* records.get(workspace, id)
      const data = yield* shown(structure, row.data, principal, flag(q.reveal))
      const expand = csvParam(q.expand)
      if (expand.length > 0) yield* query.expand(structure, [{ id: row.id, data }], expand)
      const extra: Record<string, unknown> = {}
      if (flag(q.includeHistory)) extra.history = (yield* records.history(workspace, id)).versions
      if (flag(q.includeChangelog)) extra.changelog = (yield* records.changelog(workspace, id, {})).entries
      return toRecordB(row, data, extra)
    })

  // ------------------------------------------------------------------ bulk

  const bulkEvent = (structure: Structure, type: string, ids: ReadonlyArray<string>, writer: Writer) =>
    ids.length === 0 ? Effect.void : sql.withTransaction(appendEvent(sql, {
      workspace: structure.workspaceSlug,
      type,
      structureId: structure.id,
      recordSlug: structure.recordSlug,
      recordId: null,
      payload: {
        event: type,
        timestamp: new Date().toISOString(),
        workspace: structure.workspaceSlug,
        structure: structure.recordSlug,
        data: { structure: structure.recordSlug, count: ids.length, recordIds: ids, metadata: { userId: writer.userId, source: writer.source } }
      }
    })).pipe(Effect.orDie)

  const bulkCreate = (structure: Structure, items: ReadonlyArray<{ data: Record<string, unknown>; metadata?: Record<string, unknown> }>, skipValidation: boolean, gen: "A" | "B", returnRecords: boolean) =>
    Effect.gen(function*() {
      yield* bulkLimit(items.length)
      const { principal, writer } = yield* context
      const created: Array<unknown> = []
      const ids: Array<string> = []
      const errors: Array<BulkError> = []
      for (let i = 0; i < items.length; i++) {
        const item = items[i]!
        const outcome = yield* Effect.result(records.create(structure, { data: item.data, metadata: item.metadata, skipValidation }, { ...writer, source: "bulk" }))
        if (Result.isSuccess(outcome)) {
          ids.push(outcome.success.row.id)
          if (returnRecords) {
            created.push(gen === "B"
              ? yield* recordB(structure, outcome.success.row, principal, false)
              : yield* recordA(structure, outcome.success.row, principal, false))
          }
        } else errors.push(bulkError(i, outcome.failure))
      }
      yield* bulkEvent(structure, "record.bulk.created", ids, writer)
      const body = { success: errors.length === 0, created: ids.length, failed: errors.length, records: created, errors }
      return respond(errors.length > 0 && ids.length === 0 ? 400 : ids.length > 0 && errors.length === 0 ? 201 : 207, body)
    })

  const bulkUpdate = (workspace: string, updates: ReadonlyArray<{ id: string; data: Record<string, unknown> }>, options: { skipValidation?: boolean | undefined; createVersions?: boolean | undefined }, expectStructure?: Structure) =>
    Effect.gen(function*() {
      yield* bulkLimit(updates.length)
      const { principal, writer } = yield* context
      const results: Array<unknown> = []
      const errors: Array<BulkError> = []
      const byStructure = new Map<string, { structure: Structure; ids: Array<string> }>()
      for (let i = 0; i < updates.length; i++) {
        const u = updates[i]!
        const outcome = yield* Effect.result(Effect.gen(function*() {
          if (expectStructure) {
            const { row } = yield* records.get(workspace, u.id)
            if (row.structureId !== expectStructure.id) return yield* recordNotFound(u.id)
          }
          return yield* writerService.update(workspace, u.id, {
            data: u.data,
            skipValidation: options.skipValidation,
            createVersion: options.createVersions
          }, { ...writer, source: "bulk" })
        }))
        if (Result.isSuccess(outcome)) {
          const row = outcome.success.row
          const structure = yield* structures.get(workspace, row.structureId)
          const entry = byStructure.get(structure.id) ?? { structure, ids: [] }
          entry.ids.push(row.id)
          byStructure.set(structure.id, entry)
          results.push(yield* recordB(structure, row, principal, false))
        } else errors.push(bulkError(i, outcome.failure, u.id))
      }
      for (const { structure, ids } of byStructure.values()) yield* bulkEvent(structure, "record.bulk.updated", ids, writer)
      return { success: errors.length === 0, updated: results.length, failed: errors.length, results, errors }
    })

  const bulkDelete = (workspace: string, ids: ReadonlyArray<string>, permanent: boolean) =>
    Effect.gen(function*() {
      yield* bulkLimit(ids.length)
      const { writer } = yield* context
      const errors: Array<BulkError> = []
      const byStructure = new Map<string, Array<string>>()
      let deleted = 0
      for (let i = 0; i < ids.length; i++) {
        const outcome = yield* Effect.result(writerService.remove(workspace, ids[i]!, permanent, { ...writer, source: "bulk" }))
        if (Result.isSuccess(outcome)) {
          deleted++
          byStructure.set(outcome.success.structureId, [...(byStructure.get(outcome.success.structureId) ?? []), outcome.success.id])
        } else errors.push(bulkError(i, outcome.failure, ids[i]))
      }
      for (const [structureId, done] of byStructure) {
        const structure = yield* structures.get(workspace, structureId).pipe(Effect.orElseSucceed(() => undefined))
        if (structure) yield* bulkEvent(structure, "record.bulk.deleted", done, writer)
      }
      return { success: errors.length === 0, deleted, failed: errors.length, errors }
    })

  /** Ids of the live records of a structure matching a generation A `query` (all of them when absent). */
  const matching = (structure: Structure, expression: string | undefined) =>
    Effect.gen(function*() {
      const where = expression && expression.trim() !== "" ? yield* fromResult("query", parseExpressionA(expression)) : Ast.all
      const result = yield* query.list({
        workspace: structure.workspaceSlug, structure, where, whereParam: "query", sort: [], limit: MAX_BULK_ITEMS, offset: 0,
        includeCount: false, includeDeleted: false
      })
      if (result.hasMore) {
        return yield* payloadTooLarge({ message: `The query matches more than ${MAX_BULK_ITEMS} records; narrow it`, code: "PAYLOAD_TOO_LARGE" })
      }
      return result.rows.map((r) => r.id)
    })

  const withPrincipal = <A, E, R>(f: (c: Effect.Success<typeof context>) => Effect.Effect<A, E, R>) => Effect.flatMap(context, f)

  return handlers
    .handle("create", ({ params, query: q, payload }) =>
      withPrincipal(({ principal, writer }) =>
        Effect.gen(function*() {
          const structure = yield* structures.resolve(params.workspace, payload.structureId)
          const { row } = yield* records.create(structure, {
            data: payload.data,
            metadata: payload.metadata,
            ttlSeconds: yield* numberParam("ttlSeconds", q.ttlSeconds),
            expiresAt: q.expiresAt
          }, writer)
          return respond(201, yield* recordB(structure, row, principal, flag(q.reveal)))
        })))
    .handle("bulkCreate", ({ params, payload }) =>
      Effect.flatMap(structures.resolve(params.workspace, payload.structureId), (structure) =>
        bulkCreate(structure, payload.records, payload.options?.skipValidation === true, "B", payload.options?.returnRecords !== false)))
    .handle("bulkUpdate", ({ params, payload }) => bulkUpdate(params.workspace, payload.updates, payload.options ?? {}).pipe(Effect.map((b) => respond(200, b))))
    .handle("bulkDelete", ({ params, payload }) => bulkDelete(params.workspace, payload.ids, payload.permanent === true).pipe(Effect.map((b) => respond(200, b))))
    .handle("list", ({ params, query: q }) =>
      withPrincipal(({ principal }) =>
        Effect.gen(function*() {
          const structure = q.structureId ? yield* structures.resolve(params.workspace, q.structureId) : undefined
          const limit = yield* intParam("limit", q.limit, 20, 1, 100)
          const offset = yield* intParam("offset", q.offset, 0, 0, Number.MAX_SAFE_INTEGER)
          const conditions: Array<Ast.Expr> = []
          if (q.filter) conditions.push(yield* fromResult("filter", parseFilterB(q.filter)))
          if (q.search) conditions.push(Ast.search(q.search, csvParam(q.searchFields).map(Ast.fieldRef)))
          const sort = yield* fromResult("sort", parseSort(q.sort ?? "createdAt"))
          const fields = csvParam(q.fields)
          const { result, items } = yield* listRows({
            workspace: params.workspace,
            structure,
            where: Ast.and(conditions),
            whereParam: "filter",
            sort,
            limit,
            offset,
            cursor: q.cursor,
            includeCount: flag(q.includeCount),
            includeDeleted: flag(q.includeDeleted) || flag(q.all)
          }, principal, flag(q.reveal), csvParam(q.expand))
          return respond(200, {
            results: items.map((i) => toRecordB(i.row, project(i.data, fields))),
            pagination: {
              limit,
              offset: q.cursor ? 0 : offset,
              ...(result.total !== undefined ? { total: result.total } : {}),
              hasMore: result.hasMore,
              nextCursor: result.nextCursor
            }
          })
        })))
    .handle("upsert", ({ params, payload }) =>
      withPrincipal(({ request, writer }) =>
        Effect.gen(function*() {
          const structure = yield* structures.resolve(params.workspace, params.slug)
          const key = request.headers["idempotency-key"]
          if (key !== undefined && (key.length === 0 || key.length > 255)) {
            return yield* badParam("Idempotency-Key", "Idempotency-Key must be 1 to 255 characters")
          }
          const result = yield* writerService.upsert(params.workspace, structure.id, payload.match, payload.data, writer, key)
          return respond(result.status, result.body)
        })))
    .handle("listBySlug", ({ params, query: q, request }) => slugList(params.workspace, params.slug, q, request).pipe(Effect.map((b) => respond(200, b))))
    .handle("get", ({ params, query: q, request }) =>
      Effect.gen(function*() {
        const body: unknown = isUuid(params.id)
          ? yield* getOne(params.workspace, params.id, q)
          : yield* slugList(params.workspace, params.id, q, request)
        return respond(200, body)
      }))
    .handle("update", ({ params, query: q, payload }) =>
      withPrincipal(({ principal, request, writer }) =>
        Effect.gen(function*() {
          const written = yield* writerService.update(params.workspace, params.id, {
            data: payload.data,
            metadata: payload.metadata,
            expectedVersion: yield* ifMatch(request, payload.expectedVersion),
            createVersion: payload.options?.createVersion,
            skipValidation: payload.options?.skipValidation,
            ttlSeconds: yield* numberParam("ttlSeconds", q.ttlSeconds),
            expiresAt: q.expiresAt,
            clearTtl: flag(q.clearTtl)
          }, writer)
          const structure = yield* structures.get(params.workspace, written.row.structureId)
          return respond(200, yield* recordB(structure, written.row, principal, flag(q.reveal), { previousVersion: written.previousVersion }))
        })))
    .handle("replace", ({ params, query: q, payload }) =>
      withPrincipal(({ principal, request, writer }) =>
        Effect.gen(function*() {
          const written = yield* writerService.update(params.workspace, params.id, {
            data: payload.data,
            metadata: payload.metadata,
            expectedVersion: yield* ifMatch(request, payload.expectedVersion),
            replace: true
          }, writer)
          const structure = yield* structures.get(params.workspace, written.row.structureId)
          return respond(200, yield* recordB(structure, written.row, principal, flag(q.reveal), { previousVersion: written.previousVersion }))
        })))
    .handle("delete", ({ params, query: q }) =>
      withPrincipal(({ writer }) =>
        Effect.map(writerService.remove(params.workspace, params.id, flag(q.permanent), writer), (r) =>
          respond(200, { success: true, id: r.id, deletedAt: r.deletedAt }))))
    .handle("history", ({ params }) =>
      Effect.map(records.history(params.workspace, params.id), ({ versions }) => respond(200, { versions })))
    .handle("changelog", ({ params, query: q }) =>
      Effect.gen(function*() {
        const limit = yield* intParam("limit", q.limit, 100, 1, 1000)
        const { entries } = yield* records.changelog(params.workspace, params.id, {
          limit,
          ...(q.startDate ? { startDate: q.startDate } : {}),
          ...(q.endDate ? { endDate: q.endDate } : {})
        })
        return respond(200, { entries })
      }))
    .handle("restore", ({ params, payload }) =>
      withPrincipal(({ principal, writer }) =>
        Effect.gen(function*() {
          const written = yield* writerService.restore(params.workspace, params.id, payload.version, payload.reason, writer)
          const structure = yield* structures.get(params.workspace, written.row.structureId)
          const data = yield* shown(structure, written.row.data, principal, false)
          return respond(200, { id: written.row.id, version: written.row.version, restoredFrom: written.restoredFrom ?? null, data })
        })))
    .handle("revert", ({ params, payload }) =>
      withPrincipal(({ principal, writer }) =>
        Effect.gen(function*() {
          const written = yield* writerService.revert(params.workspace, params.id, payload.reason, writer)
          const structure = yield* structures.get(params.workspace, written.row.structureId)
          return respond(200, yield* recordB(structure, written.row, principal, false, { previousVersion: written.previousVersion, restoredFrom: written.restoredFrom }))
        })))
    // ---------------------------------------------------------------- generation A
    .handle("createA", ({ params, query: q, payload }) =>
      withPrincipal(({ principal, writer }) =>
        Effect.gen(function*() {
          const structure = yield* structures.resolve(params.workspace, params.slug)
          const { row } = yield* records.create(structure, {
            data: payload,
            ttlSeconds: yield* numberParam("ttlSeconds", q.ttlSeconds),
            expiresAt: q.expiresAt
          }, writer)
          return respond(201, yield* recordA(structure, row, principal, false))
        })))
    .handle("bulkCreateA", ({ params, payload }) =>
      Effect.flatMap(structures.resolve(params.workspace, params.slug), (structure) =>
        bulkCreate(structure, payload.records.map((data) => ({ data })), false, "A", true)))
    .handle("bulkUpdateA", ({ params, payload }) =>
      Effect.gen(function*() {
        const structure = yield* structures.resolve(params.workspace, params.slug)
        const ids = yield* matching(structure, payload.query)
        const body = yield* bulkUpdate(params.workspace, ids.map((id) => ({ id, data: payload.updates })), {}, structure)
        return respond(200, body)
      }))
    .handle("bulkDeleteA", ({ params, payload }) =>
      Effect.gen(function*() {
        const structure = yield* structures.resolve(params.workspace, params.slug)
        const ids = yield* matching(structure, payload.query)
        return respond(200, yield* bulkDelete(params.workspace, ids, payload.permanent === true))
      }))
    .handle("listA", ({ params, query: q }) =>
      withPrincipal(({ principal }) =>
        Effect.gen(function*() {
          const structure = yield* structures.resolve(params.workspace, params.slug)
          const limit = yield* intParam("limit", q.limit ?? q.pageSize, 50, 1, 500)
          const page = yield* intParam("page", q.page, 1, 1, Number.MAX_SAFE_INTEGER)
          const offset = q.offset !== undefined ? yield* intParam("offset", q.offset, 0, 0, Number.MAX_SAFE_INTEGER) : (page - 1) * limit
          const conditions: Array<Ast.Expr> = []
          if (q.query) conditions.push(yield* fromResult("query", parseExpressionA(q.query)))
          if (q.filter) conditions.push(yield* fromResult("filter", parseFilterB(q.filter)))
          if (q.search) conditions.push(Ast.search(q.search, csvParam(q.searchFields).map(Ast.fieldRef)))
          const sort = yield* fromResult("sort", parseSort(q.sort ?? "createdAt"))
          const result = yield* query.list({
            workspace: params.workspace, structure, where: Ast.and(conditions), whereParam: "query", sort, limit, offset,
            includeCount: true, includeDeleted: flag(q.all)
          })
          const flat = yield* Effect.forEach(result.rows, (row) => recordA(structure, row, principal, flag(q.reveal)))
          const populate = csvParam(q.populate)
          if (populate.length > 0) yield* query.populate(structure, flat, populate)
          return respond(200, { records: flat, total: result.total ?? flat.length, limit, offset })
        })))
    .handle("getA", ({ params, query: q }) =>
      withPrincipal(({ principal }) =>
        Effect.gen(function*() {
          const { structure, row } = yield* ofStructure(params.workspace, params.slug, params.id)
          const flat = yield* recordA(structure, row, principal, flag(q.reveal))
          const populate = csvParam(q.populate)
          if (populate.length > 0) yield* query.populate(structure, [flat], populate)
          return respond(200, flat)
        })))
    .handle("updateA", ({ params, payload }) =>
      withPrincipal(({ principal, request, writer }) =>
        Effect.gen(function*() {
          const { structure } = yield* ofStructure(params.workspace, params.slug, params.id)
          const written = yield* writerService.update(params.workspace, params.id, { data: payload, expectedVersion: yield* ifMatch(request, undefined) }, writer)
          return respond(200, yield* recordA(structure, written.row, principal, false))
        })))
    .handle("replaceA", ({ params, payload }) =>
      withPrincipal(({ principal, request, writer }) =>
        Effect.gen(function*() {
          const { structure } = yield* ofStructure(params.workspace, params.slug, params.id)
          const written = yield* writerService.update(params.workspace, params.id, { data: payload, replace: true, expectedVersion: yield* ifMatch(request, undefined) }, writer)
          return respond(200, yield* recordA(structure, written.row, principal, false))
        })))
    .handle("deleteA", ({ params, query: q }) =>
      withPrincipal(({ writer }) =>
        Effect.gen(function*() {
          yield* ofStructure(params.workspace, params.slug, params.id)
          const r = yield* writerService.remove(params.workspace, params.id, flag(q.permanent), writer)
          return respond(200, { success: true, id: r.id, deletedAt: r.deletedAt })
        })))
    .handle("historyA", ({ params }) =>
      Effect.gen(function*() {
        yield* ofStructure(params.workspace, params.slug, params.id)
        const { versions } = yield* records.history(params.workspace, params.id)
        return respond(200, {
          history: versions.map((v: any) => ({ version: v.version, changes: v.changes, changedBy: v.updatedBy, changedAt: v.updatedAt }))
        })
      }))
}))

export type { RecordError }
