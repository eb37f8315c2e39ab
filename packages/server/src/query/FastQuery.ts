// `POST /workspace/:ws/api/v1/query` as a fast route (platform/FastRoutes.ts), in the order the HttpApi handler
// runs: authentication (permission read:records, rate class queries), then the JSON body decoded with the
// endpoint's own schema (the same 400 for a malformed or mistyped body), then QueryService.query.
import { QueryRequest } from "@troupe/api/query/QueryApi"
import { Effect } from "effect"
import { Authenticator } from "../identity/Authenticate.ts"
import type { FastRoute } from "../platform/FastRoutes.ts"
import { decodeJsonPayload } from "../platform/HttpEdge.ts"
import { QueryService } from "./QueryService.ts"

const queryPath = /^\/workspace\/([a-z0-9-]{1,100})\/api\/v1\/query$/

export const fastQueryRoutes: Effect.Effect<ReadonlyArray<FastRoute>, never, Authenticator | QueryService> = Effect.gen(
  function*() {
    const authenticator = yield* Authenticator
    const queries = yield* QueryService
    const decode = decodeJsonPayload(QueryRequest)
    return [{
      method: "POST",
      pattern: queryPath,
      body: true,
      run: ({ match, token, body }) => {
        const workspace = match[1]!
        return authenticator.authenticate(token, { workspace, permission: "read:records", rateClass: "queries" }).pipe(
          Effect.andThen(decode(body)),
          Effect.flatMap((payload) =>
            queries.query(workspace, payload.query, payload.parameters ?? {}, { includeDeleted: payload.includeDeleted })
          ),
          Effect.map((results) => ({ status: 200, body: { results } }))
        )
      }
    }]
  }
)
