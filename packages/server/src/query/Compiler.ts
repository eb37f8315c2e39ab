// Compiles the query AST to Effect `sql` fragments over `records r`. Every value, and every JSON key taken from a
// field name, is a bound parameter, and every parameter is a JS string cast in SQL (`$1::text::numeric`): that is
// the one form both drivers encode the same way (sql-pg binds by the server-inferred type, PGlite serialises
// by JS type). Comparisons are typed by the structure's property types; `schemaless` compares data as text.
// Size: over 500 lines, kept whole: one compiler from the AST to SQL: fields, conditions, sorting, cursors, aggregation and search share its field resolution and parameter binding.
import type { Result } from "effect"
import { Statement } from "effect/sql"
import * as Ast from "./Ast.ts"
import { QueryFieldError } from "./QueryErrors.ts"
import { tryParse } from "../lib/tryParse.ts"
import { extendedDateTime } from "../structures/Formats.ts"

type Sql = Statement.Constructor
type Fragment = Statement.Fragment

export type Mode = "strict" | "auto-evolving" | "schemaless"

/** What the compiler needs to know of one property (nested `properties` for objects). */
export interface PropertyInfo {
  /** `string`, `number`, `boolean`, `datetime`, `array`, `object`, `reference` */
  readonly type: string
  readonly items?: { readonly type: string } | undefined
  readonly properties?: ReadonlyMap<string, PropertyInfo> | undefined
  /** `many-to-many` references hold an array of ids */
  readonly relationship?: string | undefined
  /** encrypted at rest: cannot be filtered, sorted or searched */
  readonly isSecret?: boolean | undefined
}

export interface CompileContext {
  readonly mode: Mode
  readonly properties: ReadonlyMap<string, PropertyInfo>
  /** the structure's slug: the value of the `recordSlug` column */
  readonly recordSlug: string
  /** the workspace slug: the value of the `workspaceSlug` column */
  readonly workspace: string
  /** searched when `search` names no fields; all string values otherwise */
  readonly defaultSearchField?: string | undefined
}

/** The shape of a property definition, as far as queries care. */
export interface PropertyDefinitionLike {
  readonly name: string
  readonly type: string
  readonly items?: { readonly type: string } | undefined
  readonly properties?: ReadonlyArray<PropertyDefinitionLike> | undefined
  readonly relationship?: string | undefined
  readonly isSecret?: boolean | undefined
}

/** Builds `CompileContext.properties` from a structure's property array (recursing into object properties). */
export const propertyMap = (defs: ReadonlyArray<PropertyDefinitionLike>): ReadonlyMap<string, PropertyInfo> =>
  new Map(
    defs.map((d) => [
      d.name,
      {
        type: d.type,
        items: d.items,
        properties: d.properties ? propertyMap(d.properties) : undefined,
        relationship: d.relationship,
        isSecret: d.isSecret
      }
    ])
  )

// ---------------------------------------------------------------------------------------------------------------
// Failures

class FieldFail {
  readonly field: string
  readonly message: string
  constructor(field: string, message: string) {
    this.field = field
    this.message = message
  }
}

const fail = (field: string, message: string): never => {
  throw new FieldFail(field, message)
}

const run = <A>(f: () => A): Result.Result<A, QueryFieldError> =>
  tryParse(f, (e) => (e instanceof FieldFail ? new QueryFieldError({ field: e.field, message: e.message }) : undefined))

// ---------------------------------------------------------------------------------------------------------------
// Fields

export type ScalarType = "text" | "numeric" | "boolean" | "timestamptz" | "uuid"

/** A field resolved against the context. */
export interface ResolvedField {
  readonly label: string
  readonly kind: "column" | "const" | "data"
  readonly type: ScalarType | "array" | "object"
  /** element type of an array field; `unknown` when not declared */
  readonly itemType?: ScalarType | "object" | "unknown"
  /** data path */
  readonly path: ReadonlyArray<string>
  readonly column?: Ast.ColumnName
  readonly constValue?: string
  /** compared as text: every data field in schemaless mode, and paths inside free-form objects */
  readonly asText: boolean
}

type StoredColumn = Exclude<Ast.ColumnName, "recordSlug" | "workspaceSlug">

