// Parsers of the flat filter syntaxes: gen-B `filter` strings, bracket query parameters, filter objects (aggregate
// bodies and `api.queryRecords`), `sort` strings and aggregate operations. Each returns a Result: the AST, or a
// QueryParseError whose position points into the text the caller gave.
// Size: over 500 lines, kept whole: the generation B filter, bracket parameters, filter objects, sort and aggregate operations: small parsers sharing one field and value reader.
import { Result } from "effect"
import * as Ast from "./Ast.ts"
import { QueryParseError } from "./QueryErrors.ts"
import { tryParse } from "../lib/tryParse.ts"
import { isObject } from "../lib/JsonPath.ts"

/** Internal failure, turned into a QueryParseError at each entry point. */
class Fail {
  readonly message: string
  readonly position: number
  constructor(message: string, position: number) {
    this.message = message
    this.position = position
  }
}

const run = <A>(input: string, f: () => A): Result.Result<A, QueryParseError> =>
  tryParse(f, (e) => (e instanceof Fail ? new QueryParseError({ message: e.message, position: e.position, input }) : undefined))

const segmentChar = /[A-Za-z0-9_$-]/

/** Checks a dotted field name; throws at the first character that cannot be part of one. */
const checkFieldName = (text: string, offset: number): void => {
  if (text.length === 0) throw new Fail("Expected a field name", offset)
  let segmentStart = 0
  for (let i = 0; i <= text.length; i++) {
    const c = text[i]
    if (c === undefined || c === ".") {
      if (i === segmentStart) throw new Fail("Empty segment in field name", offset + i)
      segmentStart = i + 1
    } else if (!segmentChar.test(c)) {
      throw new Fail(`Unexpected character '${c}' in field name`, offset + i)
    }
  }
}

/** Parses a field name written by a user; `data.`-prefixed names are data paths, others are resolved later. */
export const parseField = (text: string): Result.Result<Ast.FieldRef, QueryParseError> =>
  run(text, () => {
    checkFieldName(text, 0)
    return Ast.fieldRef(text)
  })

// ---------------------------------------------------------------------------------------------------------------
// Generation B `filter`

/** Splits `[start, end)` on commas outside quotes and brackets, returning `[start, end)` pairs. */
const splitTopLevel = (s: string, start: number, end: number, allowBrackets: boolean): Array<[number, number]> => {
  const parts: Array<[number, number]> = []
  let depth = 0
  let bracketAt = -1
  let quoteAt = -1
  let partStart = start
  for (let j = start; j < end; j++) {
    const c = s[j]
    if (quoteAt >= 0) {
      if (c === "\\") j++
      else if (c === '"') quoteAt = -1
    } else if (c === '"') {
      quoteAt = j
    } else if (c === "[") {
      if (!allowBrackets || depth > 0) throw new Fail("Unexpected '['", j)
      depth++
      bracketAt = j
    } else if (c === "]") {
      if (depth === 0) throw new Fail("Unexpected ']'", j)
      depth--
    } else if (c === "," && depth === 0) {
      parts.push([partStart, j])
      partStart = j + 1
    }
  }
  if (quoteAt >= 0) throw new Fail("Unterminated string", quoteAt)
  if (depth > 0) throw new Fail("Unclosed '['", bracketAt)
  parts.push([partStart, end])
  return parts
}

const trimRange = (s: string, start: number, end: number): [number, number] => {
  while (start < end && /\s/.test(s[start]!)) start++
  while (end > start && /\s/.test(s[end - 1]!)) end--
  return [start, end]
}

/** A `"..."` value: backslash escapes the next character. `start` is the opening quote. */
const readQuoted = (s: string, start: number, end: number): string => {
  let out = ""
  for (let j = start + 1; j < end; j++) {
    const c = s[j]!
    if (c === "\\" && j + 1 < end) {
      out += s[++j]
    } else if (c === '"') {
      if (j !== end - 1) throw new Fail("Unexpected text after the closing quote", j + 1)
      return out
    } else {
      out += c
    }
  }
  throw new Fail("Unterminated string", start)
}

/** One value of gen-B: a quoted string is always a string, anything else is read by `Ast.untyped`. */
const readValue = (s: string, start: number, end: number, after: string): Ast.Literal => {
  const [a, b] = trimRange(s, start, end)
  if (a === b) throw new Fail(`Expected a value${after}`, a)
  if (s[a] === '"') return Ast.literal(readQuoted(s, a, b))
  return Ast.untyped(s.slice(a, b))
}

const _readText = (s: string, start: number, end: number): string => {
  const [a, b] = trimRange(s, start, end)
  return a < b && s[a] === '"' ? readQuoted(s, a, b) : s.slice(a, b)
}

const readList = (s: string, open: number, end: number): Array<Ast.Literal> => {
  if (s[end - 1] !== "]") throw new Fail("Expected ']' to close the list", end)
  return splitTopLevel(s, open + 1, end - 1, false).map(([a, b]) => readValue(s, a, b, " in the list"))
}

const comparisonPrefixes: ReadonlyArray<readonly [string, Ast.CompareOp]> = [
  [">=", "gte"],
  ["<=", "lte"],
  [">", "gt"],
  ["<", "lt"]
]

