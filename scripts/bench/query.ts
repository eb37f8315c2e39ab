// Query scenarios of `npm run bench`: a filtered, sorted page of 20 through `GET /records` and through the
// equivalent `POST /query`, on a structure of 100,000 records (and of 1,000,000 with BENCH_LARGE=1), each beside
// the same SQL run raw. Records are seeded by the raw baseline with one INSERT ... SELECT generate_series; the
// structure is created through Troupe, so its `indexed` properties get Troupe's indexes (README, "Queries").
import type { Scenario } from "../bench.ts"
import type { Context } from "./scenarios.ts"

const FILTER = "category:c3,price:200..800"
const QUERY = (slug: string) => `FROM ${slug} WHERE category = 'c3' AND price BETWEEN 200 AND 800 ORDER BY price DESC LIMIT 20`

const token = async (ctx: Context) => {
  const res = await ctx.request(ctx.troupe, "POST", "/oidc/token", {
    raw: new URLSearchParams({
      grant_type: "password",
      username: "admin",
      password: ctx.password,
      scope: "openid workspace:default"
    }).toString(),
    headers: { "content-type": "application/x-www-form-urlencoded" }
  })
  if (res.status !== 200) throw new Error(`bench token: ${res.status} ${res.text}`)
  return res.body.access_token as string
}

const prepare = async (ctx: Context, raw: string, auth: Record<string, string>, slug: string, count: number) => {
  const created = await ctx.request(ctx.troupe, "POST", "/workspace/default/api/v1/structures", {
    headers: auth,
    body: {
      name: slug,
      recordSlug: slug,
      properties: [
        { name: "name", type: "string" },
        { name: "price", type: "number", indexed: true },
        { name: "category", type: "string" },
        { name: "rank", type: "number" }
      ]
    }
  })
  if (created.status >= 300) throw new Error(`bench structure: ${created.status} ${created.text}`)
  const id = created.body.id as string
  const started = Date.now()
  const seeded = await ctx.request(raw, "POST", `/raw/seed/${id}?count=${count}&indexes=1`)
  if (seeded.status !== 200) throw new Error(`bench seed: ${seeded.status} ${seeded.text}`)
  process.stderr.write(`seeded ${count} records into ${slug} in ${((Date.now() - started) / 1000).toFixed(1)} s\n`)
  return id
}

export const queryScenarios = async (ctx: Context): Promise<Array<Scenario>> => {
  // seeded by the raw baseline; nothing to seed (seconds of 100,000 inserts) when BENCH_ONLY names none of these
  const raw = ctx.raw
  if (!raw || (ctx.only && !ctx.only.some((name) => name.includes(" filtered page ")))) return []
  const auth = { authorization: `Bearer ${await token(ctx)}` }
  const sizes: Array<readonly [string, string, number]> = [["100k", "bench-items", 100_000]]
  if (process.env.BENCH_LARGE === "1") sizes.push(["1m", "bench-large", 1_000_000])
  const list: Array<Scenario> = []
  for (const [label, slug, count] of sizes) {
    const id = await prepare(ctx, raw, auth, slug, count)
    const page = { url: `${raw}/raw/page/${id}` }
    list.push({
      name: `GET /records filtered page (${label})`,
      troupe: {
        url: `${ctx.troupe}/workspace/default/api/v1/records?structureId=${slug}&filter=${encodeURIComponent(FILTER)}&sort=-price&limit=20`,
        headers: auth
      },
      raw: page
    })
    list.push({
      name: `POST /query filtered page (${label})`,
      troupe: {
        url: `${ctx.troupe}/workspace/default/api/v1/query`,
        method: "POST",
        headers: auth,
        body: { query: QUERY(slug) }
      },
      raw: page
    })
  }
  return list
}
