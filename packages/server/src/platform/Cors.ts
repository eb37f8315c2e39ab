// Browser apps on other origins (CONTRACT §9), decided once for every route of the node: both lanes of the edge
// (the fast lane and the Effect HTTP stack), the raw routes (realtime SSE, HTTP triggers, the console) and whatever
// a sibling service mounts, because the decision is taken where every request enters, the node's `http.Server`
// (`withCors`, the same kind of wrapper as Drain.ts's `draining`), before a lane or a route sees the request.
// - An origin is allowed by the node-wide TROUPE_CORS_ORIGINS (on every route; `*` for any well-formed origin,
//   answered as `*`), or by a workspace's list (GET/PUT /settings/cors) on the routes of that workspace: any path
//   `/[service/]workspace/{ws}/api/v1/...`. The token endpoint and discovery name no workspace: an origin that any
//   workspace allows may call them (they answer only to credentials the caller already holds).
// - A preflight (OPTIONS with Origin and Access-Control-Request-Method) is answered here, before authentication and
//   rate limiting, from memory: the node-wide list, the workspace lists (cached on every node, CorsOrigins.ts) and
//   the route table the edge already keeps (`routeOf`): 204 with the grant when the origin is allowed and the route
//   takes the method and the headers asked for; otherwise 403 (404 for a path no route has) without any
//   Access-Control-* header, so the browser refuses the call.
// - Any other request from an allowed origin gets Access-Control-Allow-Origin and the expose list set on its
//   response before a lane writes it; every request carrying an Origin gets `Vary: Origin` (merged with a route's own
//   Vary by `VaryResponse`). A malformed Origin, `null`, an origin with a path or credentials: no grant. No cookies
//   are used, so Access-Control-Allow-Credentials is never sent.
import { canonicalOrigin } from "@troupe/api/identity/Cors"
import { Context, Effect, LogLevel, References } from "effect"
import * as Http from "node:http"
import { canonicalUrl } from "./EdgeInput.ts"
import { edgeLog, requestIdOf, writeFailure } from "./EdgeWriter.ts"
import type { RouteOf } from "./HttpEdge.ts"
import { suspectUrl } from "./InputGuards.ts"
import { recordRequest, UNMATCHED } from "./Metrics.ts"

/** The node-wide origins (TROUPE_CORS_ORIGINS): canonical origins, and whether `*` was given. */
export interface NodeOrigins {
  readonly any: boolean
  readonly origins: ReadonlySet<string>
}

/** TROUPE_CORS_ORIGINS read: comma-separated origins or `*`; blank is none. A string names what is wrong. */
export const parseNodeOrigins = (text: string): NodeOrigins | string => {
  const origins = new Set<string>()
  let any = false
  for (const item of text.split(",").map((s) => s.trim())) {
    if (item === "") continue
    if (item === "*") {
      any = true
      continue
    }
    const origin = canonicalOrigin(item)
    if (origin === undefined) return `"${item}" is not an origin (scheme://host[:port], or * alone)`
    origins.add(origin)
  }
  return { any, origins }
}

/** The workspace lists, as the node holds them in memory (identity's CorsOrigins). */
export interface WorkspaceOrigins {
  /** whether `workspace` allows `origin` (canonical) */
  readonly allows: (workspace: string, origin: string) => boolean
  /** whether some workspace allows `origin`: for the routes that name no workspace (tokens, discovery) */
  readonly anyAllows: (origin: string) => boolean
}

/** Request headers a preflight may ask for (beside the CORS-safelisted ones, which browsers never ask for). */
export const ALLOWED_HEADERS: ReadonlyArray<string> = [
  "authorization",
  "content-type",
  "idempotency-key",
  "if-match",
  "if-none-match",
  "last-event-id",
  "range",
  "x-request-id",
  "traceparent",
  "tracestate"
]

/**
 * Response headers a page may read (beside the safelisted ones): validators and where a thing was made, retry
 * hints (`retry-after` is the rate-limit header the node sends, with its 429s), downloads, the request id.
 */
export const EXPOSED_HEADERS: ReadonlyArray<string> = [
  "etag",
  "retry-after",
  "location",
  "content-disposition",
  "content-range",
  "accept-ranges",
  "x-request-id",
  "idempotent-replayed",
  "www-authenticate"
]

