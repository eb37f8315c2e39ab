import { PgClient } from "@effect/sql-pg"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Result } from "effect"
import { Statement } from "effect/sql"
import * as Ast from "./Ast.ts"
import {
  type CompileContext,
  compileAggregate,
  compileCursor,
  compileOrderBy,
  compileWhere,
  encodeCursor,
  MAX_CONDITION_TERMS,
  MAX_GROUP_FIELDS,
  MAX_LIST_VALUES,
  MAX_SORT_KEYS,
  propertyMap
} from "./Compiler.ts"
import { parseExpressionA } from "./ExpressionParser.ts"
import { parseQueryLanguage } from "./QueryLanguageParser.ts"
import { parseBracketParams } from "./BracketParams.ts"
import { parseFilterObject } from "./FilterObject.ts"
import { parseFilterB, parseSort } from "./FilterParser.ts"

// A statement constructor with the PostgreSQL compiler and no connection: enough to compile fragments.
const sql = Statement.make(Effect.die("no connection in unit tests"), PgClient.makeCompiler(), [], undefined)

const properties = propertyMap([
  { name: "name", type: "string" },
  { name: "price", type: "number" },
  { name: "inStock", type: "boolean" },
  { name: "published", type: "datetime" },
  { name: "category", type: "string" },
  { name: "tags", type: "array", items: { type: "string" } },
  { name: "scores", type: "array", items: { type: "number" } },
  { name: "zip", type: "string" },
  { name: "author", type: "reference" },
  { name: "editors", type: "reference", relationship: "many-to-many" },
  { name: "address", type: "object", properties: [{ name: "city", type: "string" }] },
  { name: "meta", type: "object" },
  { name: "password", type: "string", isSecret: true }
])

const strict: CompileContext = { mode: "strict", properties, recordSlug: "products", workspace: "acme" }
const evolving: CompileContext = { ...strict, mode: "auto-evolving" }
const schemaless: CompileContext = { ...strict, mode: "schemaless", properties: new Map(), recordSlug: "things" }

const compile = (f: Statement.Fragment) => sql`SELECT 1 WHERE ${f}`.compile()

const where = (expr: Ast.Expr, ctx: CompileContext = strict) => {
  const r = compileWhere(sql, expr, ctx)
  if (Result.isFailure(r)) return expect.fail(`unexpected field error: ${r.failure.message}`)
  return compile(r.success)
}

const whereError = (expr: Ast.Expr, ctx: CompileContext = strict) => {
  const r = compileWhere(sql, expr, ctx)
  if (Result.isSuccess(r)) return expect.fail(`expected a field error, got ${compile(r.success)[0]}`)
  return r.failure
}

const get = <A, E>(r: Result.Result<A, E>): A => {
  if (Result.isFailure(r)) return expect.fail(`unexpected failure: ${JSON.stringify(r.failure)}`)
  return r.success
}

const genB = (s: string) => get(parseFilterB(s))
const genA = (s: string) => get(parseExpressionA(s))
const ql = (s: string, p: Record<string, unknown> = {}) => get(parseQueryLanguage(`FROM products WHERE ${s}`, p)).where!
const bracket = (...ps: Array<readonly [string, string]>) => get(parseBracketParams(ps))
const object = (o: unknown) => get(parseFilterObject(o))

