// Record reads in bulk: the three list routes compile their filter syntaxes through the one query model to one SQL
// shape (live rows of one structure, typed filter, typed sort with an id tiebreaker, offset or keyset cursor), and
// reference expansion loads each level with one query per field, never one per row.
import { badRequest, type BadRequest, type ServiceUnavailable, errorDetail } from "@troupe/api/Errors"
import type { Structure } from "@troupe/api/structures/Structure"
import { Clock, Context, Effect, Layer, Result } from "effect"
import { SqlClient } from "effect/sql"
import type * as Ast from "./Ast.ts"
import {
  type CompileContext,
  compileCursor,
  compileCursorSelect,
  compileOrderBy,
  compileWhere,
  encodeCursor,
  propertyMap
} from "./Compiler.ts"
import type { QueryFieldError, QueryParseError } from "./QueryErrors.ts"
import { QueryPool } from "./QueryPool.ts"
import { num } from "../lib/rows.ts"
import { searchesDeclared, searchLanguageOf } from "../structures/SearchSettings.ts"
import { StructureService } from "../structures/StructureService.ts"
import { applyVirtual, recordMode } from "../structures/Validator.ts"
import { fileFields, referenceFields } from "../structures/StructureFacts.ts"
import { FileLookup } from "./FileLookup.ts"
import { liveRecord, visibleRecord } from "./Live.ts"
import { decodeRecordRow, isUuid, type RecordRow, toRecordA } from "./RecordRow.ts"
import { maskData } from "../structures/SecretPaths.ts"

/** A referenced record's data as any reader sees it: secrets masked, virtual computed fields added. */
const shownOf = (structure: Structure, row: RecordRow, now: Date): Record<string, unknown> => ({
  ...applyVirtual(structure, maskData(structure, row.data), now)
})

export type QueryError = BadRequest | ServiceUnavailable

/**
 * Parse and field errors -> 400 naming the parameter (and the position for syntax errors); a field error that names
 * no field (a limit of the whole condition) names the parameter.
 */
export const queryError =
  (param: string) =>
  (e: QueryParseError | QueryFieldError): QueryError =>
    e._tag === "QueryParseError"
      ? badRequest({
          message: `Invalid ${param}: ${e.message} at position ${e.position}`,
          code: "BAD_REQUEST",
          details: [errorDetail(param, `${e.message} (position ${e.position})`)]
        })
      : badRequest({
          message: e.message,
          code: "VALIDATION_ERROR",
          details: [errorDetail(e.field || param, e.message)]
        })

export const fromResult = <A, E extends QueryParseError | QueryFieldError>(param: string, r: Result.Result<A, E>) =>
  Result.isSuccess(r) ? Effect.succeed(r.success) : Effect.fail(queryError(param)(r.failure))

export const contextOf = (structure: Structure | undefined, workspace: string): CompileContext => ({
  mode: structure ? recordMode(structure) : "schemaless",
  properties: propertyMap(structure ? (structure.properties as any) : []),
  recordSlug: structure?.recordSlug ?? "",
  workspace,
  defaultSearchField: structure?.defaultSearchField ?? undefined,
  search: structure && { language: searchLanguageOf(structure), indexed: searchesDeclared(structure) }
})

export interface ListSpec {
  readonly workspace: string
  /** undefined: every structure of the workspace (schemaless semantics) */
  readonly structure: Structure | undefined
  readonly where: Ast.Expr
  /** which parameter the filter came from, for error messages */
  readonly whereParam: string
  readonly sort: ReadonlyArray<Ast.SortKey>
  readonly limit: number
  readonly offset: number
  readonly cursor?: string | undefined
  readonly includeCount: boolean
  readonly includeDeleted: boolean
}

export interface ListResult {
  readonly rows: ReadonlyArray<RecordRow>
  readonly total: number | undefined
  readonly hasMore: boolean
  readonly nextCursor: string | null
}

/**
 * The statement of one list page (limit + 1 rows, to tell a next page) and the filter it pages (for counts): what the
 * list routes run, exported so that tests can EXPLAIN it.
 */
export const listStatements = (sql: SqlClient.SqlClient, spec: ListSpec) =>
  Effect.gen(function* () {
    const ctx = contextOf(spec.structure, spec.workspace)
    const where = yield* fromResult(spec.whereParam, compileWhere(sql, spec.where, ctx))
    const order = yield* fromResult("sort", compileOrderBy(sql, spec.sort, ctx))
    const scope = [
      spec.structure ? sql`r.structure_id = ${spec.structure.id}` : sql`r.workspace = ${spec.workspace}`,
      visibleRecord(sql, spec.includeDeleted, "r")
    ]
    if (!spec.structure)
      scope.push(sql`r.structure_id IN (SELECT id FROM structures WHERE workspace = ${spec.workspace} AND NOT is_deleted)`)
    const filtered = sql.and([...scope, where])
    const page = [filtered]
    if (spec.cursor !== undefined && spec.cursor !== "") {
      page.push(yield* fromResult("cursor", compileCursor(sql, spec.cursor, spec.sort, ctx)))
    }
    const cursorSelect = yield* fromResult("sort", compileCursorSelect(sql, spec.sort, ctx))
    const offset = spec.cursor ? 0 : spec.offset
    return {
      ctx,
      filtered,
      page: sql`SELECT r.*, ${cursorSelect} AS qcursor FROM records r
          WHERE ${sql.and(page)} ORDER BY ${order} LIMIT ${spec.limit + 1} OFFSET ${offset}`
    }
  })

