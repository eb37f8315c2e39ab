// The query domain end to end, through HTTP, on whichever backend the run uses: every operator of every syntax
// (generation B `filter`, bracket params on `GET /records/{slug}`, generation A `query`, `POST /query`) against one
// fixture with known answers, the equivalent forms agreeing; parse errors with their positions; injection attempts;
// aggregation through both routes; keyset pagination; search; includeCount; soft-deleted and expired records.
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { startServer, type TestServer } from "./support/TestServer.ts"
import { sleep } from "./support/wait.ts"

interface Product {
  readonly name: string
  readonly price: number
  readonly qty?: number
  readonly inStock: boolean
  readonly tags: ReadonlyArray<string>
  readonly category: string
  readonly published: string
  readonly address: { readonly city: string; readonly zip: string }
  readonly description?: string
  readonly author?: "ann" | "bob"
  readonly code?: string
}

const products: ReadonlyArray<Product> = [
  {
    name: "apple",
    price: 1.5,
    qty: 10,
    inStock: true,
    tags: ["fruit", "red"],
    category: "food",
    published: "2024-01-10T10:00:00Z",
    address: { city: "Paris", zip: "75001" },
    description: "A crisp red apple from Normandy",
    author: "ann",
    code: "s3cret"
  },
  {
    name: "banana",
    price: 0.5,
    qty: 0,
    inStock: true,
    tags: ["fruit", "yellow"],
    category: "food",
    published: "2024-02-01T00:00:00Z",
    address: { city: "Lyon", zip: "69001" },
    description: "Sweet yellow banana",
    author: "bob"
  },
  {
    name: "carrot",
    price: 0.8,
    inStock: false,
    tags: ["vegetable", "orange"],
    category: "food",
    published: "2024-03-15T12:30:00Z",
    address: { city: "Paris", zip: "75002" }
  },
  {
    name: "laptop",
    price: 1200,
    qty: 5,
    inStock: true,
    tags: ["electronics", "computer"],
    category: "tech",
    published: "2023-11-20T08:00:00Z",
    address: { city: "Berlin", zip: "10115" },
    description: "Fast laptop with 16GB memory",
    author: "ann"
  },
  {
    name: "phone",
    price: 800,
    qty: 2,
    inStock: false,
    tags: ["electronics"],
    category: "tech",
    published: "2024-05-01T00:00:00Z",
    address: { city: "Paris", zip: "75003" },
    description: "Smart phone with a yellow case",
    author: "bob"
  },
  {
    name: "desk",
    price: 250,
    qty: 1,
    inStock: true,
    tags: ["furniture"],
    category: "home",
    published: "2022-06-30T00:00:00Z",
    address: { city: "Lyon", zip: "69002" },
    description: "Oak desk"
  },
  {
    name: "O'Brien lamp",
    price: 45,
    inStock: true,
    tags: [],
    category: "home",
    published: "2024-01-31T23:00:00Z",
    address: { city: "Berlin", zip: "10117" },
    description: "Lamp at 100% brightness_max"
  }
]
const LAMP = "O'Brien lamp"
const ALL = products.map((p) => p.name)
const ROBERT = "Robert'); DROP TABLE records;--"

/** One condition written in each syntax that can say it; every form must return `expect` (so they agree). */
interface Case {
  readonly title: string
  readonly expect: ReadonlyArray<string>
  /** generation B `filter` values */
  readonly b?: ReadonlyArray<string>
  /** bracket parameters on `GET /records/{slug}` */
  readonly k?: ReadonlyArray<ReadonlyArray<readonly [string, string]>>
  /** generation A `query` values */
  readonly a?: ReadonlyArray<string>
  /** query-language conditions (`FROM products WHERE <q>`), with parameters */
  readonly q?: ReadonlyArray<string | readonly [string, Record<string, unknown>]>
}