const parseConditionB = (s: string, start: number, end: number): Ast.Expr => {
  const [a, b] = trimRange(s, start, end)
  if (a === b) throw new Fail("Expected a condition", a)
  const colon = s.indexOf(":", a)
  if (colon < 0 || colon >= b) throw new Fail("Expected ':' after the field name", b)
  const [fa, fb] = trimRange(s, a, colon)
  checkFieldName(s.slice(fa, fb), fa)
  const field = Ast.fieldRef(s.slice(fa, fb))
  let [p] = trimRange(s, colon + 1, b)
  if (p === b) throw new Fail("Expected a value after ':'", p)
  const negate = s[p] === "!"
  if (negate) p++
  if (p === b) throw new Fail("Expected a value after '!'", p)
  const wrap = (e: Ast.Expr) => (negate ? Ast.not(e) : e)
  for (const [prefix, op] of comparisonPrefixes) {
    if (s.startsWith(prefix, p)) {
      const value = readValue(s, p + prefix.length, b, ` after '${prefix}'`)
      if (value.value === null) throw new Fail(`Cannot compare with null using '${prefix}'`, p)
      return wrap(Ast.compare(op, field, value))
    }
  }
  if (s[p] === "[") {
    const values = readList(s, p, b)
    return Ast.list(negate ? "nin" : "in", field, values)
  }
  if (s[p] === '"') {
    const value = Ast.literal(readQuoted(s, p, b))
    return Ast.compare(negate ? "ne" : "eq", field, value)
  }
  const raw = s.slice(p, b)
  const range = raw.indexOf("..")
  if (range >= 0) {
    const low = raw.slice(0, range).trim()
    const high = raw.slice(range + 2).trim()
    if (low === "" && high === "") throw new Fail("Expected a bound on at least one side of '..'", p + range)
    if (low === "") return wrap(Ast.compare("lte", field, Ast.untyped(high)))
    if (high === "") return wrap(Ast.compare("gte", field, Ast.untyped(low)))
    return wrap(Ast.between(field, Ast.untyped(low), Ast.untyped(high)))
  }
  if (raw.length > 0 && (raw.startsWith("*") || raw.endsWith("*"))) {
    const head = raw.startsWith("*")
    const tail = raw.length > 1 && raw.endsWith("*")
    const inner = raw.slice(head ? 1 : 0, tail ? -1 : undefined)
    if (inner === "") return negate ? Ast.isNull(field) : Ast.isNotNull(field)
    const op: Ast.TextOp = head && tail ? "contains" : head ? "endswith" : "startswith"
    return wrap(Ast.text(op, field, Ast.literal(inner)))
  }
  return Ast.compare(negate ? "ne" : "eq", field, Ast.untyped(raw))
}

/**
 * Parses a generation-B `filter`: `field:value`, `field:>v` (`>=`, `<`, `<=`), `field:a..b` (open ends allowed),
 * `field:*text*` (contains; `text*` starts with, `*text` ends with), `field:[a,b]` (in), `field:!value` (not; also
 * `![a,b]`, `!*x*`), `field:"quoted, text"`. Commas separate conditions (AND); commas inside `[...]` or quotes
 * belong to the value. An empty filter matches everything.
 */
export const parseFilterB = (filter: string): Result.Result<Ast.Expr, QueryParseError> =>
  run(filter, () => {
    if (filter.trim() === "") return Ast.all
    return Ast.and(splitTopLevel(filter, 0, filter.length, true).map(([a, b]) => parseConditionB(filter, a, b)))
  })

// ---------------------------------------------------------------------------------------------------------------
// Bracket parameters

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

const bracketOps: ReadonlyMap<string, BracketOp> = new Map<string, BracketOp>([
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

const listOps: ReadonlySet<string> = new Set(["in", "nin", "eqAny", "eqNone", "hasAny", "hasAll"])

/**
 * Builds the condition of one operator from already-split values. Shared by bracket params (values are text) and
 * filter objects (values are JSON); `at` is the position reported for a bad value.
 */
const buildOp = (op: BracketOp, field: Ast.FieldRef, values: ReadonlyArray<Ast.Literal>, at: number): Ast.Expr => {
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

const bracketKey = /^([^[\]]+)(?:\[([^[\]]*)\])?$/
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

// ---------------------------------------------------------------------------------------------------------------
// Filter objects

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
// Sort

/**
 * Parses `sort`: comma-separated fields, `-` prefix descending (`+` ascending), or a `:asc` / `:desc` / ` desc`
 * suffix. `-price,name,data.rank` → price desc, name asc, data.rank asc. An empty string gives no keys.
 */
export const parseSort = (sort: string): Result.Result<ReadonlyArray<Ast.SortKey>, QueryParseError> =>
  run(sort, () => {
    if (sort.trim() === "") return []
    return splitTopLevel(sort, 0, sort.length, false).map(([s, e]) => {
      let [a, b] = trimRange(sort, s, e)
      if (a === b) throw new Fail("Expected a field name", a)
      let direction: Ast.SortDirection = "asc"
      if (sort[a] === "-" || sort[a] === "+") {
        direction = sort[a] === "-" ? "desc" : "asc"
        a++
      }
      const suffix = /(?::|\s+)(asc|desc)$/i.exec(sort.slice(a, b))
      if (suffix !== null) {
        direction = suffix[1]!.toLowerCase() as Ast.SortDirection
        b -= suffix[0].length
      }
      checkFieldName(sort.slice(a, b), a)
      return { field: Ast.fieldRef(sort.slice(a, b)), direction }
    })
  })

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
