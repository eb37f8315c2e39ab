// Literals of a query, checked against the type of the field they are compared with and bound as parameters.
import * as Ast from "./Ast.ts"
import { type Fragment, fail, type ResolvedField, type ScalarType, type Sql } from "./CompileFields.ts"
import { isUuid } from "../lib/Uuid.ts"
import { extendedDateTime } from "../structures/Formats.ts"

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
  if (typeof v === "string" && isUuid(v)) return v
  return fail(f.label, `Field '${f.label}' is a UUID; ${show(l)} is not a UUID`)
}

export const asText = (l: Ast.Literal, f: ResolvedField): string => {
  const v = noNull(l, f)
  return typeof v === "string" ? v : (l.raw ?? String(v))
}

/** A bound parameter of the field's type. */
export const bind = (sql: Sql, l: Ast.Literal, type: ScalarType, f: ResolvedField): Fragment => {
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
export const jsonValue = (l: Ast.Literal, type: ScalarType | "object" | "unknown", f: ResolvedField): string => {
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
export const containment = (sql: Sql, path: ReadonlyArray<string>, leafJson: string): Fragment => {
  const json = path.reduceRight((acc, key) => `{${JSON.stringify(key)}:${acc}}`, leafJson)
  return sql`(r.data @> ${json}::text::jsonb)`
}

/** Equality by containment for typed data scalars (exact JSON type, index-friendly). */
export const usesContainment = (f: ResolvedField): boolean =>
  f.kind === "data" && !f.asText && (f.type === "text" || f.type === "numeric" || f.type === "boolean")
