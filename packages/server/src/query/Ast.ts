// The one query model every syntax parses into (gen-B `filter`, bracket params, filter objects, gen-A `query`, the
// query language, `sort`) and the compiler reads. Plain immutable data: parsers build it, tests compare it.

/** Record columns a query may name without the `data.` prefix. */
export type ColumnName =
  | "id"
  | "recordSlug"
  | "status"
  | "workspaceSlug"
  | "createdAt"
  | "updatedAt"
  | "version"
  | "createdBy"
  | "updatedBy"

export const columnNames: ReadonlyArray<ColumnName> = [
  "id",
  "recordSlug",
  "status",
  "workspaceSlug",
  "createdAt",
  "updatedAt",
  "version",
  "createdBy",
  "updatedBy"
]

/** Columns a bare name always means, whatever the structure declares (README "Field names"). */
export const hardColumns: ReadonlySet<string> = new Set(["id", "createdAt", "updatedAt", "version"])

/**
 * A field reference.
 * - `Column`: a record column, chosen explicitly by code (never by a parser).
 * - `Data`: a `data.` path as written (`data.address.city` → `["address", "city"]`).
 * - `Name`: a bare name. Resolved by the compiler: `id`, `createdAt`, `updatedAt`, `version` are columns; `status`,
 *   `recordSlug`, `workspaceSlug`, `createdBy`, `updatedBy` are columns unless the structure declares a property of
 *   that name; anything else is a data path.
 */
export type FieldRef =
  | { readonly _tag: "Column"; readonly name: ColumnName }
  | { readonly _tag: "Data"; readonly path: ReadonlyArray<string> }
  | { readonly _tag: "Name"; readonly path: ReadonlyArray<string> }

export type Scalar = string | number | boolean | null

/**
 * A literal value. `raw` keeps the source text of an unquoted token that was read as a number, boolean or null, so
 * the compiler can type it by the property instead (`zip:01234` on a string field stays `"01234"`).
 */
export interface Literal {
  readonly value: Scalar
  readonly raw?: string
}

export type CompareOp = "eq" | "ne" | "gt" | "gte" | "lt" | "lte"
/** `contains`/`startswith`/`endswith` are case-insensitive substring tests; `like`/`ilike` take the user's pattern. */
export type TextOp = "contains" | "startswith" | "endswith" | "like" | "ilike"
/** `in`/`eqAny` and `nin`/`eqNone` are the same on scalar fields; on array fields they mean hasAny / not hasAny. */
export type ListOp = "in" | "nin" | "eqAny" | "eqNone" | "hasAny" | "hasAll"
export type NullOp = "isNull" | "isNotNull"

export type Expr =
  | { readonly _tag: "And"; readonly items: ReadonlyArray<Expr> }
  | { readonly _tag: "Or"; readonly items: ReadonlyArray<Expr> }
  | { readonly _tag: "Not"; readonly expr: Expr }
  | { readonly _tag: "Compare"; readonly op: CompareOp; readonly field: FieldRef; readonly value: Literal }
  | { readonly _tag: "List"; readonly op: ListOp; readonly field: FieldRef; readonly values: ReadonlyArray<Literal> }
  | { readonly _tag: "Between"; readonly field: FieldRef; readonly low: Literal; readonly high: Literal }
  | { readonly _tag: "Text"; readonly op: TextOp; readonly field: FieldRef; readonly value: Literal }
  | { readonly _tag: "Null"; readonly op: NullOp; readonly field: FieldRef }
  | { readonly _tag: "Includes"; readonly field: FieldRef; readonly value: Literal }
  | { readonly _tag: "Search"; readonly text: string; readonly fields: ReadonlyArray<FieldRef> }

export type SortDirection = "asc" | "desc"

export interface SortKey {
  readonly field: FieldRef
  readonly direction: SortDirection
}

export type AggregateFn = "count" | "sum" | "avg" | "min" | "max"

export type SelectItem =
  | { readonly _tag: "SelectField"; readonly field: FieldRef; readonly alias: string }
  /** `field` is undefined for `COUNT(*)`. */
  | {
      readonly _tag: "Aggregate"
      readonly fn: AggregateFn
      readonly field: FieldRef | undefined
      readonly alias: string
    }

