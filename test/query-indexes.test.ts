// Index policy and statement timeout, on PostgreSQL only (PGlite cannot cancel a running statement, and the plans
// worth checking are PostgreSQL's): properties marked `indexed: true` get partial expression indexes when the
// structure is created; with 100,000 records a filtered, sorted page of 20 plans as an index scan (EXPLAIN of the
// exact statement POST /query runs), and the HTTP routes use the index; a query past the statement timeout answers
// 503 with the contract body.
import { PgClient } from "@effect/sql-pg"
import type { Structure } from "@troupe/api/structures/Structure"
import { Effect, Result } from "effect"
import { Statement } from "effect/sql"
import postgres from "postgres"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import * as Ast from "../packages/server/src/query/Ast.ts"
import { parseQueryLanguage } from "../packages/server/src/query/QueryLanguageParser.ts"
import { compileCursor, compileOrderBy, compileWhere } from "../packages/server/src/query/Compiler.ts"
import { pageStatement, scopeOf } from "../packages/server/src/query/QueryService.ts"
import { contextOf } from "../packages/server/src/query/RecordQuery.ts"
import { startServer, type TestServer } from "./support/TestServer.ts"
import { sleep } from "./support/wait.ts"

const ROWS = 100_000

// The PostgreSQL statement compiler with no connection: the same SQL text and parameters the server sends.
const offline = Statement.make(Effect.die("offline"), PgClient.makeCompiler(), [], undefined)

/** Inserts `count` records of the shape below with one INSERT ... SELECT generate_series, then ANALYZE. */
const seed = async (db: postgres.Sql, structureId: string, count: number) => {
  await db`INSERT INTO records (id, workspace, structure_id, data, created_by, updated_by)
    SELECT gen_random_uuid(), 'default', ${structureId}::uuid,
      jsonb_build_object('name', 'item ' || lpad(g::text, 6, '0'), 'price', ((g::bigint * 7919) % 100000) / 100.0,
        'category', 'c' || (g % 10), 'rank', g % 1000,
        'at', to_char(timestamp '2024-01-01' + g * interval '1 minute', 'YYYY-MM-DD"T"HH24:MI:SS"Z"')),
      'seed', 'seed'
    FROM generate_series(1, ${count}::int) g`
  await db`ANALYZE records`
}

const createItems = async (server: TestServer, token: string, slug: string): Promise<Structure> => {
  const res = await server.request("POST", `${server.base}/structures`, {
    token,
    body: {
      name: slug,
      recordSlug: slug,
      properties: [
        { name: "name", type: "string", indexed: true },
        { name: "price", type: "number", indexed: true },
        { name: "category", type: "string" },
        { name: "rank", type: "number" },
        { name: "at", type: "datetime", indexed: true }
      ]
    }
  })
  expect(res.status, res.text).toBeLessThan(300)
  return res.body
}

const indexesOf = (db: postgres.Sql, structureId: string) =>
  db<Array<{ indexname: string; indexdef: string }>>`SELECT indexname, indexdef FROM pg_indexes
    WHERE tablename = 'records' AND indexname LIKE ${`rq\\_${structureId.replace(/-/g, "")}\\_%`}
      AND (SELECT indisvalid FROM pg_index WHERE indexrelid = indexname::regclass)`

/** Indexes follow the definition shortly after the change commits; seeding waits for them to be valid (ANALYZE
 * and a concurrent index build still running would otherwise fight over the table lock). */
const awaitIndexes = async (db: postgres.Sql, structureId: string, count: number) => {
  for (let i = 0; i < 100 && (await indexesOf(db, structureId)).length < count; i++) await sleep(100)
}

