// Hot routes answered before the Effect HTTP stack: the few requests that dominate a data service's load (reading one
// record, listing a page, running a query) skip the generic per-request work (a request fiber and scope, the edge
// wrapper, route lookup, merging every service into the request context, schema decoding), which costs more than
// the query itself.
//
// `FastServer` is the node's `http.Server`: a request that a fast route matches (a bearer token, method, canonical
// path, a query string only where the route takes one, a JSON body only where it takes one) is answered by that
// route's effect, run on the node's runtime; every other request, and any a route declines (its effect answers
// undefined, or its query string has what only the stack should judge), is emitted as usual to the Effect HTTP stack
// (HttpEdge). A route's failures are the typed errors the ordinary handler raises, written as the same contract
// body, with the same request id handling, request log line, request metrics and server span (named after the
// endpoint's route pattern) as the edge.
import { errorBody } from "@troupe/api/Errors"
import { Cause, Context, Effect, Exit, Option, Tracer } from "effect"
import { Headers, HttpTraceContext } from "effect/http"
import * as Http from "node:http"
import { canonicalUrl, contractErrorOf, jsonBodyRefusal, requestIdOf, type RouteOf, spanName, suspectUrl } from "./HttpEdge.ts"
import { recordRequest, UNMATCHED } from "./Metrics.ts"

export interface FastAnswer {
  readonly status: number
  readonly body: unknown
}

export interface FastRequest {
  readonly match: RegExpExecArray
  /** the bearer token (a fast route only takes requests that carry one) */
  readonly token: string
  readonly headers: Http.IncomingHttpHeaders
  readonly query: Readonly<Record<string, string>>
  /** the body as text (routes that take one) */
  readonly body: string
}

export interface FastRoute {
  readonly method: string
  /** matched against the canonical path (aliases already rewritten), without the query string */
  readonly pattern: RegExp
  /** whether the route takes a query string; without it, a request with one never matches */
  readonly query?: boolean
  /**
   * Whether the route takes a JSON body (`application/json`, a content-length within the body limit; the stack
   * answers every other form). Its body is read before `run`, so such a route must answer: it cannot decline.
   */
  readonly body?: boolean
  readonly run: (request: FastRequest) => Effect.Effect<FastAnswer | undefined, unknown>
}

export class FastRoutes extends Context.Service<FastRoutes, ReadonlyArray<FastRoute>>()(
  "@troupe/server/platform/FastRoutes"
) {}

/** `+` is a space; percent-escapes are decoded where they are valid and kept as they are where not. */
const decodeComponent = (text: string) => {
  const spaced = text.includes("+") ? text.replaceAll("+", " ") : text
  if (!spaced.includes("%")) return spaced
  try {
    return decodeURIComponent(spaced) || spaced
  } catch {
    return spaced
  }
}

/**
 * A query string read as the HTTP stack's router reads it (RecordsApi parameters are single strings). Undefined for
 * what only the stack should judge: a repeated or nameless parameter, or a NUL or lone surrogate (the edge refuses
 * them).
 */
export const queryParams = (text: string): Record<string, string> | undefined => {
  const out: Record<string, string> = Object.create(null)
  if (suspectUrl(text)) return undefined
  for (const pair of text.split("&")) {
    if (pair === "") continue
    const eq = pair.indexOf("=")
    const key = decodeComponent(eq < 0 ? pair : pair.slice(0, eq))
    if (key === "" || key in out) return undefined
    out[key] = eq < 0 ? "" : decodeComponent(pair.slice(eq + 1))
  }
  return out
}

const noQuery: Readonly<Record<string, string>> = Object.freeze(Object.create(null))

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

/** `application/json`, with parameters or none: what HttpApi decodes as a JSON payload. */
const jsonContentType = /^application\/json\s*(;|$)/i

const decoder = new TextDecoder()

/**
 * The `http.Server` class to listen with: fast routes first, the Effect HTTP stack for the rest. `context` is the
 * runtime the routes' effects run on; `logRequests` mirrors the edge's info-level request line; `maxBody` is the
 * edge's body limit (larger bodies are the stack's 413); `maxJsonDepth` the edge's bound on JSON nesting; `routeOf`
 * names the endpoint a route answers for (the edge's route labels), for metrics and spans. A request target the
 * edge's input guards would refuse is left to the edge; a JSON body is checked by the same guards (before the route
 * authenticates, as at the edge).
 */
