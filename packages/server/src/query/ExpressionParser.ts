// Recursive-descent parser of conditions: the gen-A `query` expression (`price>500 AND tags.includes('x')`) and the
// conditions of the query language (what follows WHERE, and event filters). Keywords are case-insensitive; every
// error carries the offending token's position. The query language's clauses (SELECT, FROM, GROUP BY, ORDER BY,
// LIMIT, INCLUDE) extend this parser in QueryLanguageParser.ts.
import { Result } from "effect"
import * as Ast from "./Ast.ts"
import { type Dialect, LexError, type Token, tokenize } from "./Lexer.ts"
import { QueryParseError } from "./QueryErrors.ts"
import { tryParse } from "../lib/tryParse.ts"

/** Longer inputs are refused outright: the compiled SQL of a bigger one would not fit PostgreSQL's 65535 binds. */
export const MAX_QUERY_LENGTH = 20_000
/** Parentheses / NOT nesting limit, so deep nesting fails cleanly instead of overflowing the stack. */
export const MAX_DEPTH = 64

const comparisonOps: ReadonlyMap<string, Ast.CompareOp> = new Map([
  ["=", "eq"],
  ["==", "eq"],
  ["!=", "ne"],
  ["<>", "ne"],
  [">", "gt"],
  [">=", "gte"],
  ["<", "lt"],
  ["<=", "lte"]
])

const methods: ReadonlyMap<string, "includes" | "contains" | "startswith" | "endswith"> = new Map([
  ["includes", "includes"],
  ["contains", "contains"],
  ["startswith", "startswith"],
  ["endswith", "endswith"]
])

/** Words that end a condition or start a clause; never read as a field name or alias. */
export const reserved: ReadonlySet<string> = new Set([
  "AND",
  "OR",
  "NOT",
  "SELECT",
  "FROM",
  "WHERE",
  "GROUP",
  "ORDER",
  "LIMIT",
  "OFFSET",
  "INCLUDE",
  "AS",
  "BY"
])

class ParseFail {
  readonly message: string
  readonly position: number
  constructor(message: string, position: number) {
    this.message = message
    this.position = position
  }
}

export const describe = (t: Token): string =>
  t.kind === "eof" ? "end of input" : t.kind === "string" ? `'${t.text}'` : t.kind === "param" ? `':${t.text}'` : `'${t.text}'`

export class Parser {
  readonly tokens: ReadonlyArray<Token>
  readonly dialect: Dialect
  readonly parameters: Readonly<Record<string, unknown>>
  i = 0
  depth = 0

  constructor(input: string, dialect: Dialect, parameters: Readonly<Record<string, unknown>>) {
    this.tokens = tokenize(input, dialect)
    this.dialect = dialect
    this.parameters = parameters
  }

  peek(offset = 0): Token {
    return this.tokens[Math.min(this.i + offset, this.tokens.length - 1)]!
  }

  next(): Token {
    const t = this.peek()
    if (this.i < this.tokens.length - 1) this.i++
    return t
  }

  fail(message: string, token: Token = this.peek()): never {
    throw new ParseFail(message, token.start)
  }

  isKeyword(word: string, offset = 0): boolean {
    const t = this.peek(offset)
    return t.kind === "ident" && t.text.toUpperCase() === word
  }

  acceptKeyword(word: string): boolean {
    if (!this.isKeyword(word)) return false
    this.i++
    return true
  }

  expectKeyword(word: string, context: string): Token {
    if (!this.isKeyword(word)) this.fail(`Expected ${word} ${context}, found ${describe(this.peek())}`)
    return this.next()
  }

  isOp(text: string, offset = 0): boolean {
    const t = this.peek(offset)
    return t.kind === "op" && t.text === text
  }

  acceptOp(text: string): boolean {
    if (!this.isOp(text)) return false
    this.i++
    return true
  }

  expectOp(text: string, context: string): Token {
    if (!this.isOp(text)) this.fail(`Expected '${text}' ${context}, found ${describe(this.peek())}`)
    return this.next()
  }

