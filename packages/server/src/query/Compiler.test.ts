import { PgClient } from "@effect/sql-pg"
import { assert, describe, it } from "@effect/vitest"
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
import { parseExpressionA, parseQueryLanguage } from "./ExpressionParser.ts"
import { parseBracketParams, parseFilterB, parseFilterObject, parseSort } from "./FilterParser.ts"

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
  if (Result.isFailure(r)) return assert.fail(`unexpected field error: ${r.failure.message}`)
  return compile(r.success)
}

const whereError = (expr: Ast.Expr, ctx: CompileContext = strict) => {
  const r = compileWhere(sql, expr, ctx)
  if (Result.isSuccess(r)) return assert.fail(`expected a field error, got ${compile(r.success)[0]}`)
  return r.failure
}

const get = <A, E>(r: Result.Result<A, E>): A => {
  if (Result.isFailure(r)) return assert.fail(`unexpected failure: ${JSON.stringify(r.failure)}`)
  return r.success
}

const genB = (s: string) => get(parseFilterB(s))
const genA = (s: string) => get(parseExpressionA(s))
const ql = (s: string, p: Record<string, unknown> = {}) => get(parseQueryLanguage(`FROM products WHERE ${s}`, p)).where!
const bracket = (...ps: Array<readonly [string, string]>) => get(parseBracketParams(ps))
const object = (o: unknown) => get(parseFilterObject(o))

describe("equivalent forms compile to the same SQL", () => {
  const groups: ReadonlyArray<readonly [string, ReadonlyArray<Ast.Expr>]> = [
    ["price > 10", [
      genB("price:>10"),
      bracket(["price[gt]", "10"]),
      bracket(["data.price[gt]", "10"]),
      genA("price > 10"),
      ql("price > 10"),
      ql("data.price > :p", { p: 10 }),
      object({ "data.price": { gt: 10 } })
    ]],
    ["name = Bob", [
      genB("name:Bob"),
      bracket(["name", "Bob"]),
      genA("name == 'Bob'"),
      genA("name == Bob"),
      ql("name = 'Bob'"),
      object({ name: "Bob" })
    ]],
    ["category in", [
      genB("category:[food,tech]"),
      bracket(["category[in]", "food,tech"]),
      bracket(["category[eqAny]", "food,tech"]),
      genA("category IN ('food', 'tech')"),
      ql("category IN ('food', 'tech')"),
      ql("category IN :c", { c: ["food", "tech"] }),
      object({ category: ["food", "tech"] })
    ]],
    ["category not in", [
      genB("category:![food,tech]"),
      bracket(["category[nin]", "food,tech"]),
      bracket(["category[eqNone]", "food,tech"]),
      ql("category NOT IN ('food', 'tech')")
    ]],
    ["price between", [
      genB("price:10..20"),
      bracket(["price[between]", "10,20"]),
      ql("price BETWEEN 10 AND 20"),
      object({ price: { between: [10, 20] } })
    ]],
    ["price range", [
      genB("price:>=10,price:<=20"),
      genB("price:10..,price:..20"),
      bracket(["price_min", "10"], ["price_max", "20"]),
      bracket(["price[gte]", "10"], ["price[lte]", "20"]),
      genA("price >= 10 AND price <= 20"),
      ql("price >= 10 AND price <= 20")
    ]],
    ["status ne", [
      genB("status:!archived"),
      bracket(["status[ne]", "archived"]),
      genA("status != 'archived'"),
      ql("status <> 'archived'")
    ]],
    ["name contains", [
      genB("name:*app*"),
      bracket(["name[contains]", "app"]),
      genA("name.contains('app')"),
      object({ name: { contains: "app" } })
    ]],
    ["tags includes", [
      genB("tags:x"),
      bracket(["tags", "x"]),
      bracket(["tags[includes]", "x"]),
      bracket(["tags[hasAny]", "x"]),
      genA("tags.includes('x')"),
      ql("tags CONTAINS 'x'"),
      object({ tags: { includes: "x" } })
    ]],
    ["category is null", [
      genB("category:null"),
      bracket(["category[isNull]", "true"]),
      genA("category == null"),
      ql("category IS NULL"),
      object({ category: null })
    ]],
    ["inStock true", [
      genB("inStock:true"),
      bracket(["inStock", "true"]),
      genA("inStock == true"),
      genA("inStock"),
      ql("inStock = true"),
      object({ inStock: true })
    ]],
    ["zip keeps its leading zero", [
      genB("zip:01234"),
      bracket(["zip", "01234"]),
      genA("zip == '01234'"),
      ql("zip = '01234'")
    ]]
  ]
  for (const [label, exprs] of groups) {
    it(label, () => {
      const [first, ...rest] = exprs.map((e) => where(e))
      for (const other of rest) assert.deepStrictEqual(other, first)
    })
  }
})

