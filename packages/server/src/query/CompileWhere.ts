// WHERE: a condition (`Ast.Expr`) compiled to a boolean fragment over `records r`, typed by the structure's
// property types; `schemaless` compares data as text.
import type { Result } from "effect"
import type * as Ast from "./Ast.ts"
import {
  andAll,
  type CompileContext,
  FALSE,
  type Fragment,
  fail,
  jsonPath,
  notOf,
  orAll,
  paren,
  type ResolvedField,
  resolve,
  run,
  type ScalarType,
  type Sql,
  scalarType,
  TRUE,
  textExpr,
  typedExpr
} from "./CompileFields.ts"
import { compileSearch, escapeLike } from "./CompileSearch.ts"
import { asText, bind, containment, jsonValue, usesContainment } from "./CompileValues.ts"
import type { QueryFieldError } from "./QueryErrors.ts"

const elementsText = (sql: Sql, f: ResolvedField): Fragment => {
  const j = jsonPath(sql, f.path)
  const array = sql`CASE WHEN jsonb_typeof(${j}) = 'array' THEN ${jsonPath(sql, f.path)} ELSE '[]'::jsonb END`
  return sql`jsonb_array_elements_text(${array})`
}

/** Array membership: `includes` (one value), `hasAny`, `hasAll`. */
const arrayMatch = (sql: Sql, f: ResolvedField, mode: "any" | "all", values: ReadonlyArray<Ast.Literal>): Fragment => {
  if (values.length === 0) return mode === "any" ? FALSE : TRUE
  if (f.kind !== "data") return fail(f.label, `Field '${f.label}' is not an array field`)
  if (f.type === "array" && f.itemType !== undefined) {
    const item = f.itemType
    const leaves = values.map((v) => jsonValue(v, item, f))
    if (mode === "all") return containment(sql, f.path, `[${leaves.join(",")}]`)
    return orAll(
      sql,
      leaves.map((leaf) => containment(sql, f.path, `[${leaf}]`))
    )
  }
  if (!f.asText) return fail(f.label, `Field '${f.label}' is not an array field`)
  // schemaless or free-form: compare the elements as text
  const texts = values.map((v) => asText(v, f))
  const exists = (vs: ReadonlyArray<string>) => sql`(EXISTS (SELECT 1 FROM ${elementsText(sql, f)} AS q_e(v) WHERE q_e.v IN ${sql.in(vs)}))`
  return mode === "any"
    ? exists(texts)
    : andAll(
        sql,
        texts.map((t) => exists([t]))
      )
}

const compileCompare = (sql: Sql, e: Extract<Ast.Expr, { _tag: "Compare" }>, ctx: CompileContext): Fragment => {
  const f = resolve(e.field, ctx)
  if (e.value.value === null) {
    if (e.op === "eq") return sql`(${textExpr(sql, f)} IS NULL)`
    if (e.op === "ne") return sql`(${textExpr(sql, f)} IS NOT NULL)`
    return fail(f.label, `Field '${f.label}' cannot be compared with null using ${e.op}`)
  }
  if (f.type === "array") {
    if (e.op === "eq") return arrayMatch(sql, f, "any", [e.value])
    if (e.op === "ne") return notOf(sql, arrayMatch(sql, f, "any", [e.value]))
    return fail(f.label, `Field '${f.label}' is an array; use includes, hasAny or hasAll`)
  }
  if ((e.op === "eq" || e.op === "ne") && usesContainment(f)) {
    const c = containment(sql, f.path, jsonValue(e.value, f.type as ScalarType, f))
    return e.op === "eq" ? c : notOf(sql, c)
  }
  const type = scalarType(f)
  const left = typedExpr(sql, f)
  const right = bind(sql, e.value, type, f)
  switch (e.op) {
    case "eq":
      return sql`(${left} = ${right})`
    case "ne":
      return sql`(${left} IS DISTINCT FROM ${right})`
    case "gt":
      return sql`(${left} > ${right})`
    case "gte":
      return sql`(${left} >= ${right})`
    case "lt":
      return sql`(${left} < ${right})`
    case "lte":
      return sql`(${left} <= ${right})`
  }
}

/** A two-valued `in` (never NULL), so `nin` is simply its negation. */
const compileIn = (sql: Sql, f: ResolvedField, values: ReadonlyArray<Ast.Literal>): Fragment => {
  const hasNull = values.some((v) => v.value === null)
  const rest = values.filter((v) => v.value !== null)
  const parts: Array<Fragment> = []
  if (rest.length > 0) {
    if (usesContainment(f)) {
      parts.push(...rest.map((v) => containment(sql, f.path, jsonValue(v, f.type as ScalarType, f))))
    } else {
      const type = scalarType(f)
      const binds = rest.map((v) => bind(sql, v, type, f))
      parts.push(sql`COALESCE(${typedExpr(sql, f)} IN (${sql.csv(binds)}), FALSE)`)
    }
  }
  if (hasNull) parts.push(sql`(${textExpr(sql, f)} IS NULL)`)
  return orAll(sql, parts)
}

/** Values one `in` / `nin` / `eqAny` / `eqNone` / `hasAny` / `hasAll` list may hold (each is a bound parameter). */
export const MAX_LIST_VALUES = 1000
/**
 * Size of a whole condition: its comparisons plus the values of its lists. Every value is a bound parameter (the
 * driver refuses a statement with more than 65,535), and every comparison compiles to up to ~20 statement segments,
 * which the statement builder spreads as call arguments (a RangeError past ~120,000): refused with a 400 long before.
 */