const columnSql: Readonly<Record<StoredColumn, readonly [string, ScalarType]>> = {
  id: ["r.id", "uuid"],
  status: ["r.status", "text"],
  createdAt: ["r.created_at", "timestamptz"],
  updatedAt: ["r.updated_at", "timestamptz"],
  version: ["r.version", "numeric"],
  createdBy: ["r.created_by", "text"],
  updatedBy: ["r.updated_by", "text"]
}

const scalarOf = (type: string | undefined): ScalarType | "object" | "unknown" => {
  switch (type) {
    case "string":
    case "reference":
      return "text"
    case "number":
    case "integer":
      return "numeric"
    case "boolean":
      return "boolean"
    case "datetime":
      return "timestamptz"
    case "object":
      return "object"
    default:
      return "unknown"
  }
}

const resolveColumn = (name: Ast.ColumnName, ctx: CompileContext): ResolvedField => {
  if (name === "recordSlug" || name === "workspaceSlug") {
    return {
      label: name,
      kind: "const",
      type: "text",
      path: [],
      column: name,
      constValue: name === "recordSlug" ? ctx.recordSlug : ctx.workspace,
      asText: false
    }
  }
  return { label: name, kind: "column", type: columnSql[name][1], path: [], column: name, asText: false }
}

const prefix = (path: ReadonlyArray<string>, i: number) => path.slice(0, i + 1).join(".")

/** A schemaless structure may still declare secret properties: a path through one is refused, as in other modes. */
const refuseSecretPath = (label: string, path: ReadonlyArray<string>, ctx: CompileContext) => {
  let props: ReadonlyMap<string, PropertyInfo> | undefined = ctx.properties
  for (const key of path) {
    const prop: PropertyInfo | undefined = props?.get(key)
    if (prop === undefined) return
    if (prop.isSecret === true) fail(label, `Field '${label}' is secret and cannot be queried`)
    props = prop.properties
  }
}

const resolveData = (label: string, path: ReadonlyArray<string>, ctx: CompileContext): ResolvedField => {
  if (path.length === 0 || path.some((p) => p === "")) return fail(label, `Invalid field name '${label}'`)
  if (ctx.mode === "schemaless") {
    refuseSecretPath(label, path, ctx)
    return { label, kind: "data", type: "text", path, asText: true }
  }
  let props: ReadonlyMap<string, PropertyInfo> | undefined = ctx.properties
  let prop: PropertyInfo | undefined
  for (let i = 0; i < path.length; i++) {
    const key = path[i]!
    if (props === undefined) {
      // inside an object that declares no properties: free-form, compared as text
      return { label, kind: "data", type: "text", path, asText: true }
    }
    prop = props.get(key)
    if (prop === undefined) {
      return fail(label, i === 0 ? `Unknown field '${label}'` : `Unknown field '${label}': '${key}' is not declared`)
    }
    if (prop.isSecret === true) return fail(label, `Field '${label}' is secret and cannot be queried`)
    const last = i === path.length - 1
    if (!last) {
      if (prop.type === "object") props = prop.properties
      else if (prop.type === "array") return fail(label, `Cannot address inside array field '${prefix(path, i)}'`)
      else return fail(label, `Field '${prefix(path, i)}' is a ${prop.type} and has no sub-fields`)
    }
  }
  const p = prop!
  if (p.type === "array" || (p.type === "reference" && p.relationship === "many-to-many")) {
    const item = p.type === "array" ? scalarOf(p.items?.type) : "text"
    return { label, kind: "data", type: "array", itemType: item, path, asText: false }
  }
  const scalar = scalarOf(p.type)
  if (scalar === "object") return { label, kind: "data", type: "object", path, asText: false }
  return { label, kind: "data", type: scalar === "unknown" ? "text" : scalar, path, asText: scalar === "unknown" }
}

/** Resolves a field reference against the structure (see `Ast.FieldRef` for how bare names resolve). */
export const resolveField = (field: Ast.FieldRef, ctx: CompileContext): Result.Result<ResolvedField, QueryFieldError> =>
  run(() => resolve(field, ctx))

const columnNameSet: ReadonlySet<string> = new Set(Ast.columnNames)