describe("equivalent forms compile to the same SQL", () => {
  const groups: ReadonlyArray<readonly [string, ReadonlyArray<Ast.Expr>]> = [
    [
      "price > 10",
      [
        genB("price:>10"),
        bracket(["price[gt]", "10"]),
        bracket(["data.price[gt]", "10"]),
        genA("price > 10"),
        ql("price > 10"),
        ql("data.price > :p", { p: 10 }),
        object({ "data.price": { gt: 10 } })
      ]
    ],
    [
      "name = Bob",
      [genB("name:Bob"), bracket(["name", "Bob"]), genA("name == 'Bob'"), genA("name == Bob"), ql("name = 'Bob'"), object({ name: "Bob" })]
    ],
    [
      "category in",
      [
        genB("category:[food,tech]"),
        bracket(["category[in]", "food,tech"]),
        bracket(["category[eqAny]", "food,tech"]),
        genA("category IN ('food', 'tech')"),
        ql("category IN ('food', 'tech')"),
        ql("category IN :c", { c: ["food", "tech"] }),
        object({ category: ["food", "tech"] })
      ]
    ],
    [
      "category not in",
      [
        genB("category:![food,tech]"),
        bracket(["category[nin]", "food,tech"]),
        bracket(["category[eqNone]", "food,tech"]),
        ql("category NOT IN ('food', 'tech')")
      ]
    ],
    [
      "price between",
      [genB("price:10..20"), bracket(["price[between]", "10,20"]), ql("price BETWEEN 10 AND 20"), object({ price: { between: [10, 20] } })]
    ],
    [
      "price range",
      [
        genB("price:>=10,price:<=20"),
        genB("price:10..,price:..20"),
        bracket(["price_min", "10"], ["price_max", "20"]),
        bracket(["price[gte]", "10"], ["price[lte]", "20"]),
        genA("price >= 10 AND price <= 20"),
        ql("price >= 10 AND price <= 20")
      ]
    ],
    [
      "status ne",
      [genB("status:!archived"), bracket(["status[ne]", "archived"]), genA("status != 'archived'"), ql("status <> 'archived'")]
    ],
    [
      "name contains",
      [genB("name:*app*"), bracket(["name[contains]", "app"]), genA("name.contains('app')"), object({ name: { contains: "app" } })]
    ],
    [
      "tags includes",
      [
        genB("tags:x"),
        bracket(["tags", "x"]),
        bracket(["tags[includes]", "x"]),
        bracket(["tags[hasAny]", "x"]),
        genA("tags.includes('x')"),
        ql("tags CONTAINS 'x'"),
        object({ tags: { includes: "x" } })
      ]
    ],
    [
      "category is null",
      [
        genB("category:null"),
        bracket(["category[isNull]", "true"]),
        genA("category == null"),
        ql("category IS NULL"),
        object({ category: null })
      ]
    ],
    [
      "inStock true",
      [
        genB("inStock:true"),
        bracket(["inStock", "true"]),
        genA("inStock == true"),
        genA("inStock"),
        ql("inStock = true"),
        object({ inStock: true })
      ]
    ],
    ["zip keeps its leading zero", [genB("zip:01234"), bracket(["zip", "01234"]), genA("zip == '01234'"), ql("zip = '01234'")]]
  ]
  for (const [label, exprs] of groups) {
    it(label, () => {
      const [first, ...rest] = exprs.map((e) => where(e))
      for (const other of rest) expect(other).toStrictEqual(first)
    })
  }
})

