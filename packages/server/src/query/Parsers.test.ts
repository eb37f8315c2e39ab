import { describe, expect, it } from "@effect/vitest"
import { Result } from "effect"
import * as Ast from "./Ast.ts"
import { parseCondition, parseExpressionA } from "./ExpressionParser.ts"
import { parseQueryLanguage } from "./QueryLanguageParser.ts"
import { parseBracketParams, reservedParams } from "./BracketParams.ts"
import { parseAggregateOperations, parseAggregateRequest, parseFilterObject } from "./FilterObject.ts"
import { parseFilterB, parseSort } from "./FilterParser.ts"
import type { QueryParseError } from "./QueryErrors.ts"

const n = Ast.name
const d = Ast.data
const L = Ast.literal
const U = Ast.untyped

const ok = <A>(r: Result.Result<A, QueryParseError>): A => {
  if (Result.isFailure(r)) expect.fail(`unexpected parse error: ${r.failure.message} at ${r.failure.position}`)
  return r.success
}

const err = <A>(r: Result.Result<A, QueryParseError>): QueryParseError => {
  if (Result.isSuccess(r)) expect.fail(`expected a parse error, got ${JSON.stringify(r.success)}`)
  return r.failure
}

describe("parseFilterB", () => {
  const cases: ReadonlyArray<readonly [string, Ast.Expr]> = [
    ["price:10", Ast.compare("eq", n("price"), U("10"))],
    ["name:Bob", Ast.compare("eq", n("name"), L("Bob"))],
    ["name:John Smith", Ast.compare("eq", n("name"), L("John Smith"))],
    ["inStock:true", Ast.compare("eq", n("inStock"), U("true"))],
    ["category:null", Ast.isNull(n("category"))],
    ["category:!null", Ast.isNotNull(n("category"))],
    ["price:>10", Ast.compare("gt", n("price"), U("10"))],
    ["price:>=10.5", Ast.compare("gte", n("price"), U("10.5"))],
    ["price:<-3", Ast.compare("lt", n("price"), U("-3"))],
    ["price:<=7", Ast.compare("lte", n("price"), U("7"))],
    ["price:10..20", Ast.between(n("price"), U("10"), U("20"))],
    ["price:1.5..2.5", Ast.between(n("price"), U("1.5"), U("2.5"))],
    ["price:10..", Ast.compare("gte", n("price"), U("10"))],
    ["price:..20", Ast.compare("lte", n("price"), U("20"))],
    ["published:2024-01-01..2024-12-31", Ast.between(n("published"), L("2024-01-01"), L("2024-12-31"))],
    ["name:*app*", Ast.text("contains", n("name"), L("app"))],
    ["name:app*", Ast.text("startswith", n("name"), L("app"))],
    ["name:*app", Ast.text("endswith", n("name"), L("app"))],
    ["name:*", Ast.isNotNull(n("name"))],
    ["tags:[a,b]", Ast.list("in", n("tags"), [L("a"), L("b")])],
    ["tags:[ a , 2 ]", Ast.list("in", n("tags"), [L("a"), U("2")])],
    ["tags:![a,b]", Ast.list("nin", n("tags"), [L("a"), L("b")])],
    ["status:!archived", Ast.compare("ne", n("status"), L("archived"))],
    ["name:!*x*", Ast.not(Ast.text("contains", n("name"), L("x")))],
    ["price:!>5", Ast.not(Ast.compare("gt", n("price"), U("5")))],
    ['name:"a, b: [c]"', Ast.compare("eq", n("name"), L("a, b: [c]"))],
    ['name:"say \\"hi\\""', Ast.compare("eq", n("name"), L('say "hi"'))],
    ["zip:01234", Ast.compare("eq", n("zip"), { value: 1234, raw: "01234" })],
    ["data.address.city:Paris", Ast.compare("eq", d("address", "city"), L("Paris"))],
    [
      "price:>10,tags:[a,b],name:*x*",
      Ast.and([
        Ast.compare("gt", n("price"), U("10")),
        Ast.list("in", n("tags"), [L("a"), L("b")]),
        Ast.text("contains", n("name"), L("x"))
      ])
    ],
    [" price : > 10 , name:x ", Ast.and([Ast.compare("gt", n("price"), U("10")), Ast.compare("eq", n("name"), L("x"))])],
    ["", Ast.all]
  ]
  for (const [input, expected] of cases) {
    it(`parses ${JSON.stringify(input)}`, () => expect(ok(parseFilterB(input))).toStrictEqual(expected))
  }

  const errors: ReadonlyArray<readonly [string, number, string]> = [
    ["price", 5, "Expected ':'"],
    ["price:", 6, "Expected a value"],
    ["price:>", 7, "Expected a value after '>'"],
    [":5", 0, "Expected a field name"],
    ["pr ice:5", 2, "Unexpected character ' '"],
    ["a:1,,b:2", 4, "Expected a condition"],
    ["a:1,", 4, "Expected a condition"],
    ["tags:[a,b", 5, "Unclosed '['"],
    ["tags:[a,,b]", 8, "Expected a value in the list"],
    ["tags:a]", 6, "Unexpected ']'"],
    ['name:"abc', 5, "Unterminated string"],
    ["price:..", 6, "Expected a bound"],
    ["price:>null", 6, "Cannot compare with null"],
    ["a..b:1", 2, "Empty segment"],
    ["price:!", 7, "Expected a value after '!'"]
  ]
  for (const [input, position, message] of errors) {
    it(`reports ${JSON.stringify(input)} at ${position}`, () => {
      const e = err(parseFilterB(input))
      expect(e._tag).toBe("QueryParseError")
      expect(e.position).toBe(position)
      expect(e.message).toContain(message)
      expect(e.input).toBe(input)
    })
  }
})