  /** Takes `t` (the current token) and the parts of `my-field` joined to it by a '-' with no spaces around. */
  hyphenated(t: Token): string {
    this.next()
    let text = t.text
    let end = t.end
    while (this.isOp("-") && this.peek().start === end) {
      const after = this.peek(1)
      if ((after.kind !== "ident" && after.kind !== "number" && after.kind !== "word") || after.start !== end + 1) break
      this.next()
      this.next()
      text += `-${after.text}`
      end = after.end
    }
    return text
  }

  expectEnd(): void {
    const t = this.peek()
    if (t.kind !== "eof") this.fail(`Unexpected ${describe(t)}`)
  }

  // Conditions ---------------------------------------------------------------------------------------------------

  parseOr(): Ast.Expr {
    this.depth++
    if (this.depth > MAX_DEPTH) this.fail(`Expression nested deeper than ${MAX_DEPTH} levels`)
    const items = [this.parseAnd()]
    while (this.acceptKeyword("OR") || this.acceptOp("||")) items.push(this.parseAnd())
    this.depth--
    return Ast.or(items)
  }

  parseAnd(): Ast.Expr {
    const items = [this.parseNot()]
    while (this.acceptKeyword("AND") || this.acceptOp("&&")) items.push(this.parseNot())
    return Ast.and(items)
  }

  parseNot(): Ast.Expr {
    if (this.acceptKeyword("NOT") || this.acceptOp("!")) {
      this.depth++
      if (this.depth > MAX_DEPTH) this.fail(`Expression nested deeper than ${MAX_DEPTH} levels`)
      const inner = this.parseNot()
      this.depth--
      return Ast.not(inner)
    }
    return this.parsePrimary()
  }

  parsePrimary(): Ast.Expr {
    if (this.acceptOp("(")) {
      const inner = this.parseOr()
      this.expectOp(")", "to close '('")
      return inner
    }
    if (this.isKeyword("SEARCH") && this.isOp("(", 1)) return this.parseSearch()
    return this.parsePredicate()
  }

  parseSearch(): Ast.Expr {
    this.next()
    this.expectOp("(", "after SEARCH")
    const at = this.peek()
    const value = this.parseValue("as the search text")
    if (typeof value.value !== "string") this.fail("SEARCH takes a text", at)
    this.expectOp(")", "after the search text")
    const fields: Array<Ast.FieldRef> = []
    if (this.acceptKeyword("IN")) {
      this.expectOp("(", "before the searched fields")
      do fields.push(this.parseField().field)
      while (this.acceptOp(","))
      this.expectOp(")", "after the searched fields")
    }
    return Ast.search(value.value, fields)
  }

  /** A field name: an identifier (dots allowed, hyphen-joined parts allowed) or a quoted identifier. */
  parseField(): { field: Ast.FieldRef; method?: Token } {
    const t = this.peek()
    if (t.kind === "qident") {
      this.next()
      if (t.text === "") this.fail("Empty field name", t)
      return { field: Ast.name(t.text) }
    }
    if (t.kind !== "ident" || reserved.has(t.text.toUpperCase())) {
      this.fail(`Expected a field name, found ${describe(t)}`)
    }
    const text = this.hyphenated(t)
    const dot = text.lastIndexOf(".")
    if (dot > 0 && this.isOp("(")) {
      const method = methods.get(text.slice(dot + 1).toLowerCase())
      if (method === undefined) this.fail(`Unknown function '${text.slice(dot + 1)}'`, t)
      return { field: Ast.fieldRef(text.slice(0, dot)), method: t }
    }
    if (this.isOp("(")) this.fail(`Unknown function '${text}'`, t)
    return { field: Ast.fieldRef(text) }
  }

