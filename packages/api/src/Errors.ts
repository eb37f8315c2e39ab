/**
 * The one error body of the API (README "Errors"): every failure, whatever route raised it, encodes as
 * `{error, message, code, statusCode, details, requestId}`. One class per HTTP status so the typed client can
 * decode each response; `requestId` is filled in by the server's error mapping, never by handlers.
 *
 * @since 0.1.0
 */
import { Schema } from "effect"

/**
 * One validation problem. `field` and `property` carry the same path (both forms of the spec).
 *
 * @category models
 */
export const ErrorDetail = Schema.Struct({
  field: Schema.String,
  property: Schema.String,
  message: Schema.String
})
export type ErrorDetail = typeof ErrorDetail.Type

const fields = {
  error: Schema.String,
  message: Schema.String,
  code: Schema.String,
  statusCode: Schema.Int,
  details: Schema.Array(ErrorDetail),
  requestId: Schema.optionalKey(Schema.String)
}

/** One validation detail: `property` repeats `field` (the specification names it so; the contract calls it `field`). */
export const errorDetail = (field: string, message: string): ErrorDetail => ({ field, property: field, message })

/** Builds the `details` array from `[path, message]` pairs. */
export const details = (pairs: ReadonlyArray<readonly [string, string]>): Array<ErrorDetail> =>
  pairs.map(([field, message]) => errorDetail(field, message))

/** What a caller gives to build an error; the status, `error` and `statusCode` follow from the class. */
export interface ErrorInit {
  readonly message: string
  readonly code?: string
  readonly details?: ReadonlyArray<ErrorDetail>
}

const init = (status: number, defaultCode: string, i: ErrorInit) => ({
  error: statusText(status),
  message: i.message,
  code: i.code ?? defaultCode,
  statusCode: status,
  details: i.details ?? []
})

/** @category errors */
export class BadRequest extends Schema.Error<BadRequest>("BadRequest")(fields, { httpApiStatus: 400 }) {}
/** Builds a 400 BadRequest (default code `BAD_REQUEST`). @category constructors */
export const badRequest = (i: ErrorInit | string): BadRequest =>
  new BadRequest(init(400, "BAD_REQUEST", typeof i === "string" ? { message: i } : i))

/**
 * A path id that is not a UUID: the caller's mistake, 400 `BAD_REQUEST` naming `field` (docs/errors.md; an unknown
 * id is a 404). `label` opens the message ("Invalid <label>: <id>").
 */
export const malformedId = (field: string, id: string, label: string = field): BadRequest =>
  badRequest({ message: `Invalid ${label}: ${id.slice(0, 64)}`, details: [errorDetail(field, "must be a UUID")] })

/** @category errors */
export class Unauthorized extends Schema.Error<Unauthorized>("Unauthorized")(fields, { httpApiStatus: 401 }) {}
/** Builds a 401 Unauthorized (default code `UNAUTHORIZED`). @category constructors */
export const unauthorized = (i: ErrorInit | string): Unauthorized =>
  new Unauthorized(init(401, "UNAUTHORIZED", typeof i === "string" ? { message: i } : i))

/** @category errors */
export class Forbidden extends Schema.Error<Forbidden>("Forbidden")(fields, { httpApiStatus: 403 }) {}
/** Builds a 403 Forbidden (default code `PERMISSION_DENIED`). @category constructors */
export const forbidden = (i: ErrorInit | string): Forbidden =>
  new Forbidden(init(403, "PERMISSION_DENIED", typeof i === "string" ? { message: i } : i))

/** @category errors */
export class NotFound extends Schema.Error<NotFound>("NotFound")(fields, { httpApiStatus: 404 }) {}
/** Builds a 404 NotFound (default code `NOT_FOUND`). @category constructors */
export const notFound = (i: ErrorInit | string): NotFound =>
  new NotFound(init(404, "NOT_FOUND", typeof i === "string" ? { message: i } : i))

/** @category errors */
export class Conflict extends Schema.Error<Conflict>("Conflict")(fields, { httpApiStatus: 409 }) {}
/** Builds a 409 Conflict (default code `CONFLICT`). @category constructors */
export const conflict = (i: ErrorInit | string): Conflict => new Conflict(init(409, "CONFLICT", typeof i === "string" ? { message: i } : i))

/** @category errors */
export class PayloadTooLarge extends Schema.Error<PayloadTooLarge>("PayloadTooLarge")(fields, { httpApiStatus: 413 }) {}
/** Builds a 413 PayloadTooLarge (default code `PAYLOAD_TOO_LARGE`). @category constructors */
export const payloadTooLarge = (i: ErrorInit | string): PayloadTooLarge =>
  new PayloadTooLarge(init(413, "PAYLOAD_TOO_LARGE", typeof i === "string" ? { message: i } : i))