describe.runIf(process.env.DATABASE_URL)("query indexes and statement timeout (PostgreSQL)", () => {
  let server: TestServer
  let db: postgres.Sql
  let token: string
  let items: Structure

  beforeAll(async () => {
    server = await startServer({ env: { TROUPE_LIMIT_READS: "0", TROUPE_LIMIT_QUERIES: "0" } })
    token = await server.adminToken()
    db = postgres(server.databaseUrl!, { max: 2, onnotice: () => {} })
    items = await createItems(server, token, "items")
    await awaitIndexes(db, items.id, 3)
    await seed(db, items.id, ROWS)
  })
  afterAll(async () => {
    await db?.end()
    await server?.close()
  })

  it("creates one partial expression index per indexed property, named from ids", async () => {
    const indexes = await indexesOf(db, items.id)
    expect(indexes).toHaveLength(3)
    for (const ix of indexes) {
      expect(ix.indexname).toMatch(/^rq_[0-9a-f]{32}_[0-9a-f]{12}$/)
      expect(ix.indexdef).toContain(`WHERE ((structure_id = '${items.id}'::uuid) AND (deleted_at IS NULL))`)
    }
    expect(indexes.some((ix) => ix.indexdef.includes("'price'::text))::numeric"))).toBe(true)
    expect(indexes.some((ix) => ix.indexdef.includes("(data ->> 'name'::text)"))).toBe(true)
    expect(indexes.some((ix) => ix.indexdef.includes("troupe_datetime((data ->> 'at'::text))"))).toBe(true)
    const [row] = await db`SELECT count(*)::int AS n FROM records WHERE structure_id = ${items.id}`
    expect(row?.n).toBe(ROWS)
    // and statistics on each expression, filled by ANALYZE: a range is estimated from the data, not a fixed guess
    const stats = await db`SELECT stxname FROM pg_statistic_ext WHERE stxname LIKE ${`rq\\_${items.id.replace(/-/g, "")}\\_%`}`
    expect(stats.map((s: any) => s.stxname).sort()).toEqual(indexes.map((ix) => `${ix.indexname}_s`).sort())
    const [plan] = await db.unsafe(`EXPLAIN (FORMAT JSON) SELECT 1 FROM records WHERE
      (CASE WHEN jsonb_typeof((data -> 'price'::text)) = 'number'::text THEN ((data -> 'price'::text))::numeric END) BETWEEN 200 AND 800`)
    const estimated = (plan as any)["QUERY PLAN"][0].Plan["Plan Rows"] as number
    expect(estimated).toBeGreaterThan(ROWS / 4)
  })

  it("plans a filtered, sorted page of 20 over 100,000 records as an index scan", async () => {
    const ctx = contextOf(items, server.workspace)
    const queries = [
      "FROM items WHERE price > 500 ORDER BY price DESC LIMIT 20",
      "FROM items WHERE price BETWEEN 100 AND 200 ORDER BY price LIMIT 20",
      "FROM items WHERE category = 'c3' AND price < 900 ORDER BY price DESC LIMIT 20",
      "FROM items WHERE name >= 'item 050000' ORDER BY name LIMIT 20 OFFSET 20",
      "FROM items WHERE rank = 7 ORDER BY price LIMIT 20",
      "FROM items WHERE at > '2024-02-01T00:00:00Z' ORDER BY at DESC LIMIT 20",
      "FROM items WHERE at BETWEEN '2024-01-10' AND '2024-01-20T12:00:00+02:00' ORDER BY at LIMIT 20"
    ]
    for (const text of queries) {
      const parsed = parseQueryLanguage(text)
      if (Result.isFailure(parsed)) throw new Error(parsed.failure.message)
      const q = parsed.success
      const statement = pageStatement(
        offline,
        {
          structureId: items.id,
          where: q.where ?? Ast.all,
          sort: q.orderBy,
          limit: q.limit ?? 100,
          offset: q.offset ?? 0,
          includeDeleted: false
        },
        ctx
      )
      if (Result.isFailure(statement)) throw new Error(statement.failure.message)
      const [sql, params] = statement.success.compile()
      const plan = (await db.unsafe(`EXPLAIN ${sql}`, params as Array<any>)).map((r: any) => r["QUERY PLAN"]).join("\n")
      expect(plan, `${text}\n${plan}`).not.toMatch(/Seq Scan on records/)
      expect(plan, `${text}\n${plan}`).toMatch(/Index (Only )?Scan( Backward)? using rq_|Bitmap Index Scan on (rq_|records_data_gin)/)

      // and through HTTP the answer is the page the database orders the same way
      const res = await server.request("POST", `${server.base}/query`, { token, body: { query: text } })
      expect(res.status, res.text).toBe(200)
      expect(res.body.results).toHaveLength(20)
    }
  })

  it("matches SEARCH() and search= of a structure that names its search fields on the search index", async () => {
    // the count of a search (includeCount, or a page the planner cannot stop early): the GIN index finds the rows
    const named = { ...items, searchFields: [{ name: "name", weight: 1 }] } as Structure
    const parsed = parseQueryLanguage("FROM items WHERE SEARCH('000123')")
    if (Result.isFailure(parsed)) throw new Error(parsed.failure.message)
    const where = compileWhere(offline, parsed.success.where ?? Ast.all, contextOf(named, server.workspace))
    if (Result.isFailure(where)) throw new Error(where.failure.message)
    const [sql, params] = offline`SELECT count(*) FROM records r WHERE r.structure_id = ${items.id}::uuid AND ${where.success}`.compile()
    const plan = (await db.unsafe(`EXPLAIN ${sql}`, params as Array<any>)).map((r: any) => r["QUERY PLAN"]).join("\n")
    expect(plan, plan).toMatch(/Bitmap Index Scan on records_search/)
    expect(plan, plan).not.toMatch(/Seq Scan on records/)
    const [count] = await db.unsafe(sql, params as Array<any>)
    expect(Number(count!.count)).toBe(1)
  })

  it("compares datetimes as instants: no offset means UTC, other offsets are converted", async () => {
    const at = async (text: string) => {
      const res = await server.request("POST", `${server.base}/query`, { token, body: { query: text } })
      expect(res.status, res.text).toBe(200)
      return res.body.results.map((r: any) => r.data.at)
    }
    // record g = 61 holds 2024-01-01T01:01:00Z
    expect(await at("FROM items WHERE at = '2024-01-01T01:01:00' LIMIT 5")).toEqual(["2024-01-01T01:01:00Z"])
    expect(await at("FROM items WHERE at = '2024-01-01T02:01:00+01:00' LIMIT 5")).toEqual(["2024-01-01T01:01:00Z"])
    expect(await at("FROM items WHERE at < '2024-01-01T00:03' ORDER BY at LIMIT 5")).toEqual([
      "2024-01-01T00:01:00Z",
      "2024-01-01T00:02:00Z"
    ])
    const list = await server.request(
      "GET",
      `${server.base}/records?structureId=items&filter=${encodeURIComponent("at:>=2024-03-01")}&sort=at&limit=1`,
      { token }
    )
    expect(list.status, list.text).toBe(200)
    expect(list.body.results[0].data.at).toBe("2024-03-01T00:00:00Z")
  })

  it("starts a keyset page at its cursor in the index", async () => {
    const ctx = contextOf(items, server.workspace)
    const page = await server.request("GET", `${server.base}/records?structureId=items&sort=-price&limit=20`, { token })
    expect(page.status).toBe(200)
    const cursor = page.body.pagination.nextCursor as string
    const keys: ReadonlyArray<Ast.SortKey> = [{ field: Ast.name("price"), direction: "desc" }]
    const unwrap = <A>(r: Result.Result<A, { message: string }>): A => {
      if (Result.isFailure(r)) throw new Error(r.failure.message)
      return r.success
    }
    const after = unwrap(compileCursor(offline, cursor, keys, ctx))
    const order = unwrap(compileOrderBy(offline, keys, ctx))
    const [sql, params] = offline`SELECT r.* FROM records r WHERE ${scopeOf(offline, items.id, false)} AND ${after}
      ORDER BY ${order} LIMIT 20`.compile()
    const plan = (await db.unsafe(`EXPLAIN ${sql}`, params as Array<any>)).map((r: any) => r["QUERY PLAN"]).join("\n")
    expect(plan, plan).toMatch(/Index Scan Backward using rq_/)
    expect(plan, plan).toMatch(/Index Cond: .*<= /)
    // and the next page through HTTP continues exactly where the first ended
    const next = await server.request("GET", `${server.base}/records?structureId=items&sort=-price&limit=20&cursor=${cursor}`, { token })
    const both = [...page.body.results, ...next.body.results].map((r: any) => r.data.price)
    expect(both).toEqual([...both].sort((a, b) => b - a))
    const whole = await server.request("GET", `${server.base}/records?structureId=items&sort=-price&limit=40`, { token })
    expect([...page.body.results, ...next.body.results].map((r: any) => r.id)).toEqual(whole.body.results.map((r: any) => r.id))
  })

  it("the list routes and POST /query read through the indexes", async () => {
    const names = (await indexesOf(db, items.id)).map((ix) => ix.indexname)
    const scans = async () => {
      await db`SELECT pg_stat_clear_snapshot()`
      const [row] = await db`SELECT coalesce(sum(idx_scan), 0)::int AS n FROM pg_stat_user_indexes WHERE indexrelname IN ${db(names)}`
      return row?.n as number
    }
    const before = await scans()
    const list = await server.request("GET", `${server.base}/records?structureId=items&filter=price:>900&sort=-price&limit=20`, { token })
    expect(list.status).toBe(200)
    expect(list.body.results.map((r: any) => r.data.price)).toEqual(
      [...list.body.results.map((r: any) => r.data.price)].sort((a, b) => b - a)
    )
    expect(list.body.results[0].data.price).toBe(999.99)
    const slug = await server.request("GET", `${server.base}/records/items?price[gte]=100&sort=price&pageSize=20`, { token })
    expect(slug.status).toBe(200)
    expect(slug.body.data[0].data.price).toBe(100)
    expect(slug.body.meta.total).toBeGreaterThan(ROWS / 2)
    // statistics reach the view within PostgreSQL's flush interval (at most about 10 s)
    let after = before
    for (let i = 0; i < 60 && after <= before; i++) {
      await sleep(250)
      after = await scans()
    }
    expect(after).toBeGreaterThan(before)
  })

  it("cancels a query or a list at the statement timeout: 503 with the contract body", async () => {
    const strict = await startServer({ env: { TROUPE_QUERY_TIMEOUT_MS: "1", TROUPE_LIMIT_QUERIES: "0", TROUPE_LIMIT_READS: "0" } })
    const sdb = postgres(strict.databaseUrl!, { max: 1, onnotice: () => {} })
    try {
      const t = await strict.adminToken()
      const slow = await createItems(strict, t, "slow")
      await awaitIndexes(sdb, slow.id, 3)
      await seed(sdb, slow.id, 20_000)
      const viaQuery = await strict.request("POST", `${strict.base}/query`, {
        token: t,
        body: { query: "SELECT category, COUNT(*) AS n, AVG(price) AS mean FROM slow WHERE SEARCH('item') GROUP BY category" }
      })
      expect(viaQuery.status, viaQuery.text).toBe(503)
      expect(viaQuery.body).toMatchObject({
        error: "Service Unavailable",
        code: "QUERY_TIMEOUT",
        statusCode: 503,
        details: [],
        requestId: expect.any(String)
      })
      expect(viaQuery.body.message).toContain("0.001 s")
      const viaAggregate = await strict.request("POST", `${strict.base}/records/slow/aggregate`, {
        token: t,
        body: { filter: { name: { contains: "item" } }, groupBy: ["category"], operations: { n: { count: "*" } } }
      })
      expect(viaAggregate.status, viaAggregate.text).toBe(503)
      expect(viaAggregate.body.code).toBe("QUERY_TIMEOUT")
      // the record lists run on the same pool, under the same timeout
      for (const path of [`/records?structureId=slow&search=item&includeCount=true`, `/records/slug/slow?search=item`]) {
        const viaList = await strict.request("GET", `${strict.base}${path}`, { token: t })
        expect(viaList.status, viaList.text).toBe(503)
        expect(viaList.body).toMatchObject({ code: "QUERY_TIMEOUT", statusCode: 503, requestId: expect.any(String) })
      }
      // the connection that timed out is healthy again
      const after = await strict.request("POST", `${strict.base}/query`, {
        token: t,
        body: { query: "FROM slow WHERE id = :id", parameters: { id: slow.id } }
      })
      expect([200, 503]).toContain(after.status)
      expect((await strict.request("GET", `${strict.base}/structures`, { token: t })).status).toBe(200)
    } finally {
      await sdb.end()
      await strict.close()
    }
  })
})