const resolve = (field: Ast.FieldRef, ctx: CompileContext): ResolvedField => {
  const label = Ast.fieldLabel(field)
  switch (field._tag) {
    case "Column":
      return resolveColumn(field.name, ctx)
    case "Data":
      return resolveData(label, field.path, ctx)
    case "Name": {
      const first = field.path[0]
      if (field.path.length === 1 && first !== undefined && columnNameSet.has(first)) {
        if (Ast.hardColumns.has(first) || !ctx.properties.has(first) || ctx.mode === "schemaless") {
          return resolveColumn(first as Ast.ColumnName, ctx)
        }
      }
      return resolveData(label, field.path, ctx)
    }
  }
}

// ---------------------------------------------------------------------------------------------------------------
// SQL expressions of a field

const lit = (text: string): Fragment => Statement.fragment([Statement.literal(text)])

const TRUE = lit("TRUE")
const FALSE = lit("FALSE")

/** `(r.data -> $1::text -> $2::text)`: the jsonb value at the path. */
const jsonPath = (sql: Sql, path: ReadonlyArray<string>): Fragment => {
  let f: Fragment = lit("r.data")
  for (const key of path) f = sql`${f} -> ${key}::text`
  return sql`(${f})`
}

/** `(r.data -> $1::text ->> $2::text)`: the value at the path as text (NULL when missing or JSON null). */
const textPath = (sql: Sql, path: ReadonlyArray<string>): Fragment => {
  let f: Fragment = lit("r.data")
  path.forEach((key, i) => {
    f = i === path.length - 1 ? sql`${f} ->> ${key}::text` : sql`${f} -> ${key}::text`
  })
  return sql`(${f})`
}

const scalarType = (f: ResolvedField): ScalarType => {
  if (f.type === "array" || f.type === "object") return fail(f.label, `Field '${f.label}' is an ${f.type} field`)
  return f.type
}

/** The field as a typed scalar expression (NULL where a stored value does not have the declared type). */
const typedExpr = (sql: Sql, f: ResolvedField): Fragment => {
  if (f.kind === "const") return sql`${f.constValue!}::text`
  if (f.kind === "column") return lit(columnSql[f.column as StoredColumn][0])
  if (f.asText) return textPath(sql, f.path)
  switch (scalarType(f)) {
    case "numeric": {
      const j = jsonPath(sql, f.path)
      return sql`(CASE WHEN jsonb_typeof(${j}) = 'number' THEN (${jsonPath(sql, f.path)})::numeric END)`
    }
    case "boolean": {
      const j = jsonPath(sql, f.path)
      return sql`(CASE WHEN jsonb_typeof(${j}) = 'boolean' THEN (${jsonPath(sql, f.path)})::boolean END)`
    }
    case "timestamptz":
      // migration 0004: IMMUTABLE (UTC without an offset), so an indexed datetime property has an index on it
      return sql`troupe_datetime(${textPath(sql, f.path)})`
    default:
      return textPath(sql, f.path)
  }
}

/** The field as text, for ILIKE / LIKE / search. */
const textExpr = (sql: Sql, f: ResolvedField): Fragment => {
  if (f.kind === "const") return sql`${f.constValue!}::text`
  if (f.kind === "column") {
    const [column, type] = columnSql[f.column as StoredColumn]
    return lit(type === "text" ? column : `${column}::text`)
  }
  return textPath(sql, f.path)
}

// ---------------------------------------------------------------------------------------------------------------
// Values

const uuidPattern = /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/
const jsonNumberPattern = /^-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?$/
const datetimePattern = new RegExp(
  "^(\\d{4})-(\\d{2})-(\\d{2})" + "(?:[T ](\\d{2}):(\\d{2})(?::(\\d{2})(?:\\.\\d{1,9})?)?(?:\\s*(?:[Zz]|[+-](\\d{2})(?::?(\\d{2}))?))?)?$"
)

/** ISO 8601 date or date-time that PostgreSQL will certainly accept (real calendar day, sane offset). */
export const isDateTime = (s: string): boolean => {
  const m = datetimePattern.exec(extendedDateTime(s))
  if (m === null) return false
  const [year, month, day] = [Number(m[1]), Number(m[2]), Number(m[3])]
  if (month < 1 || month > 12 || day < 1) return false
  const leap = year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0)
  const days = [31, leap ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]
  if (day > days[month - 1]!) return false
  if (m[4] !== undefined && (Number(m[4]) > 23 || Number(m[5]) > 59 || Number(m[6] ?? 0) > 59)) return false
  if (m[7] !== undefined && (Number(m[7]) > 15 || Number(m[8] ?? 0) > 59)) return false
  return true
}