/** `INCLUDE author` or `INCLUDE author FROM Users WHERE ...`. */
export interface Include {
  readonly field: string
  readonly from?: string
  readonly where?: Expr
}

/** A parsed query-language statement. */
export interface Query {
  readonly from: string
  readonly select?: ReadonlyArray<SelectItem>
  readonly where?: Expr
  readonly groupBy?: ReadonlyArray<FieldRef>
  readonly orderBy: ReadonlyArray<SortKey>
  readonly limit?: number
  readonly offset?: number
  readonly include: ReadonlyArray<Include>
}

// Constructors

export const column = (name: ColumnName): FieldRef => ({ _tag: "Column", name })
export const data = (...path: ReadonlyArray<string>): FieldRef => ({ _tag: "Data", path })
export const name = (...path: ReadonlyArray<string>): FieldRef => ({ _tag: "Name", path })

/** `data.a.b` → Data, anything else → Name. The text is assumed already validated by a parser. */
export const fieldRef = (text: string): FieldRef => {
  const parts = text.split(".")
  return parts[0] === "data" && parts.length > 1 ? data(...parts.slice(1)) : name(...parts)
}

/** The field as a user would write it (`data.price`, `price`, `createdAt`); used in errors and result keys. */
export const fieldLabel = (field: FieldRef): string =>
  field._tag === "Column" ? field.name : field._tag === "Data" ? `data.${field.path.join(".")}` : field.path.join(".")

export const literal = (value: Scalar, raw?: string): Literal => (raw === undefined ? { value } : { value, raw })

export const and = (items: ReadonlyArray<Expr>): Expr => {
  const flat = items.flatMap((e) => (e._tag === "And" ? e.items : [e]))
  return flat.length === 1 ? flat[0]! : { _tag: "And", items: flat }
}

export const or = (items: ReadonlyArray<Expr>): Expr => {
  const flat = items.flatMap((e) => (e._tag === "Or" ? e.items : [e]))
  return flat.length === 1 ? flat[0]! : { _tag: "Or", items: flat }
}

export const not = (expr: Expr): Expr => ({ _tag: "Not", expr })

/** `eq null` and `ne null` become null tests, so every syntax gives the same tree for them. */
export const compare = (op: CompareOp, field: FieldRef, value: Literal): Expr =>
  value.value === null && op === "eq"
    ? { _tag: "Null", op: "isNull", field }
    : value.value === null && op === "ne"
      ? { _tag: "Null", op: "isNotNull", field }
      : { _tag: "Compare", op, field, value }

export const list = (op: ListOp, field: FieldRef, values: ReadonlyArray<Literal>): Expr => ({
  _tag: "List",
  op,
  field,
  values
})

export const between = (field: FieldRef, low: Literal, high: Literal): Expr => ({ _tag: "Between", field, low, high })

export const text = (op: TextOp, field: FieldRef, value: Literal): Expr => ({ _tag: "Text", op, field, value })

export const isNull = (field: FieldRef): Expr => ({ _tag: "Null", op: "isNull", field })

export const isNotNull = (field: FieldRef): Expr => ({ _tag: "Null", op: "isNotNull", field })

export const includes = (field: FieldRef, value: Literal): Expr => ({ _tag: "Includes", field, value })

export const search = (text: string, fields: ReadonlyArray<FieldRef>): Expr => ({ _tag: "Search", text, fields })

/** Matches every record (an empty AND). */
export const all: Expr = { _tag: "And", items: [] }

/**
 * Reads an unquoted token the way gen-B and bracket values are read: `null`, `true`, `false` and decimal numbers
 * are recognised (keeping the source text in `raw`), anything else is a string.
 */
export const untyped = (raw: string): Literal => {
  if (raw === "null") return { value: null, raw }
  if (raw === "true") return { value: true, raw }
  if (raw === "false") return { value: false, raw }
  if (numberPattern.test(raw)) {
    const n = Number(raw)
    if (Number.isFinite(n)) return { value: n, raw }
  }
  return { value: raw }
}

export const numberPattern = /^-?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?$/

/** Whether a query-language statement computes groups/aggregates (compileAggregate) rather than listing records. */
export const isAggregate = (query: Query): boolean =>
  query.groupBy !== undefined || (query.select ?? []).some((s) => s._tag === "Aggregate")
