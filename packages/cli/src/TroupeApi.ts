/**
 * The CLI's only way to the server: JSON over HTTP with the session's bearer token (effect/http's fetch client).
 * A non-2xx answer becomes an `ApiError` carrying the contract's error body (`code`, `message`, `details`).
 *
 * @since 0.1.0
 */
import { Context, Data, Effect, Layer, Stream } from "effect"
import { FetchHttpClient, HttpClient, HttpClientRequest } from "effect/http"
import type { HttpMethod } from "effect/http/HttpMethod"
import { currentSession, type Session } from "./Config.ts"

/** The server answered with an error, or could not be reached (`status` 0). @category errors */
export class ApiError extends Data.TaggedError("ApiError")<{
  readonly method: string
  readonly path: string
  readonly status: number
  readonly code: string
  readonly message: string
  readonly details?: unknown
}> {}

/** @category models */
export interface CallOptions {
  readonly body?: unknown
  readonly query?: Record<string, string | number | boolean | undefined>
  readonly headers?: Record<string, string>
  /** `path` is below the origin, not below `/workspace/{ws}/api/v1` */
  readonly root?: boolean
}

const hint = (status: number) => (status === 401 ? " (token missing, expired or revoked: run troupe login)" : "")

/** Turns a non-2xx answer into an ApiError. @category errors */
const toApiError = (method: string, path: string, status: number, text: string): ApiError => {
  let body: Record<string, unknown> = {}
  try {
    const parsed = JSON.parse(text) as unknown
    if (typeof parsed === "object" && parsed !== null) body = parsed as Record<string, unknown>
  } catch {
    // not JSON: the text is the message
  }
  const code = typeof body.code === "string" ? body.code : typeof body.error === "string" ? body.error : `HTTP_${status}`
  const message =
    typeof body.message === "string"
      ? body.message
      : typeof body.error_description === "string"
        ? body.error_description
        : text.slice(0, 200) || `HTTP ${status}`
  return new ApiError({
    method,
    path,
    status,
    code,
    message: `${method} ${path}: ${status} ${code}: ${message}${hint(status)}`,
    ...(body.details === undefined ? {} : { details: body.details })
  })
}

/** Sends one request to `url` and answers the parsed JSON body (or `null` for an empty one). @category requests */
export const callUrl = (
  http: HttpClient.HttpClient,
  method: HttpMethod,
  url: string,
  label: string,
  options: { readonly body?: unknown; readonly headers?: Record<string, string>; readonly form?: Record<string, string> }
) =>
  Effect.gen(function* () {
    let request = HttpClientRequest.make(method)(url).pipe(
      HttpClientRequest.acceptJson,
      HttpClientRequest.setHeaders(options.headers ?? {})
    )
    if (options.form !== undefined) request = HttpClientRequest.bodyUrlParams(request, options.form)
    else if (options.body !== undefined) {
      request = HttpClientRequest.bodyText(request, JSON.stringify(options.body), "application/json")
    }
    const response = yield* http.execute(request).pipe(
      Effect.mapError(
        (e) =>
          new ApiError({
            method,
            path: label,
            status: 0,
            code: "NETWORK_ERROR",
            message: `${method} ${label}: cannot reach the server: ${e.message}`
          })
      )
    )
    const text = yield* response.text.pipe(Effect.orElseSucceed(() => ""))
    if (response.status < 200 || response.status > 299) {
      return yield* toApiError(method, label, response.status, text)
    }
    if (text.length === 0) return null as unknown
    return yield* Effect.try({
      try: () => JSON.parse(text) as unknown,
      catch: () =>
        new ApiError({
          method,
          path: label,
          status: response.status,
          code: "INVALID_RESPONSE",
          message: `${method} ${label}: the answer is not JSON`
        })
    })
  })

/** @category services */
export class TroupeApi extends Context.Service<
  TroupeApi,
  {
    readonly session: Session
    /** Calls a workspace route (`/records` means `/workspace/{ws}/api/v1/records`) or, with `root`, any route. */
    readonly call: (method: HttpMethod, path: string, options?: CallOptions) => Effect.Effect<unknown, ApiError>
    /** Streams a response body (server-sent events), with the token and extra headers. */
    readonly stream: (path: string, headers: Record<string, string>) => Effect.Effect<Stream.Stream<Uint8Array, ApiError>, ApiError>
  }
>()("@troupe/cli/TroupeApi") {
  /** The session of the config file and environment, over fetch. @category layers */
  static readonly layer = Layer.effect(
    TroupeApi,
    Effect.gen(function* () {
      const session = yield* currentSession
      const http = yield* HttpClient.HttpClient
      const auth = { authorization: `Bearer ${session.token}` }
      const urlOf = (path: string, options?: CallOptions) => {
        const full = options?.root === true ? path : `/workspace/${encodeURIComponent(session.workspace)}/api/v1${path}`
        const url = new URL(session.url + full)
        for (const [key, value] of Object.entries(options?.query ?? {})) {
          if (value !== undefined) url.searchParams.set(key, String(value))
        }
        return url
      }
      return TroupeApi.of({
        session,
        call: (method, path, options) => {
          const url = urlOf(path, options)
          return callUrl(http, method, url.toString(), url.pathname, {
            body: options?.body,
            headers: { ...auth, ...options?.headers }
          })
        },
        stream: (path, headers) =>
          Effect.gen(function* () {
            const url = urlOf(path, { root: true })
            const request = HttpClientRequest.get(url.toString()).pipe(
              HttpClientRequest.setHeaders({ ...auth, accept: "text/event-stream", ...headers })
            )
            const label = url.pathname
            const response = yield* http.execute(request).pipe(
              Effect.mapError(
                (e) =>
                  new ApiError({
                    method: "GET",
                    path: label,
                    status: 0,
                    code: "NETWORK_ERROR",
                    message: `GET ${label}: cannot reach the server: ${e.message}`
                  })
              )
            )
            if (response.status !== 200) {
              const text = yield* response.text.pipe(Effect.orElseSucceed(() => ""))
              return yield* toApiError("GET", label, response.status, text)
            }
            return response.stream.pipe(
              Stream.mapError(
                (e) =>
                  new ApiError({
                    method: "GET",
                    path: label,
                    status: 0,
                    code: "NETWORK_ERROR",
                    message: `GET ${label}: the stream broke: ${e.message}`
                  })
              )
            )
          })
      })
    })
  ).pipe(Layer.provide(FetchHttpClient.layer))
}
