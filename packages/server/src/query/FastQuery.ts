// `query.query` (`POST /workspace/:ws/api/v1/query`) in the fast lane (platform/FastRoutes.ts): authentication, then
// the JSON body decoded by the endpoint's own schema (the same 400 for a malformed or mistyped body), then
// QueryService.query, as the ordinary handler runs it.
import { Effect } from "effect"
import type { FastTable } from "../platform/FastRoutes.ts"
import { QueryService } from "./QueryService.ts"

export const fastQueryRoutes: Effect.Effect<FastTable, never, QueryService> = Effect.gen(function* () {
  const queries = yield* QueryService
  return {
    "query.query": ({ params, payload }) =>
      Effect.map(
        queries.query(params.workspace, payload.query, payload.parameters ?? {}, { includeDeleted: payload.includeDeleted }),
        (results) => ({ status: 200, body: { results } })
      )
  }
})
