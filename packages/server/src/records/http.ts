// Record routes of both generations. Handlers only translate: the body and status each route answers with, who is
// writing, and which read or write service call does the work. Lists are built by RecordViews.listPage, bulk writes
// by RecordWriter (write/Bulk.ts, which states their rules): a bulk answer is 201 (create) / 200 whenever some item
// was written, with `success: false` and per-item `errors` when others were not.
import { Api } from "@troupe/api/Api"
import { CurrentPrincipal, type Principal } from "@troupe/api/Authorization"
import { payloadTooLarge, renameDetails } from "@troupe/api/Errors"
import type { Structure } from "@troupe/api/structures/Structure"
import { Effect } from "effect"
import { HttpServerRequest, HttpServerResponse } from "effect/http"
import { HttpApiBuilder } from "effect/http-api"
import * as Ast from "../query/Ast.ts"
import { parseExpressionA } from "../query/ExpressionParser.ts"
import { StructureService } from "../structures/StructureService.ts"
import { isUuid, type RecordRow, toRecordB } from "../query/RecordRow.ts"
import { RecordWriter } from "./RecordEntity.ts"
import { type BulkFailure, type BulkOutcome, MAX_BULK_ITEMS, type RecordError, recordNotFound } from "./RecordInputs.ts"
import { badParam, csvParam, flagParam, fromResult, intParam, RecordQuery } from "../query/RecordQuery.ts"
import { RecordService } from "./RecordService.ts"
import { type ListQuery, type ListRoute, recordViews } from "./RecordViews.ts"
import { ifMatch, numberParam, writeAnswers, writerOf } from "./WriteRoutes.ts"
import type { FastAnswer } from "../platform/FastRoutes.ts"

/** Generation A bodies are flat: these system fields of a record read back are ignored unless the structure declares them. */
const SYSTEM_FIELDS = ["id", "createdAt", "updatedAt", "createdBy", "updatedBy", "version", "expiresAt", "deletedAt"]

const respond = (status: number, body: unknown, headers: Record<string, string> = {}) =>
  HttpServerResponse.jsonUnsafe(body, { status, headers })

/** An answer shared with the fast lane (WriteRoutes) as the response. */
const answered = (a: FastAnswer) => respond(a.status, a.body, a.headers)

/**
 * Every query parameter as the router decoded it (as the fast routes decode them), a repeated one once per value:
 * the bracket filters are among them.
 */
const queryPairs = Effect.map(Effect.serviceOption(HttpServerRequest.ParsedSearchParams), (parsed) =>
  parsed._tag === "None"
    ? []
    : Object.entries(parsed.value).flatMap(
        ([k, v]): Array<readonly [string, string]> => (Array.isArray(v) ? v.map((x) => [k, x] as const) : [[k, v as string] as const])
      )
)

/** A failed item of a non-atomic batch, as the answer lists it. */
const bulkError = ({ error: e, id, index }: BulkFailure) => ({
  index,
  ...(id !== undefined ? { id } : {}),
  code: e.code,
  message: e.message,
  ...(e.details.length > 0 ? { details: e.details } : {})
})

