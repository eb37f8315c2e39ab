// Which events reach which webhook: the `events` list (names, `family.*`, `*`) and the filters — `structure` (slug),
// `structureId`, `data` (field equality) and `query` (a query-language condition, parsed by the query core and
// evaluated here in memory against the event's record). Filters are checked once when a webhook is saved and
// compiled once per webhook version by the relay.
import type { WebhookFilters } from "@troupe/api/events/Webhook"
import { EventNames } from "@troupe/api/events/Webhook"
import type { ErrorDetail } from "@troupe/api/Errors"
import { details } from "@troupe/api/Errors"
import { Result } from "effect"
import type * as Ast from "../query/Ast.ts"
import { parseCondition } from "../query/ExpressionParser.ts"
import type { StoredEvent } from "./Outbox.ts"
import { isObject } from "../lib/JsonPath.ts"

/** The event names a webhook may list (besides `*` and the family wildcards). */
export const knownEventNames: ReadonlySet<string> = new Set(EventNames)

/** True when the subscription list `names` covers the event `type`. */
export const eventSelected = (names: ReadonlyArray<string>, type: string): boolean => {
  for (const n of names) {
    if (n === "*" || n === type) return true
    if (n.endsWith(".*") && type.startsWith(n.slice(0, -1))) return true
  }
  return false
}

const filterKeys = new Set(["structure", "structureId", "data", "query"])

/**
 * Checks a filters object from a request: known keys only, each of the right type, and a `query` that parses.
 * Returns the normalised filters or the problems, each naming its field.
 */
export const validateFilters = (
  raw: Readonly<Record<string, unknown>> | null | undefined
): Result.Result<WebhookFilters, Array<ErrorDetail>> => {
  if (raw === null || raw === undefined) return Result.succeed({})
  const problems: Array<readonly [string, string]> = []
  const out: { structure?: string; structureId?: string; data?: Record<string, any>; query?: string } = {}
  for (const [key, value] of Object.entries(raw)) {
    if (!filterKeys.has(key)) {
      problems.push([`filters.${key}`, `unknown filter "${key}" (expected structure, structureId, data or query)`])
      continue
    }
    if (key === "structure" || key === "structureId") {
      if (typeof value !== "string" || value.trim().length === 0) problems.push([`filters.${key}`, "expected a non-empty string"])
      else out[key] = value
    } else if (key === "data") {
      if (typeof value !== "object" || value === null || Array.isArray(value)) {
        problems.push(["filters.data", "expected an object of field: value pairs"])
      } else {
        for (const field of Object.keys(value)) {
          if (field.length === 0 || field.split(".").some((p) => p.length === 0)) {
            problems.push([`filters.data.${field}`, "expected a field name or dotted path"])
          }
        }
        out.data = value as Record<string, any>
      }
    } else if (key === "query") {
      if (typeof value !== "string") problems.push(["filters.query", "expected a query-language condition"])
      else if (value.trim().length > 0) {
        const parsed = parseCondition(value)
        if (Result.isFailure(parsed)) {
          problems.push(["filters.query", `${parsed.failure.message} (at position ${parsed.failure.position})`])
        } else out.query = value
      }
    }
  }
  return problems.length > 0 ? Result.fail(details(problems)) : Result.succeed(out as WebhookFilters)
}

/** Checks a subscription list: known names, `family.*` wildcards and `*`. */
export const validateEvents = (names: ReadonlyArray<string>): Array<ErrorDetail> =>
  details(
    names.flatMap((n, i) =>
      n === "*" ||
      knownEventNames.has(n) ||
      n === "record.*" ||
      n === "record.bulk.*" ||
      n === "function.*" ||
      n === "notification.*" ||
      n === "file.*"
        ? []
        : [[`events[${i}]`, `unknown event "${n}"`] as const]
    )
  )

/** A webhook's filters compiled for repeated matching. */
export interface EventMatcher {
  readonly events: ReadonlyArray<string>
  readonly test: (event: StoredEvent) => boolean
}