/** How long a browser may keep a preflight's answer, in seconds. */
const MAX_AGE = "600"
const METHODS = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE"] as const
const PREFLIGHT_VARY = "Origin, Access-Control-Request-Method, Access-Control-Request-Headers"
const allowedHeaders = new Set(ALLOWED_HEADERS)
const allowedHeadersText = ALLOWED_HEADERS.join(", ")
const exposedText = EXPOSED_HEADERS.join(", ")
/** An HTTP header name (RFC 9110 token). */
const headerName = /^[!#$%&'*+.^_`|~0-9a-z-]+$/
/** The workspace of a workspace route, whatever the service base (canonical URL: aliases already rewritten). */
const workspacePath = /^\/(?:[a-z][a-z0-9-]*\/)?workspace\/([^/?#]+)\/api\/v1(?:[/?#]|$)/
/** Routes that name no workspace yet serve every workspace's browser apps. */
const sharedPath = /^\/(?:oidc\/token|oidc\/jwks|\.well-known\/openid-configuration)(?:[?#]|$)/

/** A preflight's answer: the grant's headers, or why there is none; `route` labels it in metrics. */
export type PreflightAnswer = { readonly route: string } & (
  | { readonly granted: true; readonly headers: Record<string, string> }
  | { readonly granted: false; readonly status: 403 | 404; readonly message: string }
)

export interface CorsPolicy {
  /** The Access-Control-Allow-Origin answered to `origin` (a header's raw value) on `url` (canonical); undefined: none. */
  readonly allowOrigin: (origin: string, url: string) => string | undefined
  /** The answer to a preflight from `origin` for `method` with the requested `headers` (the raw header). */
  readonly preflight: (origin: string, url: string, method: string, headers: string | undefined) => PreflightAnswer
}

/** A value fit for a message: short, printable. */
const shown = (s: string) => JSON.stringify(s.length > 80 ? `${s.slice(0, 80)}…` : s)

export const corsPolicy = (options: {
  readonly node: NodeOrigins
  readonly workspaces: WorkspaceOrigins
  /** the edge's route table: a method and URL's route pattern, or UNMATCHED */
  readonly routeOf: RouteOf
  /** route patterns that take any method and any request header (HTTP triggers pass them to the function) */
  readonly anyHeaderRoutes?: ReadonlyArray<string> | undefined
}): CorsPolicy => {
  const { node, workspaces, routeOf } = options
  const anyHeader = new Set(options.anyHeaderRoutes ?? [])

  const allowOrigin = (origin: string, url: string): string | undefined => {
    // the lists hold canonical origins: a raw header equal to one of them is well-formed by that alone
    if (node.origins.has(origin)) return origin
    const workspace = workspacePath.exec(url)?.[1]
    if (workspace !== undefined ? workspaces.allows(workspace, origin) : sharedPath.test(url) && workspaces.anyAllows(origin)) {
      return origin
    }
    return node.any && canonicalOrigin(origin) === origin ? "*" : undefined
  }

  const preflight = (origin: string, url: string, method: string, headers: string | undefined): PreflightAnswer => {
    const route = routeOf(method, url)
    const refuse = (status: 403 | 404, message: string): PreflightAnswer => ({ route, granted: false, status, message })
    const allowed = allowOrigin(origin, url)
    if (allowed === undefined) return refuse(403, `CORS: the origin ${shown(origin)} may not call this route`)
    const methods = METHODS.filter((m) => routeOf(m, url) !== UNMATCHED)
    if (methods.length === 0) return refuse(404, `CORS: no route at ${url.split("?")[0]}`)
    if (route === UNMATCHED) return refuse(403, `CORS: this route takes ${methods.join(", ")}, not ${shown(method)}`)
    const takesAny = anyHeader.has(route)
    const asked = (headers ?? "")
      .split(",")
      .map((h) => h.trim().toLowerCase())
      .filter((h) => h !== "")
    const refused = asked.find((h) => !(allowedHeaders.has(h) || (takesAny && headerName.test(h))))
    if (refused !== undefined) return refuse(403, `CORS: this route does not take the request header ${shown(refused)}`)
    const extra = takesAny ? asked.filter((h) => !allowedHeaders.has(h)) : []
    return {
      route,
      granted: true,
      headers: {
        "access-control-allow-origin": allowed,
        "access-control-allow-methods": methods.join(", "),
        "access-control-allow-headers": extra.length === 0 ? allowedHeadersText : `${allowedHeadersText}, ${extra.join(", ")}`,
        "access-control-max-age": MAX_AGE,
        vary: PREFLIGHT_VARY
      }
    }
  }

  return { allowOrigin, preflight }
}

/** Vary values merged, each once (case-insensitively), in order. */
export const mergeVary = (prior: string, next: string): string => {
  const seen = new Set<string>()
  const out: Array<string> = []
  for (const item of `${prior},${next}`.split(",")) {
    const v = item.trim()
    if (v === "" || seen.has(v.toLowerCase())) continue
    seen.add(v.toLowerCase())
    out.push(v)
  }
  return out.join(", ")
}

/**
 * A response whose Vary adds up: the `Vary: Origin` set when a request arrives is kept when a route later writes a
 * Vary of its own (`accept-encoding`), by `setHeader` or through `writeHead` (which calls `setHeader` once a header
 * was set beforehand).
 */
export class VaryResponse extends Http.ServerResponse {
  override setHeader(name: string, value: number | string | ReadonlyArray<string>): this {
    if (name.length === 4 && name.toLowerCase() === "vary") {
      const prior = this.getHeader("vary")
      if (prior !== undefined) return super.setHeader(name, mergeVary(String(prior), String(value)))
    }
    return super.setHeader(name, value)
  }
}

/**
 * `Base` with CORS applied to every request it emits, by `policy`. `context` is the node's runtime (log level,
 * metrics): a preflight answered here is counted and logged as the edge counts and logs any request.
 */
export const withCors = (Base: typeof Http.Server, policy: CorsPolicy, context: Context.Context<never>): typeof Http.Server => {
  const log = edgeLog(context)
  const logging = LogLevel.isGreaterThanOrEqualTo("Info", Context.get(context, References.MinimumLogLevel))
  const answerPreflight = (req: Http.IncomingMessage, res: Http.ServerResponse, origin: string, method: string, raw: string) => {
    const start = performance.now()
    const url = canonicalUrl(raw)
    const requestId = requestIdOf(req.headers["x-request-id"])
    const answer = policy.preflight(origin, url, method, req.headers["access-control-request-headers"])
    let status: number
    if (answer.granted) {
      status = 204
      res.writeHead(204, { ...answer.headers, "x-request-id": requestId })
      res.end()
    } else {
      status = answer.status
      res.setHeader("vary", PREFLIGHT_VARY)
      const code = status === 404 ? "NOT_FOUND" : "PERMISSION_DENIED"
      writeFailure(res, { status, code, message: answer.message }, requestId)
    }
    const elapsed = performance.now() - start
    recordRequest(context, "OPTIONS", answer.route, status, elapsed / 1000, "fast")
    if (logging) Effect.runForkWith(context)(log.request(requestId, "OPTIONS", url, status, elapsed))
  }

  return class CorsServer extends Base {
    constructor(...args: Array<any>) {
      const [first, ...rest] = args
      const options = typeof first === "object" && first !== null ? first : {}
      super({ ServerResponse: VaryResponse, ...options }, ...(typeof first === "function" ? [first] : rest))
    }

    override emit(event: string, ...args: Array<any>): boolean {
      if (event === "request") {
        const req = args[0] as Http.IncomingMessage
        const origin = req.headers.origin
        if (origin !== undefined) {
          const res = args[1] as Http.ServerResponse
          const raw = req.url ?? "/"
          const method = req.headers["access-control-request-method"]
          if (req.method === "OPTIONS" && method !== undefined) {
            // a target the edge refuses (NUL, lone surrogates) is left to it: its 400, without a grant
            if (suspectUrl(raw)) return super.emit(event, ...args)
            try {
              answerPreflight(req, res, origin, method, raw)
              return true
            } catch {
              // not answered (nothing of it written): the stack answers it, without a grant
              return res.headersSent || super.emit(event, ...args)
            }
          }
          res.setHeader("vary", "Origin")
          const allowed = policy.allowOrigin(origin, canonicalUrl(raw))
          if (allowed !== undefined) {
            res.setHeader("access-control-allow-origin", allowed)
            res.setHeader("access-control-expose-headers", exposedText)
          }
        }
      }
      return super.emit(event, ...args)
    }
  }
}
