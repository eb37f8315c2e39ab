// `POST /query` and `POST /records/{slug}/aggregate`: decode (done by the group's schemas), call QueryService,
// answer `{results}`.
import { Api } from "@troupe/api/Api"
import { Effect } from "effect"
import { HttpServerResponse } from "effect/http"
import { HttpApiBuilder } from "effect/http-api"
import { QueryService } from "./QueryService.ts"

const results = (rows: ReadonlyArray<unknown>) => HttpServerResponse.jsonUnsafe({ results: rows }, { status: 200 })

export const QueryHandlers = HttpApiBuilder.group(
  Api,
  "query",
  Effect.fn(function* (handlers) {
    const queries = yield* QueryService
    return handlers
      .handle("query", ({ params, payload }) =>
        Effect.map(
          queries.query(params.workspace, payload.query, payload.parameters ?? {}, { includeDeleted: payload.includeDeleted }),
          results
        )
      )
      .handle("aggregate", ({ params, payload }) => Effect.map(queries.aggregate(params.workspace, params.slug, payload), results))
  })
)
