// The HTTP edge, in one place: request ids, base-path aliases, body limits and content types, the single error
// body of CONTRACT.md §4 for every failure (typed errors, schema decode failures, unknown routes, wrong methods,
// malformed JSON, defects), and one structured log line per request.
import { badRequest, errorBody, type ErrorDetail, statusText } from "@troupe/api/Errors"
import { Cause, Effect, Layer, Schema, SchemaIssue } from "effect"
import { FindMyWay, HttpIncomingMessage, HttpRouter, HttpServer, HttpServerError, HttpServerRequest, HttpServerResponse } from "effect/http"
import { HttpApi, HttpApiError } from "effect/http-api"
import * as Crypto from "node:crypto"
import { AppConfig } from "./AppConfig.ts"

/** Alternate bases served by the same handlers: the canonical path is what the router knows. */
const aliases: ReadonlyArray<readonly [RegExp, string]> = [
  [/^\/data\/workspace\//, "/workspace/"],
  [/^\/iam\/workspace\//, "/workspace/"],
  [/^(\/workspace\/[^/]+\/api\/v1)\/iam\//, "$1/"]
]

export const canonicalUrl = (url: string): string => {
  for (const [pattern, replacement] of aliases) {
    if (pattern.test(url)) return url.replace(pattern, replacement)
  }
  return url
}

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
  HttpServerResponse.jsonUnsafe({ ...errorBody(status, code, message, details), requestId }, {
    status,
    headers: { ...headers, "x-request-id": requestId }
  })

const issueFormatter = SchemaIssue.makeFormatterStandardSchemaV1()

/** Schema decode failure -> `details` naming each field. */
export const schemaDetails = (error: Schema.SchemaError, prefix = ""): Array<ErrorDetail> =>
  issueFormatter(error.issue).issues.map((issue) => {
    const path = (issue.path ?? []).map((p) => {
      const key = typeof p === "object" && p !== null && "key" in p ? (p as { key: PropertyKey }).key : p
      return typeof key === "number" ? `[${key}]` : String(key)
    })
    const field = [prefix, ...path].filter((s) => s.length > 0).join(".").replace(/\.\[/g, "[")
    return { field: field || "body", property: field || "body", message: issue.message }
  })

/**
 * A JSON request body decoded as HttpApi decodes an endpoint's payload (the union of its schemas), failing with the
 * 400 the edge answers for a bad one: for the fast routes, which read their bodies themselves.
 */
export const decodeJsonPayload = <S extends Schema.Top>(schema: S) => {
  const decode = Schema.decodeUnknownEffect(Schema.Union([schema]))
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

interface ContractError {
  readonly statusCode: number
  readonly code: string
  readonly message: string
  readonly details: ReadonlyArray<ErrorDetail>
}

/** The caller's request id when it is a sane token, else a new one. */
export const requestIdOf = (incoming: string | ReadonlyArray<string> | undefined): string =>
  typeof incoming === "string" && /^[\w.:-]{1,128}$/.test(incoming) ? incoming : Crypto.randomUUID()

const isContractError = (u: unknown): u is ContractError =>
  typeof u === "object" && u !== null && typeof (u as any).statusCode === "number" &&
  typeof (u as any).code === "string" && typeof (u as any).error === "string"

/** The contract error a cause fails or dies with, and the headers it carries (Retry-After); used by the fast routes too. */
export const contractErrorOf = (
  cause: Cause.Cause<unknown>
): { readonly error: ContractError; readonly headers: Record<string, string> } | undefined => {
  for (const reason of cause.reasons) {
    const value = reason._tag === "Fail" ? reason.error : reason._tag === "Die" ? reason.defect : undefined
    if (!isContractError(value)) continue
    const retry = (value as { retryAfter?: unknown }).retryAfter
    return { error: value, headers: typeof retry === "number" ? { "retry-after": String(retry) } : {} }
  }
  return undefined
}

const payloadKinds: Record<string, string> = { Payload: "body", Query: "query", Params: "path", Headers: "headers" }

/** Any failure or defect -> the contract response. Returns undefined for causes that are interruptions only. */
const failureResponse = (
  cause: Cause.Cause<unknown>,
  requestId: string,
  allowedMethods: (method: string, url: string) => ReadonlyArray<string>
): { response: HttpServerResponse.HttpServerResponse; logged: boolean } => {
  const contract = contractErrorOf(cause)
  if (contract !== undefined) {
    const { error, headers } = contract
    return { response: errorResponse(error.statusCode, error.code, error.message, requestId, error.details, headers), logged: false }
  }
  for (const reason of cause.reasons) {
    const value = reason._tag === "Fail" ? reason.error : reason._tag === "Die" ? reason.defect : undefined
    if (value === undefined) continue
    if (HttpApiError.HttpApiSchemaError.is(value)) {
      if (value.kind === "Body" || value.kind === "ResponseHeaders") break
      const where = payloadKinds[value.kind] ?? "request"
      const details = schemaDetails(value.cause, where === "body" ? "" : where)
      return {
        response: errorResponse(400, "VALIDATION_ERROR", `Invalid request ${where}`, requestId, details),
        logged: false
      }
    }
    if (HttpServerError.isHttpServerError(value)) {
      const r = value.reason
      if (r._tag === "RouteNotFound") {
        const allowed = allowedMethods(r.request.method, r.request.url)
        return allowed.length > 0
          ? {
            response: errorResponse(405, "METHOD_NOT_ALLOWED", `${r.request.method} is not allowed here`, requestId, [], {
              allow: allowed.join(", ")
            }),
            logged: false
          }
          : { response: errorResponse(404, "NOT_FOUND", `No route for ${r.request.method} ${r.request.url.split("?")[0]}`, requestId), logged: false }
      }
      if (r._tag === "RequestParseError") {
        return r.reason === "BodyTooLarge"
          ? { response: errorResponse(413, "PAYLOAD_TOO_LARGE", "Request body is too large", requestId), logged: false }
          : { response: errorResponse(400, "BAD_REQUEST", "Malformed request body: expected valid JSON", requestId), logged: false }
      }
    }
    if (HttpApiError.HttpApiPayloadTooLarge.is(value)) {
      return { response: errorResponse(413, "PAYLOAD_TOO_LARGE", "Request body is too large", requestId), logged: false }
    }
    if (Schema.isSchemaError(value)) {
      return {
        response: errorResponse(400, "VALIDATION_ERROR", "Invalid request", requestId, schemaDetails(value)),
        logged: false
      }
    }
  }
  return { response: errorResponse(500, "INTERNAL", "Internal server error", requestId), logged: true }
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
  return (method: string, url: string) => methods.filter((m) => m !== method && router.find(m, url) !== undefined)
}

const logLevels = { debug: 0, info: 1, warn: 2, error: 3, none: 4 } as const

/**
 * Serves `app` (HttpApi routes and raw routes) behind the edge wrapper. `extraRoutes` lists raw routes that are
 * not in the HttpApi definition, so they count for 405 detection.
 */
export const serve = <E, R>(
  api: unknown,
  app: Layer.Layer<never, E, R>,
  extraRoutes: ReadonlyArray<readonly [string, string]> = []
) =>
  Layer.unwrap(Effect.gen(function*() {
    const config = yield* AppConfig
    const handler = yield* HttpRouter.toHttpEffect(app)
    const allowedMethods = makeMethodIndex(api, extraRoutes)
    const level = logLevels[config.logLevel as keyof typeof logLevels] ?? 1
    const maxBody = config.maxBodyBytes

    const wrapped = Effect.gen(function*() {
      const original = yield* HttpServerRequest.HttpServerRequest
      const start = performance.now()
      const requestId = requestIdOf(original.headers["x-request-id"])
      const url = canonicalUrl(original.url)
      const request = url === original.url ? original : original.modify({ url })

      let response: HttpServerResponse.HttpServerResponse
      const length = Number(request.headers["content-length"] ?? "0")
      const hasBody = length > 0 || request.headers["transfer-encoding"] !== undefined
      if (length > maxBody) {
        response = errorResponse(413, "PAYLOAD_TOO_LARGE", `Request body exceeds ${maxBody} bytes`, requestId)
      } else if (
        hasBody && (request.method === "POST" || request.method === "PUT" || request.method === "PATCH") &&
        !isJson(request.headers["content-type"]) && !nonJsonBodies.some((p) => p.test(url))
      ) {
        response = errorResponse(415, "UNSUPPORTED_MEDIA_TYPE", "Content-Type must be application/json", requestId)
      } else {
        const exit = yield* handler.pipe(
          Effect.provideService(HttpServerRequest.HttpServerRequest, request),
          Effect.provideService(HttpIncomingMessage.MaxBodySize, maxBody as any),
          Effect.exit
        )
        if (exit._tag === "Success") {
          response = exit.value
        } else {
          const mapped = failureResponse(exit.cause, requestId, allowedMethods)
          response = mapped.response
          if (mapped.logged && level <= 3) {
            yield* Effect.logError("request failed", { requestId, method: request.method, url, cause: Cause.pretty(exit.cause) })
          }
        }
        // HttpApi answers some failures itself with an empty body: give them the contract body.
        if (response.status >= 400 && response.body._tag === "Empty") {
          response = errorResponse(response.status, codeFor(response.status), statusText(response.status), requestId, [], headersOf(response))
        } else if (response.status >= 400) {
          response = withRequestId(response, requestId)
        }
      }
      if (level <= 1) {
        yield* Effect.logInfo("request").pipe(Effect.annotateLogs({
          requestId,
          method: request.method,
          url: url.split("?")[0],
          status: response.status,
          durationMs: Math.round((performance.now() - start) * 100) / 100
        }))
      }
      return HttpServerResponse.setHeader(response, "x-request-id", requestId)
    })
    return HttpServer.serve(wrapped)
  }))

const decoder = new TextDecoder()

/** Declared errors are encoded by HttpApi as ordinary responses: stamp the request id into their contract body. */
const withRequestId = (response: HttpServerResponse.HttpServerResponse, requestId: string) => {
  const body = response.body
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
  ({ 400: "BAD_REQUEST", 401: "UNAUTHORIZED", 403: "PERMISSION_DENIED", 404: "NOT_FOUND", 405: "METHOD_NOT_ALLOWED", 409: "CONFLICT", 413: "PAYLOAD_TOO_LARGE", 415: "UNSUPPORTED_MEDIA_TYPE", 422: "UNPROCESSABLE", 429: "QUOTA_EXCEEDED", 503: "UNAVAILABLE" } as Record<number, string>)[status] ?? "INTERNAL"


