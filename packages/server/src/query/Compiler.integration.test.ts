// Runs compiled SQL against a real, migrated database: embedded PGlite always, and PostgreSQL too when DATABASE_URL
// is set (a fresh database, dropped afterwards). Same rows, same assertions, so the SQL is proven on both.
import { expect, layer } from "@effect/vitest"
import { Effect, Layer, Result } from "effect"
import { SqlClient } from "effect/sql"
import { MigratedPglite, MigratedPostgres } from "../../../../test/support/TestDatabase.ts"
import type * as Ast from "./Ast.ts"
import {
  type CompileContext,
  compileAggregate,
  compileCursor,
  compileCursorSelect,
  compileOrderBy,
  compileWhere,
  CURSOR_COLUMN,
  encodeCursor,
  propertyMap
} from "./Compiler.ts"
import { parseExpressionA } from "./ExpressionParser.ts"
import { parseQueryLanguage } from "./QueryLanguageParser.ts"
import { parseBracketParams } from "./BracketParams.ts"
import { parseAggregateRequest } from "./FilterObject.ts"
import { parseFilterB, parseSort } from "./FilterParser.ts"

const properties = propertyMap([
  { name: "name", type: "string" },
  { name: "description", type: "string" },
  { name: "price", type: "number" },
  { name: "qty", type: "number" },
  { name: "inStock", type: "boolean" },
  { name: "tags", type: "array", items: { type: "string" } },
  { name: "scores", type: "array", items: { type: "number" } },
  { name: "category", type: "string" },
  { name: "published", type: "datetime" },
  {
    name: "address",
    type: "object",
    properties: [
      { name: "city", type: "string" },
      { name: "zip", type: "string" }
    ]
  },
  { name: "meta", type: "object" }
])
const ctx: CompileContext = { mode: "strict", properties, recordSlug: "products", workspace: "acme" }
const schemaless: CompileContext = { ...ctx, mode: "schemaless", properties: new Map() }

const ROBERT = "Robert'); DROP TABLE records;--"

interface Fixture {
  readonly data: Record<string, unknown>
  readonly status?: string
  readonly version?: number
  readonly createdBy?: string
  /** hours after the base time; 7 and 8 share one to exercise the id tiebreaker */
  readonly hour: number
}