describe("typed comparisons", () => {
  it("casts numbers, datetimes and booleans by property type, all values bound", () => {
    const [text, params] = where(genB("price:>10,published:>2024-01-01T00:00:00Z,inStock:!true"))
    expect(text).toContain("::numeric END) > $3::text::numeric")
    expect(text).toContain("troupe_datetime((r.data ->> $4::text)) > troupe_datetime($5::text)")
    expect(text).toContain("@> $")
    expect(params).toStrictEqual(["price", "price", "10", "published", "2024-01-01T00:00:00Z", '{"inStock":true}'])
  })

  it("maps columns and constant columns", () => {
    const [text, params] = where(
      genB(
        "id:[00000000-0000-4000-8000-000000000001],createdAt:>2024-01-01,version:>=2," +
          "recordSlug:products,workspaceSlug:acme,createdBy:u1"
      )
    )
    expect(text).toContain("r.id IN ($1::text::uuid)")
    expect(text).toContain("r.created_at > troupe_datetime($2::text)")
    expect(text).toContain("r.version >= $3::text::numeric")
    expect(text).toContain("$4::text = $5::text")
    expect(text).toContain("r.created_by = $8::text")
    expect(params.slice(3, 7)).toStrictEqual(["products", "products", "acme", "acme"])
  })

  it("resolves a bare column name to a declared property of that name", () => {
    const ctx: CompileContext = { ...strict, properties: propertyMap([{ name: "status", type: "number" }]) }
    expect(where(genB("status:3"), ctx)[1]).toContain('{"status":3}')
    expect(where(genB("status:active"))[0]).toContain("r.status")
    // id is always the column
    expect(where(genB("id:00000000-0000-4000-8000-000000000001"), ctx)[0]).toContain("r.id =")
  })

  it("addresses nested paths with one bound key per level", () => {
    const [text, params] = where(genB("address.city:>M"))
    expect(text).toContain("(r.data -> $1::text ->> $2::text) > $3::text")
    expect(params).toStrictEqual(["address", "city", "M"])
    // inside a free-form object: compared as text
    const [freeText, freeParams] = where(genB("meta.level.deep:5"))
    expect(freeText).toContain("(r.data -> $1::text -> $2::text ->> $3::text) = $4::text")
    expect(freeParams).toStrictEqual(["meta", "level", "deep", "5"])
  })

  it("compares everything as text in schemaless mode", () => {
    const [text, params] = where(genB("price:>10,anything.nested:x,tags:[a,b]"), schemaless)
    expect(text).not.toContain("numeric")
    expect(text).not.toContain("@>")
    expect(text).toContain("(r.data ->> $1::text) > $2::text")
    expect(params).toStrictEqual(["price", "10", "anything", "nested", "x", "tags", "a", "b"])
  })

  it("uses jsonb containment for arrays, typed by item type", () => {
    expect(where(bracket(["scores[hasAll]", "1,2.5"]))[1]).toStrictEqual(['{"scores":[1,2.5]}'])
    expect(where(bracket(["tags[hasAny]", "a,b"]))[1]).toStrictEqual(['{"tags":["a"]}', '{"tags":["b"]}'])
    expect(where(bracket(["editors[includes]", "u1"]))[1]).toStrictEqual(['{"editors":["u1"]}'])
    expect(where(bracket(["tags[hasAny]", "a"]), schemaless)[0]).toContain("jsonb_array_elements_text")
  })

  it("escapes LIKE wildcards in contains / startswith / endswith", () => {
    expect(where(bracket(["name[contains]", "50%_off\\"]))[1]).toStrictEqual(["name", "%50\\%\\_off\\\\%"])
    expect(where(bracket(["name[startswith]", "a%"]))[1]).toStrictEqual(["name", "a\\%%"])
    expect(where(bracket(["name[endswith]", "_z"]))[1]).toStrictEqual(["name", "%\\_z"])
    expect(where(ql("name LIKE 'a%'"))[1]).toStrictEqual(["name", "a%"])
  })

  it("searches words (the last also as a prefix) in the structure's language, substrings only for short terms", () => {
    const [long, longParams] = where(Ast.search("red apple", [Ast.name("name")]))
    expect(long).toContain("to_tsvector($1::text::regconfig, coalesce(")
    expect(long).toContain("to_tsquery($")
    expect(long).not.toContain("ILIKE")
    expect(longParams).toContain("'red' & 'apple':*")
    expect(longParams).toContain("simple")
    const [short] = where(Ast.search("ap", [Ast.name("name")]))
    expect(short).not.toContain("tsquery")
    expect(short).toContain("ILIKE")
    expect(where(Ast.search("apple", []))[0]).toContain("jsonb_to_tsvector")
    expect(where(Ast.search("apple", []), { ...strict, defaultSearchField: "name" })[1]).toContain("name")
    // a structure that names its search fields: its index, in its language
    const indexed = where(Ast.search("apple", []), { ...strict, search: { language: "english", indexed: true } })
    expect(indexed[0]).toContain("r.search_vector @@ to_tsquery(")
    expect(indexed[1]).toContain("english")
    // named fields are matched one by one, even then
    expect(where(Ast.search("apple", [Ast.name("name")]), { ...strict, search: { language: "english", indexed: true } })[0]).not.toContain(
      "search_vector"
    )
  })

  it("matches everything for an empty filter", () => expect(where(Ast.all)[0]).toContain("TRUE"))
})