const cases: ReadonlyArray<Case> = [
  {
    title: "equality on a string",
    expect: ["laptop", "phone"],
    b: ["category:tech", "data.category:tech"],
    k: [[["category", "tech"]], [["category[eq]", "tech"]], [["filter[category]", "tech"]]],
    a: ["category=='tech'", "category = tech"],
    q: ["category = 'tech'", ["category = :c", { c: "tech" }]]
  },
  {
    title: "equality on a number",
    expect: ["desk"],
    b: ["price:250"],
    k: [[["price", "250"]]],
    a: ["price==250"],
    q: ["price = 250", ["price = :p", { p: 250 }]]
  },
  {
    title: "equality on a boolean",
    expect: ["carrot", "phone"],
    b: ["inStock:false"],
    k: [[["inStock", "false"]]],
    a: ["inStock==false", "!inStock"],
    q: ["inStock = false", "NOT inStock"]
  },
  {
    title: "not equal",
    expect: ["laptop", "phone", "desk", LAMP],
    b: ["category:!food"],
    k: [[["category[ne]", "food"]]],
    a: ["category!='food'", "category<>'food'"],
    q: ["category != 'food'", "category <> 'food'", "NOT category = 'food'"]
  },
  {
    title: "greater than",
    expect: ["laptop", "phone", "desk"],
    b: ["price:>100"],
    k: [[["price[gt]", "100"]]],
    a: ["price>100"],
    q: ["price > 100", ["price > :min", { min: 100 }]]
  },
  {
    title: "greater than or equal",
    expect: ["laptop", "phone", "desk"],
    b: ["price:>=250"],
    k: [[["price[gte]", "250"]], [["data.price[gte]", "250"]]],
    a: ["price>=250"],
    q: ["price >= 250"]
  },
  {
    title: "less than",
    expect: ["banana", "carrot"],
    b: ["price:<1"],
    k: [[["price[lt]", "1"]]],
    a: ["price<1"],
    q: ["price < 1"]
  },
  {
    title: "less than or equal",
    expect: ["apple", "banana", "carrot"],
    b: ["price:<=1.5"],
    k: [[["price[lte]", "1.5"]]],
    a: ["price<=1.5"],
    q: ["price <= 1.5"]
  },
  {
    title: "range",
    expect: ["apple", "desk", LAMP],
    b: ["price:1..300"],
    k: [
      [["price[between]", "1,300"]],
      [
        ["price_min", "1"],
        ["price_max", "300"]
      ]
    ],
    a: ["price BETWEEN 1 AND 300", "price>=1 AND price<=300"],
    q: ["price BETWEEN 1 AND 300", ["price BETWEEN :lo AND :hi", { lo: 1, hi: 300 }]]
  },
  {
    title: "open ranges",
    expect: ["laptop", "phone"],
    b: ["price:800.."],
    k: [[["price_min", "800"]]],
    a: ["price>=800"],
    q: ["price >= 800"]
  },
  {
    title: "open range below",
    expect: ["banana", "carrot"],
    b: ["price:..0.8"],
    k: [[["price_max", "0.8"]]],
    a: ["price<=0.8"],
    q: ["price <= 0.8"]
  },
  {
    title: "in a list",
    expect: ["laptop", "phone", "desk", LAMP],
    b: ["category:[tech,home]"],
    k: [[["category[in]", "tech,home"]], [["category[eqAny]", "tech,home"]]],
    a: ["category IN ('tech','home')", "category=='tech' || category=='home'"],
    q: ["category IN ('tech', 'home')", ["category IN :cats", { cats: ["tech", "home"] }], "category = 'tech' OR category = 'home'"]
  },
  {
    title: "not in a list",
    expect: ["apple", "banana", "carrot"],
    b: ["category:![tech,home]"],
    k: [[["category[nin]", "tech,home"]], [["category[eqNone]", "tech,home"]]],
    a: ["category NOT IN ('tech','home')"],
    q: ["category NOT IN ('tech', 'home')", "NOT (category IN ('tech', 'home'))"]
  },
  {
    title: "contains (case-insensitive)",
    expect: ["banana", "phone"],
    b: ["description:*yellow*", "description:*YELLOW*"],
    k: [[["description[contains]", "Yellow"]], [["description[ilike]", "%YELLOW%"]]],
    a: ["description.contains('yellow')"],
    q: ["description LIKE '%yellow%'", "description ILIKE '%YELLOW%'"]
  },
  {
    title: "starts with",
    expect: ["banana"],
    b: ["name:ba*"],
    k: [[["name[startswith]", "ba"]]],
    a: ["name.startsWith('ba')"],
    q: ["name LIKE 'ba%'"]
  },
  {
    title: "ends with",
    expect: ["laptop"],
    b: ["name:*top"],
    k: [[["name[endswith]", "top"]]],
    a: ["name.endsWith('top')"],
    q: ["name LIKE '%top'"]
  },
  {
    title: "LIKE with a one-character wildcard",
    expect: ["desk"],
    k: [[["name[like]", "_esk"]]],
    a: ["name LIKE '_esk'"],
    q: ["name LIKE '_esk'"]
  },
  {
    title: "contains takes % and _ literally",
    expect: [LAMP],
    b: ["description:*%*", "description:*_*"],
    k: [[["description[contains]", "%"]], [["description[contains]", "_"]]],
    a: ["description.contains('%')"],
    q: ["description LIKE '%\\\\%%'"]
  },
  {
    title: "boolean true, also as a lone field",
    expect: ["apple", "banana", "laptop", "desk", LAMP],
    b: ["inStock:true"],
    k: [[["inStock", "true"]]],
    a: ["inStock==true", "inStock"],
    q: ["inStock = true", "inStock"]
  },
  {
    title: "array includes",
    expect: ["apple", "banana"],
    b: ["tags:fruit"],
    k: [[["tags[includes]", "fruit"]], [["tags", "fruit"]]],
    a: ["tags.includes('fruit')"],
    q: ["tags CONTAINS 'fruit'", "tags = 'fruit'"]
  },
  {
    title: "array has any",
    expect: ["apple", "laptop", "phone"],
    b: ["tags:[red,electronics]"],
    k: [[["tags[hasAny]", "red,electronics"]], [["tags[in]", "red,electronics"]]],
    a: ["tags IN ('red','electronics')", "tags.includes('red') || tags.includes('electronics')"],
    q: ["tags IN ('red', 'electronics')"]
  },
  {
    title: "array has all",
    expect: ["apple"],
    k: [[["tags[hasAll]", "fruit,red"]]],
    a: ["tags.includes('fruit') AND tags.includes('red')"],
    q: ["tags CONTAINS 'fruit' AND tags CONTAINS 'red'"]
  },
  {
    title: "array has none",
    expect: ["carrot", "desk", LAMP],
    b: ["tags:![fruit,electronics]"],
    k: [[["tags[nin]", "fruit,electronics"]]],
    q: ["tags NOT IN ('fruit', 'electronics')"]
  },
  {
    title: "nested field",
    expect: ["apple", "carrot", "phone"],
    b: ["address.city:Paris", "data.address.city:Paris"],
    k: [[["address.city", "Paris"]], [["data.address.city", "Paris"]]],
    a: ["address.city=='Paris'"],
    q: ["address.city = 'Paris'", "data.address.city = 'Paris'"]
  },
  {
    title: "datetime comparison",
    expect: ["banana", "carrot", "phone", LAMP],
    b: ["published:>2024-01-31T12:00:00Z"],
    k: [[["published[gt]", "2024-01-31T12:00:00Z"]]],
    a: ["published>'2024-01-31T12:00:00Z'"],
    q: ["published > '2024-01-31T12:00:00Z'"]
  },
  {
    title: "datetimes are instants: another offset, or none (UTC)",
    expect: ["banana", "carrot", "phone"],
    b: ["published:>2024-02-01T01:00:00+02:00", "published:>2024-01-31T23:00:00"],
    k: [[["published[gt]", "2024-01-31T23:00:00"]]],
    a: ["published>'2024-01-31T19:00:00-04:00'"],
    q: ["published > '2024-01-31T23:00'", "published >= '2024-02-01'"]
  },
  {
    title: "is null (missing)",
    expect: ["carrot", LAMP],
    b: ["qty:null"],
    k: [[["qty[isNull]", "true"]]],
    a: ["qty IS NULL", "qty==null"],
    q: ["qty IS NULL", "qty = null"]
  },
  {
    title: "is not null",
    expect: ["apple", "banana", "laptop", "phone", "desk", LAMP],
    b: ["description:!null"],
    k: [[["description[isNull]", "false"]]],
    a: ["description IS NOT NULL", "description!=null"],
    q: ["description IS NOT NULL"]
  },
  {
    title: "AND of several conditions",
    expect: ["apple", "banana"],
    b: ["category:food,inStock:true"],
    k: [
      [
        ["category", "food"],
        ["inStock", "true"]
      ]
    ],
    a: ["category=='food' AND inStock==true", "category=='food' && inStock"],
    q: ["category = 'food' AND inStock = true"]
  },
  {
    title: "OR, NOT and parentheses",
    expect: ["banana", "desk", LAMP],
    a: ["(category=='home' || price<1) && !(name=='carrot')", "(category=='home' OR price<1) AND NOT name=='carrot'"],
    q: ["(category = 'home' OR price < 1) AND NOT (name = 'carrot')"]
  },
  {
    title: "a quoted value with a quote and a space",
    expect: [LAMP],
    b: ['name:"O\'Brien lamp"'],
    k: [[["name", LAMP]]],
    a: ['name=="O\'Brien lamp"', "name=='O\\'Brien lamp'"],
    q: ["name = 'O''Brien lamp'", ["name = :n", { n: LAMP }]]
  },
  {
    title: "SEARCH in named fields",
    expect: ["banana", "phone"],
    q: ["SEARCH('yellow') IN (description)", "SEARCH('YELLOW') IN (name, description)"]
  }
]

