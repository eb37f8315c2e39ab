// The fast lane: the few requests that dominate a data service's load (reading one record, listing a page, running a
// query) answered before the Effect HTTP stack, skipping its generic per-request work (a request fiber and scope, the
// edge wrapper, merging every service into the request context), which costs more than the query itself.
//
// A handler answers JSON (`FastAnswer`) or raw bytes (`FastBytes`: a stored file, in a buffer or a stream).
// A fast lane is declared by naming an endpoint of the API definition and giving its handler (`FastTable`, e.g.
// `{ "records.get": { accepts, run } }`); everything else is derived from the endpoint once, at startup, through
// `HttpApi.reflect`: its method and path (matched by the router's own FindMyWay, with the router's options, on the
// canonical URL), its permission, rate class and user-token requirement (the Authorization middleware's
// annotations), its path and query schemas, and the media types and schemas of its JSON payload.
//
// `fastServer` is the node's `http.Server`: a request the lane takes (a bearer credential; the endpoint's method and
// path; no query string for an endpoint without query parameters, and single-valued parameters for one with them;
// parameters and declared headers its schemas decode and its handler `accepts`; a JSON body of declared length
// within the body limit for an endpoint with a payload, no body otherwise; for a lane that reads the body itself, a
// body of the payload's media type and declared length within the upload limit) is answered on the node's runtime, in
// the order HttpApi runs an endpoint: authentication (and the rate class's count), then the payload's decoding, then
// the handler. Every other request is emitted as usual to the Effect HTTP stack (HttpEdge), which answers it exactly
// as before. Answers, failures, request ids, log lines (at TROUPE_LOG_LEVEL), request metrics and the server span
// (named after the endpoint's route pattern) are those of the edge (EdgeWriter, EdgeInput, HttpEdge's input guards).
import {
  Authorization,
  type Permission,
  type Principal,
  RateClass,
  type RateClassName,
  RequiredPermission
} from "@troupe/api/Authorization"
import { type Forbidden, forbidden, type TooManyRequests, type Unauthorized } from "@troupe/api/Errors"
import { RequiresUserToken } from "@troupe/api/identity/Identity"
import { Context, Effect, Exit, Option, Schema, Tracer } from "effect"
import { FindMyWay, Headers, HttpTraceContext } from "effect/http"
import { HttpApi } from "effect/http-api"
import * as Http from "node:http"
import type { Readable } from "node:stream"
import { bearerOf, canonicalUrl, declaredBody, mediaTypeOf, type SearchParams, singleValued } from "./EdgeInput.ts"
import { edgeLog, failureOf, requestIdOf, withRequestId, writeBytes, writeFailure, writeJson } from "./EdgeWriter.ts"
import { decodeJsonPayload, spanName } from "./HttpEdge.ts"
import { jsonBodyRefusal, suspectUrl } from "./InputGuards.ts"
import { recordRequest, UNMATCHED } from "./Metrics.ts"

/** A JSON answer (compressed as the stack compresses one; a contract error body gets the request id, as there). */
export interface FastAnswer {
  readonly status: number
  readonly body: unknown
  readonly headers?: Readonly<Record<string, string>> | undefined
}

/**
 * Bytes answered as they are, never compressed (a stored file): in one buffer, from a stream (piped, the stream
 * destroyed when the client goes), or none (a 304). `headers` are all of the answer's, Content-Type and
 * Content-Length included; the request id is added.
 */
export interface FastBytes {
  readonly status: number
  readonly bytes: Uint8Array | Readable | undefined
  readonly headers: Readonly<Record<string, string>>
}

/** A request as the endpoint's HttpApi handler would see it. */
export interface FastRequest {
  /** path parameters, decoded by the endpoint's schema */
  readonly params: Readonly<Record<string, any>>
  /** query parameters, decoded by the endpoint's schema (`{}` for an endpoint without one) */
  readonly query: Readonly<Record<string, any>>
  /** the query string as the router parsed it (what HttpApi provides as ParsedSearchParams), single-valued */
  readonly searchParams: Readonly<Record<string, string>>
  readonly headers: Http.IncomingHttpHeaders
  /** the peer's address (the socket's), as HttpServerRequest.remoteAddress gives it */
  readonly remoteAddress: string | undefined
  /** the JSON body decoded by the endpoint's payload schema (undefined for an endpoint without one) */
  readonly payload: any
  /** the request itself, its body unread, for a lane that `streamsBody` (undefined otherwise) */
  readonly body: Http.IncomingMessage | undefined
  /** the caller, authenticated for the endpoint's permission and counted against its rate class */
  readonly principal: Principal
}