const show = (l: Ast.Literal): string => l.raw ?? (typeof l.value === "string" ? `'${l.value}'` : String(l.value))

const noNull = (l: Ast.Literal, f: ResolvedField): Exclude<Ast.Scalar, null> => {
  if (l.value === null) return fail(f.label, `Field '${f.label}' cannot be compared with null here`)
  return l.value
}

const asNumeric = (l: Ast.Literal, f: ResolvedField): string => {
  const v = noNull(l, f)
  if (typeof v === "number") return l.raw !== undefined && Ast.numberPattern.test(l.raw) ? l.raw : String(v)
  if (typeof v === "string" && Ast.numberPattern.test(v.trim())) return v.trim()
  return fail(f.label, `Field '${f.label}' is a number; ${show(l)} is not a number`)
}

const asBoolean = (l: Ast.Literal, f: ResolvedField): string => {
  const v = noNull(l, f)
  if (typeof v === "boolean") return String(v)
  if (typeof v === "string" && /^(true|false)$/i.test(v)) return v.toLowerCase()
  return fail(f.label, `Field '${f.label}' is a boolean; ${show(l)} is not true or false`)
}

const asDateTime = (l: Ast.Literal, f: ResolvedField): string => {
  const v = noNull(l, f)
  if (typeof v === "string" && isDateTime(v.trim())) return v.trim()
  return fail(f.label, `Field '${f.label}' is a datetime; ${show(l)} is not an ISO 8601 date`)
}

const asUuid = (l: Ast.Literal, f: ResolvedField): string => {
  const v = noNull(l, f)
  if (typeof v === "string" && uuidPattern.test(v)) return v
  return fail(f.label, `Field '${f.label}' is a UUID; ${show(l)} is not a UUID`)
}

const asText = (l: Ast.Literal, f: ResolvedField): string => {
  const v = noNull(l, f)
  return typeof v === "string" ? v : (l.raw ?? String(v))
}

/** A bound parameter of the field's type. */
const bind = (sql: Sql, l: Ast.Literal, type: ScalarType, f: ResolvedField): Fragment => {
  switch (type) {
    case "numeric":
      return sql`${asNumeric(l, f)}::text::numeric`
    case "boolean":
      return sql`${asBoolean(l, f)}::text::boolean`
    case "timestamptz":
      return sql`troupe_datetime(${asDateTime(l, f)}::text)`
    case "uuid":
      return sql`${asUuid(l, f)}::text::uuid`
    case "text":
      return sql`${asText(l, f)}::text`
  }
}

/** The JSON text of a value, typed for containment (`@>`). */
const jsonValue = (l: Ast.Literal, type: ScalarType | "object" | "unknown", f: ResolvedField): string => {
  switch (type) {
    case "numeric": {
      const n = asNumeric(l, f)
      if (jsonNumberPattern.test(n)) return n
      const parsed = Number(n)
      return Number.isFinite(parsed) ? String(parsed) : fail(f.label, `Number ${n} is out of range`)
    }
    case "boolean":
      return asBoolean(l, f)
    case "timestamptz":
      return JSON.stringify(asDateTime(l, f))
    case "uuid":
      return JSON.stringify(asUuid(l, f))
    case "text":
      return JSON.stringify(asText(l, f))
    case "object":
      return fail(f.label, `Field '${f.label}' holds objects; compare a nested field instead`)
    case "unknown": {
      const v = noNull(l, f)
      return JSON.stringify(v)
    }
  }
}

/** `r.data @> $1::text::jsonb` for `{path: leaf}`: the GIN index on `data` serves it. */
const containment = (sql: Sql, path: ReadonlyArray<string>, leafJson: string): Fragment => {
  const json = path.reduceRight((acc, key) => `{${JSON.stringify(key)}:${acc}}`, leafJson)
  return sql`(r.data @> ${json}::text::jsonb)`
}

/** Equality by containment for typed data scalars (exact JSON type, index-friendly). */
const usesContainment = (f: ResolvedField): boolean =>
  f.kind === "data" && !f.asText && (f.type === "text" || f.type === "numeric" || f.type === "boolean")

// ---------------------------------------------------------------------------------------------------------------
// Predicates

const paren = (sql: Sql, f: Fragment): Fragment => sql`(${f})`

