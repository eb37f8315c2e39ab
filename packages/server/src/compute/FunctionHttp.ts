// Outbound HTTP for sandboxed user functions: the sandbox turns `api.httpGet/httpPost/httpPut/httpDelete/fetch` into
// one `FunctionHttpRequest` and this module performs it. node:http(s), not global fetch, because fetch takes no custom
// DNS lookup. Only allowlisted hosts, in every environment; in production private addresses are refused twice, as
// literals before connecting and as resolved addresses at connect time (the webhook guard of `events/`). Redirects
// are followed on the same host only, and a whole-exchange timeout and a response cap bound what one call costs.
// Bodies come back as utf-8 text, binary ones too (invalid bytes become U+FFFD): the sandbox API is text-only.
import { Data, Effect } from "effect"
import * as Http from "node:http"
import * as Https from "node:https"
import * as Net from "node:net"
import type { Readable } from "node:stream"
import * as Zlib from "node:zlib"
import { guardedLookup } from "../events/HttpPost.ts"
import { checkWebhookUrl } from "../events/UrlPolicy.ts"

export interface FunctionHttpRequest {
  readonly method: string
  readonly url: string
  readonly headers?: Readonly<Record<string, string>>
  readonly body?: string | null
  /** the whole exchange, redirects included; default (also for 0 or less) 10 s, at most the policy's `maxTimeoutMs` */
  readonly timeoutMs?: number
}

export interface FunctionHttpResponse {
  readonly status: number
  readonly statusText: string
  /** lower-case names; repeated headers (`set-cookie` too) joined with ", " as fetch's `Headers.get` does */
  readonly headers: Record<string, string>
  /** the URL that answered, after redirects, without fragment */
  readonly url: string
  /** utf-8 text, decompressed when the answer was gzip, deflate or br encoded */
  readonly body: string
}

export interface FunctionHttpPolicy {
  /** lower-case host names; `*.example.com` matches every subdomain of example.com; empty allows nothing */
  readonly allowlist: ReadonlyArray<string>
  /** NODE_ENV=production: private, loopback and link-local addresses are refused */
  readonly production: boolean
  /** default 5 MiB, counted after decompression */
  readonly maxResponseBytes?: number
  /** the caller's cap on `timeoutMs`, e.g. the run's remaining time */
  readonly maxTimeoutMs?: number
}

/**
 * `message` is what the user's code sees. `code` is one of HOST_NOT_ALLOWED, PRIVATE_ADDRESS, TIMEOUT,
 * RESPONSE_TOO_LARGE, REQUEST_TOO_LARGE, INVALID_URL, INVALID_HEADER, NETWORK_ERROR, METHOD_NOT_ALLOWED,
 * TOO_MANY_REDIRECTS.
 */
export class FunctionHttpError extends Data.TaggedError("FunctionHttpError")<{
  readonly code: string
  readonly message: string
}> {}

const KiB = 1024
const MiB = 1024 * KiB
const DEFAULT_TIMEOUT_MS = 10_000
const DEFAULT_MAX_RESPONSE_BYTES = 5 * MiB
const MAX_REQUEST_BYTES = 10 * MiB
const MAX_REDIRECTS = 5
const USER_AGENT = "troupe-functions/1"

const redirectStatuses = new Set([301, 302, 303, 307, 308])
const methods = new Set(["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"])
// Hop-by-hop headers and those node computes itself; `proxy-*` is matched by prefix.
const strippedHeaders = new Set(["host", "connection", "content-length", "transfer-encoding", "upgrade", "keep-alive", "te", "trailer"])
// What fetch drops when a redirect turns the request into a bodiless GET.
const bodyHeaders = ["content-type", "content-encoding", "content-language", "content-location"]
const headerName = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/
const headerValue = /^[\t\x20-\x7e\x80-\xff]*$/

const agentOptions = { keepAlive: true, maxSockets: 256, maxFreeSockets: 64 }
const lookup = guardedLookup as unknown as Net.LookupFunction
// Pooled sockets are keyed by host and port, not by lookup: the guarded agents keep their sockets apart, so a socket
// opened without the guard is never handed to a request that needs it.
const agents = {
  open: { http: new Http.Agent(agentOptions), https: new Https.Agent(agentOptions) },
  guarded: { http: new Http.Agent({ ...agentOptions, lookup }), https: new Https.Agent({ ...agentOptions, lookup }) }
}

const formatBytes = (n: number) => (n % MiB === 0 ? `${n / MiB} MiB` : n % KiB === 0 ? `${n / KiB} KiB` : `${n} bytes`)

const formatMs = (ms: number) => (ms < 1000 ? `${ms} ms` : `${Math.round(ms / 100) / 10} s`)