describe("typed comparisons", () => {
  it("casts numbers, datetimes and booleans by property type, all values bound", () => {
    const [text, params] = where(genB("price:>10,published:>2024-01-01T00:00:00Z,inStock:!true"))
    assert.include(text, "::numeric END) > $3::text::numeric")
    assert.include(text, "troupe_datetime((r.data ->> $4::text)) > troupe_datetime($5::text)")
    assert.include(text, "@> $")
    assert.deepStrictEqual(params, [
      "price",
      "price",
      "10",
      "published",
      "2024-01-01T00:00:00Z",
      "{\"inStock\":true}"
    ])
  })

  it("maps columns and constant columns", () => {
    const [text, params] = where(genB(
      "id:[00000000-0000-4000-8000-000000000001],createdAt:>2024-01-01,version:>=2," +
        "recordSlug:products,workspaceSlug:acme,createdBy:u1"
    ))
    assert.include(text, "r.id IN ($1::text::uuid)")
    assert.include(text, "r.created_at > troupe_datetime($2::text)")
    assert.include(text, "r.version >= $3::text::numeric")
    assert.include(text, "$4::text = $5::text")
    assert.include(text, "r.created_by = $8::text")
    assert.deepStrictEqual(params.slice(3, 7), ["products", "products", "acme", "acme"])
  })

  it("resolves a bare column name to a declared property of that name", () => {
    const ctx: CompileContext = { ...strict, properties: propertyMap([{ name: "status", type: "number" }]) }
    assert.include(where(genB("status:3"), ctx)[1], "{\"status\":3}")
    assert.include(where(genB("status:active"))[0], "r.status")
    // id is always the column
    assert.include(where(genB("id:00000000-0000-4000-8000-000000000001"), ctx)[0], "r.id =")
  })

  it("addresses nested paths with one bound key per level", () => {
    const [text, params] = where(genB("address.city:>M"))
    assert.include(text, "(r.data -> $1::text ->> $2::text) > $3::text")
    assert.deepStrictEqual(params, ["address", "city", "M"])
    // inside a free-form object: compared as text
    const [freeText, freeParams] = where(genB("meta.level.deep:5"))
    assert.include(freeText, "(r.data -> $1::text -> $2::text ->> $3::text) = $4::text")
    assert.deepStrictEqual(freeParams, ["meta", "level", "deep", "5"])
  })

  it("compares everything as text in schemaless mode", () => {
    const [text, params] = where(genB("price:>10,anything.nested:x,tags:[a,b]"), schemaless)
    assert.notInclude(text, "numeric")
    assert.notInclude(text, "@>")
    assert.include(text, "(r.data ->> $1::text) > $2::text")
    assert.deepStrictEqual(params, ["price", "10", "anything", "nested", "x", "tags", "a", "b"])
  })

  it("uses jsonb containment for arrays, typed by item type", () => {
    assert.deepStrictEqual(where(bracket(["scores[hasAll]", "1,2.5"]))[1], ["{\"scores\":[1,2.5]}"])
    assert.deepStrictEqual(where(bracket(["tags[hasAny]", "a,b"]))[1], ["{\"tags\":[\"a\"]}", "{\"tags\":[\"b\"]}"])
    assert.deepStrictEqual(where(bracket(["editors[includes]", "u1"]))[1], ["{\"editors\":[\"u1\"]}"])
    assert.include(where(bracket(["tags[hasAny]", "a"]), schemaless)[0], "jsonb_array_elements_text")
  })

  it("escapes LIKE wildcards in contains / startswith / endswith", () => {
    assert.deepStrictEqual(where(bracket(["name[contains]", "50%_off\\"]))[1], ["name", "%50\\%\\_off\\\\%"])
    assert.deepStrictEqual(where(bracket(["name[startswith]", "a%"]))[1], ["name", "a\\%%"])
    assert.deepStrictEqual(where(bracket(["name[endswith]", "_z"]))[1], ["name", "%\\_z"])
    assert.deepStrictEqual(where(ql("name LIKE 'a%'"))[1], ["name", "a%"])
  })

  it("searches with full text and a substring fallback, substring only for short terms", () => {
    const [long, longParams] = where(Ast.search("red apple", [Ast.name("name")]))
    assert.include(long, "to_tsvector('simple', coalesce(")
    assert.include(long, "plainto_tsquery('simple', $")
    assert.include(long, "ILIKE")
    assert.include(longParams, "red apple")
    assert.include(longParams, "%red apple%")
    const [short] = where(Ast.search("ap", [Ast.name("name")]))
    assert.notInclude(short, "tsquery")
    assert.include(short, "ILIKE")
    assert.include(where(Ast.search("apple", []))[0], "jsonb_to_tsvector")
    assert.include(where(Ast.search("apple", []), { ...strict, defaultSearchField: "name" })[1], "name")
  })

  it("matches everything for an empty filter", () => assert.include(where(Ast.all)[0], "TRUE"))
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
      assert.strictEqual(e._tag, "QueryFieldError")
      assert.strictEqual(e.field, field)
      assert.include(e.message, message)
    })
  }

  it("allows any field in schemaless mode", () => {
    assert.isTrue(Result.isSuccess(compileWhere(sql, genB("nope:1,price.x:2"), schemaless)))
  })
})