describe("parseBracketParams", () => {
  const cases: ReadonlyArray<readonly [ReadonlyArray<readonly [string, string]>, Ast.Expr]> = [
    [[["status", "active"]], Ast.compare("eq", n("status"), L("active"))],
    [[["price", "10"]], Ast.compare("eq", n("price"), U("10"))],
    [[["name", ""]], Ast.compare("eq", n("name"), L(""))],
    [[["data.price[eq]", "10"]], Ast.compare("eq", d("price"), U("10"))],
    [[["data.price[ne]", "10"]], Ast.compare("ne", d("price"), U("10"))],
    [[["data.price[gt]", "10"]], Ast.compare("gt", d("price"), U("10"))],
    [[["data.age[gte]", "18"]], Ast.compare("gte", d("age"), U("18"))],
    [[["data.price[lt]", "10"]], Ast.compare("lt", d("price"), U("10"))],
    [[["data.price[lte]", "10"]], Ast.compare("lte", d("price"), U("10"))],
    [[["category[in]", "food,tech"]], Ast.list("in", n("category"), [L("food"), L("tech")])],
    [[["category[nin]", "food, tech"]], Ast.list("nin", n("category"), [L("food"), L("tech")])],
    [[["name[contains]", "a,b"]], Ast.text("contains", n("name"), L("a,b"))],
    [[["name[startswith]", "ap"]], Ast.text("startswith", n("name"), L("ap"))],
    [[["name[startsWith]", "ap"]], Ast.text("startswith", n("name"), L("ap"))],
    [[["name[endswith]", "le"]], Ast.text("endswith", n("name"), L("le"))],
    [[["name[like]", "a%"]], Ast.text("like", n("name"), L("a%"))],
    [[["tags[hasAny]", "a,b"]], Ast.list("hasAny", n("tags"), [L("a"), L("b")])],
    [[["tags[hasAll]", "a,b"]], Ast.list("hasAll", n("tags"), [L("a"), L("b")])],
    [[["category[eqAny]", "a,b"]], Ast.list("eqAny", n("category"), [L("a"), L("b")])],
    [[["category[eqNone]", "a,b"]], Ast.list("eqNone", n("category"), [L("a"), L("b")])],
    [[["tags[includes]", "a"]], Ast.includes(n("tags"), L("a"))],
    [[["price[between]", "1,5"]], Ast.between(n("price"), U("1"), U("5"))],
    [[["category[isNull]", "true"]], Ast.isNull(n("category"))],
    [[["category[isnull]", "false"]], Ast.isNotNull(n("category"))],
    [[["price_min", "10"]], Ast.compare("gte", n("price"), U("10"))],
    [[["price_max", "20"]], Ast.compare("lte", n("price"), U("20"))],
    [[["filter[status]", "active"]], Ast.compare("eq", n("status"), L("active"))],
    [[["filter[data.age][gt]", "3"]], Ast.compare("gt", d("age"), U("3"))],
    [
      [
        ["price_min", "10"],
        ["price_max", "20"],
        ["status", "active"]
      ],
      Ast.and([
        Ast.compare("gte", n("price"), U("10")),
        Ast.compare("lte", n("price"), U("20")),
        Ast.compare("eq", n("status"), L("active"))
      ])
    ],
    [[], Ast.all]
  ]
  for (const [params, expected] of cases) {
    it(`parses ${JSON.stringify(params)}`, () => expect(ok(parseBracketParams(params))).toStrictEqual(expected))
  }

  it("treats a declared `x_min` field as a field", () => {
    const parsed = ok(parseBracketParams([["score_min", "3"]], { knownFields: new Set(["score_min"]) }))
    expect(parsed).toStrictEqual(Ast.compare("eq", n("score_min"), U("3")))
  })

  it("lists the reserved parameters of the spec", () => {
    for (const p of ["page", "pageSize", "sort", "fields", "search", "searchFields", "all", "cursor", "filter"]) {
      expect(reservedParams).toContain(p)
    }
  })

  const errors: ReadonlyArray<readonly [string, string, number, string]> = [
    ["price[foo]", "1", 6, "Unknown operator 'foo'"],
    ["filter[price][foo]", "1", 14, "Unknown operator 'foo'"],
    ["price[gt", "1", 5, "Malformed parameter name"],
    ["price]", "1", 5, "Malformed parameter name"],
    ["pr ice", "1", 2, "Unexpected character ' '"],
    ["price[gt]", "", 10, "Expected a value"],
    ["tags[in]", "a,,b", 11, "Expected a value in the list"],
    ["name[contains]", "", 15, "needs text"],
    ["price[between]", "1", 15, "takes two values"],
    ["price[gt]", "null", 10, "Cannot compare with null"],
    ["category[isNull]", "maybe", 17, "true or false"]
  ]
  for (const [key, value, position, message] of errors) {
    it(`reports ${key}=${value} at ${position}`, () => {
      const e = err(
        parseBracketParams([
          ["ok", "1"],
          [key, value]
        ])
      )
      expect(e.input).toBe(`${key}=${value}`)
      expect(e.position).toBe(position)
      expect(e.message).toContain(message)
    })
  }
})

