// What both lanes of the HTTP edge (HttpEdge's Effect stack, FastRoutes' fast lane) and Node's own refusals
// (ClientErrors) write, in one place: the contract's error body (README.md, "Errors": `error`, `message`, `code`,
// `statusCode`, `details`, plus the `requestId`), the mapping of any failure or defect to it (500 for what is not a
// known failure, logged), the request id, and the log lines: one `request` line per request at info, one `request
// failed` line per 500 at error, each only when TROUPE_LOG_LEVEL lets it through.
import { errorBody, type ErrorDetail, statusText, errorDetail } from "@troupe/api/Errors"
import { Cause, Context, Effect, LogLevel, References, Schema, SchemaIssue } from "effect"
import { HttpServerError } from "effect/http"
import { HttpApiError } from "effect/http-api"
import * as Crypto from "node:crypto"
import type * as Http from "node:http"
import { pipeline, type Readable } from "node:stream"
import { redactUrl } from "../lib/redactUrl.ts"
import { writeEncodedJson } from "./Compression.ts"

/** A failure as the contract answers it. */
export interface EdgeFailure {
  readonly status: number
  readonly code: string
  readonly message: string
  readonly details?: ReadonlyArray<ErrorDetail> | undefined
  /** headers the answer carries besides the request id (Retry-After, Allow, Connection) */
  readonly headers?: Record<string, string> | undefined
  /** the body's `error`, when it is not the status's usual reason phrase */
  readonly reason?: string | undefined
}

/** The contract body of a failure. */
export const contractBody = (failure: EdgeFailure, requestId: string) => ({
  ...errorBody(failure.status, failure.code, failure.message, failure.details ?? []),
  error: failure.reason ?? statusText(failure.status),
  requestId
})

export const INTERNAL: EdgeFailure = { status: 500, code: "INTERNAL", message: "Internal server error" }

/** The caller's request id when it is a sane token, else a new one. */
export const requestIdOf = (incoming: string | ReadonlyArray<string> | undefined): string =>
  typeof incoming === "string" && /^[\w.:-]{1,128}$/.test(incoming) ? incoming : Crypto.randomUUID()

/** A JSON answer on a node response (the fast lane and Node's refusals; the stack answers through HttpServerResponse). */
export const writeJson = (res: Http.ServerResponse, status: number, body: unknown, headers: Record<string, string>) =>
  writeEncodedJson(res, status, JSON.stringify(body), headers)

/**
 * A stream that can write itself into a node response without handing out its chunks (a disk file's range, read
 * into reused buffers: storage/FileRange.ts); the fast lane lets it, the stack reads it as a stream.
 */
export interface SelfSending {
  readonly sendTo: (out: Http.ServerResponse) => void
}

const selfSending = (bytes: Readable): bytes is Readable & SelfSending => typeof (bytes as Partial<SelfSending>).sendTo === "function"

/**
 * Raw bytes on a node response (the fast lane's stored files), as the stack writes a raw body: `headers` name the
 * type and length. A stream is piped (or sends itself); a read failing mid-answer cuts the connection (the status
 * is gone already), and a client going away destroys the stream (or stops its reads).
 */
export const writeBytes = (
  res: Http.ServerResponse,
  status: number,
  headers: Record<string, string>,
  bytes: Uint8Array | Readable | undefined
) => {
  res.writeHead(status, headers)
  if (bytes === undefined || bytes instanceof Uint8Array) res.end(bytes)
  else if (selfSending(bytes)) bytes.sendTo(res)
  else pipeline(bytes, res, () => {})
}

/** A contract error body a handler answered itself, with the request id stamped in (as the stack's edge does). */
export const withRequestId = (body: unknown, requestId: string): unknown =>
  typeof body === "object" &&
  body !== null &&
  typeof (body as { statusCode?: unknown }).statusCode === "number" &&
  (body as { requestId?: unknown }).requestId === undefined
    ? { ...body, requestId }
    : body

/** A failure's contract answer on a node response. */
export const writeFailure = (res: Http.ServerResponse, failure: EdgeFailure, requestId: string) =>
  writeJson(res, failure.status, contractBody(failure, requestId), { ...failure.headers, "x-request-id": requestId })

interface ContractError {
  readonly statusCode: number
  readonly code: string
  readonly message: string
  readonly details: ReadonlyArray<ErrorDetail>
}

const isContractError = (u: unknown): u is ContractError =>
  typeof u === "object" &&
  u !== null &&
  typeof (u as any).statusCode === "number" &&
  typeof (u as any).code === "string" &&
  typeof (u as any).error === "string"

/** The contract error a cause fails or dies with, and the headers it carries (Retry-After). */
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

const issueFormatter = SchemaIssue.makeFormatterStandardSchemaV1()

