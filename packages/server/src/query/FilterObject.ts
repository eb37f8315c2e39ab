// Parsers of the JSON filter bodies: filter objects (aggregate bodies and `api.queryRecords`), with the bracket
// operators of BracketParams.ts, and the aggregate request of `POST /records/{slug}/aggregate` (filter, groupBy,
// operations). Positions are 0; messages name the offending key.
import { Result } from "effect"
import * as Ast from "./Ast.ts"
import { bracketKey, bracketOps, buildOp, listOps } from "./BracketParams.ts"
import { checkFieldName, Fail, parseField, run } from "./FilterParser.ts"
import { QueryParseError } from "./QueryErrors.ts"
import { isObject } from "../lib/JsonPath.ts"

const jsonLiteral = (v: unknown, where: string): Ast.Literal => {
  if (v === null || typeof v === "string" || typeof v === "boolean") return Ast.literal(v)
  if (typeof v === "number" && Number.isFinite(v)) return Ast.literal(v)
  throw new Fail(`${where}: expected a string, number, boolean or null`, 0)
}

const jsonValues = (v: unknown, where: string): Array<Ast.Literal> =>
  Array.isArray(v) ? v.map((x) => jsonLiteral(x, where)) : [jsonLiteral(v, where)]

const MAX_OBJECT_DEPTH = 32

const parseObjectNode = (obj: unknown, where: string, depth: number): Ast.Expr => {
  if (depth > MAX_OBJECT_DEPTH) throw new Fail(`${where}: nested too deeply`, 0)
  if (!isObject(obj)) throw new Fail(`${where}: expected an object`, 0)
  const conditions: Array<Ast.Expr> = []
  for (const [key, value] of Object.entries(obj)) {
    const lower = key.toLowerCase()
    if (lower === "$and" || lower === "$or") {
      if (!Array.isArray(value)) throw new Fail(`${key}: expected an array of filters`, 0)
      const items = value.map((v, i) => parseObjectNode(v, `${key}[${i}]`, depth + 1))
      conditions.push(lower === "$and" ? Ast.and(items) : Ast.or(items))
      continue
    }
    if (lower === "$not") {
      conditions.push(Ast.not(parseObjectNode(value, key, depth + 1)))
      continue
    }
    const match = bracketKey.exec(key)
    if (match === null) throw new Fail(`${key}: malformed field name`, 0)
    const fieldText = match[1]!
    const fieldCheck = run(fieldText, () => checkFieldName(fieldText, 0))
    if (Result.isFailure(fieldCheck)) throw new Fail(`${key}: ${fieldCheck.failure.message}`, 0)
    const field = Ast.fieldRef(fieldText)
    if (match[2] !== undefined) {
      conditions.push(objectOp(field, key, match[2], value))
    } else if (isObject(value)) {
      const ops = Object.entries(value)
      if (ops.length === 0) throw new Fail(`${key}: expected at least one operator`, 0)
      for (const [op, v] of ops) conditions.push(objectOp(field, key, op, v))
    } else if (Array.isArray(value)) {
      conditions.push(buildOp("in", field, jsonValues(value, key), 0))
    } else {
      conditions.push(Ast.compare("eq", field, jsonLiteral(value, key)))
    }
  }
  return Ast.and(conditions)
}

const objectOp = (field: Ast.FieldRef, key: string, opText: string, value: unknown): Ast.Expr => {
  const op = bracketOps.get(opText.replace(/^\$/, "").toLowerCase())
  if (op === undefined) throw new Fail(`${key}: unknown operator '${opText}'`, 0)
  const where = `${key}.${opText}`
  if (listOps.has(op) || op === "between") return buildOp(op, field, jsonValues(value, where), 0)
  if (Array.isArray(value)) throw new Fail(`${where}: expected a single value`, 0)
  try {
    return buildOp(op, field, [jsonLiteral(value, where)], 0)
  } catch (e) {
    throw e instanceof Fail ? new Fail(`${where}: ${e.message}`, 0) : e
  }
}

/**
 * Parses the filter object of aggregate requests and `api.queryRecords`:
 * `{ "data.price": { gte: 10 }, "data.tags": { hasAny: ["a"] }, status: "active", "data.x[gte]": 3,
 *    "data.kind": ["a", "b"], $or: [{...}, {...}], $not: {...} }`. Operators are the bracket ones (a leading `$` is
 * allowed). Positions are 0; the message names the offending key.
 */