describe("parseFilterObject", () => {
  it("reads fields, operators, bracket keys, arrays and logic", () => {
    const parsed = ok(
      parseFilterObject({
        "data.price": { gte: 10, $lt: 20 },
        "data.tags": { hasAny: ["a", "b"] },
        status: "active",
        "data.x[gte]": 3,
        kind: ["a", "b"],
        note: null,
        $or: [{ a: 1 }, { b: { contains: "z" } }],
        $not: { c: true }
      })
    )
    expect(parsed).toStrictEqual(
      Ast.and([
        Ast.compare("gte", d("price"), L(10)),
        Ast.compare("lt", d("price"), L(20)),
        Ast.list("hasAny", d("tags"), [L("a"), L("b")]),
        Ast.compare("eq", n("status"), L("active")),
        Ast.compare("gte", d("x"), L(3)),
        Ast.list("in", n("kind"), [L("a"), L("b")]),
        Ast.isNull(n("note")),
        Ast.or([Ast.compare("eq", n("a"), L(1)), Ast.text("contains", n("b"), L("z"))]),
        Ast.not(Ast.compare("eq", n("c"), L(true)))
      ])
    )
  })

  it("accepts an absent filter", () => expect(ok(parseFilterObject(undefined))).toStrictEqual(Ast.all))

  const errors: ReadonlyArray<readonly [unknown, string]> = [
    [[1], "expected an object"],
    [{ price: { foo: 1 } }, "unknown operator 'foo'"],
    [{ price: { gt: { a: 1 } } }, "expected a string, number, boolean or null"],
    [{ price: { gt: null } }, "Cannot compare with null"],
    [{ "bad key": 1 }, "Unexpected character"],
    [{ $or: {} }, "expected an array"],
    [{ price: {} }, "expected at least one operator"]
  ]
  for (const [input, message] of errors) {
    it(`rejects ${JSON.stringify(input)}`, () => expect(err(parseFilterObject(input)).message).toContain(message))
  }
})

