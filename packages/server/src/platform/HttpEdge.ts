// The HTTP edge, in one place: request ids, base-path aliases, body limits and content types, input guards (no NUL
// or lone surrogate in any path segment, query parameter, form field or JSON string; bounded JSON nesting), the
// single contract error body (README.md, "Errors") for every failure (typed errors, schema decode failures, unknown
// routes, wrong methods, malformed JSON, defects), one structured log line per request, and the request's metrics (by
// route pattern) and server span name (`GET /workspace/:workspace/api/v1/records/:id`). The fast lane (FastRoutes)
// reads requests (EdgeInput), guards them (below) and writes its answers and logs (EdgeWriter) with the same code.
import { badRequest, type ErrorDetail, statusText } from "@troupe/api/Errors"
import { Cause, Effect, Layer, Schema, SchemaIssue } from "effect"
import { FindMyWay, HttpIncomingMessage, HttpMiddleware, HttpRouter, HttpServer, HttpServerRequest, HttpServerResponse } from "effect/http"
import { HttpApi } from "effect/http-api"
import { AppConfig } from "./AppConfig.ts"
import { canonicalUrl, declaredBody } from "./EdgeInput.ts"
import { contractBody, edgeLog, failureOf, requestIdOf, schemaDetails } from "./EdgeWriter.ts"
import { recordRequest, UNMATCHED } from "./Metrics.ts"

export { schemaDetails } from "./EdgeWriter.ts"