/** Schema decode failure -> `details` naming each field. */
export const schemaDetails = (error: Schema.SchemaError, prefix = ""): Array<ErrorDetail> =>
  issueFormatter(error.issue).issues.map((issue) => {
    const path = (issue.path ?? []).map((p) => {
      const key = typeof p === "object" && p !== null && "key" in p ? (p as { key: PropertyKey }).key : p
      return typeof key === "number" ? `[${key}]` : String(key)
    })
    const field = [prefix, ...path]
      .filter((s) => s.length > 0)
      .join(".")
      .replace(/\.\[/g, "[")
    return errorDetail(field || "body", issue.message)
  })

const payloadKinds: Record<string, string> = { Payload: "body", Query: "query", Params: "path", Headers: "headers" }

const noMethods = () => []

/**
 * Any failure or defect as the contract answers it, and whether it is logged (a 500: anything not a known failure).
 * `allowedMethods` tells a wrong method (405) from an unknown route (404).
 */
export const failureOf = (
  cause: Cause.Cause<unknown>,
  allowedMethods: (method: string, url: string) => ReadonlyArray<string> = noMethods
): { readonly failure: EdgeFailure; readonly logged: boolean } => {
  const contract = contractErrorOf(cause)
  if (contract !== undefined) {
    const { error, headers } = contract
    return {
      failure: { status: error.statusCode, code: error.code, message: error.message, details: error.details, headers },
      logged: false
    }
  }
  const known = (failure: EdgeFailure) => ({ failure, logged: false })
  for (const reason of cause.reasons) {
    const value = reason._tag === "Fail" ? reason.error : reason._tag === "Die" ? reason.defect : undefined
    if (value === undefined) continue
    if (HttpApiError.HttpApiSchemaError.is(value)) {
      if (value.kind === "Body" || value.kind === "ResponseHeaders") break
      const where = payloadKinds[value.kind] ?? "request"
      return known({
        status: 400,
        code: "VALIDATION_ERROR",
        message: `Invalid request ${where}`,
        details: schemaDetails(value.cause, where === "body" ? "" : where)
      })
    }
    if (HttpServerError.isHttpServerError(value)) {
      const r = value.reason
      if (r._tag === "RouteNotFound") {
        const allowed = allowedMethods(r.request.method, r.request.url)
        return known(
          allowed.length > 0
            ? {
                status: 405,
                code: "METHOD_NOT_ALLOWED",
                message: `${r.request.method} is not allowed here`,
                headers: { allow: allowed.join(", ") }
              }
            : { status: 404, code: "NOT_FOUND", message: `No route for ${r.request.method} ${r.request.url.split("?")[0]}` }
        )
      }
      if (r._tag === "RequestParseError") {
        return known(
          r.reason === "BodyTooLarge"
            ? { status: 413, code: "PAYLOAD_TOO_LARGE", message: "Request body is too large" }
            : { status: 400, code: "BAD_REQUEST", message: "Malformed request body: expected valid JSON" }
        )
      }
    }
    if (HttpApiError.HttpApiPayloadTooLarge.is(value)) {
      return known({ status: 413, code: "PAYLOAD_TOO_LARGE", message: "Request body is too large" })
    }
    if (Schema.isSchemaError(value)) {
      return known({ status: 400, code: "VALIDATION_ERROR", message: "Invalid request", details: schemaDetails(value) })
    }
  }
  return { failure: INTERNAL, logged: true }
}

export interface EdgeLog {
  /** the `request` line of an answered request (info); `url` may carry a query string, which is left out */
  readonly request: (requestId: string, method: string, url: string, status: number, elapsedMs: number) => Effect.Effect<void>
  /** the `request failed` line of a 500 (error), its URL's credentials redacted */
  readonly failed: (requestId: string, method: string, url: string, cause: Cause.Cause<unknown>) => Effect.Effect<void>
}

const silent = () => Effect.void

/**
 * The edge's log lines under the minimum log level of `context` (TROUPE_LOG_LEVEL, set by app/Server.ts): Effect
 * would drop the lines below it anyway; here they are not even built, on every request.
 */
export const edgeLog = (context: Context.Context<never>): EdgeLog => {
  const minimum = Context.get(context, References.MinimumLogLevel)
  return {
    request: LogLevel.isGreaterThanOrEqualTo("Info", minimum)
      ? (requestId, method, url, status, elapsedMs) =>
          Effect.logInfo("request").pipe(
            Effect.annotateLogs({
              requestId,
              method,
              url: url.split("?")[0],
              status,
              durationMs: Math.round(elapsedMs * 100) / 100
            })
          )
      : silent,
    failed: LogLevel.isGreaterThanOrEqualTo("Error", minimum)
      ? (requestId, method, url, cause) =>
          Effect.logError("request failed", { requestId, method, url: redactUrl(url), cause: Cause.pretty(cause) })
      : silent
  }
}