const rows: ReadonlyArray<Fixture> = [
  {
    hour: 1,
    createdBy: "alice",
    data: {
      name: "apple",
      description: "A crisp red apple from Normandy",
      price: 1.5,
      qty: 10,
      inStock: true,
      tags: ["fruit", "red"],
      scores: [5, 3],
      category: "food",
      published: "2024-01-10T10:00:00Z",
      address: { city: "Paris", zip: "75001" }
    }
  },
  {
    hour: 2,
    createdBy: "alice",
    data: {
      name: "banana",
      description: "Sweet yellow banana",
      price: 0.5,
      qty: 0,
      inStock: true,
      tags: ["fruit", "yellow"],
      scores: [4],
      category: "food",
      published: "2024-02-01T00:00:00Z",
      address: { city: "Lyon", zip: "69001" }
    }
  },
  {
    hour: 3,
    createdBy: "alice",
    data: {
      name: "carrot",
      price: 0.8,
      inStock: false,
      tags: ["vegetable", "orange"],
      scores: [],
      category: "food",
      published: "2024-03-15T12:30:00Z",
      address: { city: "Paris", zip: "75002" }
    }
  },
  {
    hour: 4,
    createdBy: "alice",
    data: {
      name: "laptop",
      description: "Fast laptop with 16GB memory",
      price: 1200,
      qty: 5,
      inStock: true,
      tags: ["electronics", "computer"],
      scores: [9, 8],
      category: "tech",
      published: "2023-11-20T08:00:00Z",
      address: { city: "Berlin", zip: "10115" }
    }
  },
  {
    hour: 5,
    createdBy: "alice",
    version: 3,
    data: {
      name: "phone",
      price: 800,
      qty: 0,
      inStock: false,
      tags: ["electronics", "mobile"],
      scores: [7],
      category: "tech",
      published: "2024-05-05T05:05:05Z"
    }
  },
  { hour: 6, data: { name: "tablet", price: 450, qty: 3, inStock: true, tags: ["electronics"], category: "tech" } },
  {
    hour: 7,
    data: {
      name: "chair",
      price: 75,
      qty: 20,
      inStock: true,
      tags: ["furniture"],
      category: "home",
      published: "2024-06-01T00:00:00+02:00"
    }
  },
  {
    hour: 7,
    data: {
      name: "table",
      price: 150,
      qty: 2,
      inStock: false,
      tags: ["furniture", "wood"],
      category: "home",
      published: "2024-06-01T00:00:00Z"
    }
  },
  {
    hour: 9,
    data: {
      name: "lamp",
      price: 35.25,
      qty: 7,
      inStock: true,
      tags: ["home", "light"],
      category: "home",
      published: "2024-07-04T00:00:00Z"
    }
  },
  {
    hour: 10,
    data: {
      name: "100% cotton shirt",
      price: 25,
      qty: 15,
      inStock: true,
      tags: ["clothing"],
      category: "fashion"
    }
  },
  {
    hour: 11,
    data: {
      name: "under_score",
      price: 10,
      qty: 1,
      inStock: true,
      tags: ["clothing"],
      category: "fashion",
      meta: { level: { deep: 5 } }
    }
  },
  {
    hour: 12,
    data: {
      name: "pen",
      price: 2,
      qty: 100,
      inStock: true,
      tags: ["office"],
      category: "office",
      meta: { level: { deep: "5" } }
    }
  },
  {
    hour: 13,
    data: {
      name: "notebook",
      price: 4.99,
      qty: 50,
      inStock: true,
      tags: ["office", "paper"],
      category: "office"
    }
  },
  { hour: 14, data: { name: "O'Reilly book", price: 39.9, qty: 3, inStock: true, tags: ["books"], category: "books" } },
  { hour: 15, data: { name: "bike", price: 300, qty: 4, inStock: true, tags: ["sports"], category: null } },
  // a value of the wrong type (schema drift): typed comparisons treat it as missing instead of failing
  { hour: 16, data: { name: "kiwi", price: "3", inStock: true, tags: ["fruit"], category: "food" } },
  { hour: 17, data: { name: "mango", price: 2.5, tags: ["fruit"], category: "food", published: "not a date" } },
  { hour: 18, status: "archived", data: { name: "old stock", price: 5, tags: [], category: "misc" } },
  { hour: 19, data: { name: "drone", price: 999.99, inStock: true, tags: ["electronics", "toys"], category: "tech" } },
  { hour: 20, data: { name: ROBERT, price: 66, tags: [], category: "misc" } }
]

const idOf = (i: number) => `00000000-0000-4000-8000-${String(i + 1).padStart(12, "0")}`
const nameOf = (id: string) => rows[Number(id.slice(-12)) - 1]!.data.name as string
// microseconds matter: cursors must not lose them
const createdAt = (hour: number) => new Date(Date.UTC(2024, 0, 1, hour)).toISOString().replace(".000Z", ".123456Z")

const fixture = (table: string) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const t = sql.literal(table)
    const create = Effect.gen(function* () {
      // a scratch copy of the migrated records table: same columns and defaults, without the foreign keys
      yield* sql`CREATE TABLE ${t} (LIKE records INCLUDING DEFAULTS)`
      for (const [i, row] of rows.entries()) {
        const at = createdAt(row.hour)
        yield* sql`INSERT INTO ${t}
          (id, workspace, structure_id, data, version, status, created_by, created_at, updated_at)
          VALUES (${idOf(i)}::text::uuid, 'acme', '10000000-0000-4000-8000-000000000000',
            ${JSON.stringify(row.data)}::text::jsonb, ${String(row.version ?? 1)}::text::int,
            ${row.status ?? "active"}::text, ${row.createdBy ?? null}::text, ${at}::text::timestamptz,
            ${at}::text::timestamptz)`
      }
    })
    yield* Effect.acquireRelease(create, () => Effect.ignore(sql`DROP TABLE IF EXISTS ${t}`))
  })

const backends: Array<readonly [string, Layer.Layer<SqlClient.SqlClient, unknown>, string]> = [["PGlite", MigratedPglite(), "q_records"]]
if (process.env.DATABASE_URL) backends.push(["PostgreSQL", MigratedPostgres(process.env.DATABASE_URL), "q_records"])

const get = <A, E>(r: Result.Result<A, E>): A => {
  if (Result.isFailure(r)) return expect.fail(`unexpected failure: ${JSON.stringify(r.failure)}`)
  return r.success
}