describe("parseSort", () => {
  it("reads directions and paths", () => {
    expect(ok(parseSort("-price,name,data.rank,+x,y:desc,z DESC"))).toStrictEqual([
      { field: n("price"), direction: "desc" },
      { field: n("name"), direction: "asc" },
      { field: d("rank"), direction: "asc" },
      { field: n("x"), direction: "asc" },
      { field: n("y"), direction: "desc" },
      { field: n("z"), direction: "desc" }
    ])
    expect(ok(parseSort(""))).toStrictEqual([])
  })
  const errors: ReadonlyArray<readonly [string, number]> = [
    ["price,,name", 6],
    ["-", 1],
    ["name;drop", 4],
    ["a,b c", 3]
  ]
  for (const [input, position] of errors) {
    it(`reports ${JSON.stringify(input)} at ${position}`, () => {
      expect(err(parseSort(input)).position).toBe(position)
    })
  }
})

describe("parseExpressionA", () => {
  const cases: ReadonlyArray<readonly [string, Ast.Expr]> = [
    ["price>500", Ast.compare("gt", n("price"), U("500"))],
    ["price >= 5", Ast.compare("gte", n("price"), U("5"))],
    ["price < -1.5", Ast.compare("lt", n("price"), U("-1.5"))],
    ["price <= 5", Ast.compare("lte", n("price"), U("5"))],
    ["inStock==true", Ast.compare("eq", n("inStock"), U("true"))],
    ["inStock = false", Ast.compare("eq", n("inStock"), U("false"))],
    ["name != 'x'", Ast.compare("ne", n("name"), L("x"))],
    ['name <> "x"', Ast.compare("ne", n("name"), L("x"))],
    ['name == "it\'s"', Ast.compare("eq", n("name"), L("it's"))],
    ["name == 'it''s'", Ast.compare("eq", n("name"), L("it's"))],
    ["name == 'it\\'s'", Ast.compare("eq", n("name"), L("it's"))],
    ["status == active", Ast.compare("eq", n("status"), L("active"))],
    ["category == null", Ast.isNull(n("category"))],
    ["category != NULL", Ast.isNotNull(n("category"))],
    ["tags.includes('x')", Ast.includes(n("tags"), L("x"))],
    ['data.tags.includes("x")', Ast.includes(d("tags"), L("x"))],
    ["name.contains('ap')", Ast.text("contains", n("name"), L("ap"))],
    ["name.startsWith('ap')", Ast.text("startswith", n("name"), L("ap"))],
    ["name.endsWith('le')", Ast.text("endswith", n("name"), L("le"))],
    ["inStock", Ast.compare("eq", n("inStock"), U("true"))],
    ["!inStock", Ast.not(Ast.compare("eq", n("inStock"), U("true")))],
    ["a==false AND b<50", Ast.and([Ast.compare("eq", n("a"), U("false")), Ast.compare("lt", n("b"), U("50"))])],
    [
      "a == 1 && b == 2 || c == 3",
      Ast.or([Ast.and([Ast.compare("eq", n("a"), U("1")), Ast.compare("eq", n("b"), U("2"))]), Ast.compare("eq", n("c"), U("3"))])
    ],
    [
      "a == 1 and (b == 2 or not c == 3)",
      Ast.and([Ast.compare("eq", n("a"), U("1")), Ast.or([Ast.compare("eq", n("b"), U("2")), Ast.not(Ast.compare("eq", n("c"), U("3")))])])
    ],
    ["NOT (a == 1 OR b == 2)", Ast.not(Ast.or([Ast.compare("eq", n("a"), U("1")), Ast.compare("eq", n("b"), U("2"))]))],
    ["price BETWEEN 1 AND 5", Ast.between(n("price"), U("1"), U("5"))],
    ["category IN ('a', 'b')", Ast.list("in", n("category"), [L("a"), L("b")])],
    ["my-field == 1", Ast.compare("eq", n("my-field"), U("1"))],
    ["", Ast.all]
  ]
  for (const [input, expected] of cases) {
    it(`parses ${JSON.stringify(input)}`, () => expect(ok(parseExpressionA(input))).toStrictEqual(expected))
  }

  const errors: ReadonlyArray<readonly [string, number, string]> = [
    ["price >", 7, "Expected a value after '>'"],
    ["price > 5 AND", 13, "Expected a field name"],
    ["(price > 5", 10, "Expected ')'"],
    ["price > 5)", 9, "Unexpected ')'"],
    ["price # 5", 6, "Unexpected character '#'"],
    ["name == 'abc", 8, "Unterminated string"],
    ["tags.foo('x')", 0, "Unknown function 'foo'"],
    ["tags.includes('x'", 17, "Expected ')'"],
    ["price > null", 8, "Cannot compare with null"],
    ["price 5", 6, "Expected an operator"],
    ["price > 5 name == 'x'", 10, "Unexpected 'name'"],
    ["a == :p", 5, "Unexpected character ':'"],
    ["12abc == 1", 2, "Unexpected character 'a'"]
  ]
  for (const [input, position, message] of errors) {
    it(`reports ${JSON.stringify(input)} at ${position}`, () => {
      const e = err(parseExpressionA(input))
      expect(e.position).toBe(position)
      expect(e.message).toContain(message)
    })
  }

  it("refuses deep nesting cleanly", () => {
    const deep = `${"(".repeat(3000)}a == 1${")".repeat(3000)}`
    expect(err(parseExpressionA(deep)).message).toContain("nested deeper")
    expect(err(parseExpressionA(`${"NOT ".repeat(3000)}a`)).message).toContain("nested deeper")
  })

  it("refuses oversized input", () => {
    expect(err(parseExpressionA(`${"a == 1 OR ".repeat(3000)}a == 1`)).message).toContain("longer than")
  })
})

