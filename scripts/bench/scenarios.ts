// The benchmarked endpoints: each Troupe endpoint beside the raw baseline doing the same SQL. The structure and the
// token are made through Troupe's own API; the raw baseline writes into the same structure of the same database.
import type { Scenario } from "../bench.ts"
import { queryScenarios } from "./query.ts"

export interface Context {
  readonly troupe: string
  readonly raw: string
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
  const rawHot = await fetch(`${ctx.raw}/raw/upsert/${sid}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ match: { key: "hot-raw" }, data: { title: "hot", n: 0 } })
  })
  if (rawHot.status >= 300) throw new Error(`bench setup: raw upsert ${rawHot.status} ${await rawHot.text()}`)

  let seq = 0
  const next = () => ++seq
  const anyPooled = () => pool[Math.floor(Math.random() * pool.length)]!
  const item = (prefix: string) => {
    const n = next()
    return { key: `${prefix}-${n}`, title: `bench item ${n}`, n }
  }

  return [
    { name: "GET /health", troupe: { url: `${ctx.troupe}/health` }, raw: { url: `${ctx.raw}/health` } },
    {
      name: "create record",
      troupe: {
        url: `${api}/records`,
        method: "POST",
        headers: auth,
        bodyFactory: () => ({ structureId: sid, data: item("ct") })
      },
      raw: { url: `${ctx.raw}/raw/records/${sid}`, method: "POST", bodyFactory: () => ({ data: item("cr") }) }
    },
    {
      name: "get by id",
      troupe: {
        url: `${api}/records/${pool[0]}`,
        headers: auth,
        pathFactory: () => `/workspace/default/api/v1/records/${anyPooled()}`
      },
      raw: { url: `${ctx.raw}/raw/records/${pool[0]}`, pathFactory: () => `/raw/records/${anyPooled()}` }
    },
    {
      name: "patch",
      troupe: {
        url: `${api}/records/${pool[0]}`,
        method: "PATCH",
        headers: auth,
        pathFactory: () => `/workspace/default/api/v1/records/${anyPooled()}`,
        bodyFactory: () => ({ data: { n: next() } })
      },
      raw: {
        url: `${ctx.raw}/raw/records/${pool[0]}`,
        method: "PATCH",
        pathFactory: () => `/raw/records/${anyPooled()}`,
        bodyFactory: () => ({ data: { n: next() } })
      }
    },
    {
      name: "upsert one key",
      troupe: {
        url: `${api}/records/slug/bench-item/upsert`,
        method: "POST",
        headers: auth,
        bodyFactory: () => ({ match: { key: "hot-troupe" }, data: { n: next() } })
      },
      raw: {
        url: `${ctx.raw}/raw/upsert/${sid}`,
        method: "POST",
        bodyFactory: () => ({ match: { key: "hot-raw" }, data: { n: next() } })
      }
    },
    {
      name: "upsert distinct keys",
      troupe: {
        url: `${api}/records/slug/bench-item/upsert`,
        method: "POST",
        headers: auth,
        bodyFactory: () => {
          const { key, ...data } = item("ut")
          return { match: { key }, data }
        }
      },
      raw: {
        url: `${ctx.raw}/raw/upsert/${sid}`,
        method: "POST",
        bodyFactory: () => {
          const { key, ...data } = item("ur")
          return { match: { key }, data }
        }
      }
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
      raw: {
        url: `${ctx.raw}/raw/bulk/${sid}`,
        method: "POST",
        bodyFactory: () => ({ records: Array.from({ length: BULK }, () => ({ data: item("br") })) })
      }
    },
    // filtered, sorted pages on 100k (and 1M with BENCH_LARGE=1) records (scripts/bench/query.ts)
    ...(await queryScenarios(ctx))
  ]
}
