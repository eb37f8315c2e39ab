// The query language of `POST /query` (`SELECT ... FROM ... WHERE ... GROUP BY ... ORDER BY ... LIMIT ... INCLUDE
// ...`): its clauses, on top of the condition parser of ExpressionParser.ts whose grammar the WHERE clauses use.
import type { Result } from "effect"
import * as Ast from "./Ast.ts"
import { describe, Parser, reserved, run } from "./ExpressionParser.ts"
import type { Token } from "./Lexer.ts"
import type { QueryParseError } from "./QueryErrors.ts"

const aggregateFns: ReadonlySet<string> = new Set(["COUNT", "SUM", "AVG", "MIN", "MAX"])

/** The condition parser plus the clauses of a query-language statement. */
class QueryLanguageParser extends Parser {
  /** A structure slug or name: identifier, quoted identifier or string; `blog-posts` is read whole. */
  parseTarget(context: string): string {
    const t = this.peek()
    if (t.kind === "string" || t.kind === "qident") {
      this.next()
      if (t.text.trim() === "") this.fail(`Expected a structure ${context}`, t)
      return t.text
    }
    const slugStart = t.kind === "word" || (t.kind === "number" && !t.text.includes("."))
    if (!slugStart && (t.kind !== "ident" || reserved.has(t.text.toUpperCase()))) {
      this.fail(`Expected a structure ${context}, found ${describe(t)}`)
    }
    return this.hyphenated(t)
  }

  parseAlias(): string | undefined {
    const explicit = this.acceptKeyword("AS")
    const t = this.peek()
    if ((t.kind === "ident" && !reserved.has(t.text.toUpperCase()) && !t.text.includes(".")) || t.kind === "qident") {
      this.next()
      if (t.text === "") this.fail("Empty alias", t)
      return t.text
    }
    if (explicit) this.fail(`Expected an alias after AS, found ${describe(t)}`)
    return undefined
  }

  parseSelect(): ReadonlyArray<Ast.SelectItem> | undefined {
    if (this.acceptOp("*")) return undefined
    const items: Array<Ast.SelectItem> = []
    const aliases = new Set<string>()
    do {
      const t = this.peek()
      let item: Ast.SelectItem
      if (t.kind === "ident" && aggregateFns.has(t.text.toUpperCase()) && this.isOp("(", 1)) {
        this.next()
        this.next()
        const fn = t.text.toLowerCase() as Ast.AggregateFn
        let field: Ast.FieldRef | undefined
        if (this.isOp("*")) {
          if (fn !== "count") this.fail(`${t.text.toUpperCase()}(*) is not allowed; name a field`)
          this.next()
        } else {
          field = this.parseField().field
        }
        this.expectOp(")", `to close ${t.text.toUpperCase()}(`)
        const alias =
          this.parseAlias() ??
          (field === undefined
            ? fn
            : `${fn}_${Ast.fieldLabel(field)
                .replace(/^data\./, "")
                .replaceAll(".", "_")}`)
        item = { _tag: "Aggregate", fn, field, alias }
      } else {
        const field = this.parseField().field
        item = { _tag: "SelectField", field, alias: this.parseAlias() ?? Ast.fieldLabel(field) }
      }
      if (aliases.has(item.alias)) this.fail(`Duplicate column name '${item.alias}'`, t)
      aliases.add(item.alias)
      items.push(item)
    } while (this.acceptOp(","))
    return items
  }

  parseInteger(context: string): number {
    const t = this.peek()
    let value: unknown
    if (t.kind === "number") value = Number(t.text)
    else if (t.kind === "param") value = this.parameter(t)
    else this.fail(`Expected a number ${context}, found ${describe(t)}`)
    if (typeof value !== "number" || !Number.isSafeInteger(value) || value < 0) {
      this.fail(`Expected a non-negative integer ${context}`, t)
    }
    this.next()
    return value
  }

  parseSortKeys(): Array<Ast.SortKey> {
    const keys: Array<Ast.SortKey> = []
    do {
      const field = this.parseField().field
      let direction: Ast.SortDirection = "asc"
      if (this.acceptKeyword("DESC")) direction = "desc"
      else this.acceptKeyword("ASC")
      keys.push({ field, direction })
    } while (this.acceptOp(","))
    return keys
  }