const normalizeHost = (host: string) => {
  let h = host.trim().toLowerCase()
  if (h.startsWith("[") && h.endsWith("]")) h = h.slice(1, -1)
  if (h.endsWith(".")) h = h.slice(0, -1)
  // One spelling per IPv6 address, the one URL.hostname gives (`::1`, `::ffff:7f00:1`).
  return Net.isIPv6(h) && URL.canParse(`http://[${h}]/`) ? new URL(`http://[${h}]/`).hostname.slice(1, -1) : h
}

/** True when `hostname` (a URL's hostname, port excluded) is on the allowlist; see `FunctionHttpPolicy.allowlist`. */
export const hostAllowed = (allowlist: ReadonlyArray<string>, hostname: string): boolean => {
  const host = normalizeHost(hostname)
  if (host.length === 0) return false
  const isIp = Net.isIP(host) !== 0
  return allowlist.some((raw) => {
    const entry = raw.trim().toLowerCase()
    if (entry.startsWith("*.")) {
      const suffix = normalizeHost(entry.slice(1))
      return !isIp && suffix.length > 1 && host.length > suffix.length && host.endsWith(suffix)
    }
    return entry.length > 0 && normalizeHost(entry) === host
  })
}

interface Hop {
  readonly status: number
  readonly statusText: string
  readonly headers: Record<string, string>
  readonly body: string
}

const decoders: Record<string, () => Zlib.Gunzip | Zlib.Inflate | Zlib.BrotliDecompress> = {
  gzip: () => Zlib.createGunzip(),
  "x-gzip": () => Zlib.createGunzip(),
  deflate: () => Zlib.createInflate(),
  br: () => Zlib.createBrotliDecompress()
}

const decoded = (res: Http.IncomingMessage, method: string): Readable => {
  if (method === "HEAD" || res.statusCode === 204 || res.statusCode === 304) return res
  const make =
    decoders[
      String(res.headers["content-encoding"] ?? "")
        .trim()
        .toLowerCase()
    ]
  return make ? res.pipe(make()) : res
}

const responseHeaders = (headers: Http.IncomingHttpHeaders): Record<string, string> => {
  const out: Record<string, string> = {}
  for (const [name, value] of Object.entries(headers)) {
    if (value !== undefined) out[name] = Array.isArray(value) ? value.join(", ") : value
  }
  return out
}

// One request and its whole answer, read up to `maxBytes`. Rejects only with FunctionHttpError; `signal` (the
// interrupted Effect) destroys the request and its socket.
const exchange = (
  target: URL,
  method: string,
  headers: Record<string, string>,
  body: string | null,
  guarded: boolean,
  maxBytes: number,
  signal: AbortSignal
) =>
  new Promise<Hop>((resolve, reject) => {
    const secure = target.protocol === "https:"
    const pool = guarded ? agents.guarded : agents.open
    const network = (e: NodeJS.ErrnoException) =>
      reject(
        e.code === "EPRIVATE"
          ? new FunctionHttpError({
              code: "PRIVATE_ADDRESS",
              message: `${target.hostname} resolves to a private address, which is refused in production`
            })
          : new FunctionHttpError({
              code: "NETWORK_ERROR",
              message: `request to ${target.host} failed: ${e.message || e.code || String(e)}`
            })
      )
    const req = (secure ? Https : Http).request(
      target,
      {
        method,
        headers: body === null ? headers : { ...headers, "content-length": String(Buffer.byteLength(body)) },
        agent: secure ? pool.https : pool.http,
        signal
      },
      (res) => {
        const tooLarge = () => {
          const message = `response body exceeds ${formatBytes(maxBytes)}`
          reject(new FunctionHttpError({ code: "RESPONSE_TOO_LARGE", message }))
          req.destroy()
        }
        // Refused before reading when the server announces the size (an encoded body is judged after decoding; a HEAD
        // answer announces a body it does not send).
        const announced = Number(res.headers["content-length"])
        if (method !== "HEAD" && res.headers["content-encoding"] === undefined && announced > maxBytes) {
          return tooLarge()
        }
        const source = decoded(res, method)
        const chunks: Array<Buffer> = []
        let size = 0
        source.on("data", (chunk: Buffer) => {
          size += chunk.length
          if (size > maxBytes) {
            source.destroy()
            tooLarge()
          } else chunks.push(chunk)
        })
        source.on("end", () =>
          resolve({
            status: res.statusCode ?? 0,
            statusText: res.statusMessage ?? "",
            headers: responseHeaders(res.headers),
            body: Buffer.concat(chunks).toString("utf8")
          })
        )
        source.on("error", network)
        if (source !== res) res.on("error", network)
        res.on("close", () => {
          if (!res.complete) network(new Error("connection closed before the response ended"))
        })
      }
    )
    req.on("error", network)
    req.end(body ?? undefined)
  })

// Same hostname only; the port may change and http may become https, never the reverse.
const redirectTarget = (from: URL, location: string | undefined): URL | undefined => {
  if (location === undefined || !URL.canParse(location, from.href)) return undefined
  const to = new URL(location, from)
  const scheme = to.protocol === from.protocol || (from.protocol === "http:" && to.protocol === "https:")
  return scheme && to.hostname === from.hostname && to.username === "" && to.password === "" ? to : undefined
}

