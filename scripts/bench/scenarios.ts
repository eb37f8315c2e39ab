// The benchmarked endpoints: each Troupe endpoint beside the raw baseline doing the same SQL.
import type { Scenario } from "../bench.ts"
import { queryScenarios } from "./query.ts"

export interface Context {
  readonly troupe: string
  readonly raw: string
  readonly password: string
  readonly request: (baseUrl: string, method: string, path: string, options?: any) => Promise<any>
}

export const scenarios = async (ctx: Context): Promise<Array<Scenario>> => [
  { name: "GET /health", troupe: { url: `${ctx.troupe}/health` }, raw: { url: `${ctx.raw}/health` } },
  ...(await queryScenarios(ctx))
]
