// The query language (`POST /query`) and aggregation (`POST /records/{slug}/aggregate`) over the one query core:
// parse, resolve the structure, compile to one parameterised statement scoped to the structure's live records, run
// it under the statement timeout, and shape the rows (generation B records with secrets masked, or flat group
// rows). The SQL shape of a page is the one the record lists use, so the per-property indexes serve both.
//
// The statements run on the query pool (QueryPool.ts: statement timeout, custom plans).
import { badRequest, type BadRequest, type NotFound, type ServiceUnavailable, errorDetail } from "@troupe/api/Errors"
import type { AggregateRequest } from "@troupe/api/query/QueryApi"
import type { Structure } from "@troupe/api/structures/Structure"
import { Clock, Context, Effect, Layer, Result } from "effect"
import type { SqlError, Statement } from "effect/sql"
import { spanMethods } from "../platform/Tracing.ts"
import { visibleRecord } from "./Live.ts"
import { decodeRecordRow, toRecordB } from "./RecordRow.ts"
import { maskData } from "../structures/SecretPaths.ts"
import { contextOf, fromResult, RecordQuery } from "./RecordQuery.ts"
import { StructureService } from "../structures/StructureService.ts"
import { applyVirtual } from "../structures/Validator.ts"
import { referenceFields } from "../structures/StructureFacts.ts"
import * as Ast from "./Ast.ts"
import {
  type CompileContext,
  compileAggregate,
  compileOrderBy,
  compileWhere,
  MAX_GROUP_FIELDS,
  MAX_SELECT_ITEMS,
  type PropertyInfo,
  resolveField
} from "./Compiler.ts"
import { parseQueryLanguage } from "./QueryLanguageParser.ts"
import { parseAggregateRequest } from "./FilterObject.ts"
import type { QueryFieldError } from "./QueryErrors.ts"
import { QueryPool } from "./QueryPool.ts"
import { getAt, isObject } from "../lib/JsonPath.ts"

type Sql = Statement.Constructor
type Fragment = Statement.Fragment

/** Rows a query returns when it names no LIMIT. */
export const DEFAULT_LIMIT = 100
/** The largest LIMIT a query (and the number of groups an aggregate request) may ask for. */
export const MAX_LIMIT = 1000

export type QueryFailure = BadRequest | NotFound | ServiceUnavailable

export interface QueryOptions {
  /** also match soft-deleted records */
  readonly includeDeleted?: boolean | undefined
}

// Structures are cached objects, replaced (never mutated) on change: their compile context can be kept beside them.
const contexts = new WeakMap<Structure, CompileContext>()
const contextFor = (structure: Structure, workspace: string): CompileContext => {
  let ctx = contexts.get(structure)
  if (ctx === undefined || ctx.workspace !== workspace) {
    ctx = contextOf(structure, workspace)
    contexts.set(structure, ctx)
  }
  return ctx
}

const invalid = (field: string, message: string): BadRequest =>
  badRequest({ message, code: "VALIDATION_ERROR", details: [errorDetail(field, message)] })

/** Live rows of one structure: the predicate the partial indexes of QueryIndexes.ts are defined with. */
export const scopeOf = (sql: Sql, structureId: string, includeDeleted: boolean): Fragment => {
  return sql.and([sql`r.structure_id = ${structureId}`, visibleRecord(sql, includeDeleted, "r")])
}

export interface PageSpec {
  readonly structureId: string
  readonly where: Ast.Expr
  readonly sort: ReadonlyArray<Ast.SortKey>
  readonly limit: number
  readonly offset: number
  readonly includeDeleted: boolean
}

