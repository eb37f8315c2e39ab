// Hot routes answered before the Effect HTTP stack: the few requests that dominate a data service's load (reading
// one record) skip the generic per-request work (a request fiber and scope, the edge wrapper, route lookup, merging
// every service into the request context, schema decoding of parameters), which costs more than the query itself.
//
// `FastServer` is the node's `http.Server`: a request that a fast route matches (method, canonical URL without a
// query string, no body) is answered by that route's effect, run on the node's runtime; every other request, and
// any a route declines (its effect answers undefined), is emitted as usual to the Effect HTTP stack (HttpEdge). A
// route's failures are the typed errors the ordinary handler raises, written as the same contract body, with the
// same request id handling and request log line as the edge.
import { errorBody } from "@troupe/api/Errors"
import { Cause, Context, Effect, Exit, Layer } from "effect"
import * as Http from "node:http"
import { canonicalUrl, contractErrorOf, requestIdOf } from "./HttpEdge.ts"

export interface FastAnswer {
  readonly status: number
  readonly body: unknown
}

export interface FastRoute {
  readonly method: string
  /** matched against the canonical URL (aliases already rewritten); requests with a query string never match */
  readonly pattern: RegExp
  readonly run: (match: RegExpExecArray, headers: Http.IncomingHttpHeaders) => Effect.Effect<FastAnswer | undefined, unknown>
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

const send = (res: Http.ServerResponse, status: number, body: unknown, headers: Record<string, string>) => {
  const text = JSON.stringify(body)
  res.writeHead(status, { ...headers, "content-type": "application/json", "content-length": Buffer.byteLength(text) })
  res.end(text)
}

/** A failed route: the contract body of its typed error, or 500 (logged) for anything else. */
const failure = (cause: Cause.Cause<unknown>, requestId: string) => {
  const contract = contractErrorOf(cause)
  if (contract === undefined) {
    return { status: 500, body: { ...errorBody(500, "INTERNAL", "Internal server error", []), requestId }, headers: {}, unexpected: true }
  }
  const { error, headers } = contract
  return { status: error.statusCode, body: { ...errorBody(error.statusCode, error.code, error.message, error.details), requestId }, headers, unexpected: false }
}

/**
 * The `http.Server` class to listen with: fast routes first, the Effect HTTP stack for the rest. `context` is the
 * runtime the routes' effects run on; `logRequests` mirrors the edge's info-level request line.
 */
export const fastServer = (
  routes: ReadonlyArray<FastRoute>,
  context: Context.Context<never>,
  logRequests: boolean
): typeof Http.Server =>
  class FastServer extends Http.Server {
    override emit(event: string, ...args: Array<any>): boolean {
      if (event === "request" && routes.length > 0 && this.#take(args[0], args[1])) return true
      return super.emit(event, ...args)
    }

    #take(req: Http.IncomingMessage, res: Http.ServerResponse): boolean {
      const raw = req.url ?? "/"
      if (raw.includes("?") || req.headers["content-length"] !== undefined || req.headers["transfer-encoding"] !== undefined) {
        return false
      }
      const url = canonicalUrl(raw)
      for (const route of routes) {
        if (route.method !== req.method) continue
        const match = route.pattern.exec(url)
        if (match === null) continue
        this.#answer(route, match, req, res, url)
        return true
      }
      return false
    }

    #answer(route: FastRoute, match: RegExpExecArray, req: Http.IncomingMessage, res: Http.ServerResponse, url: string) {
      const start = performance.now()
      const requestId = requestIdOf(req.headers["x-request-id"])
      const headers = { "x-request-id": requestId }
      const run = Effect.exit(route.run(match, req.headers)).pipe(
        Effect.flatMap((exit) => {
          if (Exit.isSuccess(exit)) {
            if (exit.value === undefined) return Effect.sync(() => void super.emit("request", req, res))
            send(res, exit.value.status, exit.value.body, headers)
            return logged(exit.value.status)
          }
          const answer = failure(exit.cause, requestId)
          send(res, answer.status, answer.body, { ...answer.headers, ...headers })
          return Effect.andThen(
            answer.unexpected
              ? Effect.logError("request failed", { requestId, method: req.method, url, cause: Cause.pretty(exit.cause) })
              : Effect.void,
            logged(answer.status)
          )
        })
      )
      const logged = (status: number) =>
        logRequests
          ? Effect.logInfo("request").pipe(Effect.annotateLogs({
            requestId,
            method: req.method,
            url,
            status,
            durationMs: Math.round((performance.now() - start) * 100) / 100
          }))
          : Effect.void
      Effect.runForkWith(context)(run)
    }
  }
