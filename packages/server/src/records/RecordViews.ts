// What a caller sees of records, shared by the record handlers (http.ts), the fast routes (FastRead.ts) and the
// compute bridge: the structure a route names, stored data as shown (secrets masked or revealed, virtual computed
// fields added), and list pages. `listPage` builds the page of all three list routes (generation B `GET /records`,
// `GET /records/slug/{slug}`, generation A `GET /{slug}`) from their query parameters, so the ordinary and the fast
// routes answer identically.
import { can, type Principal } from "@troupe/api/Authorization"
import { badRequest, notFound, errorDetail } from "@troupe/api/Errors"
import type { Structure } from "@troupe/api/structures/Structure"
import { Clock, Effect, Result } from "effect"
import * as Ast from "../query/Ast.ts"
import { parseExpressionA } from "../query/ExpressionParser.ts"
import { parseBracketParams, reservedParams } from "../query/BracketParams.ts"
import { parseFilterB, parseSort } from "../query/FilterParser.ts"
import type { StructureService } from "../structures/StructureService.ts"
import { applyVirtual } from "../structures/Validator.ts"
import { isUuid, type RecordRow, toRecordA, toRecordB } from "../query/RecordRow.ts"
import { maskData } from "../structures/SecretPaths.ts"
import { csvParam, flagParam, fromResult, intParam, type ListSpec, queryError, type RecordQuery } from "../query/RecordQuery.ts"
import type { RecordService } from "./RecordService.ts"

const slugPattern = /^[a-z0-9]+(-[a-z0-9]+)*$/

/**
 * `pagination.total` of a generation B page nobody asked to count (`includeCount`): an offset listing's last page
 * tells it for free (everything before it plus what it holds); past the end, or after a cursor, it is unknown: null.
 */
const uncountedTotal = (cursor: boolean, offset: number, shown: number, hasMore: boolean): number | null =>
  cursor || hasMore || (shown === 0 && offset > 0) ? null : offset + shown

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
export type ListQueryB = {
  readonly [K in
    | "structureId"
    | "filter"
    | "sort"
    | "limit"
    | "offset"
    | "cursor"
    | "includeCount"
    | "expand"
    | "includeDeleted"
    | "all"
    | "reveal"
    | "search"
    | "searchFields"
    | "fields"]?: string | undefined
}

/** The query parameters any list route reads (each reads its own subset). */
export type ListQuery = ListQueryB & { readonly [K in "query" | "page" | "pageSize" | "populate"]?: string | undefined }

/**
 * The three list routes:
 * - `B`: `GET /records` (structureId optional; limit/offset or cursor; `results` and `pagination`);
 * - `bySlug`: `GET /records/slug/{slug}` and `GET /records/{slug}` (page/pageSize; `data` and `meta`);
 * - `A`: generation A `GET /{slug}` (limit or pageSize, page or offset; flat records, `populate`).
 */
export type ListRoute = "B" | "bySlug" | "A"

/** The defaults and parameter names of each list route. */
const routes = {
  B: { whereParam: "filter", sort: "createdAt", filters: ["filter"] },
  bySlug: { whereParam: "filters", sort: "-createdAt", filters: ["filter", "query"] },
  A: { whereParam: "query", sort: "createdAt", filters: ["query", "filter"] }
} as const