/** A 400 naming one request parameter. */
export const badParam = (field: string, message: string) =>
  badRequest({ message, code: "VALIDATION_ERROR", details: [errorDetail(field, message)] })

/** A whole number parameter between `min` and `max` (the documented bounds): anything else is a 400 naming it. */
export const intParam = (name: string, raw: string | undefined, fallback: number, min: number, max: number) => {
  if (raw === undefined || raw === "") return Effect.succeed(fallback)
  if (!/^\d+$/.test(raw)) return Effect.fail(badParam(name, `${name} must be a whole number`))
  const n = Number(raw)
  if (n < min) return Effect.fail(badParam(name, `${name} must be at least ${min}`))
  if (!Number.isSafeInteger(n) || n > max) return Effect.fail(badParam(name, `${name} must be at most ${max}`))
  return Effect.succeed(n)
}

/** A boolean query parameter: `true`/`1`, `false`/`0`, absent or empty (false); anything else is a 400 naming it. */
export const flagParam = (name: string, raw: string | undefined) => {
  if (raw === undefined || raw === "" || raw === "false" || raw === "0") return Effect.succeed(false)
  if (raw === "true" || raw === "1") return Effect.succeed(true)
  return Effect.fail(badParam(name, `${name} must be true or false`))
}

export class RecordQuery extends Context.Service<
  RecordQuery,
  {
    readonly list: (spec: ListSpec) => Effect.Effect<ListResult, QueryError>
    /**
     * Adds `data._expanded.<field>` = `{id, data}` (arrays for many-to-many); dotted paths expand nested levels. A
     * `format: "file"` field expands to the file object (GET /files/{id}/metadata), null when the file is gone.
     */
    readonly expand: (
      structure: Structure,
      rows: ReadonlyArray<{ id: string; data: Record<string, unknown> }>,
      paths: ReadonlyArray<string>
    ) => Effect.Effect<void, QueryError>
    /** Replaces reference ids by the referenced records (generation A `populate`). */
    readonly populate: (
      structure: Structure,
      rows: ReadonlyArray<Record<string, unknown>>,
      fields: ReadonlyArray<string>
    ) => Effect.Effect<void, QueryError>
  }