describe("parseQueryLanguage", () => {
  it("parses every clause", () => {
    const q = ok(
      parseQueryLanguage(
        "select category, COUNT(*) AS n, sum(price) total, AVG(price), min(price) AS lo, MAX(data.price) AS hi " +
          "from Products where price > 10 and (inStock = true or name like 'a%') " +
          "group by category order by total desc, category limit 10 offset 20"
      )
    )
    expect(q).toStrictEqual({
      from: "Products",
      select: [
        { _tag: "SelectField", field: n("category"), alias: "category" },
        { _tag: "Aggregate", fn: "count", field: undefined, alias: "n" },
        { _tag: "Aggregate", fn: "sum", field: n("price"), alias: "total" },
        { _tag: "Aggregate", fn: "avg", field: n("price"), alias: "avg_price" },
        { _tag: "Aggregate", fn: "min", field: n("price"), alias: "lo" },
        { _tag: "Aggregate", fn: "max", field: d("price"), alias: "hi" }
      ],
      where: Ast.and([
        Ast.compare("gt", n("price"), U("10")),
        Ast.or([Ast.compare("eq", n("inStock"), U("true")), Ast.text("like", n("name"), L("a%"))])
      ]),
      groupBy: [n("category")],
      orderBy: [
        { field: n("total"), direction: "desc" },
        { field: n("category"), direction: "asc" }
      ],
      limit: 10,
      offset: 20,
      include: []
    })
  })

  const where: ReadonlyArray<readonly [string, Ast.Expr]> = [
    ["a = 1", Ast.compare("eq", n("a"), U("1"))],
    ["a == 1", Ast.compare("eq", n("a"), U("1"))],
    ["a != 1", Ast.compare("ne", n("a"), U("1"))],
    ["a <> 1", Ast.compare("ne", n("a"), U("1"))],
    ["a > 1", Ast.compare("gt", n("a"), U("1"))],
    ["a >= 1", Ast.compare("gte", n("a"), U("1"))],
    ["a < 1", Ast.compare("lt", n("a"), U("1"))],
    ["a <= 1", Ast.compare("lte", n("a"), U("1"))],
    ["a BETWEEN 1 AND 5", Ast.between(n("a"), U("1"), U("5"))],
    ["a NOT BETWEEN 1 AND 5", Ast.not(Ast.between(n("a"), U("1"), U("5")))],
    ["a IN (1, 'x', null)", Ast.list("in", n("a"), [U("1"), L("x"), U("null")])],
    ["a NOT IN ('x')", Ast.list("nin", n("a"), [L("x")])],
    ["a LIKE 'x%'", Ast.text("like", n("a"), L("x%"))],
    ["a ilike 'x%'", Ast.text("ilike", n("a"), L("x%"))],
    ["a NOT LIKE 'x%'", Ast.not(Ast.text("like", n("a"), L("x%")))],
    ["a IS NULL", Ast.isNull(n("a"))],
    ["a is not null", Ast.isNotNull(n("a"))],
    ["tags CONTAINS 'x'", Ast.includes(n("tags"), L("x"))],
    ["SEARCH('red apple') IN (name, data.description)", Ast.search("red apple", [n("name"), d("description")])],
    ["search('x')", Ast.search("x", [])],
    ["\"my field\" = 'x'", Ast.compare("eq", n("my field"), L("x"))],
    ["data.address.city = 'Paris'", Ast.compare("eq", d("address", "city"), L("Paris"))],
    ["createdAt > '2024-01-01'", Ast.compare("gt", n("createdAt"), L("2024-01-01"))],
    ["NOT a = 1 OR b = 2", Ast.or([Ast.not(Ast.compare("eq", n("a"), U("1"))), Ast.compare("eq", n("b"), U("2"))])]
  ]
  for (const [input, expected] of where) {
    it(`parses WHERE ${input}`, () => {
      expect(ok(parseQueryLanguage(`FROM x WHERE ${input}`)).where).toStrictEqual(expected)
      expect(ok(parseCondition(input))).toStrictEqual(expected)
    })
  }

  it("binds parameters", () => {
    const q = ok(
      parseQueryLanguage(
        "FROM p WHERE price BETWEEN :lo AND :hi AND category IN :cats AND name = :name AND x IN (:one, 2) " + "LIMIT :n OFFSET :o",
        { lo: 1, hi: 5, cats: ["a", "b"], name: "it's", one: null, n: 3, o: 6 }
      )
    )
    expect(q.where).toStrictEqual(
      Ast.and([
        Ast.between(n("price"), L(1), L(5)),
        Ast.list("in", n("category"), [L("a"), L("b")]),
        Ast.compare("eq", n("name"), L("it's")),
        Ast.list("in", n("x"), [L(null), U("2")])
      ])
    )
    expect(q.limit).toBe(3)
    expect(q.offset).toBe(6)
  })

  it("reads a slug of every valid shape whole, parts that start with digits included", () => {
    const slugs = ["books", "3d", "2024", "1e5", "1e-5", "items-3d", "3d-models", "acc-items-09cb14e9", "items-2024"]
    for (const slug of [...slugs, "2024-items", "v2-items", "a-1-b-2c", "x-0x1f", "9e-items"]) {
      expect(ok(parseQueryLanguage(`FROM ${slug} WHERE n = 1 LIMIT 2`)).from).toBe(slug)
      expect(ok(parseQueryLanguage(`FROM posts INCLUDE author FROM ${slug}`)).include[0]!.from).toBe(slug)
    }
    expect(err(parseQueryLanguage("FROM books WHERE n = 3d")).message).toContain("found '3d'")
    expect(err(parseQueryLanguage("FROM 1.5abc")).message).toContain("Unexpected character 'a'")
  })

  it("parses FROM targets and INCLUDE", () => {
    expect(ok(parseQueryLanguage("FROM blog-posts")).from).toBe("blog-posts")
    expect(ok(parseQueryLanguage("FROM 'Blog Posts'")).from).toBe("Blog Posts")
    expect(ok(parseQueryLanguage('from "Blog Posts"')).from).toBe("Blog Posts")
    expect(ok(parseQueryLanguage("FROM Posts INCLUDE author WHERE published = true"))).toStrictEqual({
      from: "Posts",
      where: Ast.compare("eq", n("published"), U("true")),
      orderBy: [],
      include: [{ field: "author" }]
    })
    expect(
      ok(parseQueryLanguage("FROM Posts WHERE a = 1 INCLUDE author, editor INCLUDE comments FROM Comments WHERE approved = true")).include
    ).toStrictEqual([
      { field: "author" },
      { field: "editor" },
      { field: "comments", from: "Comments", where: Ast.compare("eq", n("approved"), U("true")) }
    ])
    expect(ok(parseQueryLanguage("SELECT * FROM x"))).toStrictEqual({ from: "x", orderBy: [], include: [] })
    expect(Ast.isAggregate(ok(parseQueryLanguage("SELECT a, b FROM x")))).toBe(false)
    expect(Ast.isAggregate(ok(parseQueryLanguage("SELECT a, COUNT(*) FROM x")))).toBe(true)
    expect(Ast.isAggregate(ok(parseQueryLanguage("SELECT a FROM x GROUP BY a")))).toBe(true)
    expect(ok(parseQueryLanguage("FROM x SELECT COUNT(*)")).select).toStrictEqual([
      { _tag: "Aggregate", fn: "count", field: undefined, alias: "count" }
    ])
  })

  const errors: ReadonlyArray<readonly [string, number, string, Record<string, unknown>?]> = [
    ["WHERE a = 1", 0, "Expected FROM"],
    ["FROM", 4, "Expected a structure"],
    ["FROM x WHERE", 12, "Expected a field name"],
    ["FROM x WHERE a = 1 WHERE b = 2", 19, "Duplicate WHERE"],
    ['FROM x WHERE a = "b"', 17, "Expected a value after '='"],
    ["FROM x WHERE a = :p", 17, "Missing parameter :p"],
    ["FROM x WHERE a = :p", 17, "must be a string", { p: { nested: true } }],
    ["FROM x WHERE a = :p", 17, "must be a string", { p: [1] }],
    ["FROM x WHERE a BETWEEN 1 5", 25, "Expected AND"],
    ["FROM x WHERE a IN ()", 19, "at least one value"],
    ["FROM x WHERE a IN (1, 2", 23, "Expected ')'"],
    ["FROM x WHERE a IS 5", 18, "Expected NULL"],
    ["FROM x WHERE SEARCH(5)", 20, "SEARCH takes a text"],
    ["FROM x ORDER price", 13, "Expected BY"],
    ["FROM x LIMIT -1", 13, "Expected a number"],
    ["FROM x LIMIT 1.5", 13, "non-negative integer"],
    ["FROM x LIMIT :n", 13, "non-negative integer", { n: "5" }],
    ["SELECT SUM(*) FROM x", 11, "SUM(*) is not allowed"],
    ["SELECT a, a FROM x", 10, "Duplicate column name 'a'"],
    ["SELECT COUNT(* FROM x", 15, "Expected ')'"],
    ["FROM x GROUP BY", 15, "Expected a field name"],
    ["FROM x WHERE a = 1 FOO", 19, "Unexpected 'FOO'"],
    ["FROM x INCLUDE", 14, "Expected a reference field"],
    ["FROM x WHERE a = 'x", 17, "Unterminated string"]
  ]
  for (const [input, position, message, params] of errors) {
    it(`reports ${JSON.stringify(input)} at ${position}`, () => {
      const e = err(parseQueryLanguage(input, params ?? {}))
      expect(e.position).toBe(position)
      expect(e.message).toContain(message)
      expect(e.input).toBe(input)
    })
  }
})