const withoutFragment = (url: URL) => {
  const copy = new URL(url)
  copy.hash = ""
  return copy.href
}

/**
 * Performs one request of a user function under `policy`, or fails with FunctionHttpError. A redirect to another
 * host is not followed: its 3xx answer (with `location`) is the response.
 */
export const functionHttp = (policy: FunctionHttpPolicy) => {
  const maxBytes = policy.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES
  return Effect.fn("FunctionHttp.request")(function* (
    request: FunctionHttpRequest
  ): Effect.fn.Return<FunctionHttpResponse, FunctionHttpError> {
    let method = request.method.toUpperCase()
    if (!methods.has(method)) {
      return yield* new FunctionHttpError({
        code: "METHOD_NOT_ALLOWED",
        message: `method ${request.method} is not allowed (use GET, POST, PUT, PATCH, DELETE, HEAD or OPTIONS)`
      })
    }
    if (!URL.canParse(request.url)) {
      return yield* new FunctionHttpError({ code: "INVALID_URL", message: `invalid URL: ${request.url}` })
    }
    let url = new URL(request.url)
    if (url.protocol !== "http:" && url.protocol !== "https:") {
      return yield* new FunctionHttpError({
        code: "INVALID_URL",
        message: `URL must use http or https: ${request.url}`
      })
    }
    if (url.username !== "" || url.password !== "") {
      return yield* new FunctionHttpError({ code: "INVALID_URL", message: "URL must not contain credentials" })
    }
    if (!hostAllowed(policy.allowlist, url.hostname)) {
      return yield* new FunctionHttpError({
        code: "HOST_NOT_ALLOWED",
        message: `host ${url.hostname} is not in the function HTTP allowlist (TROUPE_FUNCTION_HTTP_ALLOWLIST)`
      })
    }
    // The literal check webhooks get: private IPs and localhost names; names are checked again at DNS lookup.
    if (policy.production && checkWebhookUrl(url.href, true) !== undefined) {
      return yield* new FunctionHttpError({
        code: "PRIVATE_ADDRESS",
        message: `${url.hostname} is a loopback or private address, which is refused in production`
      })
    }
    let body = request.body ?? null
    if (body !== null && Buffer.byteLength(body) > MAX_REQUEST_BYTES) {
      return yield* new FunctionHttpError({
        code: "REQUEST_TOO_LARGE",
        message: `request body exceeds ${formatBytes(MAX_REQUEST_BYTES)}`
      })
    }
    let headers: Record<string, string> = { "user-agent": USER_AGENT }
    for (const [name, value] of Object.entries(request.headers ?? {})) {
      if (!headerName.test(name) || !headerValue.test(value)) {
        return yield* new FunctionHttpError({ code: "INVALID_HEADER", message: `invalid header: ${name}` })
      }
      const lower = name.toLowerCase()
      if (!strippedHeaders.has(lower) && !lower.startsWith("proxy-")) headers[lower] = value
    }
    const requested = request.timeoutMs !== undefined && request.timeoutMs > 0 ? request.timeoutMs : DEFAULT_TIMEOUT_MS
    const timeoutMs = Math.min(requested, policy.maxTimeoutMs ?? Infinity)
    const timedOut = new FunctionHttpError({
      code: "TIMEOUT",
      message: `request timed out after ${formatMs(timeoutMs)}`
    })
    if (!(timeoutMs > 0)) return yield* timedOut

    const follow = Effect.gen(function* () {
      for (let redirects = 0; ; redirects++) {
        const hop = yield* Effect.tryPromise({
          try: (signal) => exchange(url, method, headers, body, policy.production, maxBytes, signal),
          catch: (e) => (e instanceof FunctionHttpError ? e : new FunctionHttpError({ code: "NETWORK_ERROR", message: String(e) }))
        })
        const next = redirectStatuses.has(hop.status) ? redirectTarget(url, hop.headers.location) : undefined
        if (next === undefined) return { ...hop, url: withoutFragment(url) }
        if (redirects === MAX_REDIRECTS) {
          return yield* new FunctionHttpError({
            code: "TOO_MANY_REDIRECTS",
            message: `more than ${MAX_REDIRECTS} redirects`
          })
        }
        // As fetch: 303 turns into GET, and so do 301 and 302 after a POST; 307 and 308 resend as they were.
        if (hop.status === 303 ? method !== "HEAD" : hop.status <= 302 && method === "POST") {
          method = "GET"
          body = null
          headers = Object.fromEntries(Object.entries(headers).filter(([name]) => !bodyHeaders.includes(name)))
        }
        url = next
      }
    })
    return yield* follow.pipe(Effect.timeoutOrElse({ duration: timeoutMs, orElse: () => Effect.fail(timedOut) }))
  })
}