for (const [backend, client, table] of backends) {
  const TestLayer = Layer.effectDiscard(fixture(table)).pipe(Layer.provideMerge(client))

  layer(TestLayer, { excludeTestServices: true, timeout: "120 seconds" })(`query compiler on ${backend}`, (it) => {
    const matching = (expr: Ast.Expr, context: CompileContext = ctx) =>
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        const where = get(compileWhere(sql, expr, context))
        const result = yield* sql<{ id: string }>`SELECT r.id::text AS id FROM ${sql.literal(table)} r WHERE ${where}`
        return result.map((r) => nameOf(r.id)).sort()
      })

    const genB = (s: string) => get(parseFilterB(s))
    const genA = (s: string) => get(parseExpressionA(s))
    const ql = (s: string, p: Record<string, unknown> = {}) => get(parseQueryLanguage(`FROM products WHERE ${s}`, p)).where!
    const bracket = (...ps: Array<readonly [string, string]>) => get(parseBracketParams(ps))

    const all = rows.map((r) => r.data.name as string)
    const except = (...names: Array<string>) => all.filter((n) => !names.includes(n)).sort()

    const cases: ReadonlyArray<readonly [string, Ast.Expr, ReadonlyArray<string>, CompileContext?]> = [
      ["gt on numbers (a string-typed value is skipped)", genB("price:>100"), ["bike", "drone", "laptop", "phone", "table", "tablet"]],
      ["gte + lte", genB("price:>=75,price:<=150"), ["chair", "table"]],
      ["lt", genB("price:<1"), ["banana", "carrot"]],
      ["between is inclusive", genB("price:10..39.9"), ["100% cotton shirt", "O'Reilly book", "lamp", "under_score"]],
      ["price_min / price_max", bracket(["price_min", "10"], ["price_max", "25"]), ["100% cotton shirt", "under_score"]],
      ["eq number by containment", genB("price:66"), [ROBERT]],
      ["eq number ignores notation", genB("price:1.50"), ["apple"]],
      ["ne includes missing", genB("price:!66"), except(ROBERT)],
      ["in", genB("category:[tech,home]"), ["chair", "drone", "lamp", "laptop", "phone", "table", "tablet"]],
      ["nin keeps nulls", genB("category:![food,tech,home,office,fashion,misc]"), ["O'Reilly book", "bike"]],
      ["eqAny / eqNone", bracket(["category[eqAny]", "books,misc"]), ["O'Reilly book", "old stock", ROBERT]],
      ["eqNone", bracket(["category[eqNone]", "food,tech,home,office,fashion,misc,books"]), ["bike"]],
      ["in with null", ql("category IN ('books', null)"), ["O'Reilly book", "bike"]],
      ["isNull (JSON null)", genB("category:null"), ["bike"]],
      ["isNull (missing)", bracket(["qty[isNull]", "true"]), ["carrot", "drone", "kiwi", "mango", "old stock", ROBERT]],
      ["isNotNull", ql("qty IS NOT NULL AND qty < 2"), ["banana", "phone", "under_score"]],
      ["contains is case-insensitive", genB("name:*APP*"), ["apple"]],
      ["contains escapes %", genB("name:*%*"), ["100% cotton shirt"]],
      ["contains escapes _", bracket(["name[contains]", "_"]), ["under_score"]],
      ["startswith", genB("name:ap*"), ["apple"]],
      ["endswith", bracket(["name[endswith]", "ook"]), ["O'Reilly book", "notebook"]],
      ["like keeps user wildcards", ql("name LIKE '%o%' AND price < 10"), ["carrot", "mango", "notebook", "old stock"]],
      ["ilike", ql("name ILIKE 'O''R%'"), ["O'Reilly book"]],
      ["includes", genB("tags:fruit"), ["apple", "banana", "kiwi", "mango"]],
      ["hasAll", bracket(["tags[hasAll]", "electronics,mobile"]), ["phone"]],
      ["hasAny", bracket(["tags[hasAny]", "wood,toys,paper"]), ["drone", "notebook", "table"]],
      [
        "nin on an array = none of",
        bracket(["tags[nin]", "fruit,electronics"]),
        except("apple", "banana", "kiwi", "mango", "laptop", "phone", "tablet", "drone")
      ],
      ["number array includes", bracket(["scores[includes]", "5"]), ["apple"]],
      ["number array hasAny", bracket(["scores[hasAny]", "8,4"]), ["banana", "laptop"]],
      ["boolean eq", genB("inStock:false"), ["carrot", "phone", "table"]],
      ["boolean ne includes missing", genB("inStock:!true"), ["carrot", "mango", "old stock", "phone", ROBERT, "table"]],
      ["datetime gt (offsets honoured, bad values skipped)", genB("published:>2024-05-01T00:00:00Z"), ["chair", "lamp", "phone", "table"]],
      ["datetime eq is an instant", genA("published == '2024-05-31T22:00:00Z'"), ["chair"]],
      ["nested path", genB("address.city:Paris"), ["apple", "carrot"]],
      ["string field keeps a numeric-looking value", genB("address.zip:75001"), ["apple"]],
      ["free-form object compares as text", genB("meta.level.deep:5"), ["pen", "under_score"]],
      ["status column", genB("status:archived"), ["old stock"]],
      ["id column", genB(`id:${idOf(2)}`), ["carrot"]],
      ["version column", genB("version:>1"), ["phone"]],
      ["createdBy column", genB("createdBy:alice"), ["apple", "banana", "carrot", "laptop", "phone"]],
      ["createdAt column", genB(`createdAt:>=${createdAt(18)}`), ["drone", "old stock", ROBERT]],
      ["recordSlug constant", genB("recordSlug:products,price:<1"), ["banana", "carrot"]],
      ["recordSlug other", genB("recordSlug:other"), []],
      ["workspaceSlug constant", bracket(["workspaceSlug", "acme"], ["price[gt]", "900"]), ["drone", "laptop"]],
      ["gen A logic", genA("price > 500 AND tags.includes('electronics')"), ["drone", "laptop", "phone"]],
      ["gen A or + not", genA("(category == 'food' || category == 'home') && !inStock"), ["carrot", "mango", "table"]],
      ["query language parameters", ql("price BETWEEN :lo AND :hi", { lo: 100, hi: 500 }), ["bike", "table", "tablet"]],
      ["NOT", ql("NOT (category = 'food' OR category = 'tech') AND price > 100"), ["bike", "table"]],
      ["search full text on fields", ql("SEARCH('red apple') IN (name, description)"), ["apple"]],
      ["search substring fallback", ql("SEARCH('lapt') IN (name)"), ["laptop"]],
      ["search short term", ql("SEARCH('ap') IN (name)"), ["apple", "laptop"]],
      ["search every string value", ql("SEARCH('memory')"), ["laptop"]],
      ["search with quotes", ql("SEARCH('o''reilly')"), ["O'Reilly book"]],
      ["search with LIKE characters", ql("SEARCH('100%')"), ["100% cotton shirt"]],
      ["injection text is just data", genB(`name:"${ROBERT}"`), [ROBERT]],
      ["schemaless compares as text", genB("price:3"), ["kiwi"], schemaless],
      ["typed mode does not match a string", genB("price:3"), []],
      ["schemaless any field", genB("nothing:x"), [], schemaless],
      ["schemaless eq", genB("category:food"), ["apple", "banana", "carrot", "kiwi", "mango"], schemaless],
      ["schemaless array membership", bracket(["tags[hasAll]", "fruit,red"]), ["apple"], schemaless]
    ]
    for (const [label, expr, expected, context] of cases) {
      it.effect(label, () =>
        Effect.gen(function* () {
          expect(yield* matching(expr, context)).toStrictEqual([...expected].sort())
        })
      )
    }

    it.effect("the injection row did not drop anything", () =>
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        const [row] = yield* sql<{ n: string }>`SELECT count(*)::text AS n FROM ${sql.literal(table)}`
        expect(row?.n).toBe(String(rows.length))
      })
    )

    const ordered = (sort: string, context: CompileContext = ctx) =>
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        const orderBy = get(compileOrderBy(sql, get(parseSort(sort)), context))
        const result = yield* sql<{ id: string }>`
          SELECT r.id::text AS id FROM ${sql.literal(table)} r ORDER BY ${orderBy}`
        return result.map((r) => r.id)
      })

    it.effect("sorts typed, nulls first descending", () =>
      Effect.gen(function* () {
        expect((yield* ordered("-price")).map(nameOf)).toStrictEqual([
          "kiwi",
          "laptop",
          "drone",
          "phone",
          "tablet",
          "bike",
          "table",
          "chair",
          ROBERT,
          "O'Reilly book",
          "lamp",
          "100% cotton shirt",
          "under_score",
          "old stock",
          "notebook",
          "mango",
          "pen",
          "apple",
          "carrot",
          "banana"
        ])
        // schemaless sorts as text: "999.99" before "66"
        const text = (yield* ordered("-price", schemaless)).map(nameOf)
        expect(text.indexOf("drone")).toBeLessThan(text.indexOf(ROBERT))
        expect(text.indexOf("laptop")).toBeGreaterThan(text.indexOf(ROBERT))
      })
    )

    it.effect("breaks ties by id", () =>
      Effect.gen(function* () {
        const ids = yield* ordered("createdAt")
        expect(ids).toStrictEqual(rows.map((_, i) => idOf(i)))
        const byCategory = (yield* ordered("category")).map(nameOf)
        expect(byCategory.slice(-1)).toStrictEqual(["bike"])
      })
    )

    // Pages of 3 through the cursor must give exactly the full ordering, for every kind of key.
    const sorts = [
      "-price",
      "category,name",
      "published",
      "-createdAt",
      "createdAt",
      "inStock,-price",
      "-qty,category",
      "address.city,-id",
      "name"
    ]
    for (const sort of sorts) {
      // row-read cursors are exact only without timestamp columns (see encodeCursor)
      for (const exact of sort.includes("createdAt") ? [true] : [true, false]) {
        it.effect(`pages through ${sort} with ${exact ? "selected" : "row-read"} cursors`, () =>
          Effect.gen(function* () {
            const sql = yield* SqlClient.SqlClient
            const keys = get(parseSort(sort))
            const orderBy = get(compileOrderBy(sql, keys, ctx))
            const select = get(compileCursorSelect(sql, keys, ctx))
            const seen: Array<string> = []
            let cursor: string | undefined
            for (let page = 0; page < 20; page++) {
              const after = cursor === undefined ? sql.literal("TRUE") : get(compileCursor(sql, cursor, keys, ctx))
              const result = yield* sql<Record<string, unknown>>`
                SELECT r.id::text AS id, r.data, r.created_at, ${select} AS ${sql.literal(CURSOR_COLUMN)}
                FROM ${sql.literal(table)} r WHERE ${after} ORDER BY ${orderBy} LIMIT 3`
              seen.push(...result.map((r) => r.id as string))
              if (result.length < 3) break
              const last = result[result.length - 1]!
              const row = exact ? last : { id: last.id, data: last.data, created_at: last.created_at }
              cursor = get(encodeCursor(row, keys, ctx))
            }
            expect(seen).toStrictEqual(yield* ordered(sort))
          })
        )
      }
    }

    it.effect("aggregates with GROUP BY, typed results from both drivers", () =>
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        const q = get(
          parseQueryLanguage(
            "SELECT category, COUNT(*) AS n, SUM(price) AS total, MIN(price) AS lo, MAX(published) AS last, " +
              "AVG(qty) AS avgQty, MAX(inStock) AS anyInStock " +
              "FROM products WHERE status = 'active' GROUP BY category ORDER BY n DESC, category"
          )
        )
        const c = get(compileAggregate(sql, { groupBy: q.groupBy!, select: q.select!, orderBy: q.orderBy }, ctx))
        const where = get(compileWhere(sql, q.where!, ctx))
        const result = yield* sql<Record<string, unknown>>`
          SELECT ${c.select} FROM ${sql.literal(table)} r WHERE ${where} ${c.clauses}`
        const out = result.map(c.decode)
        const categories = out.map((r) => r.category)
        expect(categories).toStrictEqual(["food", "tech", "home", "fashion", "office", "books", "misc", null])
        const food = out[0]!
        expect(food.n).toBe(5)
        expect(food.total).toBe(5.3)
        expect(food.lo).toBe(0.5)
        expect(food.avgQty).toBe(5)
        expect(food.anyInStock).toBe(true)
        expect(new Date(food.last as string).toISOString()).toBe("2024-03-15T12:30:00.000Z")
        const tech = out[1]!
        expect([tech.n, tech.total, tech.lo]).toStrictEqual([4, 3449.99, 450])
        expect(out.find((r) => r.category === "misc")!.n).toBe(1)
      })
    )

    it.effect("aggregates an HTTP aggregate request without GROUP BY", () =>
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        const request = get(
          parseAggregateRequest({
            filter: { "data.tags": { hasAny: ["fruit"] }, "data.price": { gte: 1 } },
            operations: { count: { count: "*" }, total: { sum: "data.price" }, most: { max: "data.name" } }
          })
        )
        const c = get(compileAggregate(sql, { groupBy: request.groupBy, select: request.aggregates }, ctx))
        const where = get(compileWhere(sql, request.where, ctx))
        const result = yield* sql<Record<string, unknown>>`
          SELECT ${c.select} FROM ${sql.literal(table)} r WHERE ${where} ${c.clauses}`
        expect(result.map(c.decode)).toStrictEqual([{ count: 2, total: 4, most: "mango" }])
      })
    )
  })
}