>()("@troupe/server/records/RecordQuery") {
  static readonly layer = Layer.effect(
    RecordQuery,
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const structures = yield* StructureService
      const files = yield* FileLookup
      // pages and counts are built from callers' filters: they run on the query pool (timeout, custom plans)
      const pool = yield* QueryPool

      const list = (spec: ListSpec) =>
        Effect.gen(function* () {
          const { ctx, filtered, page } = yield* listStatements(pool.sql, spec)
          const rows = yield* pool.run(spec.whereParam, page)
          const hasMore = rows.length > spec.limit
          const shown = hasMore ? rows.slice(0, spec.limit) : rows
          let nextCursor: string | null = null
          if (hasMore && shown.length > 0) {
            const last = shown[shown.length - 1]!
            nextCursor = yield* fromResult("cursor", encodeCursor({ ...last, qcursor: parseCursorColumn(last.qcursor) }, spec.sort, ctx))
          }
          const total = spec.includeCount
            ? num((yield* pool.run(spec.whereParam, pool.sql`SELECT count(*)::int AS n FROM records r WHERE ${filtered}`))[0]!.n)
            : undefined
          return { rows: shown.map((r) => decodeRecordRow(r)), total, hasMore, nextCursor }
        })

      /** Loads live records of `target` by id, or by `targetField`. */
      const loadTargets = (target: Structure, targetField: string, keys: ReadonlyArray<string>) => {
        const wanted = [...new Set(keys)]
        if (wanted.length === 0) return Effect.succeed(new Map<string, RecordRow>())
        const query =
          targetField === "id"
            ? sql`SELECT * FROM records WHERE structure_id = ${target.id} AND ${liveRecord(sql)} AND id IN ${sql.in(wanted.filter(isUuid))}`
            : sql`SELECT * FROM records WHERE structure_id = ${target.id} AND ${liveRecord(sql)} AND data->>${targetField} IN ${sql.in(wanted)}`
        if (targetField === "id" && wanted.filter(isUuid).length === 0) return Effect.succeed(new Map<string, RecordRow>())
        return Effect.map(
          Effect.orDie(query),
          (rows) =>
            new Map(rows.map((r) => decodeRecordRow(r)).map((r) => [targetField === "id" ? r.id : String(r.data[targetField]), r] as const))
        )
      }

      const isFileField = (structure: Structure, field: string) => fileFields(structure).some((f) => f.field === field)

      /** The files (as GET /files/{id}/metadata answers them) that `values` name, by id. */
      const loadFiles = (structure: Structure, values: ReadonlyArray<unknown>) =>
        files.byIds(
          structure.workspaceSlug,
          values.filter((v): v is string => typeof v === "string")
        )

      const refOf = (structure: Structure, field: string) =>
        Effect.gen(function* () {
          const ref = referenceFields(structure).find((r) => r.field === field)
          if (ref === undefined) {
            return yield* badParam("expand", `"${field}" is not a reference field of "${structure.recordSlug}"`)
          }
          const target = yield* structures
            .getBySlug(structure.workspaceSlug, ref.target)
            .pipe(Effect.mapError(() => badParam("expand", `the target of "${field}" no longer exists`)))
          return { ref, target }
        })

      const expandLevel = (
        structure: Structure,
        rows: ReadonlyArray<{ id: string; data: Record<string, unknown> }>,
        tree: ExpandTree
      ): Effect.Effect<void, QueryError> =>
        Effect.gen(function* () {
          for (const [field, children] of tree) {
            if (isFileField(structure, field)) {
              if (children.size > 0) return yield* badParam("expand", `"${field}" holds a file: it has nothing to expand below it`)
              const found = yield* loadFiles(
                structure,
                rows.map((r) => r.data[field])
              )
              for (const r of rows) {
                const v = r.data[field]
                const bag = (r.data._expanded ?? {}) as Record<string, unknown>
                r.data._expanded = { ...bag, [field]: (typeof v === "string" && found.get(v)) || null }
              }
              continue
            }
            const { ref, target } = yield* refOf(structure, field)
            const keys = rows.flatMap((r) => {
              const v = r.data[field]
              return Array.isArray(v) ? v.filter((x): x is string => typeof x === "string") : typeof v === "string" ? [v] : []
            })
            const found = yield* loadTargets(target, ref.targetField, keys)
            const now = new Date(yield* Clock.currentTimeMillis)
            const nested: Array<{ id: string; data: Record<string, unknown> }> = []
            for (const r of rows) {
              const v = r.data[field]
              const one = (key: unknown) => {
                const t = typeof key === "string" ? found.get(key) : undefined
                if (t === undefined) return null
                const item = { id: t.id, data: shownOf(target, t, now) }
                nested.push(item)
                return item
              }
              const expanded = Array.isArray(v) ? v.map(one).filter((x) => x !== null) : one(v)
              const bag = (r.data._expanded ?? {}) as Record<string, unknown>
              r.data._expanded = { ...bag, [field]: expanded }
            }
            if (children.size > 0 && nested.length > 0) yield* expandLevel(target, nested, children)
          }
        })

      const expand = (
        structure: Structure,
        rows: ReadonlyArray<{ id: string; data: Record<string, unknown> }>,
        paths: ReadonlyArray<string>
      ) => (paths.length === 0 || rows.length === 0 ? Effect.void : expandLevel(structure, rows, toTree(paths)))

      const populate = (structure: Structure, rows: ReadonlyArray<Record<string, unknown>>, fields: ReadonlyArray<string>) =>
        Effect.gen(function* () {
          for (const field of fields) {
            if (isFileField(structure, field)) {
              const found = yield* loadFiles(
                structure,
                rows.map((r) => r[field])
              )
              for (const r of rows) {
                const v = r[field]
                if (typeof v === "string" && found.has(v)) r[field] = found.get(v)
              }
              continue
            }
            const { ref, target } = yield* refOf(structure, field)
            const keys = rows.flatMap((r) => {
              const v = r[field]
              return Array.isArray(v) ? v.filter((x): x is string => typeof x === "string") : typeof v === "string" ? [v] : []
            })
            const found = yield* loadTargets(target, ref.targetField, keys)
            const now = new Date(yield* Clock.currentTimeMillis)
            // the populated record flat, as generation A shows any record
            const flat = (t: RecordRow) => toRecordA(t, shownOf(target, t, now))
            for (const r of rows) {
              const v = r[field]
              if (Array.isArray(v)) r[field] = v.map((k) => (typeof k === "string" && found.has(k) ? flat(found.get(k)!) : k))
              else if (typeof v === "string" && found.has(v)) r[field] = flat(found.get(v)!)
            }
          }
        })

      return RecordQuery.of({ list, expand, populate })
    })
  )
}

type ExpandTree = Map<string, ExpandTree>

const toTree = (paths: ReadonlyArray<string>): ExpandTree => {
  const root: ExpandTree = new Map()
  for (const path of paths) {
    let node = root
    for (const part of path
      .split(".")
      .map((s) => s.trim())
      .filter((s) => s.length > 0)) {
      if (!node.has(part)) node.set(part, new Map())
      node = node.get(part)!
    }
  }
  return root
}

const parseCursorColumn = (v: unknown) => (typeof v === "string" ? JSON.parse(v) : v)

/** `a,b, c` -> ["a", "b", "c"] */
export const csvParam = (raw: string | undefined): Array<string> =>
  raw === undefined
    ? []
    : raw
        .split(",")
        .map((s) => s.trim())
        .filter((s) => s.length > 0)
