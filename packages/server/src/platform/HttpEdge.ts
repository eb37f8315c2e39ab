// The HTTP edge, in one place: request ids, base-path aliases, body limits and content types, the input guards
// applied (InputGuards: no NUL or lone surrogate anywhere in the request; bounded JSON nesting), the
// single contract error body (README.md, "Errors") for every failure (typed errors, schema decode failures, unknown
// routes, wrong methods, malformed JSON, defects), one structured log line per request, and the request's metrics (by
// route pattern) and server span name (`GET /workspace/:workspace/api/v1/records/:id`). The fast lane (FastRoutes)
// reads requests (EdgeInput), guards them (InputGuards) and writes its answers and logs (EdgeWriter) with the same code.
import { badRequest, type ErrorDetail, statusText } from "@troupe/api/Errors"
import { Cause, Effect, Layer, Schema, SchemaIssue } from "effect"
import { FindMyWay, HttpIncomingMessage, HttpMiddleware, HttpRouter, HttpServer, HttpServerRequest, HttpServerResponse } from "effect/http"
import { HttpApi } from "effect/http-api"
import { AppConfig } from "./AppConfig.ts"
import { encodeAnswer } from "./Compression.ts"
import { canonicalUrl, declaredBody } from "./EdgeInput.ts"
import { formProblems, jsonBodyRefusal, urlProblems, urlRefusal } from "./InputGuards.ts"
import { contractBody, edgeLog, failureOf, requestIdOf, schemaDetails } from "./EdgeWriter.ts"
import { recordRequest, UNMATCHED } from "./Metrics.ts"

export { schemaDetails } from "./EdgeWriter.ts"

/** Paths whose bodies are not JSON: form-encoded tokens, raw HTTP triggers, storage uploads (multipart). */
const nonJsonBodies = [
  /^\/oidc\/token(\?|$)/,
  /^\/workspace\/[^/]+\/api\/v1\/(webhook|http-triggers)\//,
  /^\/storage\/workspace\/[^/]+\/api\/v1\/upload(\?|$)/
]

/** Storage uploads may be as large as a file may be (the service streams them and enforces the exact limit). */
export const uploadBodyLimit = (config: Pick<AppConfig["Service"], "maxBodyBytes" | "storage">): number =>
  Math.max(config.maxBodyBytes, config.storage.maxFileBytes + 1024 * 1024)
const uploadPath = /^\/storage\/workspace\/[^/]+\/api\/v1\/upload(\?|$)/

const isJson = (contentType: string | undefined) =>
  contentType !== undefined && /^application\/([\w.+-]+\+)?json\b/i.test(contentType.trim())

/** A response in the contract's error shape. */
export const errorResponse = (
  status: number,
  code: string,
  message: string,
  requestId: string,
  details: ReadonlyArray<ErrorDetail> = [],
  headers: Record<string, string> = {}
) =>
  HttpServerResponse.jsonUnsafe(contractBody({ status, code, message, details }, requestId), {
    status,
    headers: { ...headers, "x-request-id": requestId }
  })

/**
 * A JSON request body decoded as HttpApi decodes an endpoint's payload (the union of its schemas), failing with the
 * 400 the edge answers for a bad one: for the fast lane, which reads bodies itself.
 */
export const decodeJsonPayload = (schemas: readonly [Schema.Top, ...Array<Schema.Top>]) => {
  const decode = Schema.decodeUnknownEffect(Schema.Union(schemas) as unknown as Schema.Codec<unknown, unknown>)
  const invalid = (error: Schema.SchemaError) =>
    badRequest({ message: "Invalid request body", code: "VALIDATION_ERROR", details: schemaDetails(error) })
  return (text: string) => {
    let value: unknown
    try {
      value = JSON.parse(text)
    } catch {
      return Effect.fail(invalid(new Schema.SchemaError(new SchemaIssue.InvalidValue({ message: "Expected a valid JSON body" }))))
    }
    return Effect.mapError(decode(value), invalid)
  }
}

/** Routes known to the API, to tell 405 (path exists, other method) from 404. */
const makeMethodIndex = (api: unknown, extra: ReadonlyArray<readonly [string, string]>) => {
  const router = FindMyWay.make<true>({ ignoreTrailingSlash: true })
  const add = (method: string, path: string) => {
    try {
      router.on(method, path as any, true)
    } catch {
      // duplicate registrations are fine here
    }
  }
  HttpApi.reflect(api as HttpApi.HttpApi<string, any>, {
    onGroup: () => {},
    onEndpoint: ({ endpoint }) => add(endpoint.method, endpoint.path)
  })
  for (const [method, path] of extra) add(method, path)
  const methods = ["GET", "POST", "PUT", "PATCH", "DELETE"]
  const allowedMethods = (method: string, url: string) => methods.filter((m) => m !== method && router.find(m, url) !== undefined)
  /** The name of the route parameter at a path's segment `index` (whatever the method), if a route has one there. */
  const paramAt = (path: string, index: number): string | undefined => {
    const marker = "troupe-segment-marker"
    const probe = path
      .split("/")
      .map((s, i) => (i === index ? marker : s))
      .join("/")
    for (const m of methods) {
      const found = router.find(m, probe)
      if (found === undefined) continue
      const name = Object.keys(found.params).find((k) => found.params[k] === marker)
      if (name !== undefined) return name
    }
    return undefined
  }
  return { allowedMethods, paramAt }
}