describe("queries through HTTP", () => {
  let server: TestServer
  let token: string
  const ids = new Map<string, string>()
  let ghostId = ""
  let expiredId = ""

  const req = (method: string, path: string, body?: unknown) => server.request(method, `${server.base}${path}`, { token, body })
  const ok = async (method: string, path: string, body?: unknown) => {
    const res = await req(method, path, body)
    if (res.status >= 300) throw new Error(`${method} ${path} -> ${res.status} ${res.text}`)
    return res.body
  }
  const listB = (query: string) => ok("GET", `/records?structureId=products&${query}`)
  const listSlug = (query: string) => ok("GET", `/records/products?${query}`)
  const listA = (query: string) => ok("GET", `/structures/products/records?${query}`)
  const run = (query: string, parameters?: Record<string, unknown>, extra: Record<string, unknown> = {}) =>
    ok("POST", "/query", { query, ...(parameters ? { parameters } : {}), ...extra })
  const sorted = (names: ReadonlyArray<string>) => [...names].sort()
  const namesB = (body: any): Array<string> => body.results.map((r: any) => r.data.name)

  beforeAll(async () => {
    server = await startServer({ env: { TROUPE_LIMIT_READS: "0", TROUPE_LIMIT_QUERIES: "0", TROUPE_LIMIT_WRITES: "0" } })
    token = await server.adminToken()
    await ok("POST", "/structures", {
      name: "Authors",
      recordSlug: "authors",
      properties: [
        { name: "name", type: "string" },
        { name: "pin", type: "string", isSecret: true }
      ]
    })
    await ok("POST", "/structures", {
      name: "Products",
      recordSlug: "products",
      properties: [
        { name: "name", type: "string", indexed: true },
        { name: "description", type: "string" },
        { name: "price", type: "number", indexed: true },
        { name: "qty", type: "number" },
        { name: "inStock", type: "boolean" },
        { name: "tags", type: "array", items: { type: "string" } },
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
        { name: "author", type: "reference", target: "authors", relationship: "many-to-one", onDelete: "restrict" },
        { name: "code", type: "string", isSecret: true }
      ]
    })
    // expires first, so it is long gone by the time the tests read
    expiredId = (
      await ok("POST", "/records?ttlSeconds=1", {
        structureId: "products",
        data: {
          name: "expired",
          price: 5,
          inStock: true,
          tags: [],
          category: "food",
          published: "2024-01-01T00:00:00Z",
          address: { city: "Paris", zip: "1" }
        }
      })
    ).id
    const started = Date.now()
    const authors = {
      ann: (await ok("POST", "/records", { structureId: "authors", data: { name: "Ann", pin: "1111" } })).id,
      bob: (await ok("POST", "/records", { structureId: "authors", data: { name: "Bob", pin: "2222" } })).id
    }
    ids.set("Ann", authors.ann)
    for (const p of products) {
      const { author, ...data } = p
      const created = await ok("POST", "/records", {
        structureId: "products",
        data: { ...data, ...(author ? { author: authors[author] } : {}) }
      })
      ids.set(p.name, created.id)
    }
    ghostId = (
      await ok("POST", "/records", {
        structureId: "products",
        data: {
          name: "ghost",
          price: 999,
          inStock: true,
          tags: ["fruit"],
          category: "tech",
          published: "2024-01-01T00:00:00Z",
          address: { city: "Paris", zip: "1" }
        }
      })
    ).id
    await ok("DELETE", `/records/${ghostId}`)
    await sleep(Math.max(0, 1200 - (Date.now() - started)))
  })
  afterAll(async () => {
    await server?.close()
  })

  it("every operator of every syntax returns the expected records, the same for equivalent forms", async () => {
    let forms = 0
    for (const c of cases) {
      const want = sorted(c.expect)
      for (const b of c.b ?? []) {
        expect(sorted(namesB(await listB(`filter=${encodeURIComponent(b)}`))), `${c.title}: filter=${b}`).toEqual(want)
        forms++
      }
      for (const k of c.k ?? []) {
        const body = await listSlug(new URLSearchParams(k.map(([key, value]): [string, string] => [key, value])).toString())
        expect(sorted(body.data.map((r: any) => r.data.name)), `${c.title}: ${JSON.stringify(k)}`).toEqual(want)
        expect(body.meta.total, `${c.title}: total of ${JSON.stringify(k)}`).toBe(want.length)
        forms++
      }
      for (const a of c.a ?? []) {
        const body = await listA(`query=${encodeURIComponent(a)}`)
        expect(sorted(body.records.map((r: any) => r.name)), `${c.title}: query=${a}`).toEqual(want)
        forms++
      }
      for (const q of c.q ?? []) {
        const [text, parameters] = typeof q === "string" ? [q, undefined] : q
        const body = await run(`FROM products WHERE ${text}`, parameters)
        expect(sorted(namesB(body)), `${c.title}: WHERE ${text}`).toEqual(want)
        forms++
      }
    }
    expect(forms).toBeGreaterThan(120)
  })

  it("filters on columns: id, version, status", async () => {
    const id = ids.get("desk")!
    expect(namesB(await listB(`filter=${encodeURIComponent(`id:${id}`)}`))).toEqual(["desk"])
    expect((await listSlug(`id=${id}`)).data.map((r: any) => r.data.name)).toEqual(["desk"])
    expect((await listA(`query=${encodeURIComponent(`id=='${id}'`)}`)).records.map((r: any) => r.name)).toEqual(["desk"])
    expect(namesB(await run(`FROM products WHERE id = :id`, { id }))).toEqual(["desk"])
    expect(sorted(namesB(await run("FROM products WHERE version = 1 AND status = 'active'")))).toEqual(sorted(ALL))
    expect(namesB(await run("FROM products WHERE createdAt > '2000-01-01' AND name = 'desk'"))).toEqual(["desk"])
  })

  it("sorts the same way in every syntax, nulls last ascending", async () => {
    const byPrice = [...products].sort((x, y) => y.price - x.price).map((p) => p.name)
    expect(namesB(await listB("sort=-price"))).toEqual(byPrice)
    expect((await listSlug("sort=-price")).data.map((r: any) => r.data.name)).toEqual(byPrice)
    expect((await listA("sort=-price")).records.map((r: any) => r.name)).toEqual(byPrice)
    expect(namesB(await run("FROM products ORDER BY price DESC"))).toEqual(byPrice)
    // (no order by name: its result depends on the database collation)
    const byQty = namesB(await run("FROM products ORDER BY qty ASC, price DESC"))
    expect(byQty).toEqual(["banana", "desk", "phone", "laptop", "apple", LAMP, "carrot"])
    expect(namesB(await listB("sort=qty,-price"))).toEqual(byQty)
    expect(namesB(await run("FROM products ORDER BY address.city, price"))).toEqual([
      LAMP,
      "laptop",
      "banana",
      "desk",
      "carrot",
      "apple",
      "phone"
    ])
  })

  it("POST /query: FROM by slug or name, SELECT projection, LIMIT/OFFSET, secrets masked", async () => {
    const all = await run("FROM Products ORDER BY price")
    expect(all.results).toHaveLength(products.length)
    const apple = all.results.find((r: any) => r.data.name === "apple")
    expect(apple).toMatchObject({ id: ids.get("apple"), structureId: expect.any(String), version: 1, data: { code: "********" } })
    expect(Object.keys(apple).sort()).toEqual(
      expect.arrayContaining(["id", "structureId", "workspaceId", "data", "createdAt", "updatedAt"])
    )

    const projected = await run("SELECT name, price AS cost, address.city, code FROM products WHERE name = 'apple'")
    expect(projected.results[0].data).toEqual({ name: "apple", cost: 1.5, address: { city: "Paris" }, code: "********" })
    expect(projected.results[0].id).toBe(ids.get("apple"))

    const page = await run("FROM products ORDER BY price LIMIT 2 OFFSET 1")
    expect(namesB(page)).toEqual(["carrot", "apple"])

    const tooMany = await req("POST", "/query", { query: "FROM products LIMIT 1001" })
    expect(tooMany.status).toBe(400)
    expect(tooMany.body.message).toContain("1000")

    // secret fields cannot be filtered
    const secret = await req("POST", "/query", { query: "FROM products WHERE code = 's3cret'" })
    expect(secret.status).toBe(400)
    expect(secret.body.details[0].field).toBe("code")

    const missing = await req("POST", "/query", { query: "FROM nowhere" })
    expect(missing.status).toBe(404)
    expect(missing.body).toMatchObject({
      error: "Not Found",
      statusCode: 404,
      code: expect.any(String),
      details: [],
      requestId: expect.any(String)
    })
  })

  it("POST /query: LIMIT defaults to 100", async () => {
    await ok("POST", "/structures", { name: "Counters", recordSlug: "counters", properties: [{ name: "n", type: "number" }] })
    const res = await ok("POST", "/records/bulk", {
      structureId: "counters",
      records: Array.from({ length: 120 }, (_, n) => ({ data: { n } })),
      options: { returnRecords: false }
    })
    expect(res.created).toBe(120)
    expect((await run("FROM counters")).results).toHaveLength(100)
    expect((await run("FROM counters LIMIT 1000")).results).toHaveLength(120)
    expect((await run("SELECT COUNT(*) AS n FROM counters")).results).toEqual([{ n: 120 }])
  })

  it("INCLUDE embeds referenced records under data._expanded, secrets masked, optionally filtered", async () => {
    const body = await run("FROM products WHERE author IS NOT NULL ORDER BY name INCLUDE author")
    expect(namesB(body)).toEqual(["apple", "banana", "laptop", "phone"])
    const apple = body.results[0]
    expect(apple.data._expanded.author).toEqual({ id: ids.get("Ann"), data: { name: "Ann", pin: "********" } })
    const bob = body.results[1].data._expanded.author
    expect(bob.data.name).toBe("Bob")

    const filtered = await run("FROM products WHERE author IS NOT NULL ORDER BY name INCLUDE author FROM authors WHERE name = 'Ann'")
    expect(filtered.results.map((r: any) => r.data._expanded.author?.data.name ?? null)).toEqual(["Ann", null, "Ann", null])

    const projected = await run("SELECT name FROM products WHERE name = 'laptop' INCLUDE author")
    expect(projected.results[0].data).toEqual({
      name: "laptop",
      _expanded: { author: { id: ids.get("Ann"), data: { name: "Ann", pin: "********" } } }
    })

    for (const bad of [
      "FROM products INCLUDE name",
      "FROM products INCLUDE author FROM products",
      "SELECT COUNT(*) FROM products INCLUDE author"
    ]) {
      const res = await req("POST", "/query", { query: bad })
      expect(res.status, bad).toBe(400)
    }
  })

  it("parse errors answer 400 with the position of the offending token", async () => {
    const errors: ReadonlyArray<readonly [string, string, number]> = [
      // [route, input, position]
      ["query", "FROM products WHERE price >", 27],
      ["query", "FROM products WHERE (price > 1", 30],
      ["query", "SELEC name FROM products", 0],
      ["query", "FROM products WHERE price > 1 LIMIT x", 36],
      ["query", "FROM products WHERE name = 'open", 27],
      ["query", "FROM products WHERE price ~ 3", 26],
      ["query", "FROM products WHERE price > 1 ORDER price", 36],
      ["query", "FROM products WHERE name = :missing", 27],
      ["a", "price >", 7],
      ["a", "price > 5 AND", 13],
      ["a", "price > 5 )", 10],
      ["a", "price.explode(3)", 0],
      ["b", "price:", 6],
      ["b", "price:>5,:x", 9],
      ["b", 'name:"open', 5],
      ["b", "na me:x", 2],
      ["k", "price[wat]=1", 6],
      ["sort", "price,,name", 6],
      ["sort", "na'me", 2]
    ]
    for (const [route, input, position] of errors) {
      const res =
        route === "query"
          ? await req("POST", "/query", { query: input })
          : route === "a"
            ? await req("GET", `/structures/products/records?query=${encodeURIComponent(input)}`)
            : route === "b"
              ? await req("GET", `/records?structureId=products&filter=${encodeURIComponent(input)}`)
              : route === "k"
                ? await req("GET", `/records/products?${input}`)
                : await req("GET", `/records?structureId=products&sort=${encodeURIComponent(input)}`)
      expect(res.status, `${route} ${input}: ${res.text}`).toBe(400)
      expect(res.body.message, `${route} ${input}`).toContain(`position ${position}`)
      expect(res.body.details[0].message, `${route} ${input}`).toContain(`(position ${position})`)
      expect(res.body).toMatchObject({ error: "Bad Request", statusCode: 400, code: expect.any(String), requestId: expect.any(String) })
    }
  })

  it("unknown fields and operators answer 400 naming them", async () => {
    const unknownField = [
      await req("POST", "/query", { query: "FROM products WHERE colour = 'red'" }),
      await req("GET", "/records?structureId=products&filter=colour:red"),
      await req("GET", "/records/products?colour=red"),
      await req("GET", `/structures/products/records?query=${encodeURIComponent("colour=='red'")}`),
      await req("GET", "/records?structureId=products&sort=colour"),
      await req("POST", "/records/products/aggregate", { groupBy: ["colour"], operations: { n: { count: "*" } } })
    ]
    for (const res of unknownField) {
      expect(res.status, res.text).toBe(400)
      expect(res.body.details[0].field).toBe("colour")
      expect(res.body.message).toContain("colour")
    }
    const unknownOp = await req("GET", "/records/products?price[near]=3")
    expect(unknownOp.status).toBe(400)
    expect(unknownOp.body.message).toContain("near")
    const badAgg = await req("POST", "/records/products/aggregate", { operations: { x: { median: "price" } } })
    expect(badAgg.status).toBe(400)
    expect(badAgg.body.message).toContain("median")
    expect(badAgg.body.details[0].field).toBe("operations")
    const typeMismatch = await req("POST", "/query", { query: "FROM products WHERE price > 'cheap'" })
    expect(typeMismatch.status).toBe(400)
    expect(typeMismatch.body.details[0].field).toBe("price")
  })

  it("injection attempts in values, field names, sort keys and search terms are harmless", async () => {
    const attempts: ReadonlyArray<readonly [string, string, unknown?]> = [
      ["GET", `/records?structureId=products&filter=${encodeURIComponent(`name:${ROBERT}`)}`],
      ["GET", `/records?structureId=products&filter=${encodeURIComponent(`name:"${ROBERT}"`)}`],
      ["GET", `/records/products?name=${encodeURIComponent(ROBERT)}`],
      ["GET", `/records/products?${encodeURIComponent("name');DROP TABLE records;--")}=1`],
      ["GET", `/records/products?${encodeURIComponent("name[eq]')")}=1`],
      ["GET", `/records?structureId=products&filter=${encodeURIComponent("name') OR 1=1--:x")}`],
      ["GET", `/structures/products/records?query=${encodeURIComponent(`name=='${ROBERT.replace(/'/g, "\\'")}'`)}`],
      ["GET", `/structures/products/records?query=${encodeURIComponent("name=='x' OR 1=1")}`],
      ["GET", `/structures/products/records?query=${encodeURIComponent("price); DROP TABLE records;-- > 1")}`],
      ["GET", `/records?structureId=products&sort=${encodeURIComponent("price; DROP TABLE records")}`],
      ["GET", `/records?structureId=products&sort=${encodeURIComponent("(SELECT 1)")}`],
      ["GET", `/records?structureId=products&search=${encodeURIComponent("%' OR '1'='1")}`],
      ["GET", `/records/products?search=${encodeURIComponent("'); DROP TABLE records;--")}&searchFields=name`],
      ["GET", `/records/products?search=x&searchFields=${encodeURIComponent("name'),(true")}`],
      ["POST", "/query", { query: `FROM products WHERE name = '${ROBERT.replace(/'/g, "''")}'` }],
      ["POST", "/query", { query: "FROM products WHERE name = :n", parameters: { n: "x' OR '1'='1" } }],
      ["POST", "/query", { query: "FROM products WHERE \"name') OR (1=1\" = 'x'" }],
      ["POST", "/query", { query: "FROM products; DROP TABLE records" }],
      ["POST", "/query", { query: 'FROM "products; DROP TABLE records"' }],
      ["POST", "/query", { query: 'FROM products ORDER BY "price DESC; DROP TABLE records"' }],
      ["POST", "/query", { query: 'SELECT "name\'); DROP TABLE records;--" FROM products' }],
      ["POST", "/query", { query: 'SELECT COUNT(*) AS "n""; DROP TABLE records" FROM products' }],
      ["POST", "/query", { query: `FROM products WHERE SEARCH('${ROBERT.replace(/'/g, "''")}') IN (name)` }],
      ["POST", "/records/products/aggregate", { filter: { "name') OR (1=1": "x" }, operations: { n: { count: "*" } } }],
      ["POST", "/records/products/aggregate", { filter: { name: ROBERT }, operations: { n: { count: "*" } } }],
      ["POST", "/records/products/aggregate", { groupBy: ["category); DROP TABLE records;--"], operations: { n: { count: "*" } } }],
      ["POST", "/records/products/aggregate", { operations: { 'n"); DROP TABLE records;--': { count: "*" } } }]
    ]
    for (const [method, path, body] of attempts) {
      const res = await req(method, path, body)
      expect([200, 400, 404], `${method} ${path} ${JSON.stringify(body)}: ${res.text}`).toContain(res.status)
      if (res.status === 200) {
        const rows: Array<any> = res.body.results ?? res.body.data ?? res.body.records
        // nothing beyond what the condition can match: never the whole table
        for (const row of rows) {
          const name = row.data?.name ?? row.name
          if (name !== undefined) expect(name, `${method} ${path}`).not.toBe("ghost")
        }
        if (path.includes("aggregate")) {
          for (const row of rows) expect(row.n ?? 0).toBeLessThanOrEqual(products.length)
        } else {
          expect(rows.length, `${method} ${path} ${JSON.stringify(body)}`).toBeLessThan(products.length)
        }
      }
    }
    // the table is still there, with exactly the rows it had
    const count = await run("SELECT COUNT(*) AS n FROM products", undefined, { includeDeleted: true })
    expect(count.results).toEqual([{ n: products.length + 1 }])
    expect(sorted(namesB(await listB("")))).toEqual(sorted(ALL))
  })

  it("aggregates (count, sum, avg, min, max, group by) agree between both routes", async () => {
    const viaRoute = await ok("POST", "/records/products/aggregate", {
      groupBy: ["category"],
      operations: {
        n: { count: "*" },
        withQty: { count: "qty" },
        total: { sum: "price" },
        mean: { avg: "price" },
        cheapest: { min: "price" },
        dearest: { max: "price" },
        first: { min: "published" }
      }
    })
    const viaQuery = await run(
      "SELECT category, COUNT(*) AS n, COUNT(qty) AS withQty, SUM(price) AS total, AVG(price) AS mean, " +
        "MIN(price) AS cheapest, MAX(price) AS dearest, MIN(published) AS first FROM products GROUP BY category"
    )
    expect(viaQuery.results).toEqual(viaRoute.results)
    const rows = viaRoute.results
    expect(rows.map((r: any) => r.category)).toEqual(["food", "home", "tech"])
    expect(rows[0]).toMatchObject({ n: 3, withQty: 2, cheapest: 0.5, dearest: 1.5 })
    expect(rows[0].total).toBeCloseTo(2.8, 10)
    expect(rows[0].mean).toBeCloseTo(2.8 / 3, 10)
    expect(rows[1]).toMatchObject({ n: 2, withQty: 1, total: 295, mean: 147.5, cheapest: 45, dearest: 250 })
    expect(rows[2]).toMatchObject({ n: 2, withQty: 2, total: 2000, mean: 1000, cheapest: 800, dearest: 1200 })
    expect(Date.parse(rows[1].first)).toBe(Date.parse("2022-06-30T00:00:00Z"))

    // no grouping: one row; a filter object and the equivalent WHERE
    const totals = await ok("POST", "/records/products/aggregate", {
      filter: { "data.price": { gte: 100 } },
      operations: { n: { count: "*" }, total: { sum: "data.price" } }
    })
    expect(totals.results).toEqual([{ n: 3, total: 2250 }])
    expect((await run("SELECT COUNT(*) AS n, SUM(price) AS total FROM products WHERE price >= 100")).results).toEqual(totals.results)

    // several group fields, a nested one, a filter with $or
    const nested = await ok("POST", "/records/products/aggregate", {
      filter: { $or: [{ category: "food" }, { "data.price": { gt: 500 } }] },
      groupBy: ["address.city", "inStock"],
      operations: { n: { count: "*" } }
    })
    expect(nested.results).toEqual([
      { "address.city": "Berlin", inStock: true, n: 1 },
      { "address.city": "Lyon", inStock: true, n: 1 },
      { "address.city": "Paris", inStock: false, n: 2 },
      { "address.city": "Paris", inStock: true, n: 1 }
    ])
    const nestedQuery = await run(
      "SELECT address.city, inStock, COUNT(*) AS n FROM products WHERE category = 'food' OR price > 500 GROUP BY address.city, inStock"
    )
    expect(nestedQuery.results).toEqual(nested.results)

    // ORDER BY an alias, LIMIT on groups, aliases for group fields
    const top = await run("SELECT category AS kind, SUM(price) AS total FROM products GROUP BY category ORDER BY total DESC LIMIT 2")
    expect(top.results).toEqual([
      { kind: "tech", total: 2000 },
      { kind: "home", total: 295 }
    ])
    const distinct = await run("FROM products GROUP BY category")
    expect(distinct.results).toEqual([{ category: "food" }, { category: "home" }, { category: "tech" }])

    // soft-deleted rows count only when asked for
    const withDeleted = await ok("POST", "/records/products/aggregate", { operations: { n: { count: "*" } }, includeDeleted: true })
    expect(withDeleted.results).toEqual([{ n: products.length + 1 }])

    const wrongType = await req("POST", "/records/products/aggregate", { operations: { s: { sum: "name" } } })
    expect(wrongType.status).toBe(400)
    expect(wrongType.body.details[0].field).toBe("name")
  })

  it("keyset pagination through nextCursor visits every record exactly once", async () => {
    for (const sort of ["-price", "qty", "address.city,-name", "createdAt", "-inStock,published"]) {
      const seen: Array<string> = []
      let cursor: string | null = null
      let pages = 0
      do {
        const body: any = await listB(`limit=2&sort=${encodeURIComponent(sort)}${cursor ? `&cursor=${cursor}` : ""}`)
        seen.push(...body.results.map((r: any) => r.id))
        expect(body.pagination.limit).toBe(2)
        cursor = body.pagination.nextCursor
        expect(body.pagination.hasMore).toBe(cursor !== null)
        pages++
      } while (cursor !== null && pages < 20)
      expect(seen, sort).toHaveLength(products.length)
      expect(new Set(seen).size, sort).toBe(products.length)
      // the walk follows the same order as one big page
      const whole = await listB(`sort=${encodeURIComponent(sort)}`)
      expect(seen, sort).toEqual(whole.results.map((r: any) => r.id))
    }
    const foreign = await listB("limit=2&sort=-price")
    const mismatched = await req("GET", `/records?structureId=products&limit=2&sort=name&cursor=${foreign.pagination.nextCursor}`)
    expect(mismatched.status).toBe(400)
    const garbage = await req("GET", "/records?structureId=products&cursor=not-a-cursor!")
    expect(garbage.status).toBe(400)
  })

  it("search with short and long terms", async () => {
    // short: substring only
    expect(sorted(namesB(await listB("search=ap&searchFields=name")))).toEqual(["apple", "laptop"])
    expect(sorted((await listSlug("search=ap&searchFields=name")).data.map((r: any) => r.data.name))).toEqual(["apple", "laptop"])
    expect(sorted(namesB(await run("FROM products WHERE SEARCH('ap') IN (name)")))).toEqual(["apple", "laptop"])
    // long: full text or substring, over the named fields or every string value
    expect(sorted(namesB(await listB("search=yellow&searchFields=description")))).toEqual(["banana", "phone"])
    expect(sorted(namesB(await listB(`search=${encodeURIComponent("red apple")}`)))).toEqual(["apple"])
    expect(sorted(namesB(await run("FROM products WHERE SEARCH('red apple')")))).toEqual(["apple"])
    expect(sorted(namesB(await run("FROM products WHERE SEARCH('electronics')")))).toEqual(["laptop", "phone"])
    expect(sorted(namesB(await run("FROM products WHERE SEARCH('normandy') AND price < 10")))).toEqual(["apple"])
    expect(sorted(namesB(await listB(`search=${encodeURIComponent("100%")}`)))).toEqual([LAMP])
    expect(namesB(await listB("search=zzzz"))).toEqual([])
  })

  it("includeCount adds the total of the whole match", async () => {
    const counted = await listB(`filter=${encodeURIComponent("category:food")}&includeCount=true&limit=1`)
    expect(counted.results).toHaveLength(1)
    expect(counted.pagination).toMatchObject({ limit: 1, total: 3, hasMore: true })
    const plain = await listB(`filter=${encodeURIComponent("category:food")}&limit=1`)
    expect(plain.pagination.total).toBeNull()
    const slug = await listSlug("category=food&pageSize=2")
    expect(slug.meta).toEqual({ total: 3, page: 1, pageSize: 2 })
    const flat = await listA(`query=${encodeURIComponent("category=='food'")}&limit=1`)
    expect(flat.records).toHaveLength(1)
    expect(flat.total).toBe(3)
  })

  it("soft-deleted and expired records are excluded unless asked for", async () => {
    const live = sorted(ALL)
    expect(sorted(namesB(await listB("")))).toEqual(live)
    expect(sorted(namesB(await listB("includeDeleted=true")))).toEqual(sorted([...ALL, "ghost"]))
    expect(sorted((await listSlug("")).data.map((r: any) => r.data.name))).toEqual(live)
    expect(sorted((await listSlug("all=true")).data.map((r: any) => r.data.name))).toEqual(sorted([...ALL, "ghost"]))
    expect(sorted((await listA("")).records.map((r: any) => r.name))).toEqual(live)
    expect(sorted((await listA("all=true")).records.map((r: any) => r.name))).toEqual(sorted([...ALL, "ghost"]))
    expect(sorted(namesB(await run("FROM products")))).toEqual(live)
    expect(sorted(namesB(await run("FROM products", undefined, { includeDeleted: true })))).toEqual(sorted([...ALL, "ghost"]))
    const ghost = (await run("FROM products WHERE name = 'ghost'", undefined, { includeDeleted: true })).results[0]
    expect(ghost.id).toBe(ghostId)
    expect(typeof ghost.deletedAt).toBe("string")
    // the expired record never shows, whatever is asked
    for (const body of [
      await listB("includeDeleted=true"),
      await run("FROM products WHERE name = 'expired'", undefined, { includeDeleted: true })
    ]) {
      expect(body.results.map((r: any) => r.id)).not.toContain(expiredId)
    }
    expect((await req("GET", `/records/${expiredId}`)).status).toBe(404)
  })

  it("POST /query needs read:records and counts against the queries class", async () => {
    const anonymous = await server.request("POST", `${server.base}/query`, { body: { query: "FROM products" } })
    expect(anonymous.status).toBe(401)
    const badBody = await req("POST", "/query", { nope: 1 })
    expect(badBody.status).toBe(400)
    expect(badBody.body.details.length).toBeGreaterThan(0)
    const badParams = await req("POST", "/query", { query: "FROM products WHERE name = :n", parameters: { n: { x: 1 } } })
    expect(badParams.status).toBe(400)
  })
})