/** Paths whose bodies are not JSON: form-encoded tokens, raw HTTP triggers. */
const nonJsonBodies = [/^\/oidc\/token(\?|$)/, /^\/workspace\/[^/]+\/api\/v1\/(webhook|http-triggers)\//]

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

// Input guards -------------------------------------------------------------------------------------------------
// Checked once here, before routing and decoding, for every request (the fast routes run the same checks): no NUL
// character or lone surrogate in a path segment, a query parameter, a form field or a JSON string (PostgreSQL
// refuses both in text and jsonb, which would otherwise surface as a 500 wherever the value reaches it), and no
// JSON body nested deeper than TROUPE_MAX_JSON_DEPTH (recursive decoders and walks would overflow the stack).

const NUL = "must not contain NUL characters"
const SURROGATE = "must be valid Unicode (no lone surrogates)"

/** The problem of decoded text, if any. */
export const textProblem = (s: string): string | undefined => (s.includes("\u0000") ? NUL : s.isWellFormed() ? undefined : SURROGATE)

/** NUL raw, percent-encoded or overlong; the (WTF-8) percent-encoding of a surrogate. */
const encodedNul = /%00|%c0%80|\u0000/i
const encodedSurrogate = /%ed%[ab][0-9a-f]/i

/** The problem of a raw (percent-encoded) piece of a URL, if any. */
const encodedProblem = (raw: string): string | undefined =>
  encodedNul.test(raw) ? NUL : encodedSurrogate.test(raw) || !raw.isWellFormed() ? SURROGATE : undefined

/** Whether a request target holds anything the edge refuses (cheap: one pass of two patterns). */
export const suspectUrl = (url: string): boolean => encodedProblem(url) !== undefined

const detail = (field: string, message: string): ErrorDetail => ({ field, property: field, message })

/** A field name fit for a message: escapes a NUL or a lone surrogate. */
const printable = (s: string) => (textProblem(s) === undefined ? s : JSON.stringify(s).slice(1, -1))

const decodeQueryName = (raw: string) => {
  const spaced = raw.replaceAll("+", " ")
  try {
    return decodeURIComponent(spaced)
  } catch {
    return spaced
  }
}

/**
 * The NULs and lone surrogates of a request target (path aliases already rewritten), each naming the path parameter
 * (`path.slug`, found by `paramAt`, else `path`) or the query parameter (`query.filter`) it is in.
 */
export const urlProblems = (
  url: string,
  paramAt: (path: string, segment: number) => string | undefined = () => undefined
): Array<ErrorDetail> => {
  if (!suspectUrl(url)) return []
  const problems: Array<ErrorDetail> = []
  const at = url.indexOf("?")
  const path = at < 0 ? url : url.slice(0, at)
  path.split("/").forEach((segment, i) => {
    const problem = encodedProblem(segment)
    if (problem === undefined) return
    const name = paramAt(path, i)
    problems.push(detail(name === undefined ? "path" : `path.${name}`, problem))
  })
  if (at >= 0) {
    for (const pair of url.slice(at + 1).split("&")) {
      const eq = pair.indexOf("=")
      const key = eq < 0 ? pair : pair.slice(0, eq)
      const keyProblem = encodedProblem(key)
      if (keyProblem !== undefined) {
        problems.push(detail("query", `a parameter name ${keyProblem}`))
        continue
      }
      const problem = eq < 0 ? undefined : encodedProblem(pair.slice(eq + 1))
      if (problem !== undefined) problems.push(detail(`query.${decodeQueryName(key)}`, problem))
    }
  }
  return problems
}

/** The NULs and lone surrogates of a form body (`application/x-www-form-urlencoded`), each naming its field. */
export const formProblems = (text: string): Array<ErrorDetail> => {
  if (!encodedNul.test(text) && text.isWellFormed()) return []
  const problems: Array<ErrorDetail> = []
  for (const [key, value] of new URLSearchParams(text)) {
    const problem = textProblem(key) ?? textProblem(value)
    if (problem !== undefined) problems.push(detail(printable(key) || "body", problem))
  }
  return problems
}

interface JsonFrame {
  readonly array: boolean
  /** arrays: the index of the current item */
  index: number
  /** objects: where the current key's JSON string starts and ends in the text */
  keyStart: number
  keyEnd: number
}

const MAX_JSON_PROBLEMS = 20
const QUOTE = 34
const BACKSLASH = 92

/** The code unit of a `\\uXXXX` escape whose hex digits start at `at`, NaN when they are not four hex digits. */
const escapedUnit = (text: string, at: number) => {
  const hex = text.slice(at, at + 4)
  return /^[0-9a-fA-F]{4}$/.test(hex) ? parseInt(hex, 16) : NaN
}

/**
 * Scans JSON text in one pass, without recursion and without parsing it (malformed text is left to the decoder): a
 * container nested deeper than `maxDepth`, and every string (key or value) holding a NUL or a lone surrogate, each
 * named by its path as the edge names body fields (`data.tags[2]`, `body` for the root).
 */
export const jsonProblems = (
  text: string,
  maxDepth: number
): { readonly tooDeep: boolean; readonly details: ReadonlyArray<ErrorDetail> } => {
  const stack: Array<JsonFrame> = []
  const details: Array<ErrorDetail> = []
  let expectKey = false
  const keyOf = (frame: JsonFrame) => {
    const raw = text.slice(frame.keyStart, frame.keyEnd)
    try {
      return printable(JSON.parse(raw) as string)
    } catch {
      return raw.slice(1, -1)
    }
  }
  const pathOf = (frames: number) => {
    let path = ""
    for (let k = 0; k < frames; k++) {
      const frame = stack[k]!
      path += frame.array ? `[${frame.index}]` : path === "" ? keyOf(frame) : `.${keyOf(frame)}`
    }
    return path === "" ? "body" : path
  }
  const n = text.length
  // the next quote and backslash at or after the scan position (searched again only once passed: linear overall)
  let quoteAt = -1
  let backslashAt = -1
  const next = (char: string, from: number) => {
    const at = text.indexOf(char, from)
    return at < 0 ? n : at
  }
  let i = 0
  while (i < n) {
    const c = text.charCodeAt(i)
    if (c === QUOTE) {
      const start = i
      let problem: string | undefined
      i++
      for (;;) {
        if (quoteAt < i) quoteAt = next('"', i)
        if (backslashAt < i) backslashAt = next("\\", i)
        if (quoteAt <= backslashAt) {
          i = quoteAt
          break
        }
        i = backslashAt
        if (text.charCodeAt(i + 1) !== 117 /* u */) {
          i += 2
          // escapes often come in runs (`\\n\\n`): the next one is found without a search
          if (text.charCodeAt(i) === BACKSLASH) backslashAt = i
          continue
        }
        const unit = escapedUnit(text, i + 2)
        i += 6
        if (unit === 0) problem ??= NUL
        else if (unit >= 0xd800 && unit <= 0xdbff) {
          const low = text.charCodeAt(i) === BACKSLASH && text.charCodeAt(i + 1) === 117 ? escapedUnit(text, i + 2) : NaN
          if (low >= 0xdc00 && low <= 0xdfff) i += 6
          else problem ??= SURROGATE
        } else if (unit >= 0xdc00 && unit <= 0xdfff) problem ??= SURROGATE
      }
      i++ // past the closing quote
      const top = stack[stack.length - 1]
      if (top !== undefined && !top.array && expectKey) {
        top.keyStart = start
        top.keyEnd = Math.min(i, n)
        expectKey = false
      }
      if (problem !== undefined && details.length < MAX_JSON_PROBLEMS) details.push(detail(pathOf(stack.length), problem))
      continue
    }
    switch (c) {
      case 123: // {
      case 91: // [
        if (stack.length >= maxDepth) {
          return { tooDeep: true, details: [detail(pathOf(stack.length), `is nested deeper than ${maxDepth} levels`)] }
        }
        stack.push({ array: c === 91, index: 0, keyStart: 0, keyEnd: 0 })
        expectKey = c === 123
        break
      case 125: // }
      case 93: // ]
        stack.pop()
        expectKey = false
        break
      case 44: {
        // ,
        const top = stack[stack.length - 1]
        if (top?.array) top.index++
        else expectKey = true
        break
      }
      case 58: // :
        expectKey = false
        break
    }
    i++
  }
  return { tooDeep: false, details }
}

/** The 400 of a body the guards refuse. */
const jsonRefusal = (problems: ReturnType<typeof jsonProblems>, maxDepth: number) =>
  badRequest({
    message: problems.tooDeep
      ? `Invalid request body: JSON nested deeper than ${maxDepth} levels`
      : "Invalid request body: text must not contain NUL characters or lone surrogates",
    code: "VALIDATION_ERROR",
    details: problems.details
  })

/** The 400 of a JSON body text, or undefined when it may go on (for the fast routes, which read bodies themselves). */
export const jsonBodyRefusal = (text: string, maxDepth: number) => {
  const problems = jsonProblems(text, maxDepth)
  return problems.tooDeep || problems.details.length > 0 ? jsonRefusal(problems, maxDepth) : undefined
}

/** The 400 of a request target's problems. */
const urlRefusal = (details: ReadonlyArray<ErrorDetail>) =>
  badRequest({
    message: `Invalid request ${details[0]!.field.startsWith("query") ? "query" : "path"}: ${details[0]!.field} ${details[0]!.message}`,
    code: "VALIDATION_ERROR",
    details
  })

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
        const body = declaredBody(request.headers, maxBody)
        const hasBody = body !== "none"
        if (body === "tooLarge") {
          response = errorResponse(413, "PAYLOAD_TOO_LARGE", `Request body exceeds ${maxBody} bytes`, requestId)
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
