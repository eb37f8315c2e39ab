// The plain `GET /records/{id}`, the list `GET /records?...` and `POST /query` are answered by fast routes at the
// edge (records/FastRead.ts, query/FastQuery.ts); the read with any query option, a list repeating a parameter and a
// query with a query string take the ordinary HttpApi handlers. Both must answer identically: same status, headers
// that matter and body, for every outcome (found, masked secrets, computed fields, not found, deleted, expired, pages
// and cursors, bad parameters, malformed or mistyped bodies, bad or foreign token, missing permission), and the fast
// routes must count against their rate classes.
import * as Http from "node:http"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type Client, client, createStructure, expectError, expectStatus, createServiceAccountClient, slug } from "./support/records.ts"
import { startServer, type TestServer } from "./support/TestServer.ts"
import { sleep } from "./support/wait.ts"

const windowSeconds = 3

describe("GET /records/{id}, GET /records and POST /query: fast routes and ordinary handlers agree", () => {
  let server: TestServer
  let api: Client
  let other: Client
  let structure: { id: string; recordSlug: string }

  beforeAll(async () => {
    server = await startServer({
      env: { TROUPE_LIMIT_READS: "40", TROUPE_LIMIT_QUERIES: "30", TROUPE_LIMIT_WINDOW_SECONDS: String(windowSeconds) }
    })
    api = client(server, await server.adminToken())
    const ws = await server.request("POST", "/workspace/api/v1/workspaces", { token: api.token, body: { slug: slug("ws") } })
    expectStatus(ws, 201)
    other = client(server, await server.userToken("admin", server.adminPassword, ws.body.slug))
    structure = await createStructure(api, {
      name: "Fast Read",
      recordSlug: slug("fast"),
      properties: [
        { name: "name", type: "string" },
        { name: "qty", type: "number" },
        { name: "secret", type: "string", isSecret: true },
        { name: "double", type: "number", expression: "qty * 2", computedMode: "virtual" }
      ]
    })
  })
  afterAll(async () => {
    await server?.close()
  })

  /** A fresh window, so the reads limit never interferes with the comparisons. */
  const nextWindow = () => sleep(windowSeconds * 1000 - (Date.now() % (windowSeconds * 1000)) + 50)

  const both = async (who: Client, id: string) => {
    const fast = await who.call("GET", `/records/${id}`)
    const ordinary = await who.call("GET", `/records/${id}?reveal=false`)
    return { fast, ordinary }
  }

  const expectSame = ({ fast, ordinary }: Awaited<ReturnType<typeof both>>) => {
    expect(fast.status).toBe(ordinary.status)
    expect(fast.headers.get("content-type")).toBe(ordinary.headers.get("content-type"))
    expect(fast.headers.get("x-request-id")).toMatch(/.+/)
    const strip = (b: any) => (b && typeof b === "object" ? { ...b, requestId: undefined } : b)
    expect(strip(fast.body)).toEqual(strip(ordinary.body))
    if (fast.status >= 400) expect(fast.body.requestId).toBe(fast.headers.get("x-request-id"))
    return fast
  }

  it("a live record, secrets masked, computed field present", async () => {
    await nextWindow()
    const created = await api.call("POST", "/records", { structureId: structure.id, data: { name: "a", qty: 4, secret: "hush" } })
    expectStatus(created, 201)
    const fast = expectSame(await both(api, created.body.id))
    expect(fast.status).toBe(200)
    expect(fast.body.data.name).toBe("a")
    expect(fast.body.data.secret).not.toBe("hush")
    expect(fast.body.data.double).toBe(8)
    expect(fast.body.version).toBe(1)
  })

  it("unknown, soft-deleted and expired records: the same 404", async () => {
    await nextWindow()
    expectError(expectSame(await both(api, "00000000-0000-4000-8000-000000000000")), 404)
    const gone = await api.call("POST", "/records", { structureId: structure.id, data: { name: "b" } })
    expectStatus(await api.call("DELETE", `/records/${gone.body.id}`), 200)
    expectError(expectSame(await both(api, gone.body.id)), 404)
    const brief = await api.call("POST", "/records?ttlSeconds=1", { structureId: structure.id, data: { name: "c" } })
    expectStatus(brief, 201)
    await sleep(1200)
    expectError(expectSame(await both(api, brief.body.id)), 404)
  })

  it("bad token 401, another workspace's token 403, no read permission 403", async () => {
    await nextWindow()
    const created = await api.call("POST", "/records", { structureId: structure.id, data: { name: "d" } })
    const id = created.body.id
    expectError(expectSame(await both(client(server, "not-a-token"), id)), 401)
    expectError(expectSame(await both(other, id)), 403)
    const writerOnly = await createServiceAccountClient(server, api, { permissions: ["write:webhooks"] })
    expectError(expectSame(await both(writerOnly, id)), 403)
    // no token at all is the ordinary handler's 401 on both forms
    const anonymous = await server.request("GET", `${server.base}/records/${id}`)
    expectError(anonymous, 401)
  })

  /**
   * The list as the fast route answers it, and as the ordinary handler does: a repeated parameter sends it there
   * (`reason`, which the list ignores: every other name is a bracket filter).
   */
  const lists = async (who: Client, query: string) => {
    const fast = await who.call("GET", `/records?${query}`)
    const ordinary = await who.call("GET", `/records?${query}&reason=1&reason=2`)
    return { fast, ordinary }
  }

  it("list pages: the same records, masking, computed fields, projection, counts and next pages", async () => {
    await nextWindow()
    const listed = await createStructure(api, {
      name: "Fast List",
      recordSlug: slug("fastlist"),
      properties: [
        { name: "name", type: "string" },
        { name: "qty", type: "number", indexed: true },
        { name: "secret", type: "string", isSecret: true },
        { name: "double", type: "number", expression: "qty * 2", computedMode: "virtual" }
      ]
    })
    const bulk = await api.call("POST", "/records/bulk", {
      structureId: listed.id,
      records: [1, 2, 3, 3, 4, 5, 6].map((qty, i) => ({ data: { name: i === 0 ? "a b" : `n${i}`, qty, secret: `s${i}` } }))
    })
    expectStatus(bulk, 201)
    const s = listed.recordSlug
    const page = expectSame(await lists(api, `structureId=${s}&filter=qty:>1&sort=-qty&limit=2&includeCount=true`))
    expect(page.status).toBe(200)
    expect(page.body.results.map((r: any) => r.data.qty)).toEqual([6, 5])
    expect(page.body.results[0].data.double).toBe(12)
    expect(page.body.results[0].data.secret).not.toBe("s6")
    expect(page.body.pagination).toMatchObject({ limit: 2, offset: 0, total: 6, hasMore: true })
    // the next pages, through both paths, down to the tie at qty 3
    let cursor = page.body.pagination.nextCursor as string
    const seen = page.body.results.map((r: any) => r.id)
    while (cursor) {
      const next = expectSame(await lists(api, `structureId=${s}&filter=qty:>1&sort=-qty&limit=2&cursor=${cursor}`))
      expect(next.status).toBe(200)
      seen.push(...next.body.results.map((r: any) => r.id))
      cursor = next.body.pagination.nextCursor
    }
    expect(new Set(seen).size).toBe(6)
    // projection, offset, search, structure by id, `+` and percent-escapes in values
    expectSame(await lists(api, `structureId=${listed.id}&fields=name,double&offset=3&limit=3`))
    const spaced = expectSame(await lists(api, `structureId=${s}&filter=name:a+b`))
    expect(spaced.body.results.map((r: any) => r.data.name)).toEqual(["a b"])
    expectSame(await lists(api, `structureId=${s}&filter=${encodeURIComponent("name:a b")}`))
    expectSame(await lists(api, `structureId=${s}&search=n3&searchFields=name`))
    // every structure of the workspace
    expectSame(await lists(api, "limit=5&sort=createdAt"))
    // bracket filters, as the slug lists read them (`data.` optional), with filter and with each other
    const ranged = expectSame(await lists(api, `structureId=${s}&data.qty[gte]=3&qty[lt]=6&sort=qty`))
    expect(ranged.body.results.map((r: any) => r.data.qty)).toEqual([3, 3, 4, 5])
    const listed3 = expectSame(await lists(api, `structureId=${s}&qty[in]=1,6&filter=qty:>1`))
    expect(listed3.body.results.map((r: any) => r.data.qty)).toEqual([6])
    const named = expectSame(await lists(api, `structureId=${s}&name=a+b`))
    expect(named.body.results.map((r: any) => r.data.name)).toEqual(["a b"])
    const bounded = expectSame(await lists(api, `structureId=${s}&qty_max=2&includeCount=true`))
    expect(bounded.body.pagination.total).toBe(2)
  })

  it("list errors: the same 400, 404 and auth failures", async () => {
    await nextWindow()
    const s = structure.recordSlug
    expectError(expectSame(await lists(api, `structureId=${s}&filter=qty:>>1`)), 400)
    expectError(expectSame(await lists(api, `structureId=${s}&filter=nope:1`)), 400)
    expectError(expectSame(await lists(api, `structureId=${s}&limit=abc`)), 400)
    expectError(expectSame(await lists(api, `structureId=${s}&cursor=not-a-cursor`)), 400)
    expectError(expectSame(await lists(api, `structureId=${s}&sort=-nope`)), 400)
    expectError(expectSame(await lists(api, "structureId=no-such-structure")), 404)
    expectError(expectSame(await lists(client(server, "not-a-token"), `structureId=${s}`)), 401)
    expectError(expectSame(await lists(other, `structureId=${s}`)), 403)
    const writerOnly = await createServiceAccountClient(server, api, { permissions: ["write:webhooks"] })
    expectError(expectSame(await lists(writerOnly, `structureId=${s}`)), 403)
    // an unknown bracket operator, an unknown bracket field, and numbers past their bounds or not safe integers
    const unknownOp = expectSame(await lists(api, `structureId=${s}&qty[foo]=1`))
    expectError(unknownOp, 400)
    expect(unknownOp.body.details[0].field).toBe("qty[foo]")
    expectError(expectSame(await lists(api, `structureId=${s}&nope[gte]=1`)), 400)
    expectError(expectSame(await lists(api, `structureId=${s}&qty[in]=${Array.from({ length: 1001 }, (_, i) => i).join(",")}`)), 400)
    for (const q of ["limit=101", "limit=99999999999999999999999", "offset=99999999999999999999", "limit=1e2", "offset=-1"]) {
      expectError(expectSame(await lists(api, `structureId=${s}&${q}`)), 400)
    }
    // a NUL or a lone surrogate is refused at the edge, which the fast route leaves it to: the same 400
    for (const bad of ["filter=name:%00", "qty%00=1", "name=%ED%A0%80", "name=a%00"]) {
      const res = expectSame(await lists(api, `structureId=${s}&${bad}`))
      expectError(res, 400)
      expect(res.body.details[0].field).toMatch(/^query/)
    }
  })

  /** A query as the fast route answers it, and (with a query string the handler ignores) as the ordinary handler does. */
  const queries = async (who: Client, body: string, contentType = "application/json") => {
    const send = (path: string) => who.raw("POST", path, { raw: body, headers: { "content-type": contentType } })
    return { fast: await send("/query"), ordinary: await send("/query?via=stack") }
  }

  it("POST /query: the same results, and the same 400s for malformed, mistyped or bad queries", async () => {
    await nextWindow()
    const s = structure.recordSlug
    const ok = expectSame(
      await queries(api, JSON.stringify({ query: `FROM ${s} WHERE qty >= :min ORDER BY qty DESC LIMIT 3`, parameters: { min: 1 } }))
    )
    expect(ok.status).toBe(200)
    expect(Array.isArray(ok.body.results)).toBe(true)
    expectSame(
      await queries(
        api,
        JSON.stringify({ query: `FROM ${s} LIMIT 2`, includeDeleted: true, unknown: 1 }),
        "application/json; charset=utf-8"
      )
    )
    for (const bad of ["{", "", " ", "null", "[]", "{}", JSON.stringify({ query: 5 }), JSON.stringify({ query: "FROM", parameters: 3 })]) {
      expectError(expectSame(await queries(api, bad)), 400)
    }
    expectError(expectSame(await queries(api, JSON.stringify({ query: `FROM ${s} WHERE qty >>= 1` }))), 400)
    // the edge's input guards: a NUL or lone surrogate in any JSON string, JSON nested too deeply
    const nul = expectSame(await queries(api, `{"query":"FROM ${s} WHERE name = 'a\\u0000'"}`))
    expectError(nul, 400)
    expect(nul.body.details[0].field).toBe("query")
    const lone = expectSame(await queries(api, `{"query":"FROM ${s} WHERE name = :n","parameters":{"n":"\\ud800"}}`))
    expectError(lone, 400)
    expect(lone.body.details[0].field).toBe("parameters.n")
    const deep = expectSame(await queries(api, `{"query":"FROM ${s}","parameters":{"x":${"[".repeat(100)}${"]".repeat(100)}}}`))
    expectError(deep, 400)
    expect(deep.body.details[0].field).toMatch(/^parameters\.x\[0\]/)
    expectError(expectSame(await queries(api, JSON.stringify({ query: "FROM no-such-structure" }))), 404)
    // another content type is the stack's 415 on both paths
    expectError(expectSame(await queries(api, JSON.stringify({ query: `FROM ${s}` }), "text/plain")), 415)
  })

  it("POST /query: the same auth failures, checked before the body", async () => {
    await nextWindow()
    const body = JSON.stringify({ query: `FROM ${structure.recordSlug}` })
    expectError(expectSame(await queries(client(server, "not-a-token"), body)), 401)
    expectError(expectSame(await queries(client(server, "not-a-token"), "{")), 401)
    expectError(expectSame(await queries(other, body)), 403)
    const writerOnly = await createServiceAccountClient(server, api, { permissions: ["write:webhooks"] })
    expectError(expectSame(await queries(writerOnly, "{")), 403)
  })

  it("POST /query counts against the queries limit: 429 with Retry-After past it", async () => {
    await nextWindow()
    let limited: Awaited<ReturnType<Client["call"]>> | undefined
    for (let i = 0; i < 45 && limited === undefined; i++) {
      const res = await api.call("POST", "/query", { query: `FROM ${structure.recordSlug} LIMIT 1` })
      if (res.status === 429) limited = res
      else expectStatus(res, 200)
    }
    expect(limited).toBeDefined()
    expectError(limited!, 429, "QUOTA_EXCEEDED")
    expect(Number(limited!.headers.get("retry-after"))).toBeGreaterThan(0)
  })

  /** A write sent with a chunked body (no Content-Length): the fast lane leaves it to the ordinary handler. */
  const chunked = (method: string, path: string, body: unknown, headers: Record<string, string> = {}) =>
    new Promise<{ status: number; body: any }>((resolve, reject) => {
      const req = Http.request(
        `${server.baseUrl}${server.base}${path}`,
        { method, headers: { authorization: `Bearer ${api.token}`, "content-type": "application/json", ...headers } },
        (res) => {
          let text = ""
          res.on("data", (d) => (text += d))
          res.on("end", () => resolve({ status: res.statusCode!, body: JSON.parse(text) }))
        }
      )
      req.on("error", reject)
      req.write(JSON.stringify(body))
      req.end()
    })

  it("create, PATCH and upsert: both lanes answer and record the writer alike, and refuse alike", async () => {
    await nextWindow()
    const who = { "x-forwarded-for": "198.51.100.4, 10.0.0.1", "user-agent": "lane-test/1" }
    const strip = (b: any) => ({ ...b, id: undefined, createdAt: undefined, updatedAt: undefined, requestId: undefined })
    const body = { structureId: structure.id, data: { name: "w", qty: 2, secret: "s" } }
    const fast = await api.call("POST", "/records", body, who)
    const ordinary = await chunked("POST", "/records", body, who)
    expectStatus(fast, 201)
    expect(ordinary.status).toBe(201)
    expect(strip(ordinary.body)).toEqual(strip(fast.body))
    const patch = { data: { qty: 3 }, reason: "lanes" }
    const fastPatch = await api.call("PATCH", `/records/${fast.body.id}`, patch, who)
    const ordinaryPatch = await chunked("PATCH", `/records/${ordinary.body.id}`, patch, who)
    expectStatus(fastPatch, 200)
    expect(ordinaryPatch.status).toBe(200)
    expect(strip(ordinaryPatch.body)).toEqual(strip(fastPatch.body))
    expect(fastPatch.body).toMatchObject({ version: 2, previousVersion: 1, data: { qty: 3, double: 6 } })
    for (const id of [fast.body.id, ordinary.body.id]) {
      const log = await api.call("GET", `/records/${id}/changelog`)
      expect(log.body.entries.map((e: any) => e.metadata)).toEqual([
        { clientAddress: "198.51.100.4", userAgent: "lane-test/1", source: "api", reason: "lanes" },
        { clientAddress: "198.51.100.4", userAgent: "lane-test/1", source: "api" }
      ])
    }
    // refusals: a stale If-Match, a bad body, an unknown record
    const stale = { "if-match": "1" }
    const fastStale = await api.call("PATCH", `/records/${fast.body.id}`, patch, stale)
    const ordinaryStale = await chunked("PATCH", `/records/${ordinary.body.id}`, patch, stale)
    expectError(fastStale, 409, "VERSION_CONFLICT")
    expect(ordinaryStale.body.code).toBe("VERSION_CONFLICT")
    const bad = { structureId: structure.id, data: { qty: "many" } }
    const fastBad = await api.call("POST", "/records", bad)
    expectError(fastBad, 400, "VALIDATION_ERROR")
    expect(strip((await chunked("POST", "/records", bad)).body)).toEqual(strip(fastBad.body))
    const missing = "00000000-0000-4000-8000-000000000000"
    const fastMissing = await api.call("PATCH", `/records/${missing}`, patch)
    expectError(fastMissing, 404, "RECORD_NOT_FOUND")
    expect(strip((await chunked("PATCH", `/records/${missing}`, patch)).body)).toEqual(strip(fastMissing.body))
    // upsert with an Idempotency-Key: the replay is marked in both lanes
    const upsert = { match: { name: "u" }, data: { qty: 1 } }
    const first = await api.call("POST", `/records/slug/${structure.recordSlug}/upsert`, upsert, { "idempotency-key": "lanes-1" })
    expectStatus(first, 201)
    const replayed = await api.call("POST", `/records/slug/${structure.recordSlug}/upsert`, upsert, { "idempotency-key": "lanes-1" })
    expect(replayed.headers.get("idempotent-replayed")).toBe("true")
    expect(replayed.body).toEqual(first.body)
    const again = await chunked("POST", `/records/slug/${structure.recordSlug}/upsert`, upsert, { "idempotency-key": "lanes-1" })
    expect(again.body).toEqual(first.body)
  })

  it("the fast routes count against the reads limit: 429 with Retry-After past it", async () => {
    await nextWindow()
    const created = await api.call("POST", "/records", { structureId: structure.id, data: { name: "e" } })
    let limited: Awaited<ReturnType<Client["call"]>> | undefined
    for (let i = 0; i < 60 && limited === undefined; i++) {
      const res = await api.call("GET", i % 2 === 0 ? `/records/${created.body.id}` : `/records?structureId=${structure.id}&limit=1`)
      if (res.status === 429) limited = res
      else expectStatus(res, 200)
    }
    expect(limited).toBeDefined()
    expectError(limited!, 429, "QUOTA_EXCEEDED")
    expect(Number(limited!.headers.get("retry-after"))).toBeGreaterThan(0)
  })
})