describe("field errors", () => {
  const cases: ReadonlyArray<readonly [string, Ast.Expr, string, string, CompileContext?]> = [
    ["unknown field (strict)", genB("nope:1"), "nope", "Unknown field"],
    ["unknown field (auto-evolving)", genB("nope:1"), "nope", "Unknown field", evolving],
    ["unknown data. field", bracket(["data.nope[gt]", "1"]), "data.nope", "Unknown field"],
    ["unknown nested field", genB("address.zip:1"), "address.zip", "not declared"],
    ["path through a scalar", genB("price.x:1"), "price.x", "has no sub-fields"],
    ["path through an array", genB("tags.x:1"), "tags.x", "inside array field"],
    ["non-number for a number", genB("price:>abc"), "price", "is not a number"],
    ["non-number in a list", genB("price:[1,x]"), "price", "is not a number"],
    ["bad datetime", genB("published:>yesterday"), "published", "not an ISO 8601"],
    ["impossible date", genB("published:>2024-02-30"), "published", "not an ISO 8601"],
    ["bad createdAt", genB("createdAt:>soon"), "createdAt", "not an ISO 8601"],
    ["bad boolean", genB("inStock:maybe"), "inStock", "not true or false"],
    ["bad uuid", genB("id:123"), "id", "not a UUID"],
    ["secret field", genB("password:x"), "password", "secret"],
    ["hasAny on a scalar", bracket(["name[hasAny]", "a"]), "name", "not an array"],
    ["range on an array", genB("tags:>a"), "tags", "is an array"],
    ["object compared", genB("address:x"), "address", "object"],
    ["array item type", bracket(["scores[includes]", "x"]), "scores", "is not a number"],
    ["lone backslash in LIKE", ql("name LIKE 'a\\\\'"), "name", "lone"]
  ]
  for (const [label, expr, field, message, ctx] of cases) {
    it(label, () => {
      const e = whereError(expr, ctx)
      expect(e._tag).toBe("QueryFieldError")
      expect(e.field).toBe(field)
      expect(e.message).toContain(message)
    })
  }

  it("allows any field in schemaless mode", () => {
    expect(Result.isSuccess(compileWhere(sql, genB("nope:1,price.x:2"), schemaless))).toBe(true)
  })
})

describe("size limits: long lists and big conditions are field errors, never the driver's", () => {
  const numbers = (n: number) => Array.from({ length: n }, (_, i) => i)

  it("a list holds at most MAX_LIST_VALUES values, in every syntax", () => {
    expect(Result.isSuccess(compileWhere(sql, object({ price: { in: numbers(MAX_LIST_VALUES) } }), strict))).toBe(true)
    const lists = [
      object({ price: { in: numbers(MAX_LIST_VALUES + 1) } }),
      bracket(["tags[hasAny]", numbers(MAX_LIST_VALUES + 1).join(",")]),
      genB(`price:![${numbers(MAX_LIST_VALUES + 1).join(",")}]`),
      ql("price IN :xs", { xs: numbers(MAX_LIST_VALUES + 1) })
    ]
    for (const expr of lists) {
      const e = whereError(expr)
      expect(e.message).toContain(`at most ${MAX_LIST_VALUES} values`)
      expect(e.field).toBeOneOf(["price", "tags"])
    }
  })

  it("a condition holds at most MAX_CONDITION_TERMS comparisons and values; the error names no field", () => {
    const or = (n: number) => object({ $or: numbers(n).map((i) => ({ price: { gt: i } })) })
    expect(Result.isSuccess(compileWhere(sql, or(MAX_CONDITION_TERMS), strict))).toBe(true)
    const e = whereError(or(10_000))
    expect(e.field).toBe("")
    expect(e.message).toContain(`at most ${MAX_CONDITION_TERMS}`)
    expect(whereError(object({ $or: numbers(3000).map(() => ({ name: { isNull: true } })) })).field).toBe("")
  })

  it("sorts, groups and selections are bounded", () => {
    const sort = get(
      parseSort(
        Array(MAX_SORT_KEYS + 1)
          .fill("price")
          .join(",")
      )
    )
    const r = compileOrderBy(sql, sort, strict)
    expect(Result.isFailure(r) && r.failure.message.includes(`at most ${MAX_SORT_KEYS}`)).toBe(true)
    const groupBy = Array(MAX_GROUP_FIELDS + 1).fill(Ast.fieldRef("name"))
    const g = compileAggregate(sql, { groupBy, select: [], orderBy: [] }, strict)
    expect(Result.isFailure(g)).toBe(true)
  })
})