/** @category errors */
export class RangeNotSatisfiable extends Schema.Error<RangeNotSatisfiable>("RangeNotSatisfiable")(fields, { httpApiStatus: 416 }) {}
/** Builds a 416 RangeNotSatisfiable (default code `RANGE_NOT_SATISFIABLE`). @category constructors */
export const rangeNotSatisfiable = (i: ErrorInit | string): RangeNotSatisfiable =>
  new RangeNotSatisfiable(init(416, "RANGE_NOT_SATISFIABLE", typeof i === "string" ? { message: i } : i))

/** @category errors */
export class Unprocessable extends Schema.Error<Unprocessable>("Unprocessable")(fields, { httpApiStatus: 422 }) {}
/** Builds a 422 Unprocessable (default code `UNPROCESSABLE`). @category constructors */
export const unprocessable = (i: ErrorInit | string): Unprocessable =>
  new Unprocessable(init(422, "UNPROCESSABLE", typeof i === "string" ? { message: i } : i))

/** @category errors */
export class Locked extends Schema.Error<Locked>("Locked")(fields, { httpApiStatus: 423 }) {}
/** Builds a 423 Locked (default code `LOCKED`). @category constructors */
export const locked = (i: ErrorInit | string): Locked => new Locked(init(423, "LOCKED", typeof i === "string" ? { message: i } : i))

/** @category errors */
export class TooManyRequests extends Schema.Error<TooManyRequests>("TooManyRequests")(fields, { httpApiStatus: 429 }) {}
/** Builds a 429 TooManyRequests (default code `QUOTA_EXCEEDED`). @category constructors */
export const tooManyRequests = (i: ErrorInit | string): TooManyRequests =>
  new TooManyRequests(init(429, "QUOTA_EXCEEDED", typeof i === "string" ? { message: i } : i))

/** @category errors */
export class ServiceUnavailable extends Schema.Error<ServiceUnavailable>("ServiceUnavailable")(fields, { httpApiStatus: 503 }) {}
/** Builds a 503 ServiceUnavailable (default code `UNAVAILABLE`). @category constructors */
export const serviceUnavailable = (i: ErrorInit | string): ServiceUnavailable =>
  new ServiceUnavailable(init(503, "UNAVAILABLE", typeof i === "string" ? { message: i } : i))

/**
 * The same error (any of the classes above) with each detail's path renamed, e.g. to name a field as the caller's
 * body spells it; any other failure as it is.
 */
export const renameDetails = <E>(e: E, rename: (field: string) => string): E => {
  const err = e as unknown as {
    readonly error?: unknown
    readonly message: string
    readonly code: string
    readonly statusCode: number
    readonly details?: ReadonlyArray<ErrorDetail>
    readonly requestId?: string
    readonly constructor: new (fields: object) => E
  }
  if (typeof err !== "object" || err === null || typeof err.error !== "string" || !Array.isArray(err.details)) return e
  if (err.details.length === 0) return e
  const renamed = err.details.map((d) => {
    const field = rename(d.field)
    return { ...d, field, property: field }
  })
  return new err.constructor({
    error: err.error,
    message: err.message,
    code: err.code,
    statusCode: err.statusCode,
    details: renamed,
    ...(err.requestId !== undefined ? { requestId: err.requestId } : {})
  })
}

/** Body + status helpers for code that builds error bodies outside HttpApi (router-level failures). */
export const errorBody = (status: number, code: string, message: string, detailList: ReadonlyArray<ErrorDetail> = []) => ({
  error: statusText(status),
  message,
  code,
  statusCode: status,
  details: detailList
})

export const statusText = (status: number): string =>
  (
    ({
      400: "Bad Request",
      401: "Unauthorized",
      402: "Payment Required",
      403: "Forbidden",
      404: "Not Found",
      405: "Method Not Allowed",
      406: "Not Acceptable",
      408: "Request Timeout",
      409: "Conflict",
      410: "Gone",
      413: "Payload Too Large",
      415: "Unsupported Media Type",
      416: "Range Not Satisfiable",
      422: "Unprocessable Entity",
      423: "Locked",
      429: "Too Many Requests",
      500: "Internal Server Error",
      501: "Not Implemented",
      502: "Bad Gateway",
      503: "Service Unavailable",
      504: "Gateway Timeout"
    }) as Record<number, string>
  )[status] ?? "Error"
