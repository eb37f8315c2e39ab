// GROUP BY and aggregates, their values returned as jsonb.
import type { Result } from "effect"
import * as Ast from "./Ast.ts"
import {
  type CompileContext,
  type Fragment,
  fail,
  jsonPath,
  lit,
  type ResolvedField,
  resolve,
  run,
  type Sql,
  scalarType,
  textExpr,
  typedExpr
} from "./CompileFields.ts"
import { ASC, DESC } from "./CompileOrder.ts"
import type { QueryFieldError } from "./QueryErrors.ts"

export interface AggregateSpec {
  readonly groupBy: ReadonlyArray<Ast.FieldRef>
  /** aggregates, and optionally group fields (which then take their alias as result key) */
  readonly select: ReadonlyArray<Ast.SelectItem>
  readonly orderBy?: ReadonlyArray<Ast.SortKey> | undefined
}

export interface CompiledAggregate {
  /** the SELECT list: `to_jsonb(...) AS g0, ..., to_jsonb(count(*)) AS a0, ...` */
  readonly select: Fragment
  /** `GROUP BY 1, 2 ORDER BY ...`, or empty */
  readonly clauses: Fragment
  /** turns a result row (`g0`, `a0`, ...) into the flat result object keyed by group fields and aliases */
  readonly decode: (row: Readonly<Record<string, unknown>>) => Record<string, unknown>
}

const sameField = (a: ResolvedField, b: ResolvedField): boolean =>
  a.kind === b.kind && a.column === b.column && a.path.length === b.path.length && a.path.every((p, i) => p === b.path[i])

// JSON null and a missing key form one group, the SQL NULL one (sorted last like every other null)
const groupExpr = (sql: Sql, f: ResolvedField): Fragment =>
  f.kind === "data" ? sql`NULLIF(${jsonPath(sql, f.path)}, 'null'::jsonb)` : sql`to_jsonb(${typedExpr(sql, f)})`

const numericExpr = (sql: Sql, f: ResolvedField, fn: string): Fragment => {
  if (f.kind === "data" && f.asText) {
    // schemaless: only JSON numbers take part
    const j = jsonPath(sql, f.path)
    return sql`(CASE WHEN jsonb_typeof(${j}) = 'number' THEN (${jsonPath(sql, f.path)})::numeric END)`
  }
  if (f.type !== "numeric") return fail(f.label, `${fn.toUpperCase()} needs a number field; '${f.label}' is not one`)
  return typedExpr(sql, f)
}

const aggregateExpr = (sql: Sql, item: Extract<Ast.SelectItem, { _tag: "Aggregate" }>, ctx: CompileContext) => {
  if (item.field === undefined) {
    if (item.fn !== "count") return fail(item.alias, `${item.fn.toUpperCase()} needs a field`)
    return sql`to_jsonb(count(*))`
  }
  const f = resolve(item.field, ctx)
  switch (item.fn) {
    case "count":
      return sql`to_jsonb(count(${textExpr(sql, f)}))`
    case "sum":
      return sql`to_jsonb(sum(${numericExpr(sql, f, "sum")}))`
    case "avg":
      return sql`to_jsonb(avg(${numericExpr(sql, f, "avg")}))`
    case "min":
    case "max": {
      const type = scalarType(f)
      const e = typedExpr(sql, f)
      if (type === "boolean") return item.fn === "min" ? sql`to_jsonb(bool_and(${e}))` : sql`to_jsonb(bool_or(${e}))`
      const value = type === "uuid" ? sql`${e}::text` : e
      return item.fn === "min" ? sql`to_jsonb(min(${value}))` : sql`to_jsonb(max(${value}))`
    }
  }
}

/** Fields one GROUP BY may name, and fields and aggregates one query may select. */
export const MAX_GROUP_FIELDS = 32
export const MAX_SELECT_ITEMS = 256

/**
 * Compiles GROUP BY + aggregates. Compose as
 * `SELECT ${c.select} FROM records r WHERE ${scope} AND ${where} ${c.clauses}` and map rows with `c.decode`.
 * Result values are jsonb, so numbers, strings and timestamps come back the same from both drivers.
 */
export const compileAggregate = (sql: Sql, spec: AggregateSpec, ctx: CompileContext): Result.Result<CompiledAggregate, QueryFieldError> =>
  run(() => {
    if (spec.groupBy.length > MAX_GROUP_FIELDS) {
      return fail("", `GROUP BY may name at most ${MAX_GROUP_FIELDS} fields, got ${spec.groupBy.length}`)
    }
    if (spec.select.length > MAX_SELECT_ITEMS) {
      return fail("", `A query may select at most ${MAX_SELECT_ITEMS} fields and aggregates, got ${spec.select.length}`)
    }
    const groups = spec.groupBy.map((g) => ({ ref: g, field: resolve(g, ctx), key: Ast.fieldLabel(g) }))
    const columns: Array<Fragment> = []
    const keys: Array<readonly [string, string]> = []
    const taken = new Set<string>()
    const take = (key: string, column: string) => {
      if (taken.has(key)) return fail(key, `Duplicate result name '${key}'`)
      taken.add(key)
      keys.push([column, key])
    }
    const groupKeys = groups.map((g) => g.key)
    for (const item of spec.select) {
      if (item._tag !== "SelectField") continue
      const f = resolve(item.field, ctx)
      const index = groups.findIndex((g) => sameField(g.field, f))
      if (index < 0) return fail(f.label, `Field '${f.label}' must appear in GROUP BY`)
      groupKeys[index] = item.alias
    }
    groups.forEach((g, i) => {
      columns.push(sql`${groupExpr(sql, g.field)} AS ${lit(`g${i}`)}`)
      take(groupKeys[i]!, `g${i}`)
    })
    const aggregates = spec.select.filter((s): s is Extract<Ast.SelectItem, { _tag: "Aggregate" }> => s._tag === "Aggregate")
    aggregates.forEach((a, i) => {
      columns.push(sql`${aggregateExpr(sql, a, ctx)} AS ${lit(`a${i}`)}`)
      take(a.alias, `a${i}`)
    })
    if (columns.length === 0) return fail("select", "Nothing to compute: name a GROUP BY field or an aggregate")
    const order = (spec.orderBy ?? []).map((k) => {
      const bare = k.field._tag === "Name" && k.field.path.length === 1 ? k.field.path[0] : undefined
      const alias = bare === undefined ? -1 : aggregates.findIndex((a) => a.alias === bare)
      let column: string
      if (alias >= 0) {
        column = `a${alias}`
      } else {
        const label = Ast.fieldLabel(k.field)
        const byKey = groupKeys.indexOf(label)
        const index = byKey >= 0 ? byKey : groups.findIndex((g) => sameField(g.field, resolve(k.field, ctx)))
        if (index < 0) return fail(label, `ORDER BY '${label}' must name a GROUP BY field or an aggregate alias`)
        column = `g${index}`
      }
      return sql`${lit(column)} ${k.direction === "asc" ? ASC : DESC}`
    })
    const groupBy = groups.length > 0 ? lit(`GROUP BY ${groups.map((_, i) => i + 1).join(", ")}`) : lit("")
    const orderBy = order.length > 0 ? sql`ORDER BY ${sql.csv(order)}` : lit("")
    const decode = (row: Readonly<Record<string, unknown>>) =>
      Object.fromEntries(keys.map(([column, key]) => [key, row[column] === undefined ? null : row[column]]))
    return { select: sql.csv(columns), clauses: sql`${groupBy} ${orderBy}`, decode }
  })