  parseInclude(): Array<Ast.Include> {
    const includes: Array<Ast.Include> = []
    do {
      const t = this.peek()
      if (t.kind !== "ident" || reserved.has(t.text.toUpperCase())) {
        this.fail(`Expected a reference field after INCLUDE, found ${describe(t)}`)
      }
      const field = this.parseField().field
      if (field._tag === "Column") this.fail("INCLUDE takes a reference field", t)
      const text = Ast.fieldLabel(field).replace(/^data\./, "")
      let include: Ast.Include = { field: text }
      if (this.acceptKeyword("FROM")) {
        include = { ...include, from: this.parseTarget("after FROM") }
        if (this.acceptKeyword("WHERE")) include = { ...include, where: this.parseOr() }
      }
      includes.push(include)
    } while (this.acceptOp(","))
    return includes
  }

  parseQuery(): Ast.Query {
    let select: ReadonlyArray<Ast.SelectItem> | undefined
    let selected = false
    if (this.acceptKeyword("SELECT")) {
      select = this.parseSelect()
      selected = true
    }
    this.expectKeyword("FROM", selected ? "after the SELECT list" : "at the start of the query")
    const from = this.parseTarget("after FROM")
    if (!selected && this.acceptKeyword("SELECT")) {
      select = this.parseSelect()
      selected = true
    }
    let where: Ast.Expr | undefined
    let groupBy: Array<Ast.FieldRef> | undefined
    let orderBy: Array<Ast.SortKey> | undefined
    let limit: number | undefined
    let offset: number | undefined
    const include: Array<Ast.Include> = []
    const once = (seen: boolean, t: Token) => {
      if (seen) this.fail(`Duplicate ${t.text.toUpperCase()} clause`, t)
    }
    while (this.peek().kind !== "eof") {
      const t = this.peek()
      if (this.acceptKeyword("WHERE")) {
        once(where !== undefined, t)
        where = this.parseOr()
      } else if (this.acceptKeyword("GROUP")) {
        once(groupBy !== undefined, t)
        this.expectKeyword("BY", "after GROUP")
        groupBy = []
        do groupBy.push(this.parseField().field)
        while (this.acceptOp(","))
      } else if (this.acceptKeyword("ORDER")) {
        once(orderBy !== undefined, t)
        this.expectKeyword("BY", "after ORDER")
        orderBy = this.parseSortKeys()
      } else if (this.acceptKeyword("LIMIT")) {
        once(limit !== undefined, t)
        limit = this.parseInteger("after LIMIT")
      } else if (this.acceptKeyword("OFFSET")) {
        once(offset !== undefined, t)
        offset = this.parseInteger("after OFFSET")
      } else if (this.acceptKeyword("INCLUDE")) {
        include.push(...this.parseInclude())
      } else {
        this.fail(`Unexpected ${describe(t)}`)
      }
    }
    return {
      from,
      ...(select !== undefined ? { select } : {}),
      ...(where !== undefined ? { where } : {}),
      ...(groupBy !== undefined ? { groupBy } : {}),
      orderBy: orderBy ?? [],
      ...(limit !== undefined ? { limit } : {}),
      ...(offset !== undefined ? { offset } : {}),
      include
    }
  }
}

/**
 * Parses a query-language statement (README "Query language"): `[SELECT items] FROM <slug or name> [WHERE cond]
 * [GROUP BY f, ...] [ORDER BY f [ASC|DESC], ...] [LIMIT n] [OFFSET n] [INCLUDE ref [FROM S [WHERE cond]], ...]`.
 * Strings take single quotes, `"..."` quotes an identifier, `:name` binds from `parameters` (a missing one is a
 * parse error naming it; an array parameter fills an `IN` list).
 */
export const parseQueryLanguage = (
  text: string,
  parameters: Readonly<Record<string, unknown>> = {}
): Result.Result<Ast.Query, QueryParseError> => run(QueryLanguageParser, text, "query", parameters, (p) => p.parseQuery())