export interface FastHandler {
  /**
   * Which requests the lane takes, judged before authentication and synchronously (default: every one the lane
   * can read); the stack answers the others, untouched.
   */
  readonly accepts?: ((request: Pick<FastRequest, "params" | "query" | "searchParams">) => boolean) | undefined
  /**
   * The handler reads the body itself (a multipart upload, of any payload encoding): the lane takes a body of one of
   * the payload's media types whose declared length is within the upload limit, and leaves it unread, after
   * authentication, to `run` (as `body`). Anything else (no length, chunked, too large) is the stack's.
   */
  readonly streamsBody?: boolean | undefined
  readonly run: (request: FastRequest) => Effect.Effect<FastAnswer | FastBytes, unknown>
}

/** An `accepts` taking requests whose query parameters are among `names` (the others are left to the stack). */
export const onlyParameters =
  (...names: ReadonlyArray<string>) =>
  ({ searchParams }: Pick<FastRequest, "searchParams">): boolean => {
    for (const key in searchParams) if (!names.includes(key)) return false
    return true
  }

/** Fast lanes by endpoint, named `group.endpoint` as in the API definition: a handler, or one with `accepts`. */
export type FastTable = Readonly<Record<string, FastHandler | FastHandler["run"]>>

/** The fast lanes of the node (every domain's tables, merged). */
export class FastRoutes extends Context.Service<FastRoutes, FastTable>()("@troupe/server/platform/FastRoutes") {}

/** A request's effect, given its body text (`""` for an endpoint without a payload or one whose body it streams). */
type Answer = (body: string) => Effect.Effect<FastAnswer | FastBytes | undefined, unknown>

interface LaneRoute {
  readonly method: string
  /** the endpoint's route pattern: metrics label and span name */
  readonly label: string | undefined
  /** whether the endpoint reads a query string (without query parameters, a request with one is the stack's) */
  readonly query: boolean
  /** the media types of its JSON payload; undefined for an endpoint without one */
  readonly payload: ReadonlySet<string> | undefined
  /** whether the handler reads the body itself (`streamsBody`) */
  readonly streams: boolean
  /** the request's effect, or undefined when the lane leaves the request to the stack */
  readonly take: (
    params: Readonly<Record<string, string | undefined>>,
    searchParams: Readonly<Record<string, string>>,
    token: string,
    req: Http.IncomingMessage
  ) => Answer | undefined
}

/** The fast lane, compiled: the route of a method and canonical URL (query string included). */
export interface FastLane {
  readonly find: (method: string, url: string) => FindMyWay.FindResult<LaneRoute> | undefined
}

const empty: Readonly<Record<string, never>> = Object.freeze({})

/** A decoder that answers `undefined` for what its schema refuses; the decoding of `{}` computed once. */
const decoderOf = (schema: Schema.Top | undefined) => {
  if (schema === undefined) return undefined
  const decode = Schema.decodeUnknownExit(schema as Schema.Codec<any, unknown>)
  const ofEmpty = decode({})
  const emptyValue = Exit.isSuccess(ofEmpty) ? ofEmpty.value : undefined
  return (input: Readonly<Record<string, unknown>>): any => {
    let keys = false
    for (const _ in input) {
      keys = true
      break
    }
    if (!keys && emptyValue !== undefined) return emptyValue
    const exit = decode(input)
    return Exit.isSuccess(exit) ? exit.value : undefined
  }
}

/**
 * Authenticates a bearer token for an endpoint: the workspace of its URL, its permission, and its rate class counted.
 * The composition hands in identity's Authenticator, so the ground floor names no domain.
 */
export type FastAuthenticate = (
  token: string,
  options: {
    readonly workspace: string | undefined
    readonly permission: Permission | undefined
    readonly rateClass: RateClassName | undefined
  }
) => Effect.Effect<Principal, Unauthorized | Forbidden | TooManyRequests>

/**
 * The fast lane of `api` for the endpoints `table` names: each endpoint's route, authentication and schemas derived
 * from its definition once. Fails (a defect, at startup) for a name the API lacks or an endpoint without the
 * Authorization middleware.
 */