describe("size limits: long lists and big conditions are field errors, never the driver's", () => {
  const numbers = (n: number) => Array.from({ length: n }, (_, i) => i)

  it("a list holds at most MAX_LIST_VALUES values, in every syntax", () => {
    assert.isTrue(Result.isSuccess(compileWhere(sql, object({ price: { in: numbers(MAX_LIST_VALUES) } }), strict)))
    const lists = [
      object({ price: { in: numbers(MAX_LIST_VALUES + 1) } }),
      bracket(["tags[hasAny]", numbers(MAX_LIST_VALUES + 1).join(",")]),
      genB(`price:![${numbers(MAX_LIST_VALUES + 1).join(",")}]`),
      ql("price IN :xs", { xs: numbers(MAX_LIST_VALUES + 1) })
    ]
    for (const expr of lists) {
      const e = whereError(expr)
      assert.include(e.message, `at most ${MAX_LIST_VALUES} values`)
      assert.oneOf(e.field, ["price", "tags"])
    }
  })

  it("a condition holds at most MAX_CONDITION_TERMS comparisons and values; the error names no field", () => {
    const or = (n: number) => object({ $or: numbers(n).map((i) => ({ price: { gt: i } })) })
    assert.isTrue(Result.isSuccess(compileWhere(sql, or(MAX_CONDITION_TERMS), strict)))
    const e = whereError(or(10_000))
    assert.strictEqual(e.field, "")
    assert.include(e.message, `at most ${MAX_CONDITION_TERMS}`)
    assert.strictEqual(whereError(object({ $or: numbers(3000).map(() => ({ name: { isNull: true } })) })).field, "")
  })

  it("sorts, groups and selections are bounded", () => {
    const sort = get(parseSort(Array(MAX_SORT_KEYS + 1).fill("price").join(",")))
    const r = compileOrderBy(sql, sort, strict)
    assert.isTrue(Result.isFailure(r) && r.failure.message.includes(`at most ${MAX_SORT_KEYS}`))
    const groupBy = Array(MAX_GROUP_FIELDS + 1).fill(Ast.fieldRef("name"))
    const g = compileAggregate(sql, { groupBy, select: [], orderBy: [] }, strict)
    assert.isTrue(Result.isFailure(g))
  })
})

describe("injection attempts stay bound parameters", () => {
  const payload = "x'); DROP TABLE records; --"
  const check = ([text, params]: readonly [string, ReadonlyArray<unknown>]) => {
    assert.notInclude(text, "DROP")
    assert.isTrue(params.some((p) => typeof p === "string" && p.includes("DROP TABLE")), "payload is a parameter")
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
    assert.strictEqual(e.field, `data.${payload}`)
  })
  it("in sort keys", () => {
    check(compile(get(compileOrderBy(sql, [{ field: Ast.data(payload), direction: "desc" }], schemaless))))
    assert.isTrue(Result.isFailure(parseSort(`name;${payload}`)))
  })
  it("in search terms", () => {
    check(where(Ast.search(payload, [Ast.name("name")])))
    check(where(Ast.search(payload, [])))
  })
  it("in cursors", () => {
    const keys = get(parseSort("name"))
    const forged = Buffer.from(JSON.stringify({ k: "name,id", v: [payload, "00000000-0000-4000-8000-000000000001"] }))
      .toString("base64url")
    check(compile(get(compileCursor(sql, forged, keys, strict))))
  })
  it("in aggregate aliases and groups", () => {
    const c = get(compileAggregate(sql, {
      groupBy: [Ast.data(payload)],
      select: [{ _tag: "Aggregate", fn: "count", field: undefined, alias: payload }]
    }, schemaless))
    check(sql`SELECT ${c.select} FROM records r ${c.clauses}`.compile())
    assert.deepStrictEqual(c.decode({ g0: "a", a0: 2 }), { [`data.${payload}`]: "a", [payload]: 2 })
  })
})