const andAll = (sql: Sql, items: ReadonlyArray<Fragment>): Fragment =>
  items.length === 0 ? TRUE : items.length === 1 ? items[0]! : sql.and(items)

const orAll = (sql: Sql, items: ReadonlyArray<Fragment>): Fragment =>
  items.length === 0 ? FALSE : items.length === 1 ? items[0]! : sql.or(items)

const notOf = (sql: Sql, f: Fragment): Fragment => sql`(NOT ${f})`

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

const escapeLike = (s: string): string => s.replace(/[\\%_]/g, "\\$&")

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

/** Terms shorter than this are matched by substring only: full-text search does nothing useful with them. */
export const MIN_FULL_TEXT_LENGTH = 3

const compileSearch = (sql: Sql, e: Extract<Ast.Expr, { _tag: "Search" }>, ctx: CompileContext): Fragment => {
  const term = e.text.trim()
  if (term === "") return TRUE
  const pattern = `%${escapeLike(term)}%`
  const fullText = term.length >= MIN_FULL_TEXT_LENGTH
  const refs =
    e.fields.length > 0
      ? e.fields
      : ctx.defaultSearchField !== undefined && ctx.defaultSearchField !== ""
        ? [Ast.fieldRef(ctx.defaultSearchField)]
        : []
  if (refs.length === 0) {
    // every string value anywhere in data
    const like = sql`EXISTS (SELECT 1 FROM jsonb_path_query(r.data, 'strict $.**') AS q_s(v)
      WHERE jsonb_typeof(q_s.v) = 'string' AND (q_s.v #>> '{}') ILIKE ${pattern}::text)`
    if (!fullText) return sql`(${like})`
    const query = sql`plainto_tsquery('simple', ${term}::text)`
    return sql`(jsonb_to_tsvector('simple', r.data, '["string"]') @@ ${query} OR ${like})`
  }
  return orAll(
    sql,
    refs.map((ref) => {
      const f = resolve(ref, ctx)
      const t = textExpr(sql, f)
      const like = sql`${t} ILIKE ${pattern}::text`
      if (!fullText) return sql`(${like})`
      const query = sql`plainto_tsquery('simple', ${term}::text)`
      return sql`(to_tsvector('simple', coalesce(${textExpr(sql, f)}, '')) @@ ${query} OR ${like})`
    })
  )
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

// ---------------------------------------------------------------------------------------------------------------
// Sorting and keyset pagination

interface SortTerm {
  readonly label: string
  readonly direction: Ast.SortDirection
  readonly field: ResolvedField
  readonly type: ScalarType
}

/**
 * The sort as executed: constant columns dropped, `id` appended as the tiebreaker unless already a key. The
 * tiebreaker runs in the direction of the last key, so a sort on one indexed property is exactly the order of its
 * index `(expression, id)` read forwards or backwards: the page is read straight off the index, with no sort step.
 */
const sortTerms = (keys: ReadonlyArray<Ast.SortKey>, ctx: CompileContext): Array<SortTerm> => {
  if (keys.length > MAX_SORT_KEYS) return fail("", `A sort may have at most ${MAX_SORT_KEYS} keys, got ${keys.length}`)
  const terms: Array<SortTerm> = []
  let hasId = false
  for (const key of keys) {
    const f = resolve(key.field, ctx)
    if (f.kind === "const") continue
    if (f.type === "array" || f.type === "object") return fail(f.label, `Cannot sort by ${f.type} field '${f.label}'`)
    if (f.column === "id") hasId = true
    terms.push({ label: f.label, direction: key.direction, field: f, type: scalarType(f) })
    if (hasId) break
  }
  if (!hasId) {
    const direction = terms.length > 0 ? terms[terms.length - 1]!.direction : "asc"
    terms.push({ label: "id", direction, field: resolveColumn("id", ctx), type: "uuid" })
  }
  return terms
}

/** Keys one sort may have. */
export const MAX_SORT_KEYS = 32

// Nulls sort as the greatest value in both directions, so the keyset predicate can treat them uniformly.
const ASC = lit("ASC NULLS LAST")
const DESC = lit("DESC NULLS FIRST")

/**
 * Compiles sort keys to an ORDER BY list (without the keyword), typed by property type, nulls last ascending,
 * always ending in `r.id` (in the direction of the last key) so pages are stable.
 */
export const compileOrderBy = (sql: Sql, keys: ReadonlyArray<Ast.SortKey>, ctx: CompileContext): Result.Result<Fragment, QueryFieldError> =>
  run(() => sql.csv(sortTerms(keys, ctx).map((t) => sql`${typedExpr(sql, t.field)} ${t.direction === "asc" ? ASC : DESC}`)))

const cursorText = (sql: Sql, t: SortTerm): Fragment => {
  const e = typedExpr(sql, t.field)
  switch (t.type) {
    case "text":
      return e
    case "timestamptz":
      return sql`(to_jsonb(${e}) #>> '{}')`
    default:
      return sql`(${e})::text`
  }
}

/** Name of the column `compileCursorSelect` adds; `encodeCursor` reads it from the last row. */
export const CURSOR_COLUMN = "qcursor"

/**
 * The sort-key values of a row, exactly as the database compares them, as one jsonb array. Select it beside the
 * row (`SELECT r.*, ${fragment} AS qcursor`) and pass the last row to `encodeCursor`; strip `qcursor` from output.
 */
export const compileCursorSelect = (
  sql: Sql,
  keys: ReadonlyArray<Ast.SortKey>,
  ctx: CompileContext
): Result.Result<Fragment, QueryFieldError> =>
  run(() => sql`jsonb_build_array(${sql.csv(sortTerms(keys, ctx).map((t) => cursorText(sql, t)))})`)

interface CursorPayload {
  readonly k: string
  readonly v: ReadonlyArray<string | null>
}

const signature = (terms: ReadonlyArray<SortTerm>): string => terms.map((t) => `${t.direction === "desc" ? "-" : ""}${t.label}`).join(",")

const readPath = (value: unknown, path: ReadonlyArray<string>): unknown => {
  let v = value
  for (const key of path) {
    if (typeof v !== "object" || v === null || Array.isArray(v) || !Object.hasOwn(v, key)) return undefined
    v = (v as Record<string, unknown>)[key]
  }
  return v
}

const snake = (s: string) => s.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`)

/** What the SQL expression of a term evaluates to for this row, as text (the fallback when no `qcursor`). */
const rowValue = (row: Readonly<Record<string, unknown>>, t: SortTerm): string | null => {
  const f = t.field
  let v: unknown
  if (f.kind === "column") {
    v = row[f.column!] ?? row[snake(f.column!)]
  } else {
    const data = typeof row.data === "string" ? JSON.parse(row.data) : row.data
    v = readPath(data, f.path)
    if (!f.asText) {
      if (t.type === "numeric" && typeof v !== "number") return null
      if (t.type === "boolean" && typeof v !== "boolean") return null
      if (t.type === "timestamptz" && (typeof v !== "string" || !isDateTime(v))) return null
    }
  }
  if (v === undefined || v === null) return null
  if (v instanceof Date) return v.toISOString()
  if (typeof v === "object") return JSON.stringify(v)
  return String(v)
}

/**
 * Encodes the position after `lastRow` for the given sort as an opaque base64url cursor. Exact when the row
 * carries the `qcursor` column of `compileCursorSelect`. Without it the values are read from the row (`id`,
 * `data`, columns in camel or snake case), which is exact for data fields but not for `createdAt`/`updatedAt`
 * when the row holds a JS Date: it has milliseconds, the column microseconds.
 */
export const encodeCursor = (
  lastRow: Readonly<Record<string, unknown>>,
  keys: ReadonlyArray<Ast.SortKey>,
  ctx: CompileContext
): Result.Result<string, QueryFieldError> =>
  run(() => {
    const terms = sortTerms(keys, ctx)
    const selected = lastRow[CURSOR_COLUMN]
    const values =
      Array.isArray(selected) && selected.length === terms.length
        ? selected.map((v) => (v === null || v === undefined ? null : String(v)))
        : terms.map((t) => rowValue(lastRow, t))
    const payload: CursorPayload = { k: signature(terms), v: values }
    return Buffer.from(JSON.stringify(payload), "utf8").toString("base64url")
  })

const MAX_CURSOR_LENGTH = 8192

const badCursor = (message = "Invalid cursor"): never => fail("cursor", message)

const decodeCursor = (cursor: string): CursorPayload => {
  if (cursor.length === 0 || cursor.length > MAX_CURSOR_LENGTH || !/^[A-Za-z0-9_-]+$/.test(cursor)) return badCursor()
  let parsed: unknown
  try {
    parsed = JSON.parse(Buffer.from(cursor, "base64url").toString("utf8"))
  } catch {
    return badCursor()
  }
  if (typeof parsed !== "object" || parsed === null) return badCursor()
  const { k, v } = parsed as { k?: unknown; v?: unknown }
  if (typeof k !== "string" || !Array.isArray(v) || v.some((x) => x !== null && typeof x !== "string")) {
    return badCursor()
  }
  return { k, v }
}

const cursorBind = (sql: Sql, value: string, type: ScalarType): Fragment => {
  switch (type) {
    case "numeric":
      return Ast.numberPattern.test(value) ? sql`${value}::text::numeric` : badCursor()
    case "boolean":
      return value === "true" || value === "false" ? sql`${value}::text::boolean` : badCursor()
    case "timestamptz":
      return isDateTime(value) ? sql`${value}::text::timestamptz` : badCursor()
    case "uuid":
      return uuidPattern.test(value) ? sql`${value}::text::uuid` : badCursor()
    case "text":
      return sql`${value}::text`
  }
}

/**
 * The keyset predicate "rows after the cursor" for the same sort (ORDER BY of `compileOrderBy`). A cursor that is
 * malformed, tampered with, or made for another sort fails with QueryFieldError on field `cursor`.
 */
export const compileCursor = (
  sql: Sql,
  cursor: string,
  keys: ReadonlyArray<Ast.SortKey>,
  ctx: CompileContext
): Result.Result<Fragment, QueryFieldError> =>
  run(() => {
    const terms = sortTerms(keys, ctx)
    const payload = decodeCursor(cursor)
    if (payload.k !== signature(terms)) return badCursor("The cursor was made for a different sort order")
    if (payload.v.length !== terms.length) return badCursor()
    const equal: Array<Fragment> = []
    const branches: Array<Fragment> = []
    terms.forEach((t, i) => {
      const e = typedExpr(sql, t.field)
      const v = payload.v[i]!
      let after: Fragment | undefined
      let same: Fragment
      if (v === null) {
        after = t.direction === "asc" ? undefined : sql`(${e} IS NOT NULL)`
        same = sql`(${typedExpr(sql, t.field)} IS NULL)`
      } else {
        const b = cursorBind(sql, v, t.type)
        after =
          t.direction === "desc"
            ? sql`(${e} < ${b})`
            : t.field.column === "id"
              ? sql`(${e} > ${b})`
              : sql`(${e} > ${b} OR ${typedExpr(sql, t.field)} IS NULL)`
        same = sql`(${typedExpr(sql, t.field)} = ${cursorBind(sql, v, t.type)})`
      }
      if (after !== undefined) branches.push(andAll(sql, [...equal, after]))
      equal.push(same)
    })
    // A redundant bound on the first key, so an index on it can start the scan at the cursor instead of filtering
    // from the first row: after a non-null value nothing smaller follows in descending order (nulls came first), and
    // nothing smaller follows in ascending order on a NOT NULL column.
    const first = terms[0]!
    const v0 = payload.v[0]!
    const bound =
      v0 === null
        ? undefined
        : first.direction === "desc"
          ? sql`(${typedExpr(sql, first.field)} <= ${cursorBind(sql, v0, first.type)})`
          : first.field.kind === "column" && notNullColumns.has(first.field.column!)
            ? sql`(${typedExpr(sql, first.field)} >= ${cursorBind(sql, v0, first.type)})`
            : undefined
    const after = orAll(sql, branches)
    return paren(sql, bound === undefined ? after : sql`${after} AND ${bound}`)
  })

const notNullColumns: ReadonlySet<Ast.ColumnName> = new Set(["id", "createdAt", "updatedAt", "version", "status"])

// ---------------------------------------------------------------------------------------------------------------
// Aggregation

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

/**
 * Compiles GROUP BY + aggregates. Compose as
 * `SELECT ${c.select} FROM records r WHERE ${scope} AND ${where} ${c.clauses}` and map rows with `c.decode`.
 * Result values are jsonb, so numbers, strings and timestamps come back the same from both drivers.
 */
/** Fields one GROUP BY may name, and fields and aggregates one query may select. */
export const MAX_GROUP_FIELDS = 32
export const MAX_SELECT_ITEMS = 256

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
