// Parser of the bracket query parameters of the list routes (`price[gte]=10`, `filter[tags][hasAny]=a,b`,
// `price_min=5`), and the operator table and condition builder it shares with filter objects (FilterObject.ts).
import { Result } from "effect"
import * as Ast from "./Ast.ts"
import { checkFieldName, Fail, run } from "./FilterParser.ts"
import type { QueryParseError } from "./QueryErrors.ts"

/** Parameters of the list routes that are not filters; the caller strips them before `parseBracketParams`. */
export const reservedParams: ReadonlyArray<string> = [
  "page",
  "pageSize",
  "sort",
  "fields",
  "search",
  "searchFields",
  "all",
  "limit",
  "offset",
  "cursor",
  "includeCount",
  "structureId",
  "filter",
  "expand",
  "populate",
  "query",
  "version",
  "reveal",
  "includeHistory",
  "includeChangelog"
]

type BracketOp = Ast.CompareOp | Ast.ListOp | "contains" | "startswith" | "endswith" | "like" | "ilike" | "includes" | "between" | "isNull"
export const bracketOps: ReadonlyMap<string, BracketOp> = new Map<string, BracketOp>([
  ["eq", "eq"],
  ["ne", "ne"],
  ["gt", "gt"],
  ["gte", "gte"],
  ["lt", "lt"],
  ["lte", "lte"],
  ["in", "in"],
  ["nin", "nin"],
  ["contains", "contains"],
  ["startswith", "startswith"],
  ["endswith", "endswith"],
  ["like", "like"],
  ["ilike", "ilike"],
  ["hasany", "hasAny"],
  ["hasall", "hasAll"],
  ["eqany", "eqAny"],
  ["eqnone", "eqNone"],
  ["includes", "includes"],
  ["between", "between"],
  ["isnull", "isNull"]
])
export const listOps: ReadonlySet<string> = new Set(["in", "nin", "eqAny", "eqNone", "hasAny", "hasAll"])

/**
 * Builds the condition of one operator from already-split values. Shared by bracket params (values are text) and
 * filter objects (values are JSON); `at` is the position reported for a bad value.
 */
export const buildOp = (op: BracketOp, field: Ast.FieldRef, values: ReadonlyArray<Ast.Literal>, at: number): Ast.Expr => {
  const one = (): Ast.Literal => {
    if (values.length !== 1) throw new Fail(`Operator '${op}' takes one value`, at)
    return values[0]!
  }
  if (listOps.has(op)) {
    if (values.length === 0) throw new Fail(`Operator '${op}' needs at least one value`, at)
    return Ast.list(op as Ast.ListOp, field, values)
  }
  switch (op) {
    case "eq":
    case "ne":
      return Ast.compare(op, field, one())
    case "gt":
    case "gte":
    case "lt":
    case "lte": {
      const v = one()
      if (v.value === null) throw new Fail(`Cannot compare with null using '${op}'`, at)
      return Ast.compare(op, field, v)
    }
    case "contains":
    case "startswith":
    case "endswith":
    case "like":
    case "ilike": {
      const v = one()
      if (v.value === null) throw new Fail(`Operator '${op}' needs text`, at)
      return Ast.text(op, field, Ast.literal(v.raw ?? String(v.value)))
    }
    case "includes":
      return Ast.includes(field, one())
    case "between": {
      if (values.length !== 2 || values[0]!.value === null || values[1]!.value === null) {
        throw new Fail("Operator 'between' takes two values", at)
      }
      return Ast.between(field, values[0]!, values[1]!)
    }
    case "isNull": {
      const v = one()
      if (v.value === true || v.value === "true") return Ast.isNull(field)
      if (v.value === false || v.value === "false") return Ast.isNotNull(field)
      throw new Fail("Operator 'isNull' takes true or false", at)
    }
    default:
      throw new Fail(`Unknown operator '${op}'`, at)
  }
}

export interface BracketOptions {
  /** Field names that are exactly what they say: `price_min` here is a field, not a lower bound on `price`. */
  readonly knownFields?: ReadonlySet<string>
}
export const bracketKey = /^([^[\]]+)(?:\[([^[\]]*)\])?$/
const filterKey = /^filter\[([^[\]]+)\](?:\[([^[\]]*)\])?$/

const parseBracketParam = (key: string, value: string, options: BracketOptions | undefined): Ast.Expr => {
  const valueAt = key.length + 1
  const wrapped = filterKey.exec(key)
  const match = wrapped ?? bracketKey.exec(key)
  if (match === null) {
    const bad = key.search(/[[\]]/)
    throw new Fail("Malformed parameter name", Math.max(bad, 0))
  }
  const fieldText = match[1]!
  const fieldAt = wrapped ? "filter[".length : 0
  const opText = match[2]
  let op: BracketOp = "eq"
  let name = fieldText
  if (opText !== undefined) {
    const found = bracketOps.get(opText.toLowerCase())
    const opAt = fieldAt + fieldText.length + (wrapped ? 2 : 1)
    if (found === undefined) throw new Fail(`Unknown operator '${opText}'`, opAt)
    op = found
  } else if (!wrapped && !options?.knownFields?.has(fieldText)) {
    const bound = /^(.+)_(min|max)$/.exec(fieldText)
    if (bound !== null) {
      name = bound[1]!
      op = bound[2] === "min" ? "gte" : "lte"
    }
  }
  checkFieldName(name, fieldAt)
  const field = Ast.fieldRef(name)
  if (listOps.has(op) || op === "between") {
    const items = value.split(",")
    let at = valueAt
    const values = items.map((item) => {
      const trimmed = item.trim()
      if (trimmed === "") throw new Fail("Expected a value in the list", at)
      at += item.length + 1
      return Ast.untyped(trimmed)
    })
    return buildOp(op, field, values, valueAt)
  }
  if (op === "contains" || op === "startswith" || op === "endswith" || op === "like" || op === "ilike") {
    if (value === "") throw new Fail(`Operator '${op}' needs text`, valueAt)
    return buildOp(op, field, [Ast.literal(value)], valueAt)
  }
  if (value === "" && op !== "eq" && op !== "ne") throw new Fail(`Expected a value for '${op}'`, valueAt)
  return buildOp(op, field, [value === "" ? Ast.literal("") : Ast.untyped(value)], valueAt)
}

/**
 * Parses list-route filter parameters: `field=value`, `field[op]=value` (ops: eq, ne, gt, gte, lt, lte, in, nin,
 * contains, startswith, endswith, like, ilike, hasAny, hasAll, eqAny, eqNone, includes, between, isNull; list values
 * comma-separated), `filter[field]=v` / `filter[field][op]=v`, and `<field>_min` / `<field>_max` as gte / lte.
 * Pass only non-reserved parameters (see `reservedParams`). All conditions are ANDed. A failure's `input` is
 * `key=value` and its position points into that text.
 */
export const parseBracketParams = (
  params: Iterable<readonly [string, string]>,
  options?: BracketOptions
): Result.Result<Ast.Expr, QueryParseError> => {
  const conditions: Array<Ast.Expr> = []
  for (const [key, value] of params) {
    const parsed = run(`${key}=${value}`, () => parseBracketParam(key, value, options))
    if (Result.isFailure(parsed)) return parsed
    conditions.push(parsed.success)
  }
  return Result.succeed(Ast.and(conditions))
}
