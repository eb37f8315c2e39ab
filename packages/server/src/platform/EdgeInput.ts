// How both lanes of the HTTP edge read a request, in one place: the canonical path (base-path aliases rewritten), the
// bearer credential (as HttpApi's bearer security reads it), the query string (the router's own parser, the one
// HttpApi decodes query parameters from), and what the headers declare of the body (its size against the body
// limit, its media type as HttpApi matches it against an endpoint's payload).
import { FindMyWay } from "effect/http"

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

/**
 * The bearer credential of an Authorization header, as HttpApi's bearer security reads it: the scheme in any case,
 * one or more spaces, then the credential (undefined when there is none).
 */
export const bearerOf = (header: string | undefined): string | undefined => {
  if (header === undefined || header.length <= 6 || header.charCodeAt(6) !== 32 || header.slice(0, 6).toLowerCase() !== "bearer") {
    return undefined
  }
  let start = 7
  while (header.charCodeAt(start) === 32) start++
  return start === header.length ? undefined : header.slice(start)
}

/** The router's query string parse: a parameter repeated is an array, `+` a space, valid percent-escapes decoded. */
export type SearchParams = Readonly<Record<string, string | ReadonlyArray<string>>>

/**
 * Query parameters that are single strings, else undefined: a repeated or nameless parameter (what HttpApi's
 * string parameters refuse, or the handlers read from every pair) is left to the stack. The object is the router's,
 * with no prototype holding `__proto__` or `constructor`.
 */
export const singleValued = (params: SearchParams): Readonly<Record<string, string>> | undefined => {
  for (const key in params) {
    if (key === "" || typeof params[key] !== "string") return undefined
  }
  return params as Readonly<Record<string, string>>
}

const probe = FindMyWay.make<true>()
probe.on("GET", "/", true)

/** A query string (without its `?`) read by the router's parser. */
export const parseQuery = (text: string): SearchParams => probe.find("GET", `/?${text}`)?.searchParams ?? {}

/** What a request's headers declare of its body: none, a length within `maxBody`, more, or a stream of unknown length. */
export const declaredBody = (
  headers: Readonly<Record<string, string | ReadonlyArray<string> | undefined>>,
  maxBody: number
): "none" | "sized" | "tooLarge" | "streamed" => {
  const length = Number(headers["content-length"] ?? "0")
  if (length > maxBody) return "tooLarge"
  if (headers["transfer-encoding"] !== undefined) return "streamed"
  return length > 0 ? "sized" : "none"
}

/** A Content-Type as HttpApi matches it against an endpoint's payload types: lowercase, without parameters. */
export const mediaTypeOf = (contentType: string): string => {
  const normalized = contentType.toLowerCase().trim()
  const at = normalized.indexOf(";")
  return at < 0 ? normalized : normalized.slice(0, at).trim()
}