export const fastServer = (
  routes: ReadonlyArray<FastRoute>,
  context: Context.Context<never>,
  options: {
    readonly logRequests: boolean
    readonly maxBody: number
    readonly maxJsonDepth?: number | undefined
    readonly routeOf?: RouteOf | undefined
  }
): typeof Http.Server => {
  // A fast route answers for one endpoint: its pattern, looked up once.
  const labels = new Map<FastRoute, string>()
  const labelOf = (route: FastRoute, url: string) => {
    let label = labels.get(route)
    if (label === undefined) labels.set(route, label = options.routeOf?.(route.method, url) ?? UNMATCHED)
    return label
  }
  // Without an exporting tracer no span is made (as the HTTP server does).
  const tracing = Context.get(context, Tracer.Tracer) !== Tracer.nativeTracer
  return class FastServer extends Http.Server {
    override emit(event: string, ...args: Array<any>): boolean {
      if (event === "request" && routes.length > 0 && this.#take(args[0], args[1])) return true
      return super.emit(event, ...args)
    }

    #take(req: Http.IncomingMessage, res: Http.ServerResponse): boolean {
      const token = bearerOf(req.headers.authorization)
      if (token === undefined || req.headers["transfer-encoding"] !== undefined) return false
      const length = req.headers["content-length"]
      const raw = req.url ?? "/"
      if (suspectUrl(raw)) return false
      const at = raw.indexOf("?")
      const url = canonicalUrl(at < 0 ? raw : raw.slice(0, at))
      for (const route of routes) {
        if (route.method !== req.method || (at >= 0 && route.query !== true)) continue
        const match = route.pattern.exec(url)
        if (match === null) continue
        const query = at < 0 ? noQuery : queryParams(raw.slice(at + 1))
        if (query === undefined) return false
        if (route.body !== true) {
          if (length !== undefined) return false
          this.#answer(route, { match, token, headers: req.headers, query, body: "" }, req, res, url)
          return true
        }
        const size = Number(length)
        if (!(size > 0 && size <= options.maxBody) || !jsonContentType.test(req.headers["content-type"] ?? "")) return false
        const chunks: Array<Buffer> = []
        req.on("data", (chunk: Buffer) => chunks.push(chunk))
        // a client gone mid-body: nothing to answer (and an unheard stream error would crash the node)
        req.on("error", () => {})
        req.on("end", () => {
          const body = decoder.decode(chunks.length === 1 ? chunks[0] : Buffer.concat(chunks))
          const refusal = jsonBodyRefusal(body, options.maxJsonDepth ?? 64)
          this.#answer(route, { match, token, headers: req.headers, query, body }, req, res, url, refusal)
        })
        return true
      }
      return false
    }

    #answer(
      route: FastRoute,
      request: FastRequest,
      req: Http.IncomingMessage,
      res: Http.ServerResponse,
      url: string,
      refusal?: unknown
    ) {
      const start = performance.now()
      const requestId = requestIdOf(req.headers["x-request-id"])
      const headers = { "x-request-id": requestId }
      const method = req.method ?? "GET"
      const label = labelOf(route, url)
      const run = Effect.exit(refusal === undefined ? route.run(request) : Effect.fail(refusal)).pipe(
        Effect.flatMap((exit) => {
          if (Exit.isSuccess(exit)) {
            if (exit.value === undefined) {
              return Effect.andThen(
                tracing ? Effect.annotateCurrentSpan("troupe.fast_lane", "declined") : Effect.void,
                Effect.sync(() => void super.emit("request", req, res))
              )
            }
            send(res, exit.value.status, exit.value.body, headers)
            return answered(exit.value.status)
          }
          const answer = failure(exit.cause, requestId)
          send(res, answer.status, answer.body, { ...answer.headers, ...headers })
          return Effect.andThen(
            answer.unexpected
              ? Effect.logError("request failed", { requestId, method: req.method, url, cause: Cause.pretty(exit.cause) })
              : Effect.void,
            answered(answer.status)
          )
        })
      )
      const answered = (status: number) => {
        const elapsed = performance.now() - start
        recordRequest(context, method, label, status, elapsed / 1000, "fast")
        const log = options.logRequests
          ? Effect.logInfo("request").pipe(Effect.annotateLogs({
            requestId,
            method: req.method,
            url,
            status,
            durationMs: Math.round(elapsed * 100) / 100
          }))
          : Effect.void
        return tracing ? Effect.andThen(Effect.annotateCurrentSpan("http.response.status_code", status), log) : log
      }
      Effect.runForkWith(context)(
        tracing
          ? Effect.withSpan(run, spanName(method, label), {
            kind: "server",
            parent: Option.getOrUndefined(HttpTraceContext.fromHeaders(Headers.fromInput(req.headers))),
            attributes: { "http.request.method": method, "http.route": label, "url.path": url, "troupe.fast_lane": "answered" }
          })
          : run
      )
    }
  }
}