export const fastLane = (api: unknown, table: FastTable, authenticateToken: FastAuthenticate): Effect.Effect<FastLane> =>
  Effect.gen(function* () {
    const router = FindMyWay.make<LaneRoute>()
    const pending = new Set(Object.keys(table))
    HttpApi.reflect(api as HttpApi.HttpApi<string, any>, {
      onGroup: () => {},
      onEndpoint: ({ endpoint, group, mergedAnnotations, middleware }) => {
        const name = `${group.identifier}.${endpoint.identifier}`
        const entry = table[name]
        if (entry === undefined) {
          // every other endpoint is routed too, to be left to the stack: a static route (PATCH /records/bulk) then
          // wins over a lane's parametric one (PATCH /records/:id) as it does in the stack's router
          router.on(endpoint.method, endpoint.path as FindMyWay.PathInput, stackOnly)
          return
        }
        pending.delete(name)
        const { accepts, run, streamsBody = false } = typeof entry === "function" ? { accepts: undefined, run: entry } : entry
        if (![...middleware].some((m) => m.key === Authorization.key)) {
          throw new Error(`fast lane ${name}: the endpoint is not guarded by the Authorization middleware`)
        }
        const permission = Context.get(mergedAnnotations, RequiredPermission)
        const rateClass = Context.get(mergedAnnotations, RateClass)
        const userOnly = Context.get(mergedAnnotations, RequiresUserToken)
        const decodeParams = decoderOf(endpoint.params)
        const decodeQuery = decoderOf(
          endpoint.query === undefined ? undefined : Schema.toCodecArrayFromSingle(endpoint.query as Schema.Codec<any, any>)
        )
        // declared headers (Idempotency-Key) are only checked: a request whose headers the schema refuses is the
        // stack's, which answers it as before; the handler reads them from `headers`
        const decodeHeaders = decoderOf(endpoint.headers)
        const json = endpoint.payload.get("application/json")
        const payloadTypes = new Set<string>()
        for (const [type, { encoding }] of endpoint.payload) {
          if (encoding._tag !== "Json" && !streamsBody) throw new Error(`fast lane ${name}: only JSON payloads are read (${type})`)
          payloadTypes.add(type)
        }
        const decodePayload = json === undefined || streamsBody ? undefined : decodeJsonPayload(json.schemas)
        const authenticate = (token: string, workspace: string | undefined) => {
          const principal = authenticateToken(token, { workspace, permission, rateClass })
          return userOnly
            ? Effect.tap(principal, (p) =>
                p.kind === "user"
                  ? Effect.void
                  : Effect.fail(forbidden("This route needs a user token; service-account tokens cannot manage identities"))
              )
            : principal
        }
        router.on(endpoint.method, endpoint.path as FindMyWay.PathInput, {
          method: endpoint.method,
          label: endpoint.path,
          query: endpoint.query !== undefined,
          payload: payloadTypes.size > 0 ? payloadTypes : undefined,
          streams: streamsBody,
          take: (raw, searchParams, token, req) => {
            const params = decodeParams === undefined ? empty : decodeParams(raw)
            if (params === undefined) return undefined
            const query = decodeQuery === undefined ? empty : decodeQuery(searchParams)
            if (query === undefined) return undefined
            const headers = req.headers
            if (decodeHeaders !== undefined && decodeHeaders(headers) === undefined) return undefined
            if (accepts !== undefined && !accepts({ params, query, searchParams })) return undefined
            const principal = authenticate(token, raw.workspace)
            const remoteAddress = req.socket.remoteAddress
            const body = streamsBody ? req : undefined
            return (text) =>
              Effect.flatMap(principal, (principal) =>
                decodePayload === undefined
                  ? run({ params, query, searchParams, headers, remoteAddress, payload: undefined, body, principal })
                  : Effect.flatMap(decodePayload(text), (payload) =>
                      run({ params, query, searchParams, headers, remoteAddress, payload, body, principal })
                    )
              )
          }
        })
      }
    })
    if (pending.size > 0) throw new Error(`fast lane: the API has no endpoint ${[...pending].join(", ")}`)
    return { find: (method, url) => router.find(method, url) }
  })

/** The route of an endpoint without a fast lane: every request is the stack's. */
const stackOnly: LaneRoute = {
  method: "",
  label: undefined,
  query: true,
  payload: undefined,
  streams: false,
  take: () => undefined
}

const tracingIn = (context: Context.Context<never>) => Context.get(context, Tracer.Tracer) !== Tracer.nativeTracer

/**
 * The `http.Server` class to listen with: the fast lane first, the Effect HTTP stack for the rest. `context` is the
 * runtime the lane's effects run on (its minimum log level is the edge's); `maxBody` the edge's body limit;
 * `maxJsonDepth` its bound on JSON nesting. A request target or JSON body the edge's input guards would refuse is refused alike
 * (the target is left to the edge; the body, read here, is checked before authentication, as at the edge).
 * `maxUpload` bounds the declared length of a body a lane streams (the edge's upload limit).
 */
