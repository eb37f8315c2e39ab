// The `list after bulk` scenario of `npm run bench` (both profiles): right after 20,000 records are bulk-created in
// a new structure (20 requests of 1,000 through Troupe's own bulk route, 4 at a time, as an import or a seeding script
// sends them), a plain list page of that structure, `GET /records?structureId=…&limit=20`. A page that walks the
// `(structure_id, created_at, id)` index costs about what a few reads by id cost; one planned on statistics that
// still believe the structure is small sorts its 20,000 rows, a hundred times more (the cliff records/PlannerStats.ts
// removes). Its target is a ratio to `list page`, the same page of the bench's own structure measured right before
// (scripts/bench/targets.ts).
import type { Scenario } from "../bench.ts"
import type { Context } from "./scenarios.ts"

const SLUG = "bench-imported"
const RECORDS = 20_000
const PER_REQUEST = 1000
const IN_FLIGHT = 4

/** The baseline: the same page of the bench's own structure (`bench-item`), measured right before the bulk. */
export const listPageScenario = (ctx: Context, token: string): Scenario => ({
  name: "list page",
  troupe: {
    url: `${ctx.troupe}/workspace/default/api/v1/records?structureId=bench-item&limit=20`,
    headers: { authorization: `Bearer ${token}` }
  },
  raw: undefined
})

export const listAfterBulkScenario = (ctx: Context, token: string): Scenario => {
  const path = "/workspace/default/api/v1"
  const call = async (method: string, route: string, body: unknown) => {
    const res = await ctx.request(ctx.troupe, method, `${path}${route}`, { token, body })
    if (res.status >= 300) throw new Error(`bench list after bulk: ${method} ${route}: ${res.status} ${res.text}`)
    return res.body
  }
  return {
    name: "list after bulk",
    troupe: { url: `${ctx.troupe}${path}/records?structureId=${SLUG}&limit=20`, headers: { authorization: `Bearer ${token}` } },
    raw: undefined,
    // the bulk runs right before this scenario's first request, not when the scenarios are listed
    prepare: async () => {
      const structure = await call("POST", "/structures", {
        name: "Bench Imported",
        recordSlug: SLUG,
        properties: [
          { name: "key", type: "string" },
          { name: "title", type: "string", maxLength: 200 },
          { name: "n", type: "number" }
        ]
      })
      const started = Date.now()
      let next = 0
      const worker = async () => {
        for (let from = next; from < RECORDS; from = next) {
          next += PER_REQUEST
          const records = Array.from({ length: PER_REQUEST }, (_, i) => ({
            data: { key: `imported-${from + i}`, title: `imported ${from + i}`, n: from + i }
          }))
          await call("POST", "/records/bulk", { structureId: structure.id, records, options: { returnRecords: false } })
        }
      }
      await Promise.all(Array.from({ length: IN_FLIGHT }, worker))
      process.stderr.write(`list after bulk: ${RECORDS} records bulk-created in ${((Date.now() - started) / 1000).toFixed(1)} s\n`)
    }
  }
}
