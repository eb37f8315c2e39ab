// The benchmarked endpoints: each Troupe endpoint beside the raw baseline doing the same SQL, and each write beside
// the ceiling (scripts/bench/raw-ceiling.ts: one durable statement per request into a table of its own). The
// structure, the token and the seeded records are made through Troupe's own API (so the embedded profile, Troupe on
// PGlite, seeds the same way); the raw baseline writes into the same structure of the same database.
import type { Scenario, Target } from "../bench.ts"
import { listAfterBulkScenario, listPageScenario } from "./list-after-bulk.ts"
import { queryScenarios } from "./query.ts"

export interface Context {
  readonly troupe: string
  /** the raw baseline, on Troupe's own PostgreSQL database (absent in the embedded profile) */
  readonly raw: string | undefined
  /** the ceiling server, on any PostgreSQL database (absent when none is reachable) */
  readonly ceiling: string | undefined
  /** BENCH_ONLY: the query scenarios are seeded (100,000 records) only when one of them is named */
  readonly only: ReadonlyArray<string> | undefined
  readonly password: string
  readonly request: (baseUrl: string, method: string, path: string, options?: any) => Promise<any>
}

/** Records seeded for the get and patch scenarios (read and written at random). */
const POOL = 500
/** Items per bulk request. */
const BULK = 1000