export const RecordsHandlers = HttpApiBuilder.group(
  Api,
  "records",
  Effect.fn(function* (handlers) {
    const records = yield* RecordService
    const writerService = yield* RecordWriter
    const query = yield* RecordQuery
    const structures = yield* StructureService
    const { listPage, resolve, shown, shownRecord } = recordViews(records, query, structures)
    const answers = yield* writeAnswers

    const context = Effect.gen(function* () {
      const principal = yield* Effect.service(CurrentPrincipal)
      const request = yield* HttpServerRequest.HttpServerRequest
      const address = request.remoteAddress._tag === "Some" ? request.remoteAddress.value : undefined
      return { principal, request, writer: writerOf(principal, request.headers, address) }
    })

    const withContext = <A, E, R>(f: (c: Effect.Success<typeof context>) => Effect.Effect<A, E, R>) => Effect.flatMap(context, f)

    const recordB = (structure: Structure, row: RecordRow, principal: Principal, reveal: boolean, extra: Record<string, unknown> = {}) =>
      shownRecord("B", structure, row, principal, reveal, extra)

    const recordA = (structure: Structure, row: RecordRow, principal: Principal, reveal: boolean) =>
      shownRecord("A", structure, row, principal, reveal)

    /** Generation A data: the flat body without the system fields a client may echo back. */
    const flatData = (structure: Structure, body: Record<string, unknown>) => {
      const declared = new Set(structure.properties.map((p) => p.name))
      const out: Record<string, unknown> = {}
      for (const [k, v] of Object.entries(body)) if (declared.has(k) || !SYSTEM_FIELDS.includes(k)) out[k] = v
      return out
    }

    /**
     * Generation A bodies are flat: a failure's `details` name the body's own fields (`price`, `records[0].price`,
     * `updates.price`), not the paths of the generation B record the write went through (`data.price`).
     */
    const flatDetails =
      (rename: (field: string) => string) =>
      <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
        Effect.mapError(effect, (e) => renameDetails(e, rename))
    const underBody = flatDetails((f) => f.replace(/^data\./, ""))
    const underItems = flatDetails((f) => f.replace(/^(records\[\d+\])\.data\./, "$1."))
    const underUpdates = flatDetails((f) => f.replace(/^records\[\d+\]\.data\./, "updates."))

    /** The structure a generation A route names, and the record must belong to it. */
    const ofStructure = (workspace: string, slug: string, id: string) =>
      Effect.gen(function* () {
        const structure = yield* resolve(workspace, slug)
        const { row } = yield* records.get(workspace, id)
        if (row.structureId !== structure.id) return yield* recordNotFound(id)
        return { structure, row }
      })

    /** Generation A PATCH (`replace` false) and PUT of a record of the structure the route names. */
    const writeA = (
      params: { readonly workspace: string; readonly slug: string; readonly id: string },
      payload: Record<string, unknown>,
      replace: boolean
    ) =>
      withContext(({ principal, request, writer }) =>
        Effect.gen(function* () {
          const { structure } = yield* ofStructure(params.workspace, params.slug, params.id)
          const data = flatData(structure, payload)
          const expectedVersion = yield* ifMatch(request.headers, undefined)
          const written = yield* writerService.update({
            workspace: params.workspace,
            id: params.id,
            input: replace ? { data, replace, expectedVersion } : { data, expectedVersion },
            writer
          })
          return respond(200, yield* recordA(structure, written.row, principal, false))
        }).pipe(underBody)
      )

    const getOne = (workspace: string, id: string, q: Record<string, string | undefined>) =>
      withContext(({ principal }) =>
        Effect.gen(function* () {
          const version = yield* numberParam("version", q.version)
          const { row, structure, ...current } =
            version !== undefined
              ? yield* records.getVersion(workspace, id, version)
              : yield* records.get(workspace, id, {
                  includeDeleted: (yield* flagParam("includeDeleted", q.includeDeleted)) || (yield* flagParam("all", q.all))
                })
          const data = yield* shown(structure, row.data, principal, yield* flagParam("reveal", q.reveal))
          const expand = csvParam(q.expand)
          if (expand.length > 0) yield* query.expand(structure, [{ id: row.id, data }], expand)
          const extra: Record<string, unknown> = "restoredFrom" in current ? { restoredFrom: current.restoredFrom } : {}
          if (yield* flagParam("includeHistory", q.includeHistory)) extra.history = (yield* records.history(workspace, id)).versions
          if (yield* flagParam("includeChangelog", q.includeChangelog))
            extra.changelog = (yield* records.changelog(workspace, id, {})).entries
          return toRecordB(row, data, extra)
        })
      )

    /** A list route's page (RecordViews.listPage) with the request's parameters, bracket filters included. */
    const list = (route: ListRoute, workspace: string, slug: string | undefined, q: ListQuery) =>
      withContext(({ principal }) => Effect.flatMap(queryPairs, (pairs) => listPage(route, workspace, slug, q, pairs, principal)))

    // ------------------------------------------------------------------ bulk

    /**
     * The answer of a bulk request some item of which was written: 201 (create) / 200, `success` false and `errors`
     * naming the items that failed (the statuses of the spec have no 207).
     */
    const bulkAnswer = <A>(outcome: BulkOutcome<A>, okStatus: number, count: string, list: string, shownItems: ReadonlyArray<unknown>) =>
      respond(okStatus, {
        success: outcome.failures.length === 0,
        [count]: outcome.done.length,
        failed: outcome.failures.length,
        [list]: shownItems,
        errors: outcome.failures.map(bulkError)
      })

    const bulkCreate = (
      structure: Structure,
      items: ReadonlyArray<{ readonly data: Record<string, unknown>; readonly metadata?: Record<string, unknown> | undefined }>,
      options: { skipValidation: boolean; atomic: boolean; returnRecords: boolean; gen: "A" | "B" }
    ) =>
      withContext(({ principal, writer }) =>
        Effect.gen(function* () {
          const inputs = items.map((item) => ({ data: item.data, metadata: item.metadata, skipValidation: options.skipValidation }))
          const outcome = yield* writerService.bulkCreate({
            structure,
            items: inputs,
            writer,
            options: { atomic: options.atomic, list: "records", skipValidation: options.skipValidation }
          })
          const created = options.returnRecords
            ? yield* Effect.forEach(outcome.done, (w) => shownRecord(options.gen, structure, w.row, principal, false))
            : []
          return bulkAnswer(outcome, 201, "created", "records", created)
        })
      )

    /** `structure`: a generation A batch, of the records of the structure in the path (rendered flat). */
    const bulkUpdate = (
      workspace: string,
      items: ReadonlyArray<{ readonly id: string; readonly data: Record<string, unknown>; readonly expectedVersion?: number | undefined }>,
      options: { skipValidation?: boolean | undefined; createVersions?: boolean | undefined; atomic?: boolean | undefined },
      list: string,
      structure?: Structure
    ) =>
      withContext(({ principal, writer }) =>
        Effect.gen(function* () {
          const outcome = yield* writerService.bulkUpdate({
            workspace,
            items: items.map((u) => ({
              id: u.id,
              input: {
                data: u.data,
                expectedVersion: u.expectedVersion,
                skipValidation: options.skipValidation,
                createVersion: options.createVersions
              }
            })),
            writer,
            options: { atomic: options.atomic === true, list, skipValidation: options.skipValidation, structure }
          })
          const shownAll = yield* Effect.forEach(outcome.done, (w) =>
            Effect.flatMap(structures.get(workspace, w.row.structureId), (s) =>
              shownRecord(structure !== undefined ? "A" : "B", s, w.row, principal, false)
            )
          )
          return bulkAnswer(outcome, 200, "updated", "results", shownAll)
        })
      )

    const bulkDelete = (
      workspace: string,
      ids: ReadonlyArray<string>,
      permanent: boolean,
      atomic: boolean,
      list: string,
      structure?: Structure
    ) =>
      withContext(({ writer }) =>
        Effect.map(writerService.bulkRemove({ workspace, ids, permanent, writer, options: { atomic, list, structure } }), (outcome) =>
          bulkAnswer(
            outcome,
            200,
            "deleted",
            "results",
            outcome.done.map((r) => ({ id: r.id, deletedAt: r.deletedAt }))
          )
        )
      )

    /** Ids of the live records of a structure matching a generation A `query`: `*` is every record, an empty query is refused. */
    const matching = (structure: Structure, expression: string) =>
      Effect.gen(function* () {
        const text = expression.trim()
        if (text === "") return yield* badParam("query", 'query is required ("*" matches every record)')
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
          return yield* payloadTooLarge({
            message: `The query matches more than ${MAX_BULK_ITEMS} records; narrow it`,
            code: "PAYLOAD_TOO_LARGE"
          })
        }
        return result.rows.map((r) => r.id)
      })

    return (
      handlers
        .handle("create", ({ params, query: q, payload }) =>
          withContext(({ principal, writer }) => Effect.map(answers.create(params.workspace, q, payload, principal, writer), answered))
        )
        .handle("bulkCreate", ({ params, payload }) =>
          Effect.flatMap(resolve(params.workspace, payload.structureId), (structure) =>
            bulkCreate(structure, payload.records, {
              skipValidation: payload.options?.skipValidation === true,
              atomic: payload.options?.atomic === true,
              returnRecords: payload.options?.returnRecords !== false,
              gen: "B"
            })
          )
        )
        .handle("bulkUpdate", ({ params, payload }) => bulkUpdate(params.workspace, payload.updates, payload.options ?? {}, "updates"))
        .handle("bulkDelete", ({ params, payload }) =>
          bulkDelete(params.workspace, payload.ids, payload.permanent === true, payload.atomic === true, "ids")
        )
        .handle("list", ({ params, query: q }) => Effect.map(list("B", params.workspace, undefined, q), (body) => respond(200, body)))
        .handle("upsert", ({ params, payload }) =>
          withContext(({ request, writer }) =>
            Effect.map(answers.upsert(params.workspace, params.slug, payload, writer, request.headers), answered)
          )
        )
        .handle("listBySlug", ({ params, query: q }) =>
          Effect.map(list("bySlug", params.workspace, params.slug, q), (body) => respond(200, body))
        )
        .handle("get", ({ params, query: q }) =>
          Effect.gen(function* () {
            const body: unknown = isUuid(params.id)
              ? yield* getOne(params.workspace, params.id, q)
              : yield* list("bySlug", params.workspace, params.id, q)
            return respond(200, body)
          })
        )
        .handle("update", ({ params, query: q, payload }) =>
          withContext(({ principal, request, writer }) =>
            Effect.map(answers.update(params.workspace, params.id, q, payload, principal, writer, request.headers), answered)
          )
        )
        .handle("replace", ({ params, query: q, payload }) =>
          withContext(({ principal, request, writer }) =>
            Effect.gen(function* () {
              const written = yield* writerService.update({
                workspace: params.workspace,
                id: params.id,
                input: {
                  data: payload.data,
                  metadata: payload.metadata,
                  expectedVersion: yield* ifMatch(request.headers, payload.expectedVersion),
                  replace: true,
                  reason: payload.reason
                },
                writer
              })
              const structure = yield* structures.get(params.workspace, written.row.structureId)
              return respond(
                200,
                yield* recordB(structure, written.row, principal, yield* flagParam("reveal", q.reveal), {
                  previousVersion: written.previousVersion
                })
              )
            })
          )
        )
        .handle("delete", ({ params, query: q }) =>
          withContext(({ writer }) =>
            Effect.gen(function* () {
              const r = yield* writerService.remove({
                workspace: params.workspace,
                id: params.id,
                permanent: yield* flagParam("permanent", q.permanent),
                writer,
                reason: q.reason
              })
              return respond(200, { success: true, id: r.id, deletedAt: r.deletedAt })
            })
          )
        )
        .handle("history", ({ params }) =>
          withContext(() => Effect.map(records.history(params.workspace, params.id), ({ versions }) => respond(200, { versions })))
        )
        .handle("changelog", ({ params, query: q }) =>
          withContext(() =>
            Effect.gen(function* () {
              const limit = yield* intParam("limit", q.limit, 100, 1, 1000)
              const { entries } = yield* records.changelog(params.workspace, params.id, {
                limit,
                ...(q.startDate ? { startDate: q.startDate } : {}),
                ...(q.endDate ? { endDate: q.endDate } : {})
              })
              return respond(200, { entries })
            })
          )
        )
        .handle("restore", ({ params, payload }) =>
          withContext(({ principal, writer }) =>
            Effect.gen(function* () {
              const written = yield* writerService.restore({
                workspace: params.workspace,
                id: params.id,
                version: payload?.version,
                reason: payload?.reason,
                writer
              })
              const structure = yield* structures.get(params.workspace, written.row.structureId)
              const data = yield* shown(structure, written.row.data, principal, false)
              return respond(200, { id: written.row.id, version: written.row.version, restoredFrom: written.restoredFrom ?? null, data })
            })
          )
        )
        .handle("revert", ({ params, payload }) =>
          withContext(({ principal, writer }) =>
            Effect.gen(function* () {
              const written = yield* writerService.revert({ workspace: params.workspace, id: params.id, reason: payload?.reason, writer })
              const structure = yield* structures.get(params.workspace, written.row.structureId)
              return respond(
                200,
                yield* recordB(structure, written.row, principal, false, {
                  previousVersion: written.previousVersion,
                  restoredFrom: written.restoredFrom
                })
              )
            })
          )
        )
        // ---------------------------------------------------------------- generation A
        .handle("createA", ({ params, query: q, payload }) =>
          withContext(({ principal, writer }) =>
            Effect.gen(function* () {
              const structure = yield* resolve(params.workspace, params.slug)
              const { row } = yield* writerService.create({
                structure,
                input: {
                  data: flatData(structure, payload),
                  ttlSeconds: yield* numberParam("ttlSeconds", q.ttlSeconds),
                  expiresAt: q.expiresAt
                },
                writer
              })
              return respond(201, yield* recordA(structure, row, principal, false))
            }).pipe(underBody)
          )
        )
        .handle("bulkCreateA", ({ params, payload }) =>
          Effect.flatMap(resolve(params.workspace, params.slug), (structure) =>
            bulkCreate(
              structure,
              payload.records.map((data) => ({ data: flatData(structure, data) })),
              {
                skipValidation: false,
                atomic: payload.atomic === true,
                returnRecords: true,
                gen: "A"
              }
            )
          ).pipe(underItems)
        )
        .handle("bulkUpdateA", ({ params, payload }) =>
          withContext(() =>
            Effect.gen(function* () {
              const structure = yield* resolve(params.workspace, params.slug)
              const ids = yield* matching(structure, payload.query)
              const data = flatData(structure, payload.updates)
              return yield* bulkUpdate(
                params.workspace,
                ids.map((id) => ({ id, data })),
                { atomic: payload.atomic },
                "records",
                structure
              )
            }).pipe(underUpdates)
          )
        )
        .handle("bulkDeleteA", ({ params, payload }) =>
          withContext(() =>
            Effect.gen(function* () {
              const structure = yield* resolve(params.workspace, params.slug)
              const ids = yield* matching(structure, payload.query)
              return yield* bulkDelete(params.workspace, ids, payload.permanent === true, payload.atomic === true, "records", structure)
            })
          )
        )
        .handle("listA", ({ params, query: q }) => Effect.map(list("A", params.workspace, params.slug, q), (body) => respond(200, body)))
        .handle("getA", ({ params, query: q }) =>
          withContext(({ principal }) =>
            Effect.gen(function* () {
              const { structure, row } = yield* ofStructure(params.workspace, params.slug, params.id)
              const flat = yield* recordA(structure, row, principal, yield* flagParam("reveal", q.reveal))
              const populate = csvParam(q.populate)
              if (populate.length > 0) yield* query.populate(structure, [flat], populate)
              return respond(200, flat)
            })
          )
        )
        .handle("updateA", ({ params, payload }) => writeA(params, payload, false))
        .handle("replaceA", ({ params, payload }) => writeA(params, payload, true))
        .handle("deleteA", ({ params, query: q }) =>
          withContext(({ writer }) =>
            Effect.gen(function* () {
              const permanent = yield* flagParam("permanent", q.permanent)
              yield* ofStructure(params.workspace, params.slug, params.id)
              const r = yield* writerService.remove({ workspace: params.workspace, id: params.id, permanent, writer, reason: q.reason })
              return respond(200, { success: true, id: r.id, deletedAt: r.deletedAt })
            })
          )
        )
        .handle("historyA", ({ params }) =>
          withContext(() =>
            Effect.gen(function* () {
              yield* ofStructure(params.workspace, params.slug, params.id)
              const { versions } = yield* records.history(params.workspace, params.id)
              return respond(200, {
                history: versions.map((v: any) => ({
                  version: v.version,
                  changes: v.changes,
                  changedBy: v.updatedBy,
                  changedAt: v.updatedAt
                }))
              })
            })
          )
        )
    )
  })
)

export type { RecordError }