describe("sorting and cursors", () => {
  it("types sort keys, puts nulls last ascending and appends r.id", () => {
    const [text, params] = compile(get(compileOrderBy(sql, get(parseSort("-price,name,createdAt")), strict)))
    assert.include(
      text,
      "::numeric END) DESC NULLS FIRST,(r.data ->> $3::text) ASC NULLS LAST,r.created_at ASC NULLS LAST," +
        "r.id ASC NULLS LAST"
    )
    assert.deepStrictEqual(params, ["price", "price", "name"])
    const [byId] = compile(get(compileOrderBy(sql, get(parseSort("-id")), strict)))
    assert.include(byId, "r.id DESC NULLS FIRST")
    assert.notInclude(byId, "r.id ASC")
  })

  it("refuses to sort by arrays and objects, and by unknown fields", () => {
    for (const s of ["tags", "address", "nope"]) {
      assert.isTrue(Result.isFailure(compileOrderBy(sql, get(parseSort(s)), strict)), s)
    }
  })

  it("round-trips a cursor into a keyset predicate", () => {
    const keys = get(parseSort("-price,name"))
    const cursor = get(encodeCursor(
      { id: "00000000-0000-4000-8000-000000000001", data: { price: 5, name: "kiwi" } },
      keys,
      strict
    ))
    assert.match(cursor, /^[A-Za-z0-9_-]+$/)
    const [text, params] = compile(get(compileCursor(sql, cursor, keys, strict)))
    assert.include(text, "< $3::text::numeric")
    assert.include(params, "kiwi")
    assert.include(params, "00000000-0000-4000-8000-000000000001")
  })

  it("prefers the exact qcursor values the database selected", () => {
    const keys = get(parseSort("createdAt"))
    const cursor = get(encodeCursor(
      {
        id: "x",
        createdAt: new Date(0),
        qcursor: ["2024-01-01T00:00:00.123456+00:00", "00000000-0000-4000-8000-000000000001"]
      },
      keys,
      strict
    ))
    assert.include(compile(get(compileCursor(sql, cursor, keys, strict)))[1], "2024-01-01T00:00:00.123456+00:00")
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
      if (Result.isSuccess(r)) return assert.fail("expected a cursor error")
      assert.strictEqual(r.failure._tag, "QueryFieldError")
      assert.strictEqual(r.failure.field, "cursor")
    })
  }
})

describe("aggregation", () => {
  it("compiles group fields, aggregates, positional GROUP BY and alias ordering", () => {
    const q = get(parseQueryLanguage(
      "SELECT category AS cat, COUNT(*) AS n, SUM(price) AS total, MIN(published) AS first, MAX(inStock) AS any " +
        "FROM products GROUP BY category ORDER BY total DESC, cat"
    ))
    const c = get(compileAggregate(sql, { groupBy: q.groupBy!, select: q.select!, orderBy: q.orderBy }, strict))
    const [text] = sql`SELECT ${c.select} FROM records r ${c.clauses}`.compile()
    assert.include(text, "NULLIF((r.data -> $1::text), 'null'::jsonb) AS g0")
    assert.include(text, "to_jsonb(count(*)) AS a0")
    assert.include(text, "to_jsonb(sum(")
    assert.include(text, "to_jsonb(min(troupe_datetime(")
    assert.include(text, "to_jsonb(bool_or(")
    assert.include(text, "GROUP BY 1 ORDER BY a1 DESC NULLS FIRST,g0 ASC NULLS LAST")
    assert.deepStrictEqual(c.decode({ g0: "food", a0: 3, a1: 7.5, a2: null, a3: true }), {
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
      if (Result.isSuccess(r)) return assert.fail("expected a field error")
      assert.strictEqual(r.failure.field, field)
      assert.include(r.failure.message, message)
    })
  }
})