export const parseFilterObject = (obj: unknown): Result.Result<Ast.Expr, QueryParseError> =>
  run(safeJson(obj), () => (obj === undefined || obj === null ? Ast.all : parseObjectNode(obj, "filter", 0)))

const safeJson = (u: unknown): string => {
  try {
    return JSON.stringify(u)?.slice(0, 1000) ?? ""
  } catch {
    return ""
  }
}
// ---------------------------------------------------------------------------------------------------------------
// Aggregation requests

const aggregateFns: ReadonlySet<string> = new Set(["count", "sum", "avg", "min", "max"])

/**
 * Parses aggregate `operations`: a map of result name to `{sum: field}`, `{avg: field}`, `{min: field}`,
 * `{max: field}` or `{count: "*"}` (`{count: field}` counts non-null values).
 */
export const parseAggregateOperations = (operations: unknown): Result.Result<ReadonlyArray<Ast.SelectItem>, QueryParseError> =>
  run(safeJson(operations), () => {
    if (!isObject(operations)) throw new Fail("operations: expected an object", 0)
    const items: Array<Ast.SelectItem> = []
    for (const [alias, spec] of Object.entries(operations)) {
      if (alias === "") throw new Fail("operations: empty result name", 0)
      if (!isObject(spec)) throw new Fail(`operations.${alias}: expected {sum|avg|min|max|count: field}`, 0)
      const entries = Object.entries(spec)
      const entry = entries[0]
      if (entries.length !== 1 || entry === undefined) {
        throw new Fail(`operations.${alias}: expected exactly one of sum, avg, min, max, count`, 0)
      }
      const fn = entry[0].toLowerCase()
      const arg = entry[1]
      if (!aggregateFns.has(fn)) throw new Fail(`operations.${alias}: unknown operation '${entry[0]}'`, 0)
      if (typeof arg !== "string") throw new Fail(`operations.${alias}.${entry[0]}: expected a field name`, 0)
      if (fn === "count" && (arg === "*" || arg === "")) {
        items.push({ _tag: "Aggregate", fn: "count", field: undefined, alias })
        continue
      }
      const field = parseField(arg)
      if (Result.isFailure(field)) throw new Fail(`operations.${alias}.${entry[0]}: ${field.failure.message}`, 0)
      items.push({ _tag: "Aggregate", fn: fn as Ast.AggregateFn, field: field.success, alias })
    }
    if (items.length === 0) throw new Fail("operations: expected at least one operation", 0)
    return items
  })

export interface AggregateRequest {
  readonly where: Ast.Expr
  readonly groupBy: ReadonlyArray<Ast.FieldRef>
  readonly aggregates: ReadonlyArray<Ast.SelectItem>
}

/** Parses the body of `POST /records/{slug}/aggregate`: `{ filter?, groupBy?, operations }`. */
export const parseAggregateRequest = (body: {
  readonly filter?: unknown
  readonly groupBy?: unknown
  readonly operations?: unknown
}): Result.Result<AggregateRequest, QueryParseError> => {
  const where = parseFilterObject(body.filter)
  if (Result.isFailure(where)) return Result.fail(where.failure)
  const groupInput = body.groupBy === undefined ? [] : typeof body.groupBy === "string" ? [body.groupBy] : body.groupBy
  if (!Array.isArray(groupInput) || groupInput.some((g) => typeof g !== "string")) {
    return Result.fail(new QueryParseError({ message: "groupBy: expected an array of field names", position: 0, input: "groupBy" }))
  }
  const groupBy: Array<Ast.FieldRef> = []
  for (const g of groupInput as Array<string>) {
    const field = parseField(g)
    if (Result.isFailure(field)) return Result.fail(field.failure)
    groupBy.push(field.success)
  }
  const aggregates = body.operations === undefined ? Result.succeed([]) : parseAggregateOperations(body.operations)
  if (Result.isFailure(aggregates)) return Result.fail(aggregates.failure)
  return Result.succeed({ where: where.success, groupBy, aggregates: aggregates.success })
}
