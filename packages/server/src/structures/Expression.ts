// The computed-field expression language: a small grammar of our own, parsed to an AST and interpreted. User
// text never reaches eval or the Function constructor, and both parsing and evaluation are bounded (source length,
// nesting depth, no loops), so an expression cannot hang the server.
//
//   expr        := or ("?" expr ":" expr)?
//   or          := and ("||" and)*
//   and         := equality ("&&" equality)*
//   equality    := comparison (("==" | "!=" | "===" | "!==") comparison)*
//   comparison  := additive (("<" | "<=" | ">" | ">=") additive)*
//   additive    := term (("+" | "-") term)*
//   term        := unary (("*" | "/" | "%") unary)*
//   unary       := ("!" | "-" | "+") unary | primary
//   primary     := number | 'string' | "string" | true | false | null | field | call | "(" expr ")"
//   field       := identifier ("." identifier)*
//   call        := identifier "(" (expr ("," expr)*)? ")"
import { Result } from "effect"
import { tryParse } from "../lib/tryParse.ts"
import { getAt } from "../lib/JsonPath.ts"

export type Expr =
  | { readonly kind: "literal"; readonly value: string | number | boolean | null }
  | { readonly kind: "field"; readonly path: ReadonlyArray<string>; readonly name: string }
  | { readonly kind: "unary"; readonly op: "!" | "-" | "+"; readonly arg: Expr }
  | { readonly kind: "binary"; readonly op: BinaryOp; readonly left: Expr; readonly right: Expr }
  | { readonly kind: "conditional"; readonly test: Expr; readonly then: Expr; readonly otherwise: Expr }
  | { readonly kind: "call"; readonly name: FunctionName; readonly args: ReadonlyArray<Expr> }

export type BinaryOp = "+" | "-" | "*" | "/" | "%" | "==" | "!=" | "<" | "<=" | ">" | ">=" | "&&" | "||"

export interface ExpressionError {
  readonly message: string
  /** Offset (0-based) into the source where the problem was found. */
  readonly position: number
}

/** The value an expression produces: JSON scalars only (dates travel as ISO 8601 strings). */
export type Value = string | number | boolean | null

export const MAX_EXPRESSION_LENGTH = 2000
const MAX_DEPTH = 64

/** Functions and their arity [min, max]. */
const functions = {
  now: [0, 0],
  concat: [0, 64],
  round: [1, 2],
  floor: [1, 1],
  ceil: [1, 1],
  abs: [1, 1],
  min: [1, 64],
  max: [1, 64],
  lower: [1, 1],
  upper: [1, 1],
  length: [1, 1],
  coalesce: [1, 64]
} as const satisfies Record<string, readonly [number, number]>

export type FunctionName = keyof typeof functions

const isFunctionName = (name: string): name is FunctionName => Object.hasOwn(functions, name)

type Token =
  | { readonly t: "num"; readonly v: number; readonly pos: number }
  | { readonly t: "str"; readonly v: string; readonly pos: number }
  | { readonly t: "id"; readonly v: string; readonly pos: number }
  | { readonly t: "op"; readonly v: string; readonly pos: number }
  | { readonly t: "end"; readonly pos: number }

class ParseFailure {
  readonly message: string
  readonly position: number
  constructor(message: string, position: number) {
    this.message = message
    this.position = position
  }
}

const operators = ["===", "!==", "==", "!=", "<=", ">=", "&&", "||", "<", ">", "+", "-", "*", "/", "%", "!", "(", ")", ",", ".", "?", ":"]

