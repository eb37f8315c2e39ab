// Parsers of the flat filter strings of the list routes: gen-B `filter` strings and `sort` strings, with the field
// name reader every filter parser shares (bracket parameters in BracketParams.ts, filter objects and aggregate
// bodies in FilterObject.ts). Each returns a Result: the AST, or a QueryParseError whose position points into the
// text the caller gave.
import type { Result } from "effect"
import * as Ast from "./Ast.ts"
import { QueryParseError } from "./QueryErrors.ts"
import { tryParse } from "../lib/tryParse.ts"

/** Internal failure, turned into a QueryParseError at each entry point. */
export class Fail {
  readonly message: string
  readonly position: number
  constructor(message: string, position: number) {
    this.message = message
    this.position = position
  }
}
export const run = <A>(input: string, f: () => A): Result.Result<A, QueryParseError> =>
  tryParse(f, (e) => (e instanceof Fail ? new QueryParseError({ message: e.message, position: e.position, input }) : undefined))

const segmentChar = /[A-Za-z0-9_$-]/

/** Checks a dotted field name; throws at the first character that cannot be part of one. */
export const checkFieldName = (text: string, offset: number): void => {
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