describe("injection attempts stay bound parameters", () => {
  const payload = "x'); DROP TABLE records; --"
  const check = ([text, params]: readonly [string, ReadonlyArray<unknown>]) => {
    expect(text).not.toContain("DROP")
    expect(
      params.some((p) => typeof p === "string" && p.includes("DROP TABLE")),
      "payload is a parameter"
    ).toBe(true)
  }
  it("in values of every syntax", () => {
    check(where(genB(`name:"${payload}"`)))
    check(where(genB(`name:*${payload.replaceAll(",", "")}*`)))
    check(where(bracket(["name", payload])))
    check(where(bracket(["name[in]", payload])))
    check(where(bracket(["name[like]", payload])))
    check(where(genA(`name == "${payload}"`)))
    check(where(ql("name = :p", { p: payload })))
    check(where(ql(`name = 'x''); DROP TABLE records; --'`)))
    check(where(object({ name: { startswith: payload } })))
    check(where(object({ tags: { hasAll: [payload] } })))
    check(where(genB(`price:${payload.replaceAll(",", "")}`), schemaless))
  })
  it("in field names", () => {
    check(where(Ast.compare("eq", Ast.data(payload), Ast.literal("v")), schemaless))
    check(where(ql(`"${payload}" = 'v'`), schemaless))
    check(where(Ast.search("term", [Ast.name("a", payload)]), schemaless))
    const e = whereError(Ast.compare("eq", Ast.data(payload), Ast.literal("v")))
    expect(e.field).toBe(`data.${payload}`)
  })
  it("in sort keys", () => {
    check(compile(get(compileOrderBy(sql, [{ field: Ast.data(payload), direction: "desc" }], schemaless))))
    expect(Result.isFailure(parseSort(`name;${payload}`))).toBe(true)
  })
  it("in search terms", () => {
    // a search term reaches SQL as its quoted words (lib/SearchWords), bound: no quote of the payload survives
    for (const fields of [[Ast.name("name")], []]) {
      const [text, params] = where(Ast.search(payload, fields))
      expect(text).not.toContain("DROP")
      expect(params).toContain("'x' & 'drop' & 'table' & 'records':*")
    }
  })
  it("in cursors", () => {
    const keys = get(parseSort("name"))
    const forged = Buffer.from(JSON.stringify({ k: "name,id", v: [payload, "00000000-0000-4000-8000-000000000001"] })).toString("base64url")
    check(compile(get(compileCursor(sql, forged, keys, strict))))
  })
  it("in aggregate aliases and groups", () => {
    const c = get(
      compileAggregate(
        sql,
        {
          groupBy: [Ast.data(payload)],
          select: [{ _tag: "Aggregate", fn: "count", field: undefined, alias: payload }]
        },
        schemaless
      )
    )
    check(sql`SELECT ${c.select} FROM records r ${c.clauses}`.compile())
    expect(c.decode({ g0: "a", a0: 2 })).toStrictEqual({ [`data.${payload}`]: "a", [payload]: 2 })
  })
})

