// Hardening, inputs: no input makes a 500 or a silently wrong answer. Every refusal is a 400 with the contract body
// naming the field. Deep JSON and NUL / lone surrogates are refused once at the edge (HttpEdge, and the fast routes
// with the same checks); page / limit / offset are safe whole numbers within their documented bounds on every list;
// list sizes and condition sizes stay below the driver's limits; a value PostgreSQL refuses is a 400 with a message
// of ours; GET /records reads bracket filters; pattern rules run in linear time.
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type Client, client, countOf, createStructure, expectError, expectStatus, slug } from "./support/records.ts"
import { type Response, startServer, type TestServer } from "./support/TestServer.ts"

const MAX_DEPTH = 48

/** A 400 in the contract shape whose details name `field` (exactly, or matching). */
const refused = (res: Response, field?: string | RegExp) => {
  expectError(res, 400)
  expect(typeof res.body.requestId).toBe("string")
  if (field === undefined) return
  const fields = res.body.details.map((d: { field: string }) => d.field) as Array<string>
  if (typeof field === "string") expect(fields, res.text).toContain(field)
  else
    expect(
      fields.some((f) => field.test(f)),
      res.text
    ).toBe(true)
}

/** `{"name": ..., "properties": [{..., "properties": [ ... ]}]}`, `levels` property definitions deep. */
const nestedDefinition = (name: string, levels: number) => {
  let open = `{"name":"${name}","properties":[`
  let close = "]}"
  for (let i = 0; i < levels; i++) {
    open += `{"name":"p${i}","type":"object","properties":[`
    close = `]}${close}`
  }
  return open + close
}

/** JSON nested exactly `levels` containers deep (the outer object counts as one). */
const nestedBody = (levels: number) => `{"a":${"[".repeat(levels - 1)}${"]".repeat(levels - 1)}}`

