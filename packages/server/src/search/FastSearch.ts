// `search.search` (GET /search/workspace/{ws}/api/v1/search) in the fast lane (platform/FastRoutes.ts): the same
// service call as the ordinary handler (http.ts). Authentication, the `read:records` permission and the `reads` count
// come from the endpoint. The lane takes requests whose parameters are the endpoint's own (q, structures, limit,
// offset); one with anything else is left to the ordinary handler, which ignores what it does not know.
import { Effect } from "effect"
import { type FastTable, onlyParameters } from "../platform/FastRoutes.ts"
import { SearchService } from "./SearchService.ts"

/** The fast lane of searches. */
export const fastSearchRoutes: Effect.Effect<FastTable, never, SearchService> = Effect.gen(function* () {
  const service = yield* SearchService
  return {
    "search.search": {
      accepts: onlyParameters("q", "structures", "limit", "offset"),
      run: ({ params, query }) => Effect.map(service.search(params.workspace, query), (body) => ({ status: 200, body }))
    }
  }
})