describe("sorting and cursors", () => {
  it("types sort keys, puts nulls last ascending and appends r.id", () => {
    const [text, params] = compile(get(compileOrderBy(sql, get(parseSort("-price,name,createdAt")), strict)))
    expect(text).toContain(
      "::numeric END) DESC NULLS FIRST,(r.data ->> $3::text) ASC NULLS LAST,r.created_at ASC NULLS LAST," + "r.id ASC NULLS LAST"
    )
    expect(params).toStrictEqual(["price", "price", "name"])
    const [byId] = compile(get(compileOrderBy(sql, get(parseSort("-id")), strict)))
    expect(byId).toContain("r.id DESC NULLS FIRST")
    expect(byId).not.toContain("r.id ASC")
  })

  it("refuses to sort by arrays and objects, and by unknown fields", () => {
    for (const s of ["tags", "address", "nope"]) {
      expect(Result.isFailure(compileOrderBy(sql, get(parseSort(s)), strict)), s).toBe(true)
    }
  })

  it("round-trips a cursor into a keyset predicate", () => {
    const keys = get(parseSort("-price,name"))
    const cursor = get(encodeCursor({ id: "00000000-0000-4000-8000-000000000001", data: { price: 5, name: "kiwi" } }, keys, strict))
    expect(cursor).toMatch(/^[A-Za-z0-9_-]+$/)
    const [text, params] = compile(get(compileCursor(sql, cursor, keys, strict)))
    expect(text).toContain("< $3::text::numeric")
    expect(params).toContain("kiwi")
    expect(params).toContain("00000000-0000-4000-8000-000000000001")
  })

  it("prefers the exact qcursor values the database selected", () => {
    const keys = get(parseSort("createdAt"))
    const cursor = get(
      encodeCursor(
        {
          id: "x",
          createdAt: new Date(0),
          qcursor: ["2024-01-01T00:00:00.123456+00:00", "00000000-0000-4000-8000-000000000001"]
        },
        keys,
        strict
      )
    )
    expect(compile(get(compileCursor(sql, cursor, keys, strict)))[1]).toContain("2024-01-01T00:00:00.123456+00:00")
  })

  const bad = (s: string) => Buffer.from(s).toString("base64url")
  const cursors: ReadonlyArray<readonly [string, string]> = [
    ["garbage", "not a cursor!"],
    ["empty", ""],
    ["not JSON", bad("{nope")],
    ["wrong shape", bad(JSON.stringify({ k: 1, v: [] }))],
    ["other sort", bad(JSON.stringify({ k: "name,id", v: ["a", "00000000-0000-4000-8000-000000000001"] }))],
    ["wrong length", bad(JSON.stringify({ k: "-price,id", v: ["1"] }))],
    ["non-numeric value", bad(JSON.stringify({ k: "-price,id", v: ["abc", "00000000-0000-4000-8000-000000000001"] }))],
    ["bad id", bad(JSON.stringify({ k: "-price,id", v: ["1", "1; DROP"] }))],
    ["object value", bad(JSON.stringify({ k: "-price,id", v: [{}, "00000000-0000-4000-8000-000000000001"] }))],
    ["huge", "a".repeat(10_000)]
  ]
  for (const [label, cursor] of cursors) {
    it(`rejects a ${label} cursor as a field error`, () => {
      const r = compileCursor(sql, cursor, get(parseSort("-price")), strict)
      if (Result.isSuccess(r)) return expect.fail("expected a cursor error")
      expect(r.failure._tag).toBe("QueryFieldError")
      expect(r.failure.field).toBe("cursor")
    })
  }
})

describe("aggregation", () => {
  it("compiles group fields, aggregates, positional GROUP BY and alias ordering", () => {
    const q = get(
      parseQueryLanguage(
        "SELECT category AS cat, COUNT(*) AS n, SUM(price) AS total, MIN(published) AS first, MAX(inStock) AS any " +
          "FROM products GROUP BY category ORDER BY total DESC, cat"
      )
    )
    const c = get(compileAggregate(sql, { groupBy: q.groupBy!, select: q.select!, orderBy: q.orderBy }, strict))
    const [text] = sql`SELECT ${c.select} FROM records r ${c.clauses}`.compile()
    expect(text).toContain("NULLIF((r.data -> $1::text), 'null'::jsonb) AS g0")
    expect(text).toContain("to_jsonb(count(*)) AS a0")
    expect(text).toContain("to_jsonb(sum(")
    expect(text).toContain("to_jsonb(min(troupe_datetime(")
    expect(text).toContain("to_jsonb(bool_or(")
    expect(text).toContain("GROUP BY 1 ORDER BY a1 DESC NULLS FIRST,g0 ASC NULLS LAST")
    expect(c.decode({ g0: "food", a0: 3, a1: 7.5, a2: null, a3: true })).toStrictEqual({
      cat: "food",
      n: 3,
      total: 7.5,
      first: null,
      any: true
    })
  })

  const errors: ReadonlyArray<readonly [string, string, string]> = [
    ["SELECT SUM(name) AS s FROM p", "name", "needs a number field"],
    ["SELECT name, COUNT(*) FROM p GROUP BY category", "name", "must appear in GROUP BY"],
    ["SELECT COUNT(*) AS n FROM p GROUP BY category ORDER BY price", "price", "must name a GROUP BY field"],
    ["SELECT MIN(tags) AS m FROM p", "tags", "array"],
    ["SELECT COUNT(nope) AS m FROM p", "nope", "Unknown field"]
  ]
  for (const [text, field, message] of errors) {
    it(`rejects ${text}`, () => {
      const q = get(parseQueryLanguage(text))
      const r = compileAggregate(sql, { groupBy: q.groupBy ?? [], select: q.select ?? [], orderBy: q.orderBy }, strict)
      if (Result.isSuccess(r)) return expect.fail("expected a field error")
      expect(r.failure.field).toBe(field)
      expect(r.failure.message).toContain(message)
    })
  }
})