export const MAX_CONDITION_TERMS = 2000

const compileList = (sql: Sql, e: Extract<Ast.Expr, { _tag: "List" }>, ctx: CompileContext): Fragment => {
  const f = resolve(e.field, ctx)
  if (e.values.length > MAX_LIST_VALUES) {
    return fail(f.label, `A list of '${f.label}' may hold at most ${MAX_LIST_VALUES} values, got ${e.values.length}`)
  }
  const negated = e.op === "nin" || e.op === "eqNone"
  if (e.op === "hasAll") return arrayMatch(sql, f, "all", e.values)
  if (e.op === "hasAny" || f.type === "array") {
    const m = arrayMatch(sql, f, "any", e.values)
    return negated ? notOf(sql, m) : m
  }
  if (f.type === "object") return fail(f.label, `Field '${f.label}' is an object; compare a nested field instead`)
  const m = compileIn(sql, f, e.values)
  return negated ? notOf(sql, m) : m
}

const compileText = (sql: Sql, e: Extract<Ast.Expr, { _tag: "Text" }>, ctx: CompileContext): Fragment => {
  const f = resolve(e.field, ctx)
  if (f.type === "array") {
    if (e.op === "contains") return arrayMatch(sql, f, "any", [e.value])
    return fail(f.label, `Field '${f.label}' is an array; use includes, hasAny or hasAll`)
  }
  if (f.type === "object") return fail(f.label, `Field '${f.label}' is an object; compare a nested field instead`)
  const value = asText(e.value, f)
  const t = textExpr(sql, f)
  switch (e.op) {
    case "contains":
      return sql`(${t} ILIKE ${`%${escapeLike(value)}%`}::text)`
    case "startswith":
      return sql`(${t} ILIKE ${`${escapeLike(value)}%`}::text)`
    case "endswith":
      return sql`(${t} ILIKE ${`%${escapeLike(value)}`}::text)`
    case "like":
    case "ilike": {
      // PostgreSQL refuses a pattern ending in the escape character
      if (/(?:^|[^\\])(?:\\\\)*\\$/.test(value)) return fail(f.label, `Pattern for '${f.label}' ends with a lone '\\'`)
      return e.op === "like" ? sql`(${t} LIKE ${value}::text)` : sql`(${t} ILIKE ${value}::text)`
    }
  }
}

const compileExpr = (sql: Sql, e: Ast.Expr, ctx: CompileContext): Fragment => {
  switch (e._tag) {
    case "And":
      return andAll(
        sql,
        e.items.map((i) => compileExpr(sql, i, ctx))
      )
    case "Or":
      return orAll(
        sql,
        e.items.map((i) => compileExpr(sql, i, ctx))
      )
    case "Not":
      return notOf(sql, compileExpr(sql, e.expr, ctx))
    case "Compare":
      return compileCompare(sql, e, ctx)
    case "List":
      return compileList(sql, e, ctx)
    case "Between": {
      const f = resolve(e.field, ctx)
      const type = scalarType(f)
      return sql`(${typedExpr(sql, f)} BETWEEN ${bind(sql, e.low, type, f)} AND ${bind(sql, e.high, type, f)})`
    }
    case "Text":
      return compileText(sql, e, ctx)
    case "Null": {
      const f = resolve(e.field, ctx)
      return e.op === "isNull" ? sql`(${textExpr(sql, f)} IS NULL)` : sql`(${textExpr(sql, f)} IS NOT NULL)`
    }
    case "Includes":
      return arrayMatch(sql, resolve(e.field, ctx), "any", [e.value])
    case "Search":
      return compileSearch(sql, e, ctx)
  }
}

/**
 * Compiles a condition to a boolean SQL fragment over `records r` (use it as `WHERE ${scope} AND ${fragment}`).
 * Fails with QueryFieldError for an unknown field (strict and auto-evolving), a value that does not fit the field's
 * type, or an operator the field's type does not support.
 */
export const compileWhere = (sql: Sql, expr: Ast.Expr, ctx: CompileContext): Result.Result<Fragment, QueryFieldError> =>
  run(() => {
    const terms = termCount(expr)
    // no field to name: the caller names the parameter the condition came from
    if (terms > MAX_CONDITION_TERMS) {
      fail("", `A condition may hold at most ${MAX_CONDITION_TERMS} comparisons and list values, got ${terms}`)
    }
    return paren(sql, compileExpr(sql, expr, ctx))
  })

/** Comparisons plus list values of a condition (without recursion: conditions from filter objects nest). */
const termCount = (expr: Ast.Expr): number => {
  let n = 0
  const todo: Array<Ast.Expr> = [expr]
  while (todo.length > 0) {
    const e = todo.pop()!
    switch (e._tag) {
      case "And":
      case "Or":
        for (const item of e.items) todo.push(item)
        break
      case "Not":
        todo.push(e.expr)
        break
      case "List":
        n += Math.max(1, e.values.length)
        break
      case "Between":
        n += 2
        break
      case "Search":
        n += Math.max(1, e.fields.length)
        break
      default:
        n += 1
    }
  }
  return n
}