/** The record a single-record event carries (`data.record`), if any. */
export const eventRecord = (
  event: StoredEvent
): { readonly id: string; readonly structureId?: string; readonly data: Record<string, unknown> } | undefined => {
  const data = event.payload.data as { record?: { id?: unknown; structureId?: unknown; data?: unknown } } | undefined
  const record = data?.record
  if (typeof record !== "object" || record === null) return undefined
  const fields = typeof record.data === "object" && record.data !== null ? (record.data as Record<string, unknown>) : {}
  const id = typeof record.id === "string" ? record.id : (event.recordId ?? "")
  return typeof record.structureId === "string" ? { id, structureId: record.structureId, data: fields } : { id, data: fields }
}

export const compileMatcher = (events: ReadonlyArray<string>, filters: WebhookFilters): EventMatcher => {
  const tests: Array<(event: StoredEvent) => boolean> = []
  if (filters.structure !== undefined) {
    const slug = filters.structure
    tests.push((e) => e.recordSlug === slug || e.payload.structure === slug)
  }
  if (filters.structureId !== undefined) {
    const id = filters.structureId
    tests.push((e) => e.structureId === id)
  }
  if (filters.data !== undefined && Object.keys(filters.data).length > 0) {
    const pairs = Object.entries(filters.data).map(([k, v]) => [k.split("."), v] as const)
    tests.push((e) => {
      const record = eventRecord(e)
      return record !== undefined && pairs.every(([path, want]) => jsonEqual(readPath(record.data, path), want))
    })
  }
  if (filters.query !== undefined) {
    const parsed = parseCondition(filters.query)
    // Validated on save; a query the parser no longer accepts matches nothing rather than everything.
    const expr = Result.isSuccess(parsed) ? parsed.success : undefined
    tests.push((e) => {
      const record = eventRecord(e)
      return expr !== undefined && record !== undefined && evaluate(expr, record)
    })
  }
  return {
    events,
    test: (e) => eventSelected(events, e.type) && tests.every((t) => t(e))
  }
}

const readPath = (data: unknown, path: ReadonlyArray<string>): unknown => {
  let v: unknown = data
  for (const p of path) {
    if (typeof v !== "object" || v === null) return undefined
    v = (v as Record<string, unknown>)[p]
  }
  return v
}

const jsonEqual = (a: unknown, b: unknown): boolean => {
  if (a === b) return true
  if (typeof a !== "object" || typeof b !== "object" || a === null || b === null) return false
  return canonical(a) === canonical(b)
}

const canonical = (v: unknown): string =>
  JSON.stringify(v, (_k, x) =>
    isObject(x)
      ? Object.fromEntries(
          Object.keys(x)
            .sort()
            .map((k) => [k, (x as Record<string, unknown>)[k]])
        )
      : x
  )

// In-memory evaluation of the query core's tree against one record.

type Rec = { readonly id: string; readonly structureId?: string; readonly data: Record<string, unknown> }

const fieldValue = (field: Ast.FieldRef, record: Rec): unknown => {
  if (field._tag === "Column") return field.name === "id" ? record.id : undefined
  if (field._tag === "Data") return readPath(record.data, field.path)
  if (field.path.length === 1 && field.path[0] === "id") return record.id
  return readPath(record.data, field.path)
}

/** Orders two values the way the SQL compiler would for like-typed values; undefined when incomparable. */
const order = (a: unknown, lit: Ast.Literal): number | undefined => {
  const b = lit.value
  if (a === null || a === undefined || b === null) return undefined
  if (typeof a === "number" && typeof b === "number") return a - b
  if (typeof a === "number" && typeof b === "string" && b.trim() !== "" && Number.isFinite(Number(b))) return a - Number(b)
  if (typeof a === "string" && typeof b === "number") {
    // a string field compared with a number literal written bare (`zip = 01234`) compares as text
    if (lit.raw !== undefined) return a < lit.raw ? -1 : a > lit.raw ? 1 : 0
    return Number.isFinite(Number(a)) && a.trim() !== "" ? Number(a) - b : undefined
  }
  if (typeof a === "string" && typeof b === "string") return a < b ? -1 : a > b ? 1 : 0
  if (typeof a === "boolean" && typeof b === "boolean") return Number(a) - Number(b)
  if (typeof a === "boolean" && typeof b === "string") return b === String(a) ? 0 : undefined
  return undefined
}

const equals = (a: unknown, lit: Ast.Literal): boolean => {
  if (Array.isArray(a)) return a.some((x) => equals(x, lit))
  return order(a, lit) === 0
}

const lower = (v: unknown) => (typeof v === "string" ? v : v === null || v === undefined ? "" : String(v)).toLowerCase()