  parsePredicate(): Ast.Expr {
    const start = this.peek()
    const { field, method } = this.parseField()
    if (method !== undefined) {
      const name = methods.get(method.text.slice(method.text.lastIndexOf(".") + 1).toLowerCase())!
      this.expectOp("(", "after the method name")
      const at = this.peek()
      const value = this.parseValue("as the argument")
      this.expectOp(")", "after the argument")
      if (name === "includes") return Ast.includes(field, value)
      return Ast.text(name, field, this.textLiteral(value, at))
    }
    const t = this.peek()
    if (t.kind === "op") {
      const op = comparisonOps.get(t.text)
      if (op !== undefined) {
        this.next()
        const at = this.peek()
        const value = this.parseValue(`after '${t.text}'`)
        if (value.value === null && op !== "eq" && op !== "ne") {
          this.fail(`Cannot compare with null using '${t.text}'`, at)
        }
        return Ast.compare(op, field, value)
      }
    }
    const negated = this.isKeyword("NOT") && ["BETWEEN", "IN", "LIKE", "ILIKE", "CONTAINS", "INCLUDES"].some((w) => this.isKeyword(w, 1))
    if (negated) this.next()
    const wrap = (e: Ast.Expr) => (negated ? Ast.not(e) : e)
    if (this.acceptKeyword("BETWEEN")) {
      const lowAt = this.peek()
      const low = this.parseValue("after BETWEEN")
      this.expectKeyword("AND", "between the bounds of BETWEEN")
      const highAt = this.peek()
      const high = this.parseValue("after AND")
      if (low.value === null) this.fail("BETWEEN bounds cannot be null", lowAt)
      if (high.value === null) this.fail("BETWEEN bounds cannot be null", highAt)
      return wrap(Ast.between(field, low, high))
    }
    if (this.acceptKeyword("IN")) {
      const values = this.parseList()
      return Ast.list(negated ? "nin" : "in", field, values)
    }
    if (this.isKeyword("LIKE") || this.isKeyword("ILIKE")) {
      const op = this.next().text.toLowerCase() as "like" | "ilike"
      const at = this.peek()
      return wrap(Ast.text(op, field, this.textLiteral(this.parseValue(`after ${op.toUpperCase()}`), at)))
    }
    if (this.acceptKeyword("CONTAINS") || this.acceptKeyword("INCLUDES")) {
      return wrap(Ast.includes(field, this.parseValue("after CONTAINS")))
    }
    if (this.acceptKeyword("IS")) {
      const not = this.acceptKeyword("NOT")
      this.expectKeyword("NULL", not ? "after IS NOT" : "after IS")
      return not ? Ast.isNotNull(field) : Ast.isNull(field)
    }
    const after = this.peek()
    const ends =
      after.kind === "eof" ||
      (after.kind === "op" && [")", "&&", "||"].includes(after.text)) ||
      (after.kind === "ident" && reserved.has(after.text.toUpperCase()))
    // A lone boolean field: `inStock AND price < 5`
    if (ends) return Ast.compare("eq", field, Ast.literal(true, "true"))
    return this.fail(`Expected an operator after ${describe(start)}, found ${describe(after)}`, after)
  }

  textLiteral(value: Ast.Literal, at: Token): Ast.Literal {
    if (value.value === null) this.fail("Expected text, found null", at)
    return Ast.literal(value.raw ?? String(value.value))
  }

  /** `(a, b, c)` or `[a, b]`; a parameter holding an array expands in place. */
  parseList(): Array<Ast.Literal> {
    if (this.peek().kind === "param") return this.parameterList(this.next())
    const close = this.isOp("[") ? "]" : ")"
    if (!this.acceptOp("(") && !this.acceptOp("[")) {
      this.fail(`Expected '(' to start the list, found ${describe(this.peek())}`)
    }
    const values: Array<Ast.Literal> = []
    if (this.isOp(close)) this.fail("Expected at least one value in the list")
    do {
      if (this.peek().kind === "param") values.push(...this.parameterList(this.next()))
      else values.push(this.parseValue("in the list"))
    } while (this.acceptOp(","))
    this.expectOp(close, "to close the list")
    return values
  }

  parameterList(t: Token): Array<Ast.Literal> {
    const value = this.parameter(t)
    if (!Array.isArray(value)) return [this.scalarParameter(t, value)]
    if (value.length === 0) this.fail(`Parameter :${t.text} is an empty list`, t)
    return value.map((v) => this.scalarParameter(t, v))
  }

