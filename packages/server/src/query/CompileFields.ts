// The query compiler's ground: what it knows of a structure (`CompileContext`), how a field name resolves against
// it (`resolveField`), and the SQL expression of a resolved field. Every value, and every JSON key taken from a field
// name, is a bound parameter cast in SQL (`$1::text::numeric`): the one form both drivers encode the same way (sql-pg
// binds by the server-inferred type, PGlite serialises by JS type). The other phases (`CompileWhere`, `CompileOrder`,
// `CompileAggregate`) build on it; `Compiler.ts` is their entry.
import type { Result } from "effect"
import { Statement } from "effect/sql"
import * as Ast from "./Ast.ts"
import { QueryFieldError } from "./QueryErrors.ts"
import { tryParse } from "../lib/tryParse.ts"

export type Sql = Statement.Constructor
export type Fragment = Statement.Fragment

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
  /** the structure's search language, and whether `search` without fields reads its index (it names its fields) */
  readonly search?: { readonly language: string; readonly indexed: boolean } | undefined
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

export const fail = (field: string, message: string): never => {
  throw new FieldFail(field, message)
}

export const run = <A>(f: () => A): Result.Result<A, QueryFieldError> =>
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

export const resolveColumn = (name: Ast.ColumnName, ctx: CompileContext): ResolvedField => {
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

export const resolve = (field: Ast.FieldRef, ctx: CompileContext): ResolvedField => {
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

export const lit = (text: string): Fragment => Statement.fragment([Statement.literal(text)])

export const TRUE = lit("TRUE")
export const FALSE = lit("FALSE")

/** `(r.data -> $1::text -> $2::text)`: the jsonb value at the path. */
export const jsonPath = (sql: Sql, path: ReadonlyArray<string>): Fragment => {
  let f: Fragment = lit("r.data")
  for (const key of path) f = sql`${f} -> ${key}::text`
  return sql`(${f})`
}

/** `(r.data -> $1::text ->> $2::text)`: the value at the path as text (NULL when missing or JSON null). */
export const textPath = (sql: Sql, path: ReadonlyArray<string>): Fragment => {
  let f: Fragment = lit("r.data")
  path.forEach((key, i) => {
    f = i === path.length - 1 ? sql`${f} ->> ${key}::text` : sql`${f} -> ${key}::text`
  })
  return sql`(${f})`
}

export const scalarType = (f: ResolvedField): ScalarType => {
  if (f.type === "array" || f.type === "object") return fail(f.label, `Field '${f.label}' is an ${f.type} field`)
  return f.type
}

/** The field as a typed scalar expression (NULL where a stored value does not have the declared type). */
export const typedExpr = (sql: Sql, f: ResolvedField): Fragment => {
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
export const textExpr = (sql: Sql, f: ResolvedField): Fragment => {
  if (f.kind === "const") return sql`${f.constValue!}::text`
  if (f.kind === "column") {
    const [column, type] = columnSql[f.column as StoredColumn]
    return lit(type === "text" ? column : `${column}::text`)
  }
  return textPath(sql, f.path)
}

// ---------------------------------------------------------------------------------------------------------------
// Combinators

export const paren = (sql: Sql, f: Fragment): Fragment => sql`(${f})`

export const andAll = (sql: Sql, items: ReadonlyArray<Fragment>): Fragment =>
  items.length === 0 ? TRUE : items.length === 1 ? items[0]! : sql.and(items)

export const orAll = (sql: Sql, items: ReadonlyArray<Fragment>): Fragment =>
  items.length === 0 ? FALSE : items.length === 1 ? items[0]! : sql.or(items)

export const notOf = (sql: Sql, f: Fragment): Fragment => sql`(NOT ${f})`