export const scenarios = async (ctx: Context): Promise<Array<Scenario>> => {
  const tokenResponse = await fetch(`${ctx.troupe}/oidc/token`, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({
      grant_type: "password",
      username: "admin",
      password: ctx.password,
      scope: "openid workspace:default"
    })
  })
  const token = ((await tokenResponse.json()) as { access_token?: string }).access_token
  if (!token) throw new Error(`bench: no token (${tokenResponse.status})`)
  const auth = { authorization: `Bearer ${token}` }
  const api = `${ctx.troupe}/workspace/default/api/v1`
  const call = async (method: string, path: string, body: unknown) => {
    const res = await ctx.request(ctx.troupe, method, `/workspace/default/api/v1${path}`, { token, body })
    if (res.status >= 300) throw new Error(`bench setup: ${method} ${path}: ${res.status} ${res.text}`)
    return res.body
  }

  // a unique key (so every write claims a unique value, as real data with a business key does), a title, a number
  const structure = await call("POST", "/structures", {
    name: "Bench Item",
    recordSlug: "bench-item",
    properties: [
      { name: "key", type: "string", isUnique: true },
      { name: "title", type: "string", maxLength: 200 },
      { name: "n", type: "number" }
    ]
  })
  const sid = structure.id as string
  const seeded = await call("POST", "/records/bulk", {
    structureId: sid,
    records: Array.from({ length: POOL }, (_, i) => ({ data: { key: `pool-${i}`, title: "seeded", n: i } }))
  })
  const pool = (seeded.records as Array<{ id: string }>).map((r) => r.id)
  if (pool.length !== POOL) throw new Error(`bench setup: seeded ${pool.length} of ${POOL}`)
  // the hot keys of the same-key upserts exist before the run: every measured upsert is an update
  await call("POST", "/records/slug/bench-item/upsert", { match: { key: "hot-troupe" }, data: { title: "hot", n: 0 } })
  const setup = async (base: string, path: string, body: unknown) => {
    const res = await ctx.request(base, "POST", path, { body })
    if (res.status >= 300) throw new Error(`bench setup: ${base}${path}: ${res.status} ${res.text}`)
    return res.body
  }
  if (ctx.raw) await setup(ctx.raw, `/raw/upsert/${sid}`, { match: { key: "hot-raw" }, data: { title: "hot", n: 0 } })
  // the ceiling's own records to patch (same count, same keys), and its hot key
  const ceilingPool: Array<string> = []
  if (ctx.ceiling) {
    const records = Array.from({ length: POOL }, (_, i) => ({ data: { key: `pool-${i}`, title: "seeded", n: i } }))
    ceilingPool.push(...(await setup(ctx.ceiling, `/ceiling/bulk/${sid}?returning=id`, { records })).ids)
    await setup(ctx.ceiling, `/ceiling/upsert/${sid}`, { match: { key: "hot-ceiling" }, data: { title: "hot", n: 0 } })
  }

  let seq = 0
  const next = () => ++seq
  const anyOf = (ids: Array<string>) => ids[Math.floor(Math.random() * ids.length)]!
  const item = (prefix: string) => {
    const n = next()
    return { key: `${prefix}-${n}`, title: `bench item ${n}`, n }
  }
  const distinctUpsert = (prefix: string) => () => {
    const { key, ...data } = item(prefix)
    return { match: { key }, data }
  }
  /** A baseline's target, when that baseline runs. */
  const at = (base: string | undefined, target: (base: string) => Target) => (base ? target(base) : undefined)

  return [
    { name: "GET /health", troupe: { url: `${ctx.troupe}/health` }, raw: at(ctx.raw, (b) => ({ url: `${b}/health` })) },
    {
      name: "create record",
      troupe: {
        url: `${api}/records`,
        method: "POST",
        headers: auth,
        bodyFactory: () => ({ structureId: sid, data: item("ct") })
      },
      raw: at(ctx.raw, (b) => ({ url: `${b}/raw/records/${sid}`, method: "POST", bodyFactory: () => ({ data: item("cr") }) })),
      ceiling: at(ctx.ceiling, (b) => ({
        url: `${b}/ceiling/records/${sid}`,
        method: "POST",
        bodyFactory: () => ({ data: item("cc") })
      }))
    },
    {
      name: "get by id",
      troupe: {
        url: `${api}/records/${pool[0]}`,
        headers: auth,
        pathFactory: () => `/workspace/default/api/v1/records/${anyOf(pool)}`
      },
      raw: at(ctx.raw, (b) => ({ url: `${b}/raw/records/${pool[0]}`, pathFactory: () => `/raw/records/${anyOf(pool)}` }))
    },
    {
      name: "patch",
      troupe: {
        url: `${api}/records/${pool[0]}`,
        method: "PATCH",
        headers: auth,
        pathFactory: () => `/workspace/default/api/v1/records/${anyOf(pool)}`,
        bodyFactory: () => ({ data: { n: next() } })
      },
      raw: at(ctx.raw, (b) => ({
        url: `${b}/raw/records/${pool[0]}`,
        method: "PATCH",
        pathFactory: () => `/raw/records/${anyOf(pool)}`,
        bodyFactory: () => ({ data: { n: next() } })
      })),
      ceiling: at(ctx.ceiling, (b) => ({
        url: `${b}/ceiling/records/${ceilingPool[0]}`,
        method: "PATCH",
        pathFactory: () => `/ceiling/records/${anyOf(ceilingPool)}`,
        bodyFactory: () => ({ data: { n: next() } })
      }))
    },
    {
      name: "upsert one key",
      troupe: {
        url: `${api}/records/slug/bench-item/upsert`,
        method: "POST",
        headers: auth,
        bodyFactory: () => ({ match: { key: "hot-troupe" }, data: { n: next() } })
      },
      raw: at(ctx.raw, (b) => ({
        url: `${b}/raw/upsert/${sid}`,
        method: "POST",
        bodyFactory: () => ({ match: { key: "hot-raw" }, data: { n: next() } })
      })),
      ceiling: at(ctx.ceiling, (b) => ({
        url: `${b}/ceiling/upsert/${sid}`,
        method: "POST",
        bodyFactory: () => ({ match: { key: "hot-ceiling" }, data: { n: next() } })
      }))
    },
    {
      name: "upsert distinct keys",
      troupe: {
        url: `${api}/records/slug/bench-item/upsert`,
        method: "POST",
        headers: auth,
        bodyFactory: distinctUpsert("ut")
      },
      raw: at(ctx.raw, (b) => ({ url: `${b}/raw/upsert/${sid}`, method: "POST", bodyFactory: distinctUpsert("ur") })),
      ceiling: at(ctx.ceiling, (b) => ({ url: `${b}/ceiling/upsert/${sid}`, method: "POST", bodyFactory: distinctUpsert("uc") }))
    },
    {
      name: `bulk create ${BULK}`,
      connections: 4,
      itemsPerRequest: BULK,
      minDuration: 20,
      troupe: {
        url: `${api}/records/bulk`,
        method: "POST",
        headers: auth,
        bodyFactory: () => ({
          structureId: sid,
          records: Array.from({ length: BULK }, () => ({ data: item("bt") })),
          options: { returnRecords: false }
        })
      },
      raw: at(ctx.raw, (b) => ({
        url: `${b}/raw/bulk/${sid}`,
        method: "POST",
        bodyFactory: () => ({ records: Array.from({ length: BULK }, () => ({ data: item("br") })) })
      })),
      ceiling: at(ctx.ceiling, (b) => ({
        url: `${b}/ceiling/bulk/${sid}`,
        method: "POST",
        bodyFactory: () => ({ records: Array.from({ length: BULK }, () => ({ data: item("bc") })) })
      }))
    },
    // filtered, sorted pages on 100k (and 1M with BENCH_LARGE=1) records (scripts/bench/query.ts), seeded by the
    // raw baseline straight into Troupe's PostgreSQL database: not in the embedded profile
    ...(await queryScenarios(ctx)),
    // right after 20,000 records are bulk-created, a page of them, beside the same page of bench-item just before
    listPageScenario(ctx, token),
    listAfterBulkScenario(ctx, token)
  ]
}