export const recordViews = (records: RecordService["Service"], query: RecordQuery["Service"], structures: StructureService["Service"]) => {
  /** A live structure by id or slug; anything that is neither is simply not found. */
  const resolve = (workspace: string, idOrSlug: string) =>
    isUuid(idOrSlug) || (idOrSlug.length <= 200 && slugPattern.test(idOrSlug))
      ? structures.resolve(workspace, idOrSlug)
      : Effect.fail(notFound({ message: "Structure not found", code: "STRUCTURE_NOT_FOUND" }))

  /** What a caller sees of stored data: secrets masked (or revealed), virtual computed fields added. */
  const shown = (structure: Structure, data: Record<string, unknown>, principal: Principal, reveal: boolean) =>
    Effect.zipWith(
      reveal && can(principal, "secrets:reveal") ? records.reveal(structure, data) : Effect.succeed(maskData(structure, data)),
      Clock.currentTimeMillis,
      (d, now) => applyVirtual(structure, d, new Date(now))
    )

  /** A page of records as shown, with references expanded when asked. */
  const listRows = (spec: ListSpec, principal: Principal, reveal: boolean, expand: ReadonlyArray<string>) =>
    Effect.gen(function* () {
      const result = yield* query.list(spec)
      const one = spec.structure
      const now = new Date(yield* Clock.currentTimeMillis)
      // the common page (one structure, secrets masked) is shaped without an effect per row
      const items =
        one !== undefined && !(reveal && can(principal, "secrets:reveal"))
          ? result.rows.map((row) => ({ structure: one, row, data: applyVirtual(one, maskData(one, row.data), now) }))
          : yield* Effect.forEach(result.rows, (row) =>
              Effect.gen(function* () {
                const structure = spec.structure ?? (yield* structures.get(spec.workspace, row.structureId))
                return { structure, row, data: yield* shown(structure, row.data, principal, reveal) }
              })
            )
      if (expand.length > 0) {
        if (spec.structure === undefined) {
          const message = "expand needs a structureId"
          return yield* badRequest({ message, code: "VALIDATION_ERROR", details: [errorDetail("expand", message)] })
        }
        yield* query.expand(
          spec.structure,
          items.map((i) => ({ id: i.row.id, data: i.data })),
          expand
        )
      }
      return { result, items }
    })

  /** `fields=`: only the named properties of each record's data. */
  const project = (data: Record<string, unknown>, fields: ReadonlyArray<string>) =>
    fields.length === 0 ? data : Object.fromEntries(fields.filter((f) => f in data).map((f) => [f, data[f]]))

  /** Page size and offset as each route names and bounds them (checked in this order). */
  const paging = (route: ListRoute, q: ListQuery) =>
    Effect.gen(function* () {
      switch (route) {
        case "B": {
          const limit = yield* intParam("limit", q.limit, 20, 1, 100)
          return { limit, offset: yield* intParam("offset", q.offset, 0, 0, Number.MAX_SAFE_INTEGER), page: 1 }
        }
        case "bySlug": {
          const page = yield* intParam("page", q.page, 1, 1, 1_000_000)
          const limit = yield* intParam(q.pageSize !== undefined ? "pageSize" : "limit", q.pageSize ?? q.limit, 50, 1, 500)
          return { limit, offset: (page - 1) * limit, page }
        }
        case "A": {
          const limit = yield* intParam(q.limit !== undefined ? "limit" : "pageSize", q.limit ?? q.pageSize, 50, 1, 500)
          const page = yield* intParam("page", q.page, 1, 1, 1_000_000)
          const offset = q.offset !== undefined ? yield* intParam("offset", q.offset, 0, 0, Number.MAX_SAFE_INTEGER) : (page - 1) * limit
          return { limit, offset, page }
        }
      }
    })

  /**
   * The body of a list route: bracket filters, filter and query expressions, search, sort, paging, projection
   * (`fields`), reference expansion (`expand`, `populate` in generation A). `slug` names the structure of the
   * `bySlug` and `A` routes; `params` are every query parameter as given (the bracket filters among them).
   */
  const listPage = (
    route: ListRoute,
    workspace: string,
    slug: string | undefined,
    q: ListQuery,
    params: Iterable<readonly [string, string]>,
    principal: Principal
  ) =>
    Effect.gen(function* () {
      const shape = routes[route]
      const idOrSlug = route === "B" ? q.structureId : slug
      const structure = idOrSlug ? yield* resolve(workspace, idOrSlug) : undefined
      const { limit, offset, page } = yield* paging(route, q)
      const conditions: Array<Ast.Expr> = [yield* bracketFilters(params, structure)]
      for (const param of shape.filters) {
        const text = q[param]
        if (text) conditions.push(yield* fromResult(param, param === "filter" ? parseFilterB(text) : parseExpressionA(text)))
      }
      if (q.search) conditions.push(Ast.search(q.search, csvParam(q.searchFields).map(Ast.fieldRef)))
      const sort = yield* fromResult("sort", parseSort(q.sort ?? shape.sort))
      const cursor = route === "B" ? q.cursor : undefined
      const all = yield* flagParam("all", q.all)
      const includeCount = route === "B" ? yield* flagParam("includeCount", q.includeCount) : true
      const includeDeleted = route === "A" ? all : (yield* flagParam("includeDeleted", q.includeDeleted)) || all
      const reveal = yield* flagParam("reveal", q.reveal)
      const { result, items } = yield* listRows(
        {
          workspace,
          structure,
          where: Ast.and(conditions),
          whereParam: shape.whereParam,
          sort,
          limit,
          offset,
          ...(route === "B" ? { cursor } : {}),
          includeCount,
          // generation A knows `all` only
          includeDeleted
        },
        principal,
        reveal,
        route === "A" ? [] : csvParam(q.expand)
      )
      if (route === "A") {
        const flat = items.map((i) => toRecordA(i.row, i.data))
        const populate = csvParam(q.populate)
        if (populate.length > 0 && structure !== undefined) yield* query.populate(structure, flat, populate)
        return { records: flat, total: result.total ?? flat.length, limit, offset }
      }
      const fields = csvParam(q.fields)
      const records = items.map((i) => toRecordB(i.row, project(i.data, fields)))
      return route === "bySlug"
        ? { data: records, meta: { total: result.total ?? 0, page, pageSize: limit } }
        : {
            results: records,
            pagination: {
              limit,
              offset: cursor ? 0 : offset,
              total: result.total ?? uncountedTotal(Boolean(cursor), offset, records.length, result.hasMore),
              hasMore: result.hasMore,
              nextCursor: result.nextCursor
            }
          }
    })

  /** The body of `GET /records` (generation B). */
  const listB = (workspace: string, q: ListQueryB, params: Iterable<readonly [string, string]>, principal: Principal) =>
    listPage("B", workspace, undefined, q, params, principal)

  /** One record as shown, in either generation. */
  const shownRecord = (
    generation: "A" | "B",
    structure: Structure,
    row: RecordRow,
    principal: Principal,
    reveal: boolean,
    extra: Record<string, unknown> = {}
  ) =>
    Effect.map(
      shown(structure, row.data, principal, reveal),
      (data): Record<string, unknown> => (generation === "A" ? toRecordA(row, data) : toRecordB(row, data, extra))
    )

  return { resolve, shown, shownRecord, listRows, project, listPage, listB }
}