const tokenize = (src: string): Array<Token> => {
  const tokens: Array<Token> = []
  let i = 0
  while (i < src.length) {
    const c = src[i]!
    if (c === " " || c === "\t" || c === "\n" || c === "\r") {
      i++
      continue
    }
    if ((c >= "0" && c <= "9") || (c === "." && src[i + 1] !== undefined && src[i + 1]! >= "0" && src[i + 1]! <= "9")) {
      const m = /^(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?/.exec(src.slice(i, i + 64))!
      const v = Number(m[0])
      if (!Number.isFinite(v)) throw new ParseFailure("number out of range", i)
      tokens.push({ t: "num", v, pos: i })
      i += m[0].length
      continue
    }
    if (c === "'" || c === '"') {
      const start = i
      let out = ""
      i++
      for (;;) {
        if (i >= src.length) throw new ParseFailure("unterminated string", start)
        const d = src[i]!
        if (d === c) break
        if (d === "\\") {
          const e = src[i + 1]
          if (e === undefined) throw new ParseFailure("unterminated string", start)
          out += e === "n" ? "\n" : e === "t" ? "\t" : e === "r" ? "\r" : e
          i += 2
          continue
        }
        out += d
        i++
      }
      i++
      tokens.push({ t: "str", v: out, pos: start })
      continue
    }
    if (/[A-Za-z_$]/.test(c)) {
      const m = /^[A-Za-z_$][A-Za-z0-9_$]*/.exec(src.slice(i, i + 256))!
      tokens.push({ t: "id", v: m[0], pos: i })
      i += m[0].length
      continue
    }
    const op = operators.find((o) => src.startsWith(o, i))
    if (op === undefined) throw new ParseFailure(`unexpected character '${c}'`, i)
    tokens.push({ t: "op", v: op, pos: i })
    i += op.length
  }
  tokens.push({ t: "end", pos: src.length })
  return tokens
}

const forbiddenSegments = new Set(["__proto__", "constructor", "prototype"])

const parseTokens = (tokens: ReadonlyArray<Token>): Expr => {
  let i = 0
  let depth = 0
  const peek = () => tokens[i]!
  const isOp = (v: string) => {
    const t = tokens[i]!
    return t.t === "op" && t.v === v
  }
  const expectOp = (v: string) => {
    const t = tokens[i]!
    if (t.t !== "op" || t.v !== v) throw new ParseFailure(`expected '${v}'`, t.pos)
    i++
  }
  const enter = () => {
    if (++depth > MAX_DEPTH) throw new ParseFailure("expression is nested too deeply", peek().pos)
  }

  const expr = (): Expr => {
    enter()
    const test = or()
    let out = test
    if (isOp("?")) {
      i++
      const then = expr()
      expectOp(":")
      const otherwise = expr()
      out = { kind: "conditional", test, then, otherwise }
    }
    depth--
    return out
  }
  const binaryLevel = (ops: ReadonlyArray<string>, next: () => Expr) => (): Expr => {
    let left = next()
    for (;;) {
      const t = peek()
      if (t.t !== "op" || !ops.includes(t.v)) return left
      i++
      const right = next()
      const op = (t.v === "===" ? "==" : t.v === "!==" ? "!=" : t.v) as BinaryOp
      left = { kind: "binary", op, left, right }
    }
  }
  const unary = (): Expr => {
    const t = peek()
    if (t.t === "op" && (t.v === "!" || t.v === "-" || t.v === "+")) {
      i++
      enter()
      const arg = unary()
      depth--
      return { kind: "unary", op: t.v, arg }
    }
    return primary()
  }
  const primary = (): Expr => {
    const t = peek()
    switch (t.t) {
      case "num":
        i++
        return { kind: "literal", value: t.v }
      case "str":
        i++
        return { kind: "literal", value: t.v }
      case "id": {
        i++
        if (t.v === "true" || t.v === "false") return { kind: "literal", value: t.v === "true" }
        if (t.v === "null") return { kind: "literal", value: null }
        if (isOp("(")) {
          if (!isFunctionName(t.v)) throw new ParseFailure(`unknown function '${t.v}'`, t.pos)
          i++
          const args: Array<Expr> = []
          if (!isOp(")")) {
            args.push(expr())
            while (isOp(",")) {
              i++
              args.push(expr())
            }
          }
          expectOp(")")
          const [min, max] = functions[t.v]
          if (args.length < min || args.length > max) {
            throw new ParseFailure(
              min === max ? `${t.v}() takes ${min} argument${min === 1 ? "" : "s"}` : `${t.v}() takes ${min} to ${max} arguments`,
              t.pos
            )
          }
          return { kind: "call", name: t.v, args }
        }
        const path = [t.v]
        while (isOp(".")) {
          i++
          const s = peek()
          if (s.t !== "id") throw new ParseFailure("expected a field name after '.'", s.pos)
          path.push(s.v)
          i++
        }
        const bad = path.find((s) => forbiddenSegments.has(s))
        if (bad !== undefined) throw new ParseFailure(`'${bad}' is not allowed in a field name`, t.pos)
        return { kind: "field", path, name: path.join(".") }
      }
      case "op":
        if (t.v === "(") {
          i++
          const inner = expr()
          expectOp(")")
          return inner
        }
        throw new ParseFailure(`unexpected '${t.v}'`, t.pos)
      case "end":
        throw new ParseFailure("unexpected end of expression", t.pos)
    }
  }
  const term = binaryLevel(["*", "/", "%"], unary)
  const additive = binaryLevel(["+", "-"], term)
  const comparison = binaryLevel(["<", "<=", ">", ">="], additive)
  const equality = binaryLevel(["==", "!=", "===", "!=="], comparison)
  const and = binaryLevel(["&&"], equality)
  const or = binaryLevel(["||"], and)

  const out = expr()
  const rest = peek()
  if (rest.t !== "end") throw new ParseFailure(`unexpected ${rest.t === "op" ? `'${rest.v}'` : "token"}`, rest.pos)
  return out
}

/** Parses an expression; fails with a message and the offset of the offending token. */
export const parseExpression = (src: string): Result.Result<Expr, ExpressionError> => {
  if (src.length > MAX_EXPRESSION_LENGTH) {
    return Result.fail({ message: `expression is longer than ${MAX_EXPRESSION_LENGTH} characters`, position: 0 })
  }
  if (src.trim() === "") return Result.fail({ message: "expression is empty", position: 0 })
  // A stack overflow on pathological input is still a parse failure, not a crash.
  return tryParse(
    () => parseTokens(tokenize(src)),
    (e): ExpressionError =>
      e instanceof ParseFailure ? { message: e.message, position: e.position } : { message: "expression is too complex", position: 0 }
  )
}

/** Dotted field names the expression reads, each once, in order of first use. */
export const referencedFields = (ast: Expr): Array<string> => {
  const seen = new Set<string>()
  const walk = (e: Expr): void => {
    switch (e.kind) {
      case "field":
        seen.add(e.name)
        return
      case "unary":
        return walk(e.arg)
      case "binary":
        walk(e.left)
        return walk(e.right)
      case "conditional":
        walk(e.test)
        walk(e.then)
        return walk(e.otherwise)
      case "call":
        return e.args.forEach(walk)
      case "literal":
        return
    }
  }
  walk(ast)
  return [...seen]
}

const lookup = (record: unknown, path: ReadonlyArray<string>): Value => toValue(getAt(record, path))

const toValue = (v: unknown): Value => {
  if (v === null || v === undefined) return null
  if (typeof v === "number") return Number.isFinite(v) ? v : null
  if (typeof v === "string" || typeof v === "boolean") return v
  if (v instanceof Date) return v.toISOString()
  // Objects and arrays are not values of this language; `length(tags)` is handled by the caller.
  return null
}

const truthy = (v: Value): boolean => v !== null && v !== false && v !== 0 && v !== ""

const num = (v: Value): number | null => (typeof v === "number" ? v : typeof v === "boolean" ? (v ? 1 : 0) : null)

const str = (v: Value): string => (v === null ? "" : String(v))

const finite = (n: number): Value => (Number.isFinite(n) ? n : null)

const compare = (op: "<" | "<=" | ">" | ">=", a: Value, b: Value): boolean => {
  if (a === null || b === null) return false
  if (typeof a === "string" && typeof b === "string") {
    return op === "<" ? a < b : op === "<=" ? a <= b : op === ">" ? a > b : a >= b
  }
  const x = num(a)
  const y = num(b)
  if (x === null || y === null) return false
  return op === "<" ? x < y : op === "<=" ? x <= y : op === ">" ? x > y : x >= y
}

/** Longest string an expression may build: concatenation in a computed field cannot balloon memory. */
const MAX_STRING = 1_000_000

const capped = (s: string): Value => (s.length > MAX_STRING ? null : s)

/**
 * Evaluates an expression over a record. Missing fields are null; arithmetic with null, division by zero and
 * non-finite results give null; `+` concatenates when either side is a string.
 */
export const evaluate = (ast: Expr, record: Readonly<Record<string, unknown>>, now: Date): Value => {
  const ev = (e: Expr): Value => {
    switch (e.kind) {
      case "literal":
        return e.value
      case "field":
        return lookup(record, e.path)
      case "unary": {
        const v = ev(e.arg)
        if (e.op === "!") return !truthy(v)
        const n = num(v)
        return n === null ? null : e.op === "-" ? -n : n
      }
      case "conditional":
        return truthy(ev(e.test)) ? ev(e.then) : ev(e.otherwise)
      // biome-ignore lint/suspicious/noFallthroughSwitchClause: every operator of the inner switch returns
      case "binary": {
        if (e.op === "&&") {
          const l = ev(e.left)
          return truthy(l) ? truthy(ev(e.right)) : false
        }
        if (e.op === "||") {
          const l = ev(e.left)
          return truthy(l) ? true : truthy(ev(e.right))
        }
        const a = ev(e.left)
        const b = ev(e.right)
        switch (e.op) {
          case "==":
            return a === b
          case "!=":
            return a !== b
          case "<":
          case "<=":
          case ">":
          case ">=":
            return compare(e.op, a, b)
          case "+":
            if (typeof a === "string" || typeof b === "string") return capped(str(a) + str(b))
        }
        const x = num(a)
        const y = num(b)
        if (x === null || y === null) return null
        switch (e.op) {
          case "+":
            return finite(x + y)
          case "-":
            return finite(x - y)
          case "*":
            return finite(x * y)
          case "/":
            return y === 0 ? null : finite(x / y)
          case "%":
            return y === 0 ? null : finite(x % y)
        }
      }
      case "call":
        return call(e.name, e.args)
    }
  }

  const call = (name: FunctionName, args: ReadonlyArray<Expr>): Value => {
    switch (name) {
      case "now":
        return now.toISOString()
      case "concat":
        return capped(args.map((a) => str(ev(a))).join(""))
      case "round": {
        const x = num(ev(args[0]!))
        if (x === null) return null
        const d = args[1] === undefined ? 0 : num(ev(args[1]))
        if (d === null) return null
        const digits = Math.max(0, Math.min(15, Math.trunc(d)))
        const f = 10 ** digits
        // Math.round rounds half toward +infinity; nudge by EPSILON so 1.005 rounds to 1.01 as people expect.
        return finite(Math.round((x + Math.sign(x) * Number.EPSILON * Math.abs(x)) * f) / f)
      }
      case "floor":
      case "ceil":
      case "abs": {
        const x = num(ev(args[0]!))
        return x === null ? null : Math[name](x)
      }
      case "min":
      case "max": {
        const xs: Array<number> = []
        for (const a of args) {
          const n = num(ev(a))
          if (n === null) return null
          xs.push(n)
        }
        return Math[name](...xs)
      }
      case "lower":
      case "upper": {
        const v = ev(args[0]!)
        if (v === null) return null
        const s = String(v)
        return name === "lower" ? s.toLowerCase() : s.toUpperCase()
      }
      case "length": {
        const a = args[0]!
        if (a.kind === "field") {
          const raw = getAt(record, a.path)
          if (Array.isArray(raw)) return raw.length
        }
        const v = ev(a)
        return v === null ? null : [...String(v)].length
      }
      case "coalesce":
        for (const a of args) {
          const v = ev(a)
          if (v !== null) return v
        }
        return null
    }
  }

  return ev(ast)
}
