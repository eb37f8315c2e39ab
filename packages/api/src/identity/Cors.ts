/**
 * Browser origins (CONTRACT §9): what an origin is, as the node-wide `TROUPE_CORS_ORIGINS`, a workspace's
 * `allowedOrigins` and a browser's `Origin` header write it: `scheme://host[:port]`, no path, no credentials. The
 * server, the clients and the console validate with these same functions.
 *
 * @since 0.1.0
 */
import { Schema } from "effect"

/** At most this many origins per workspace (400 beyond). @category models */
export const MAX_WORKSPACE_ORIGINS = 100

const MAX_ORIGIN_LENGTH = 300
const shape = /^([A-Za-z][A-Za-z0-9+.-]*):\/\/([^/?#\\]*)([\s\S]*)$/
const label = /^[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?$/
const ipv6 = /^\[[0-9A-Fa-f:.]+\]$/
const defaultPorts: Readonly<Record<string, string>> = { http: "80", https: "443" }

type Parsed = { readonly origin: string } | { readonly problem: string }

const parse = (text: string): Parsed => {
  if (text === "*") return { problem: "`*` is accepted node-wide only (TROUPE_CORS_ORIGINS)" }
  if (text === "null") return { problem: "the `null` origin (files, sandboxed frames) cannot be allowed" }
  if (text.length > MAX_ORIGIN_LENGTH) return { problem: `an origin has at most ${MAX_ORIGIN_LENGTH} characters` }
  const m = shape.exec(text)
  if (m === null) return { problem: "expected an origin: scheme://host[:port], e.g. https://app.example.com" }
  const [, scheme, authority, rest] = m as unknown as [string, string, string, string]
  if (authority.includes("@")) return { problem: "an origin carries no user name or password" }
  if (rest !== "") return { problem: "an origin has no path, query or fragment (not even a trailing /)" }
  const colon = authority.startsWith("[") ? authority.indexOf(":", authority.indexOf("]")) : authority.lastIndexOf(":")
  const host = colon < 0 ? authority : authority.slice(0, colon)
  const port = colon < 0 ? undefined : authority.slice(colon + 1)
  if (host === "") return { problem: "an origin names a host" }
  if (!ipv6.test(host) && !host.split(".").every((l) => label.test(l))) {
    return {
      problem: /[^\x20-\x7e]/.test(host)
        ? "write an internationalized host in its punycode (xn--) form, as browsers send it"
        : "the host is not a valid domain name or IP address"
    }
  }
  if (port !== undefined && (!/^\d{1,5}$/.test(port) || Number(port) < 1 || Number(port) > 65535)) {
    return { problem: "the port is a number from 1 to 65535" }
  }
  const lower = scheme.toLowerCase()
  const kept = port === undefined || defaultPorts[lower] === String(Number(port)) ? "" : `:${Number(port)}`
  return { origin: `${lower}://${host.toLowerCase()}${kept}` }
}

/**
 * Why `text` is not an origin a workspace may allow, or undefined when it is one.
 *
 * @category validation
 */
export const originProblem = (text: string): string | undefined => {
  const parsed = parse(text)
  return "problem" in parsed ? parsed.problem : undefined
}

/**
 * The origin as browsers serialize it (scheme and host lowercase, no default port), or undefined when `text` is
 * not one.
 *
 * @category validation
 */
export const canonicalOrigin = (text: string): string | undefined => {
  const parsed = parse(text)
  return "origin" in parsed ? parsed.origin : undefined
}

/** One origin: `scheme://host[:port]`. @category models */
export const CorsOrigin = Schema.String.check(Schema.makeFilter((s: string) => originProblem(s)))

/**
 * A workspace's browser origins: `GET`/`PUT /workspace/{ws}/api/v1/settings/cors`. Stored in canonical form, each
 * once, in the order given.
 *
 * @category models
 */
export const CorsSettings = Schema.Struct({
  allowedOrigins: Schema.Array(CorsOrigin).check(
    Schema.isMaxLength(MAX_WORKSPACE_ORIGINS, { message: `at most ${MAX_WORKSPACE_ORIGINS} origins per workspace` })
  )
})
export type CorsSettings = typeof CorsSettings.Type
