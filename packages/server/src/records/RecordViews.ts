// What a caller sees of records, shared by the record handlers (http.ts) and the fast routes (FastRead.ts): the
// structure a route names, stored data as shown (secrets masked or revealed, virtual computed fields added), list
// pages, projection, and the whole generation B list (`GET /records`), so both paths answer it identically.
import { can, type Principal } from "@troupe/api/Authorization"
import { badRequest, notFound } from "@troupe/api/Errors"
import type { Structure } from "@troupe/api/structures/Structure"
import { Effect, Result } from "effect"
import { flag } from "../lib/rows.ts"
import * as Ast from "../query/Ast.ts"
import { parseBracketParams, parseFilterB, parseSort, reservedParams } from "../query/FilterParser.ts"
import type { StructureService } from "../structures/StructureService.ts"
import { applyVirtual } from "../structures/Validator.ts"
import { isUuid, maskData, toRecordB } from "./model.ts"
import { csvParam, fromResult, intParam, type ListSpec, queryError, type RecordQuery } from "./RecordQuery.ts"
import type { RecordService } from "./RecordService.ts"

const slugPattern = /^[a-z0-9]+(-[a-z0-9]+)*$/

/** Query names of the list routes that are not bracket filters (`field=value`, `field[op]=value`). */
export const listParams: ReadonlySet<string> = new Set([...reservedParams, "access_token", "includeDeleted", "reason"])

/**
 * The bracket filters among a list's query parameters (every name that is not one of `listParams`), ANDed; a bad
 * one is a 400 naming that parameter (an unknown operator included). Field names the structure declares are read as
 * they are (`price_min` is a field, not a bound on `price`).
 */
export const bracketFilters = (params: Iterable<readonly [string, string]>, structure: Structure | undefined) => {
  const filters = [...params].filter(([k]) => !listParams.has(k))
  if (filters.length === 0) return Effect.succeed(Ast.all)
  const knownFields = structure === undefined ? undefined : new Set(structure.properties.map((p) => p.name))
  const parsed = parseBracketParams(filters, knownFields === undefined ? undefined : { knownFields })
  if (Result.isSuccess(parsed)) return Effect.succeed(parsed.success)
  const input = parsed.failure.input
  return Effect.fail(queryError(input.slice(0, input.indexOf("=")))(parsed.failure))
}

/** The query of `GET /records` (RecordsApi ListQuery): every parameter optional, single-valued. */
export type ListQueryB = { readonly [K in
  | "structureId" | "filter" | "sort" | "limit" | "offset" | "cursor" | "includeCount" | "expand" | "includeDeleted"
  | "all" | "reveal" | "search" | "searchFields" | "fields"]?: string | undefined }

export const recordViews = (
  records: RecordService["Service"],
  query: RecordQuery["Service"],
  structures: StructureService["Service"]
) => {
  /** A live structure by id or slug; anything that is neither is simply not found. */
  const resolve = (workspace: string, idOrSlug: string) =>
    isUuid(idOrSlug) || (idOrSlug.length <= 200 && slugPattern.test(idOrSlug))
      ? structures.resolve(workspace, idOrSlug)
      : Effect.fail(notFound({ message: "Structure not found", code: "STRUCTURE_NOT_FOUND" }))

  /** What a caller sees of stored data: secrets masked (or revealed), virtual computed fields added. */
  const shown = (structure: Structure, data: Record<string, unknown>, principal: Principal, reveal: boolean) =>
    Effect.map(
      reveal && can(principal, "secrets:reveal") ? records.reveal(structure, data) : Effect.succeed(maskData(structure, data)),
      (d) => applyVirtual(structure, d, new Date())
    )

  /** A page of records as shown, with references expanded when asked. */
  const listRows = (spec: ListSpec, principal: Principal, reveal: boolean, expand: ReadonlyArray<string>) =>
    Effect.gen(function*() {
      const result = yield* query.list(spec)
      const one = spec.structure
      const now = new Date()
      // the common page (one structure, secrets masked) is shaped without an effect per row
      const items = one !== undefined && !(reveal && can(principal, "secrets:reveal"))
        ? result.rows.map((row) => ({ structure: one, row, data: applyVirtual(one, maskData(one, row.data), now) }))
        : yield* Effect.forEach(result.rows, (row) =>
          Effect.gen(function*() {
            const structure = spec.structure ?? (yield* structures.get(spec.workspace, row.structureId))
            return { structure, row, data: yield* shown(structure, row.data, principal, reveal) }
          }))
      if (expand.length > 0) {
        if (spec.structure === undefined) {
          const message = "expand needs a structureId"
          return yield* badRequest({ message, code: "VALIDATION_ERROR", details: [{ field: "expand", property: "expand", message }] })
        }
        yield* query.expand(spec.structure, items.map((i) => ({ id: i.row.id, data: i.data })), expand)
      }
      return { result, items }
    })

  /** `fields=`: only the named properties of each record's data. */
  const project = (data: Record<string, unknown>, fields: ReadonlyArray<string>) =>
    fields.length === 0 ? data : Object.fromEntries(fields.filter((f) => f in data).map((f) => [f, data[f]]))

  /**
   * The body of `GET /records` (generation B): filter and bracket filters, search, sort, limit/offset or cursor,
   * projection. `params` are every query parameter as given (the bracket filters among them).
   */
  const listB = (workspace: string, q: ListQueryB, params: Iterable<readonly [string, string]>, principal: Principal) =>
    Effect.gen(function*() {
      const structure = q.structureId ? yield* resolve(workspace, q.structureId) : undefined
      const limit = yield* intParam("limit", q.limit, 20, 1, 100)
      const offset = yield* intParam("offset", q.offset, 0, 0, Number.MAX_SAFE_INTEGER)
      const conditions: Array<Ast.Expr> = [yield* bracketFilters(params, structure)]
      if (q.filter) conditions.push(yield* fromResult("filter", parseFilterB(q.filter)))
      if (q.search) conditions.push(Ast.search(q.search, csvParam(q.searchFields).map(Ast.fieldRef)))
      const sort = yield* fromResult("sort", parseSort(q.sort ?? "createdAt"))
      const fields = csvParam(q.fields)
      const { result, items } = yield* listRows({
        workspace,
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
      return {
        results: items.map((i) => toRecordB(i.row, project(i.data, fields))),
        pagination: {
          limit,
          offset: q.cursor ? 0 : offset,
          ...(result.total !== undefined ? { total: result.total } : {}),
          hasMore: result.hasMore,
          nextCursor: result.nextCursor
        }
      }
    })

  return { resolve, shown, listRows, project, listB }
}