describe("hardening: inputs", () => {
  let server: TestServer
  let api: Client
  let product: { id: string; recordSlug: string }
  const json = { "content-type": "application/json" }

  beforeAll(async () => {
    server = await startServer({ env: { TROUPE_MAX_JSON_DEPTH: String(MAX_DEPTH) } })
    api = client(server, await server.adminToken())
    product = await createStructure(api, {
      name: "Hardened",
      recordSlug: slug("hardened"),
      properties: [
        { name: "name", type: "string" },
        { name: "price", type: "number", indexed: true },
        { name: "at", type: "datetime" },
        { name: "tags", type: "array", items: { type: "string" } }
      ]
    })
    const bulk = await api.call("POST", "/records/bulk", {
      structureId: product.id,
      records: [5, 10, 20, 40].map((price, i) => ({ data: { name: `n${i}`, price, at: "2024-01-01T00:00:00Z", tags: [`t${i}`] } }))
    })
    expectStatus(bulk, 201)
  })
  afterAll(async () => {
    // nothing above was a 500: no request failed unexpectedly on the server
    expect(server?.output() ?? "").not.toContain("request failed")
    await server?.close()
  })

  it("deep nesting: refused at the edge before any decoding, at TROUPE_MAX_JSON_DEPTH", async () => {
    const deep = await api.raw("POST", "/structures", { raw: nestedDefinition("Deep", 1000), headers: json })
    refused(deep, /^properties\[0\]\.properties\[0\]\.properties\[0\]/)
    expect(deep.body.message).toContain(`${MAX_DEPTH} levels`)
    refused(await api.raw("PUT", `/structures/${product.id}`, { raw: nestedDefinition("Deep", 1000), headers: json }))
    refused(await api.raw("POST", "/structures/validate", { raw: nestedDefinition("Deep", 1000), headers: json }))
    refused(
      await api.raw("POST", "/collections", {
        raw: `{"name":"c","fields":{"f":${nestedDefinition("x", 500).slice(0, -1)},"type":"object"}}}`,
        headers: json
      })
    )
    const data = await api.raw("POST", "/records", {
      raw: `{"structureId":"${product.id}","data":{"name":"d","tags":${"[".repeat(100_000)}${"]".repeat(100_000)}}}`,
      headers: json
    })
    refused(data, /^data\.tags\[0\]\[0\]/)
    refused(
      await api.raw("POST", "/records/bulk", { raw: `{"structureId":"${product.id}","records":[${nestedBody(1000)}]}`, headers: json })
    )
    refused(
      await api.raw("POST", `/records/${product.recordSlug}/aggregate`, {
        raw: `{"filter":{"$and":${'[{"$and":'.repeat(600)}[]${"}]".repeat(600)}}}`,
        headers: json
      })
    )
    // the bound is configurable: exactly MAX_DEPTH levels pass the edge (validate answers 200 for any JSON)
    expectStatus(await api.raw("POST", "/structures/validate", { raw: nestedBody(MAX_DEPTH), headers: json }), 200)
    refused(await api.raw("POST", "/structures/validate", { raw: nestedBody(MAX_DEPTH + 1), headers: json }), /^a(\[0\])+$/)
    // brackets inside strings are text, not nesting
    expectStatus(await api.raw("POST", "/structures/validate", { raw: `{"a":"${"[{".repeat(5000)}"}`, headers: json }), 200)
    // nested definitions within the limits still reach the rules: 9 levels deep is the rules' 400, 7 is stored
    refused(await api.raw("POST", "/structures", { raw: nestedDefinition("Nine", 9), headers: json }), /properties$/)
    expectStatus(await api.raw("POST", "/structures", { raw: nestedDefinition("Seven", 7), headers: json }), 200)
  })

  it("NUL and lone surrogates in path segments: 400 naming the path parameter", async () => {
    refused(await api.call("GET", "/records/slug/pro%00duct"), "path.slug")
    refused(await api.call("GET", "/records/pro%00duct"), "path.id")
    refused(await api.call("GET", `/records/${product.recordSlug}%00`), "path.id")
    refused(await api.call("POST", "/records/pro%00duct/aggregate", { operations: { n: { count: "*" } } }), "path.slug")
    refused(await api.call("GET", "/collections/abc%00"), "path.id")
    refused(await api.call("GET", "/structures/pro%ED%A0%80duct"), /^path\./)
    refused(await api.call("GET", "/structures/slug/a%00"), /^path\./)
    refused(await api.call("GET", `/structures/${product.recordSlug}%00/records`), "path.slug")
    refused(await api.call("DELETE", "/webhooks/x%00"), /^path\./)
    refused(await server.request("GET", "/data/workspace/default/api/v1/records/slug/a%00", { token: api.token }), "path.slug")
    refused(await server.request("GET", "/workspace/de%00fault/api/v1/records", { token: api.token }), "path.workspace")
    // overlong NUL too
    refused(await api.call("GET", "/records/slug/a%C0%80"), "path.slug")
  })

  it("NUL and lone surrogates in query strings: 400 naming the query parameter", async () => {
    const s = product.recordSlug
    refused(await api.call("GET", `/records?structureId=${s}&filter=name:a%00b`), "query.filter")
    refused(await api.call("GET", `/records?structureId=${s}&name=%ED%A0%80`), "query.name")
    refused(await api.call("GET", `/records/slug/${s}?name=a%00`), "query.name")
    refused(await api.call("GET", `/records/slug/${s}?na%00me=a`), "query")
    refused(await api.call("GET", `/structures/${s}/records?query=${encodeURIComponent("name=='x")}%00'`), "query.query")
    refused(await api.call("GET", `/structures?search=%00`), "query.search")
    refused(await api.call("GET", `/records/00000000-0000-4000-8000-000000000000/changelog?startDate=%00`), "query.startDate")
    refused(await api.call("GET", `/webhooks?page=%ED%BF%BF`), "query.page")
  })

  it("NUL and lone surrogates in the query language, form fields and JSON strings: 400 naming the field", async () => {
    const s = product.recordSlug
    const n = await countOf(api, product.id)
    const raw = (method: string, path: string, body: string) => api.raw(method, path, { raw: body, headers: json })
    refused(await raw("POST", "/query", `{"query":"FROM ${s} WHERE name = 'a\\u0000'"}`), "query")
    refused(await raw("POST", "/query", `{"query":"FROM ${s} WHERE name = :n","parameters":{"n":"\\udc00"}}`), "parameters.n")
    refused(
      await raw("POST", "/query?via=stack", `{"query":"FROM ${s} WHERE name = :n","parameters":{"n":["ok","\\ud800x"]}}`),
      "parameters.n[1]"
    )
    refused(await raw("POST", "/structures", `{"name":"x\\u0000y","properties":[]}`), "name")
    refused(await raw("POST", "/collections", `{"name":"ok","fields":{"f\\u0000":{"type":"string"}}}`), "fields.f\\u0000")
    refused(await raw("POST", "/webhooks", `{"name":"x\\u0000y","url":"http://example.com/x","events":["record.created"]}`), "name")
    refused(await raw("POST", "/records", `{"structureId":"${product.id}","data":{"name":"a\\ud800b"}}`), "data.name")
    refused(await raw("POST", "/records", `{"structureId":"${product.id}","data":{"name":"ok","tags":["a","\\u0000"]}}`), "data.tags[1]")
    refused(
      await raw("POST", "/records/bulk", `{"structureId":"${product.id}","records":[{"data":{"name":"ok"}},{"data":{"name":"\\u0000"}}]}`),
      "records[1].data.name"
    )
    refused(await raw("POST", `/records/${s}/aggregate`, `{"filter":{"name":"\\u0000"},"operations":{"n":{"count":"*"}}}`), "filter.name")
    refused(await raw("POST", `/records/slug/${s}/upsert`, `{"match":{"name":"\\u0000"},"data":{"name":"x"}}`), "match.name")
    // a surrogate pair is fine, an escaped backslash before u0000 is text
    expectStatus(await raw("POST", "/records", `{"structureId":"${product.id}","data":{"name":"\\ud83d\\ude00 \\\\u0000"}}`), 201)
    expect(await countOf(api, product.id)).toBe(n + 1)
    // form fields of /oidc/token (and its JSON form)
    const form = (body: string) =>
      server.request("POST", "/oidc/token", { raw: body, headers: { "content-type": "application/x-www-form-urlencoded" } })
    refused(await form(`grant_type=password&username=ad%00min&password=x&scope=openid`), "username")
    refused(await form(`grant_type=password&username=admin&password=x%00&scope=openid`), "password")
    refused(
      await server.request("POST", "/oidc/token", { raw: `{"grant_type":"password","username":"a\\u0000","password":"x"}`, headers: json }),
      "username"
    )
  })

  it("page, limit, pageSize and offset: safe whole numbers within the documented bounds, else a 400 naming them", async () => {
    const s = product.recordSlug
    const hook = await api.call("POST", "/webhooks", { name: "h", url: "http://example.com/hook", events: ["record.created"] })
    expectStatus(hook, 201)
    const lists: Array<readonly [string, string, string, number]> = [
      // path, parameter, then its documented maximum
      ["/structures", "page", "page", 1_000_000],
      ["/structures", "limit", "limit", 500],
      ["/collections", "limit", "limit", 500],
      [`/records?structureId=${s}`, "limit", "limit", 100],
      [`/records?structureId=${s}`, "offset", "offset", Number.MAX_SAFE_INTEGER],
      [`/records/slug/${s}`, "page", "page", 1_000_000],
      [`/records/slug/${s}`, "pageSize", "pageSize", 500],
      [`/records/${s}`, "limit", "limit", 500],
      [`/structures/${s}/records`, "limit", "limit", 500],
      [`/structures/${s}/records`, "page", "page", 1_000_000],
      [`/structures/${s}/records`, "offset", "offset", Number.MAX_SAFE_INTEGER],
      ["/records/00000000-0000-4000-8000-000000000000/changelog", "limit", "limit", 1000],
      ["/webhooks", "page", "query.page", 1_000_000],
      ["/webhooks", "limit", "query.limit", 500],
      [`/webhooks/${hook.body.id}/deliveries`, "limit", "query.limit", 500],
      ["/service-accounts", "limit", "query.limit", 100],
      ["/members", "page", "query.page", 1_000_000],
      ["/groups", "limit", "query.limit", 100],
      ["/functions", "page", "query.page", 1_000_000],
      ["/functions", "limit", "query.limit", 1000],
      ["/function-triggers", "limit", "query.limit", 1000],
      ["/function-runs", "limit", "query.limit", 1000],
      ["/drafts", "page", "query.page", 1_000_000]
    ]
    for (const [path, param, field, max] of lists) {
      const at = (value: string) => `${path}${path.includes("?") ? "&" : "?"}${param}=${value}`
      const bad = ["1e300", "99999999999999999999999", "1.5", "-1", "abc", String(max + 1)]
      if (max === Number.MAX_SAFE_INTEGER) bad.pop()
      for (const value of bad) {
        const res = await api.call("GET", at(value))
        expect(res.status, `${at(value)}: ${res.text}`).toBe(400)
        // a value that is no number at all may be refused by the route's schema (`query.page`) before its handler
        refused(res, field.startsWith("query.") ? field : new RegExp(`^(query\\.)?${field}$`))
      }
    }
    const workspaces = await server.request("GET", "/workspace/api/v1/workspaces?page=1e300", { token: api.token })
    refused(workspaces, "query.page")
    // the bounds themselves are fine
    expectStatus(await api.call("GET", `/records?structureId=${s}&limit=100&offset=0`), 200)
    expectStatus(await api.call("GET", `/records/slug/${s}?pageSize=500&page=1000000`), 200)
    expectStatus(await api.call("GET", "/structures?limit=500&page=1000000"), 200)
  })

  it("long lists and big conditions are 400s, never the driver's error", async () => {
    const s = product.recordSlug
    const values = (n: number) => Array.from({ length: n }, (_, i) => i)
    // 1,000 values are fine, 1,001 are not, in every syntax
    const ok = await api.call("GET", `/records/slug/${s}?price[in]=${values(1000).join(",")}`)
    expectStatus(ok, 200)
    expect(ok.body.meta.total).toBe(4)
    refused(await api.call("GET", `/records/slug/${s}?price[in]=${values(1001).join(",")}`), "price")
    refused(await api.call("GET", `/records?structureId=${s}&filter=price:[${values(1001).join(",")}]`), "price")
    refused(await api.call("GET", `/records?structureId=${s}&tags[hasAny]=${values(1001).join(",")}`), "tags")
    refused(await api.call("POST", "/query", { query: `FROM ${s} WHERE price IN :xs`, parameters: { xs: values(1001) } }), "price")
    refused(
      await api.call("POST", `/records/${s}/aggregate`, { filter: { price: { nin: values(1001) } }, operations: { n: { count: "*" } } }),
      "price"
    )
    // past the driver's 65,535 bind parameters, and past what the statement builder can hold
    const or = (n: number, leaf: (i: number) => unknown) => ({
      filter: { $or: Array.from({ length: n }, (_, i) => leaf(i)) },
      operations: { n: { count: "*" } }
    })
    refused(
      await api.call(
        "POST",
        `/records/${s}/aggregate`,
        or(70_000, (i) => ({ price: i }))
      ),
      "filter"
    )
    refused(
      await api.call(
        "POST",
        `/records/${s}/aggregate`,
        or(70_000, () => ({ name: { isNull: true } }))
      ),
      "filter"
    )
    refused(
      await api.call(
        "POST",
        `/records/${s}/aggregate`,
        or(9000, (i) => ({ price: { gt: i } }))
      ),
      "filter"
    )
    refused(
      await api.call("POST", `/records/${s}/aggregate`, { groupBy: Array(5000).fill("name"), operations: { n: { count: "*" } } }),
      "groupBy"
    )
    refused(await api.call("GET", `/records?structureId=${s}&sort=${Array(2000).fill("price").join(",")}`), "sort")
    refused(await api.call("GET", `/records?structureId=${s}&search=abc&searchFields=${Array(2500).fill("name").join(",")}`), "filter")
    const most = await api.call(
      "POST",
      `/records/${s}/aggregate`,
      or(1990, (i) => ({ price: { gt: i + 10 } }))
    )
    expectStatus(most, 200)
    expect(most.body.results).toEqual([{ n: 2 }])
  })

  it("a value PostgreSQL refuses (SQLSTATE class 22) is a 400 naming the parameter, without PostgreSQL's text", async () => {
    const s = product.recordSlug
    const cases: Array<readonly [Promise<Response>, string]> = [
      [api.call("GET", `/records?structureId=${s}&filter=${encodeURIComponent("at:>0000-01-01")}`), "filter"],
      [api.call("GET", `/records/slug/${s}?at[lt]=0000-01-01`), "filters"],
      [api.call("GET", `/structures/${s}/records?query=${encodeURIComponent("at > '0000-01-01'")}`), "query"],
      [api.call("POST", "/query", { query: `FROM ${s} WHERE at > '0000-01-01'` }), "query"],
      [api.call("POST", `/records/${s}/aggregate`, { filter: { at: { gt: "0000-01-01" } }, operations: { n: { count: "*" } } }), "filter"]
    ]
    for (const [pending, field] of cases) {
      const res = await pending
      refused(res, field)
      expect(res.body.message).toBe(`A date or time in the ${field} is not valid`)
      expect(res.text).not.toMatch(/date\/time|out of range:|postgres|SQLSTATE/i)
    }
  })

  it("GET /records reads bracket filters as the slug lists do, on the fast and the ordinary path", async () => {
    const s = product.recordSlug
    const prices = (res: Response) =>
      (res.body.results ?? res.body.data ?? res.body.records)
        .map((r: any) => r.data?.price ?? r.price)
        .sort((a: number, b: number) => a - b)
    for (const path of [
      `/records?structureId=${s}&`,
      `/records?structureId=${s}&reason=1&reason=2&`,
      `/records/slug/${s}?`,
      `/records/${s}?`,
      `/structures/${s}/records?`
    ]) {
      const ranged = await api.call("GET", `${path}data.price[gte]=10&price[lt]=40`)
      expectStatus(ranged, 200)
      expect(prices(ranged), path).toEqual([10, 20])
      const listed = await api.call("GET", `${path}price[in]=5,40&name=n0`)
      expect(prices(listed), path).toEqual([5])
      const bounded = await api.call("GET", `${path}price_min=20`)
      expect(prices(bounded), path).toEqual([20, 40])
      refused(await api.call("GET", `${path}price[foo]=1`), "price[foo]")
      refused(await api.call("GET", `${path}price[gte]=1&nope[gte]=1`), "nope")
    }
  })

  it("pattern rules run in linear time: catastrophic shapes against a 1 MiB near-match answer, and answer right", async () => {
    const patterned = await createStructure(api, {
      name: "Patterned",
      recordSlug: slug("patterned"),
      properties: [
        { name: "nested", type: "string", pattern: "(a+)+$" },
        { name: "anchored", type: "string", pattern: "^(a+)+$" },
        { name: "alternation", type: "string", pattern: "(a|a)*$" },
        { name: "star", type: "string", pattern: "(a*)*b" },
        { name: "digits", type: "string", pattern: "\\d+\\d+\\d+x" },
        { name: "bounded", type: "string", pattern: "a{1,999}b" },
        { name: "code", type: "string", pattern: "^[A-Z]{3}-\\d{4}$" }
      ]
    })
    const n = (1 << 20) - 1
    const near = `${"a".repeat(n)}!`
    const digits = `${"1".repeat(n)}!`
    const bad = await api.call("POST", "/records", {
      structureId: patterned.id,
      data: { nested: near, anchored: near, star: near, digits, bounded: near, code: "ABC-12345" }
    })
    refused(bad)
    expect(bad.body.details.map((d: any) => d.field).sort()).toEqual([
      "data.anchored",
      "data.bounded",
      "data.code",
      "data.digits",
      "data.nested",
      "data.star"
    ])
    const good = await api.call("POST", "/records", {
      structureId: patterned.id,
      // (a|a)*$ matches the empty string at the end of anything
      data: {
        nested: `${"a".repeat(n)}`,
        anchored: "a".repeat(n),
        alternation: near,
        star: `${"a".repeat(n - 1)}b`,
        digits: "123x",
        bounded: "aab",
        code: "ABC-1234"
      }
    })
    expectStatus(good, 201)
  })
})