export const fastServer = (
  routes: FastLane,
  context: Context.Context<never>,
  options: {
    readonly maxBody: number
    readonly maxJsonDepth?: number | undefined
    readonly maxUpload?: number | undefined
  }
): typeof Http.Server => {
  const log = edgeLog(context)
  const maxBody = options.maxBody
  const maxDepth = options.maxJsonDepth ?? 64
  const maxUpload = options.maxUpload ?? maxBody
  // Without an exporting tracer no span is made (as the HTTP server does).
  const tracing = tracingIn(context)
  return class FastServer extends Http.Server {
    override emit(event: string, ...args: Array<any>): boolean {
      if (event === "request" && this.#take(args[0], args[1])) return true
      return super.emit(event, ...args)
    }

    #take(req: Http.IncomingMessage, res: Http.ServerResponse): boolean {
      const token = bearerOf(req.headers.authorization)
      if (token === undefined) return false
      const raw = req.url ?? "/"
      if (suspectUrl(raw)) return false
      const url = canonicalUrl(raw)
      const method = req.method ?? "GET"
      const found = routes.find(method, url)
      if (found === undefined) return false
      const route = found.handler
      let searchParams: Readonly<Record<string, string>> = empty
      for (const _ in found.searchParams) {
        if (!route.query) return false
        const single = singleValued(found.searchParams as SearchParams)
        if (single === undefined) return false
        searchParams = single
        break
      }
      const body = declaredBody(req.headers, route.streams ? maxUpload : maxBody)
      if (route.payload === undefined) {
        if (body !== "none") return false
      } else if (body !== "sized" || !route.payload.has(mediaTypeOf(req.headers["content-type"] ?? ""))) return false
      const answer = route.take(found.params, searchParams, token, req)
      if (answer === undefined) return false
      if (route.payload === undefined || route.streams) {
        this.#answer(route, answer(""), req, res, method, url)
        return true
      }
      const chunks: Array<Buffer> = []
      req.on("data", (chunk: Buffer) => chunks.push(chunk))
      // a client gone mid-body: nothing to answer (and an unheard stream error would crash the node)
      req.on("error", () => {})
      req.on("end", () => {
        const text = decoder.decode(chunks.length === 1 ? chunks[0] : Buffer.concat(chunks))
        const refusal = jsonBodyRefusal(text, maxDepth)
        this.#answer(route, refusal === undefined ? answer(text) : Effect.fail(refusal), req, res, method, url)
      })
      return true
    }

    #answer(
      route: LaneRoute,
      effect: Effect.Effect<FastAnswer | FastBytes | undefined, unknown>,
      req: Http.IncomingMessage,
      res: Http.ServerResponse,
      method: string,
      url: string
    ) {
      const start = performance.now()
      const requestId = requestIdOf(req.headers["x-request-id"])
      const label = route.label ?? UNMATCHED
      const answered = (status: number) => {
        const elapsed = performance.now() - start
        recordRequest(context, method, label, status, elapsed / 1000, "fast")
        const line = log.request(requestId, method, url, status, elapsed)
        return tracing ? Effect.andThen(Effect.annotateCurrentSpan("http.response.status_code", status), line) : line
      }
      const run = Effect.flatMap(Effect.exit(effect), (exit) => {
        if (Exit.isSuccess(exit)) {
          if (exit.value === undefined) {
            return Effect.andThen(
              tracing ? Effect.annotateCurrentSpan("troupe.fast_lane", "declined") : Effect.void,
              Effect.sync(() => void super.emit("request", req, res))
            )
          }
          const answer = exit.value
          if ("bytes" in answer) writeBytes(res, answer.status, { ...answer.headers, "x-request-id": requestId }, answer.bytes)
          else
            writeJson(res, answer.status, answer.status >= 400 ? withRequestId(answer.body, requestId) : answer.body, {
              ...answer.headers,
              "x-request-id": requestId
            })
          return answered(answer.status)
        }
        // the client went away before the answer (mid-upload): nobody reads it, and it is no failure of the node's,
        // so it is counted as the stack counts an interrupted request, 499, and not logged
        if (res.destroyed && !res.headersSent) return answered(499)
        const { failure, logged } = failureOf(exit.cause)
        writeFailure(res, failure, requestId)
        return Effect.andThen(logged ? log.failed(requestId, method, url, exit.cause) : Effect.void, answered(failure.status))
      })
      Effect.runForkWith(context)(
        tracing
          ? Effect.withSpan(run, spanName(method, label), {
              kind: "server",
              parent: Option.getOrUndefined(HttpTraceContext.fromHeaders(Headers.fromInput(req.headers))),
              attributes: {
                "http.request.method": method,
                "http.route": label,
                "url.path": url.split("?")[0],
                "troupe.fast_lane": "answered"
              }
            })
          : run
      )
    }
  }
}

const decoder = new TextDecoder()
