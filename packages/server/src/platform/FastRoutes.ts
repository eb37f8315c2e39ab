// Hot routes answered at the edge, before the HttpApi router: the few requests that dominate a data service's load
// (reading one record) skip the generic per-request work (route lookup, context merge of every service, schema
// decoding of params/query) that costs more than the query itself. A fast route handles only the plain form of its
// request and returns undefined for anything else, which then takes the ordinary HttpApi path; its failures are the
// same typed errors the ordinary handler raises, turned into the same contract body by the edge.
import { Context, type Effect, Layer } from "effect"
import type { HttpServerRequest, HttpServerResponse } from "effect/http"

export interface FastRoute {
  readonly method: string
  /** matched against the canonical URL (aliases already rewritten), query string included */
  readonly pattern: RegExp
  readonly run: (
    match: RegExpExecArray,
    request: HttpServerRequest.HttpServerRequest
  ) => Effect.Effect<HttpServerResponse.HttpServerResponse | undefined, unknown>
}

export class FastRoutes extends Context.Service<FastRoutes, ReadonlyArray<FastRoute>>()(
  "@troupe/server/platform/FastRoutes"
) {
  static readonly none: Layer.Layer<FastRoutes> = Layer.succeed(FastRoutes, [])
}

/** The bearer token of an Authorization header ("Bearer" in any case), else undefined. */
export const bearerOf = (header: string | undefined): string | undefined => {
  if (header === undefined || header.length < 8) return undefined
  const scheme = header.slice(0, 7).toLowerCase()
  return scheme === "bearer " ? header.slice(7).trim() || undefined : undefined
}