  parameter(t: Token): unknown {
    if (!Object.hasOwn(this.parameters, t.text)) this.fail(`Missing parameter :${t.text}`, t)
    return this.parameters[t.text]
  }

  scalarParameter(t: Token, value: unknown): Ast.Literal {
    if (value === null || typeof value === "string" || typeof value === "boolean") return Ast.literal(value)
    if (typeof value === "number" && Number.isFinite(value)) return Ast.literal(value)
    return this.fail(`Parameter :${t.text} must be a string, a finite number, a boolean or null`, t)
  }

  parseValue(context: string): Ast.Literal {
    const t = this.peek()
    switch (t.kind) {
      case "string":
        this.next()
        return Ast.literal(t.text)
      case "number":
        this.next()
        return Ast.untyped(t.text)
      case "param":
        this.next()
        return this.scalarParameter(t, this.parameter(t))
      case "op":
        if ((t.text === "-" || t.text === "+") && this.peek(1).kind === "number") {
          this.next()
          const n = this.next()
          return Ast.untyped(t.text === "-" ? `-${n.text}` : n.text)
        }
        break
      case "ident": {
        const upper = t.text.toUpperCase()
        if (upper === "TRUE" || upper === "FALSE" || upper === "NULL") {
          this.next()
          return Ast.untyped(upper.toLowerCase())
        }
        // gen A: an unquoted word on the right-hand side can only be a string (`status == active`)
        if (this.dialect === "expression" && !reserved.has(upper)) {
          this.next()
          return Ast.literal(t.text)
        }
        break
      }
    }
    const hint = this.dialect === "query" ? " (strings take single quotes)" : ""
    return this.fail(`Expected a value ${context}, found ${describe(t)}${hint}`, t)
  }
}

/** Runs one parse on a fresh parser of the given class, turning its failures into a QueryParseError. */
export const run = <P extends Parser, A>(
  Make: new (input: string, dialect: Dialect, parameters: Readonly<Record<string, unknown>>) => P,
  input: string,
  dialect: Dialect,
  parameters: Readonly<Record<string, unknown>>,
  f: (p: P) => A
): Result.Result<A, QueryParseError> => {
  if (input.length > MAX_QUERY_LENGTH) {
    const message = `Query longer than ${MAX_QUERY_LENGTH} characters`
    return Result.fail(new QueryParseError({ message, position: MAX_QUERY_LENGTH, input }))
  }
  return tryParse(
    () => f(new Make(input, dialect, parameters)),
    (e) =>
      e instanceof ParseFail || e instanceof LexError ? new QueryParseError({ message: e.message, position: e.position, input }) : undefined
  )
}

/**
 * Parses a generation-A `query` expression: `==` (also `=`), `!=` (also `<>`), `>`, `>=`, `<`, `<=`,
 * `AND`/`&&`, `OR`/`||`, `NOT`/`!`, parentheses, `field.includes(v)` (also `.contains`, `.startsWith`,
 * `.endsWith`), strings in single or double quotes, numbers, true/false/null, and the query language's
 * `BETWEEN`, `IN (...)`, `LIKE`, `IS [NOT] NULL`. A lone field means `field == true`. An empty query matches all.
 */
export const parseExpressionA = (query: string): Result.Result<Ast.Expr, QueryParseError> =>
  run(Parser, query, "expression", {}, (p) => {
    if (p.peek().kind === "eof") return Ast.all
    const expr = p.parseOr()
    p.expectEnd()
    return expr
  })

/** Parses just a condition in query-language syntax (what follows WHERE). */
export const parseCondition = (
  text: string,
  parameters: Readonly<Record<string, unknown>> = {}
): Result.Result<Ast.Expr, QueryParseError> =>
  run(Parser, text, "query", parameters, (p) => {
    if (p.peek().kind === "eof") return Ast.all
    const expr = p.parseOr()
    p.expectEnd()
    return expr
  })