/** The route pattern a request's method and canonical URL (query string or not) fall on, else `unmatched`. */
export type RouteOf = (method: string, url: string) => string

const labelMethods = ["GET", "POST", "PUT", "PATCH", "DELETE"]

/**
 * The route patterns of the API (as the router knows them), of raw routes (`extra`) and of raw routes that take any
 * method (`anyMethod`): the label of a request in metrics and the name of its span. One lookup per request.
 */
export const routeLabels = (
  api: unknown,
  extra: ReadonlyArray<readonly [string, string]> = [],
  anyMethod: ReadonlyArray<string> = []
): RouteOf => {
  const router = FindMyWay.make<string>({ ignoreTrailingSlash: true })
  const add = (method: string, path: string) => {
    try {
      router.on(method, path as any, path)
    } catch {
      // registered already
    }
  }
  HttpApi.reflect(api as HttpApi.HttpApi<string, any>, {
    onGroup: () => {},
    onEndpoint: ({ endpoint }) => add(endpoint.method, endpoint.path)
  })
  for (const [method, path] of extra) add(method, path)
  for (const path of anyMethod) for (const method of labelMethods) add(method, path)
  return (method, url) => router.find(method === "HEAD" ? "GET" : method, url)?.handler ?? UNMATCHED
}

/** A server span's name: method and route pattern, or the method alone when no route matches (OpenTelemetry's rule). */
export const spanName = (method: string, route: string) => (route === UNMATCHED ? method : `${method} ${route}`)

/**
 * Serves `app` (HttpApi routes and raw routes) behind the edge wrapper. `extraRoutes` lists raw routes that are
 * not in the HttpApi definition, so they count for 405 detection; `routeOf` names the route of a request (metrics
 * and spans), by default from the API and `extraRoutes`.
 */