describe("aggregate requests", () => {
  it("parses operations and the request body", () => {
    const r = ok(
      parseAggregateRequest({
        filter: { status: "active" },
        groupBy: ["data.category"],
        operations: {
          n: { count: "*" },
          total: { sum: "data.price" },
          mean: { avg: "price" },
          lo: { min: "price" },
          hi: { max: "price" }
        }
      })
    )
    expect(r).toStrictEqual({
      where: Ast.compare("eq", n("status"), L("active")),
      groupBy: [d("category")],
      aggregates: [
        { _tag: "Aggregate", fn: "count", field: undefined, alias: "n" },
        { _tag: "Aggregate", fn: "sum", field: d("price"), alias: "total" },
        { _tag: "Aggregate", fn: "avg", field: n("price"), alias: "mean" },
        { _tag: "Aggregate", fn: "min", field: n("price"), alias: "lo" },
        { _tag: "Aggregate", fn: "max", field: n("price"), alias: "hi" }
      ]
    })
  })
  const errors: ReadonlyArray<readonly [unknown, string]> = [
    [{ x: { median: "price" } }, "unknown operation 'median'"],
    [{ x: { sum: 5 } }, "expected a field name"],
    [{ x: { sum: "a", avg: "b" } }, "exactly one"],
    [{ x: { sum: "bad name" } }, "Unexpected character"],
    [{}, "at least one operation"],
    ["sum", "expected an object"]
  ]
  for (const [ops, message] of errors) {
    it(`rejects ${JSON.stringify(ops)}`, () => expect(err(parseAggregateOperations(ops)).message).toContain(message))
  }
  it("rejects a bad groupBy", () => {
    expect(err(parseAggregateRequest({ groupBy: [1], operations: { n: { count: "*" } } })).message).toContain("groupBy")
  })
})