/** The statement of one page of records: what `POST /query` runs, exported so tests can EXPLAIN it. */
export const pageStatement = (sql: Sql, spec: PageSpec, ctx: CompileContext): Result.Result<Statement.Statement<any>, QueryFieldError> => {
  const where = compileWhere(sql, spec.where, ctx)
  if (Result.isFailure(where)) return Result.fail(where.failure)
  const order = compileOrderBy(sql, spec.sort, ctx)
  if (Result.isFailure(order)) return Result.fail(order.failure)
  return Result.succeed(
    sql`SELECT r.* FROM records r WHERE ${scopeOf(sql, spec.structureId, spec.includeDeleted)} AND ${where.success}
      ORDER BY ${order.success} LIMIT ${spec.limit} OFFSET ${spec.offset}`
  )
}

/** When a query names no ORDER BY: oldest first, as the record lists do. */
const defaultSort: ReadonlyArray<Ast.SortKey> = [{ field: Ast.column("createdAt"), direction: "asc" }]

/** SQLSTATE of a database failure, when the driver kept it. */
// Projection ---------------------------------------------------------------------------------------------------

/** The same properties with nothing secret: a projection may name a secret field (it comes back masked). */
const unsealed = (properties: ReadonlyMap<string, PropertyInfo>): ReadonlyMap<string, PropertyInfo> =>
  new Map(
    [...properties].map(([k, p]) => [
      k,
      {
        ...p,
        isSecret: false,
        properties: p.properties ? unsealed(p.properties) : undefined
      }
    ])
  )

interface Projection {
  readonly path: ReadonlyArray<string>
  /** the result key when aliased; otherwise the value keeps its place in `data` */
  readonly alias: string | undefined
}

const writePath = (target: Record<string, unknown>, path: ReadonlyArray<string>, value: unknown) => {
  let node = target
  path.forEach((key, i) => {
    if (i === path.length - 1) {
      node[key] = value
    } else {
      const next = node[key]
      node = isObject(next) ? next : (node[key] = {})
    }
  })
}

const project = (data: Record<string, unknown>, projections: ReadonlyArray<Projection>): Record<string, unknown> => {
  const out: Record<string, unknown> = {}
  for (const p of projections) {
    const value = getAt(data, p.path)
    if (value === undefined) continue
    if (p.alias !== undefined) out[p.alias] = value
    else writePath(out, p.path, value)
  }
  if (data._expanded !== undefined) out._expanded = data._expanded
  return out
}

// -------------------------------------------------------------------------------------------------------------

export class QueryService extends Context.Service<
  QueryService,
  {
    /** Runs a query-language statement (README "Query language"); results are records or flat group rows. */
    readonly query: (
      workspace: string,
      text: string,
      parameters: Readonly<Record<string, unknown>>,
      options?: QueryOptions
    ) => Effect.Effect<ReadonlyArray<unknown>, QueryFailure>
    /** `POST /records/{slug}/aggregate`: flat rows keyed by the group fields (as written) and operation names. */
    readonly aggregate: (
      workspace: string,
      slug: string,
      body: AggregateRequest
    ) => Effect.Effect<ReadonlyArray<Record<string, unknown>>, QueryFailure>
  }