export const serve = <E, R>(
  api: unknown,
  app: Layer.Layer<never, E, R>,
  extraRoutes: ReadonlyArray<readonly [string, string]> = [],
  routeOf: RouteOf = routeLabels(api, extraRoutes)
) =>
  Layer.unwrap(
    Effect.gen(function* () {
      const config = yield* AppConfig
      const handler = yield* HttpRouter.toHttpEffect(app)
      const { allowedMethods, paramAt } = makeMethodIndex(api, extraRoutes)
      // the node's runtime context: where the request metrics live
      const context = yield* Effect.context<never>()
      const log = edgeLog(context)
      const maxBody = config.maxBodyBytes
      const uploadLimit = uploadBodyLimit(config)
      const maxDepth = config.maxJsonDepth

      /** The input guards: the request target, then a JSON or form body (read here; the handler reads it again from the request's cache). */
      const guard = (request: HttpServerRequest.HttpServerRequest, url: string, hasBody: boolean) =>
        Effect.gen(function* () {
          const inUrl = urlProblems(url, paramAt)
          if (inUrl.length > 0) return yield* urlRefusal(inUrl)
          if (!hasBody) return
          const contentType = request.headers["content-type"]
          if (isJson(contentType)) {
            const refusal = jsonBodyRefusal(yield* request.text, maxDepth)
            if (refusal !== undefined) return yield* refusal
          } else if (/^application\/x-www-form-urlencoded\b/i.test(contentType?.trim() ?? "")) {
            const inForm = formProblems(yield* request.text)
            if (inForm.length > 0) {
              return yield* badRequest({
                message: `Invalid request body: ${inForm[0]!.field} ${inForm[0]!.message}`,
                code: "VALIDATION_ERROR",
                details: inForm
              })
            }
          }
        })

      const wrapped = Effect.gen(function* () {
        const original = yield* HttpServerRequest.HttpServerRequest
        const start = performance.now()
        const requestId = requestIdOf(original.headers["x-request-id"])
        const url = canonicalUrl(original.url)
        const request = url === original.url ? original : original.modify({ url })

        let response: HttpServerResponse.HttpServerResponse
        // only a multipart upload may be large: any other body to that path keeps the node's limit (the guards
        // below would read it whole)
        const limit =
          request.method === "POST" && uploadPath.test(url) && /^multipart\/form-data\b/i.test(request.headers["content-type"] ?? "")
            ? uploadLimit
            : maxBody
        const body = declaredBody(request.headers, limit)
        const hasBody = body !== "none"
        if (body === "tooLarge") {
          response = errorResponse(413, "PAYLOAD_TOO_LARGE", `Request body exceeds ${limit} bytes`, requestId)
        } else if (
          hasBody &&
          (request.method === "POST" || request.method === "PUT" || request.method === "PATCH") &&
          !isJson(request.headers["content-type"]) &&
          !nonJsonBodies.some((p) => p.test(url))
        ) {
          response = errorResponse(415, "UNSUPPORTED_MEDIA_TYPE", "Content-Type must be application/json", requestId)
        } else {
          const exit = yield* Effect.andThen(guard(request, url, hasBody), handler).pipe(
            Effect.provideService(HttpServerRequest.HttpServerRequest, request),
            Effect.provideService(HttpIncomingMessage.MaxBodySize, maxBody as any),
            Effect.exit
          )
          if (exit._tag === "Success") {
            response = exit.value
          } else if (Cause.hasInterruptsOnly(exit.cause)) {
            // the client went away mid-request (nobody reads this answer): no server error, nothing to log
            response = errorResponse(499, "CLIENT_CLOSED_REQUEST", "The client closed the request", requestId)
          } else {
            const { failure, logged } = failureOf(exit.cause, allowedMethods)
            response = errorResponse(failure.status, failure.code, failure.message, requestId, failure.details, failure.headers)
            if (logged) yield* log.failed(requestId, request.method, url, exit.cause)
          }
          // HttpApi answers some failures itself with an empty body: give them the contract body.
          if (response.status >= 400 && response.body._tag === "Empty") {
            response = errorResponse(
              response.status,
              codeFor(response.status),
              statusText(response.status),
              requestId,
              [],
              headersOf(response)
            )
          } else if (response.status >= 400) {
            response = withRequestId(response, requestId)
          }
        }
        response = encodeAnswer(request, pathOf(url), response)
        const elapsed = performance.now() - start
        recordRequest(context, request.method, routeOf(request.method, url), response.status, elapsed / 1000, "stack")
        yield* log.request(requestId, request.method, url, response.status, elapsed)
        return HttpServerResponse.setHeader(response, "x-request-id", requestId)
      })
      // The server span (made by the HTTP server when a tracer is installed, before routing) is named after the route.
      const names = Layer.succeed(HttpMiddleware.SpanNameGenerator)((request) =>
        spanName(request.method, routeOf(request.method, canonicalUrl(request.url)))
      )
      return HttpServer.serve(wrapped).pipe(Layer.provide(names))
    })
  )

const decoder = new TextDecoder()

const pathOf = (url: string) => {
  const q = url.indexOf("?")
  return q === -1 ? url : url.slice(0, q)
}

/**
 * Declared errors are encoded by HttpApi as ordinary responses: stamp the request id into their contract body. A
 * plain-text failure HttpApi writes itself (415 "Unsupported content-type: ..." for a JSON-like type its payload does
 * not take) becomes the contract body, its text the message.
 */
const withRequestId = (response: HttpServerResponse.HttpServerResponse, requestId: string) => {
  const body = response.body
  if (body._tag === "Uint8Array" && !body.contentType.includes("json")) {
    const text = (body.text ?? decoder.decode(body.body)).slice(0, 500)
    return errorResponse(response.status, codeFor(response.status), text || statusText(response.status), requestId, [], headersOf(response))
  }
  if (body._tag !== "Uint8Array" || !body.contentType.includes("json")) return response
  try {
    const parsed = JSON.parse(body.text ?? decoder.decode(body.body))
    if (parsed === null || typeof parsed !== "object" || typeof parsed.statusCode !== "number" || parsed.requestId !== undefined) {
      return response
    }
    return HttpServerResponse.jsonUnsafe({ ...parsed, requestId }, { status: response.status, headers: headersOf(response) })
  } catch {
    return response
  }
}

const headersOf = (response: HttpServerResponse.HttpServerResponse) => {
  const headers = { ...response.headers } as Record<string, string>
  delete headers["content-length"]
  delete headers["content-type"]
  return headers
}

const codeFor = (status: number) =>
  (
    ({
      400: "BAD_REQUEST",
      401: "UNAUTHORIZED",
      403: "PERMISSION_DENIED",
      404: "NOT_FOUND",
      405: "METHOD_NOT_ALLOWED",
      409: "CONFLICT",
      413: "PAYLOAD_TOO_LARGE",
      415: "UNSUPPORTED_MEDIA_TYPE",
      422: "UNPROCESSABLE",
      429: "QUOTA_EXCEEDED",
      503: "UNAVAILABLE"
    }) as Record<number, string>
  )[status] ?? "INTERNAL"