/** SQL LIKE: `%` any run, `_` one character, `\` escapes. Linear-time two-pointer match (no backtracking blowup). */
export const likeMatch = (pattern: string, text: string, caseInsensitive: boolean): boolean => {
  const p = caseInsensitive ? pattern.toLowerCase() : pattern
  const t = caseInsensitive ? text.toLowerCase() : text
  // tokens: "%" | "_" | a literal character
  const tokens: Array<{ kind: "any" | "one" | "lit"; ch?: string }> = []
  for (let i = 0; i < p.length; i++) {
    const c = p[i]!
    if (c === "\\" && i + 1 < p.length) tokens.push({ kind: "lit", ch: p[++i]! })
    else if (c === "%") tokens.push({ kind: "any" })
    else if (c === "_") tokens.push({ kind: "one" })
    else tokens.push({ kind: "lit", ch: c })
  }
  let ti = 0
  let pi = 0
  let star = -1
  let mark = 0
  while (ti < t.length) {
    const tok = tokens[pi]
    if (tok !== undefined && (tok.kind === "one" || (tok.kind === "lit" && tok.ch === t[ti]))) {
      ti++
      pi++
    } else if (tok !== undefined && tok.kind === "any") {
      star = pi++
      mark = ti
    } else if (star >= 0) {
      pi = star + 1
      ti = ++mark
    } else return false
  }
  while (pi < tokens.length && tokens[pi]!.kind === "any") pi++
  return pi === tokens.length
}

export const evaluate = (expr: Ast.Expr, record: Rec): boolean => {
  switch (expr._tag) {
    case "And":
      return expr.items.every((e) => evaluate(e, record))
    case "Or":
      return expr.items.some((e) => evaluate(e, record))
    case "Not":
      return !evaluate(expr.expr, record)
    case "Compare": {
      const v = fieldValue(expr.field, record)
      if (expr.op === "eq") return equals(v, expr.value)
      if (expr.op === "ne") return v !== null && v !== undefined && !equals(v, expr.value)
      const c = order(v, expr.value)
      if (c === undefined) return false
      return expr.op === "gt" ? c > 0 : expr.op === "gte" ? c >= 0 : expr.op === "lt" ? c < 0 : c <= 0
    }
    case "Between": {
      const v = fieldValue(expr.field, record)
      const lo = order(v, expr.low)
      const hi = order(v, expr.high)
      return lo !== undefined && hi !== undefined && lo >= 0 && hi <= 0
    }
    case "List": {
      const v = fieldValue(expr.field, record)
      const items = Array.isArray(v) ? v : [v]
      const hit = (lit: Ast.Literal) => items.some((x) => order(x, lit) === 0)
      switch (expr.op) {
        case "in":
        case "eqAny":
        case "hasAny":
          return expr.values.some(hit)
        case "nin":
        case "eqNone":
          return v !== null && v !== undefined && !expr.values.some(hit)
        case "hasAll":
          return expr.values.every(hit)
      }
      return false
    }
    case "Text": {
      const v = fieldValue(expr.field, record)
      if (v === null || v === undefined) return false
      const pattern = String(expr.value.value ?? "")
      switch (expr.op) {
        case "contains":
          return lower(v).includes(pattern.toLowerCase())
        case "startswith":
          return lower(v).startsWith(pattern.toLowerCase())
        case "endswith":
          return lower(v).endsWith(pattern.toLowerCase())
        case "like":
          return likeMatch(pattern, String(v), false)
        case "ilike":
          return likeMatch(pattern, String(v), true)
      }
      return false
    }
    case "Null": {
      const v = fieldValue(expr.field, record)
      const isNull = v === null || v === undefined
      return expr.op === "isNull" ? isNull : !isNull
    }
    case "Includes": {
      const v = fieldValue(expr.field, record)
      if (Array.isArray(v)) return v.some((x) => order(x, expr.value) === 0)
      return typeof v === "string" && v.toLowerCase().includes(lower(expr.value.value))
    }
    case "Search": {
      const needle = expr.text.toLowerCase()
      const fields = expr.fields.length > 0 ? expr.fields.map((f) => fieldValue(f, record)) : Object.values(record.data)
      return fields.some((v) => v !== null && v !== undefined && lower(typeof v === "object" ? JSON.stringify(v) : v).includes(needle))
    }
  }
}