>()("@troupe/server/query/QueryService") {
  static readonly layerNoDeps = Layer.effect(
    QueryService,
    Effect.gen(function* () {
      const structures = yield* StructureService
      const records = yield* RecordQuery
      const pool = yield* QueryPool
      const sql = pool.sql
      const timed = <A>(effect: Effect.Effect<A, SqlError.SqlError>) => pool.run("query", effect)

      /** `FROM` names a structure by slug (or id), else by name (exact, then case-insensitive). */
      const resolveFrom = (workspace: string, from: string) =>
        structures.resolve(workspace, from).pipe(
          Effect.catch((notFound) =>
            Effect.flatMap(structures.all(workspace), (all) => {
              const found = all.find((s) => s.name === from) ?? all.find((s) => s.name.toLowerCase() === from.toLowerCase())
              return found ? Effect.succeed(found) : Effect.fail(notFound)
            })
          )
        )

      const projectionsOf = (select: ReadonlyArray<Ast.SelectItem>, ctx: CompileContext) =>
        Effect.gen(function* () {
          const open = { ...ctx, properties: unsealed(ctx.properties) }
          const projections: Array<Projection> = []
          for (const item of select) {
            if (item._tag !== "SelectField") continue
            const f = yield* fromResult("query", resolveField(item.field, open))
            // columns are always on the record itself
            if (f.kind !== "data") continue
            const explicit = item.alias !== Ast.fieldLabel(item.field)
            projections.push({ path: f.path, alias: explicit ? item.alias : undefined })
          }
          return projections
        })

      /** `INCLUDE ref FROM S WHERE cond`: keep only the embedded records that match `cond`. */
      const filterIncluded = (
        workspace: string,
        structure: Structure,
        include: Ast.Include,
        rows: ReadonlyArray<{ data: Record<string, unknown> }>
      ) =>
        Effect.gen(function* () {
          if (include.from === undefined) return
          const ref = referenceFields(structure).find((r) => r.field === include.field)
          if (ref === undefined || include.field.includes(".")) {
            return yield* invalid("query", `INCLUDE ... FROM needs a top-level reference field; '${include.field}' is not one`)
          }
          const target = yield* structures
            .getBySlug(workspace, ref.target)
            .pipe(Effect.mapError(() => invalid("query", `The target of '${include.field}' no longer exists`)))
          if (include.from !== target.recordSlug && include.from !== target.name && include.from !== target.id) {
            return yield* invalid(
              "query",
              `INCLUDE ${include.field} FROM ${include.from}: '${include.field}' references '${target.recordSlug}'`
            )
          }
          const embedded = (row: { data: Record<string, unknown> }) => {
            const bag = row.data._expanded as Record<string, unknown> | undefined
            const v = bag?.[include.field]
            return (Array.isArray(v) ? v : v === null || v === undefined ? [] : [v]) as Array<{ id: string }>
          }
          const ids = [...new Set(rows.flatMap((r) => embedded(r).map((e) => e.id)))]
          if (ids.length === 0 || include.where === undefined) return
          const ctx = contextFor(target, workspace)
          const where = yield* fromResult("query", compileWhere(sql, include.where, ctx))
          const matched = yield* timed(
            sql`SELECT r.id FROM records r WHERE ${scopeOf(sql, target.id, false)} AND r.id IN ${sql.in(ids)}
              AND ${where}`
          )
          const keep = new Set(matched.map((m) => String(m.id)))
          for (const row of rows) {
            const bag = row.data._expanded as Record<string, unknown>
            const v = bag[include.field]
            bag[include.field] = Array.isArray(v)
              ? v.filter((e: { id: string }) => keep.has(e.id))
              : v !== null && keep.has((v as { id: string }).id)
                ? v
                : null
          }
        })

      const checkLimit = (n: number | undefined) =>
        n !== undefined && n > MAX_LIMIT
          ? Effect.fail(invalid("query", `LIMIT must be at most ${MAX_LIMIT}`))
          : Effect.succeed(n ?? DEFAULT_LIMIT)

      const runAggregate = (
        structureId: string,
        ctx: CompileContext,
        where: Ast.Expr,
        spec: { groupBy: ReadonlyArray<Ast.FieldRef>; select: ReadonlyArray<Ast.SelectItem>; orderBy: ReadonlyArray<Ast.SortKey> },
        page: { limit: number; offset: number; includeDeleted: boolean },
        param: string
      ) =>
        Effect.gen(function* () {
          const compiled = yield* fromResult(param, compileAggregate(sql, spec, ctx))
          const condition = yield* fromResult(param, compileWhere(sql, where, ctx))
          const rows = yield* pool.run(
            param,
            sql`SELECT ${compiled.select} FROM records r WHERE ${scopeOf(sql, structureId, page.includeDeleted)}
              AND ${condition} ${compiled.clauses} LIMIT ${page.limit} OFFSET ${page.offset}`
          )
          return rows.map((row) => compiled.decode(row))
        })

      const query = (workspace: string, text: string, parameters: Readonly<Record<string, unknown>>, options: QueryOptions = {}) =>
        Effect.gen(function* () {
          const parsed = yield* fromResult("query", parseQueryLanguage(text, parameters))
          const structure = yield* resolveFrom(workspace, parsed.from)
          const ctx = contextFor(structure, workspace)
          const limit = yield* checkLimit(parsed.limit)
          const offset = parsed.offset ?? 0
          const includeDeleted = options.includeDeleted === true
          const where = parsed.where ?? Ast.all

          if (Ast.isAggregate(parsed)) {
            if (parsed.include.length > 0) return yield* invalid("query", "INCLUDE cannot be combined with GROUP BY or aggregates")
            const groupBy = parsed.groupBy ?? []
            const orderBy = parsed.orderBy.length > 0 ? parsed.orderBy : groupBy.map((field): Ast.SortKey => ({ field, direction: "asc" }))
            return yield* runAggregate(
              structure.id,
              ctx,
              where,
              { groupBy, select: parsed.select ?? [], orderBy },
              {
                limit,
                offset,
                includeDeleted
              },
              "query"
            )
          }

          const statement = yield* fromResult(
            "query",
            pageStatement(
              sql,
              {
                structureId: structure.id,
                where,
                sort: parsed.orderBy.length > 0 ? parsed.orderBy : defaultSort,
                limit,
                offset,
                includeDeleted
              },
              ctx
            )
          )
          const projections = parsed.select ? yield* projectionsOf(parsed.select, ctx) : undefined
          const rows = (yield* timed(statement)).map(decodeRecordRow)
          const now = new Date(yield* Clock.currentTimeMillis)
          const items = rows.map((row) => ({ row, data: applyVirtual(structure, maskData(structure, row.data), now) }))
          if (parsed.include.length > 0 && items.length > 0) {
            yield* records.expand(
              structure,
              items.map((i) => ({ id: i.row.id, data: i.data })),
              parsed.include.map((i) => i.field)
            )
            for (const include of parsed.include) yield* filterIncluded(workspace, structure, include, items)
          }
          return items.map((i) => toRecordB(i.row, projections ? project(i.data, projections) : i.data))
        })

      /** Aggregate request failures: 400 naming the part of the body at fault. */
      const bodyError = (e: { readonly message: string }) => {
        const field = /^(filter|groupBy|operations)\b/.exec(e.message)?.[1] ?? "body"
        return invalid(field, `Invalid aggregate request: ${e.message}`)
      }

      const aggregate = (workspace: string, slug: string, body: AggregateRequest) =>
        Effect.gen(function* () {
          const structure = yield* structures.resolve(workspace, slug)
          const request = parseAggregateRequest(body)
          if (Result.isFailure(request)) return yield* bodyError(request.failure)
          const { where, groupBy, aggregates } = request.success
          if (groupBy.length > MAX_GROUP_FIELDS) {
            return yield* invalid("groupBy", `groupBy may name at most ${MAX_GROUP_FIELDS} fields`)
          }
          if (aggregates.length > MAX_SELECT_ITEMS) {
            return yield* invalid("operations", `operations may hold at most ${MAX_SELECT_ITEMS} operations`)
          }
          const limit = body.limit ?? MAX_LIMIT
          if (limit < 1 || limit > MAX_LIMIT) return yield* invalid("limit", `limit must be between 1 and ${MAX_LIMIT}`)
          return yield* runAggregate(
            structure.id,
            contextFor(structure, workspace),
            where,
            {
              groupBy,
              select: aggregates,
              orderBy: groupBy.map((field): Ast.SortKey => ({ field, direction: "asc" }))
            },
            { limit, offset: 0, includeDeleted: body.includeDeleted === true },
            "filter"
          )
        })

      // spans only when exported: `query` is a fast route
      const spans = yield* spanMethods
      return QueryService.of(spans("QueryService", { query, aggregate }))
    })
  )

  static readonly layer = this.layerNoDeps.pipe(Layer.provide(RecordQuery.layer))
}
