/**
 * Access tokens for a service account (client-credentials grant) without Effect: fetched from
 * `POST {baseUrl}/oidc/token`, cached, and renewed 60 s before they expire. Concurrent callers share one request.
 * Troupe issues no refresh token: a new token is simply requested.
 *
 * ```ts
 * const tokens = clientCredentials({ baseUrl, clientId, clientSecret })
 * const troupe = createTroupeClient({ baseUrl, workspace: "default", tokenProvider: tokens })
 * ```
 *
 * @since 0.1.0
 */

/** The token endpoint refused the request (RFC 6749 error) or could not be reached. @category errors */
export class TokenError extends Error {
  override readonly name = "TokenError"
  constructor(
    /** HTTP status, 0 when the endpoint could not be reached */
    readonly status: number,
    /** RFC 6749 error code (`invalid_client`, `slow_down`, ...), `network_error` or `invalid_response` */
    readonly error: string,
    readonly description: string
  ) {
    super(`token request failed (${status} ${error}): ${description}`)
  }
}

/** Where a client gets its bearer token: asked before every request (cache inside it). @category models */
export interface TokenSource {
  /** A valid access token: the cached one, or a fresh one when it is missing or about to expire. */
  readonly getToken: () => Promise<string>
  /** Forgets the cached token (after a 401), so the next `getToken` asks for a new one. */
  readonly invalidate: () => void
}

/** @category models */
export interface ClientCredentialsOptions {
  /** Troupe's origin, e.g. `http://localhost:8080` (the token endpoint is `/oidc/token` below it) */
  readonly baseUrl: string
  readonly clientId: string
  readonly clientSecret: string
  /** e.g. `openid workspace:my-ws`; the account's own scope when omitted */
  readonly scope?: string | undefined
  /** renew this many seconds before expiry (default 60) */
  readonly renewBeforeSeconds?: number | undefined
  /** the clock, in epoch milliseconds (tests) */
  readonly now?: (() => number) | undefined
  /** the fetch to use (default: the global one) */
  readonly fetch?: typeof globalThis.fetch | undefined
}

/**
 * A token source for one service account.
 *
 * @category constructors
 */
export const clientCredentials = (options: ClientCredentialsOptions): TokenSource => {
  const now = options.now ?? Date.now
  const doFetch = options.fetch ?? globalThis.fetch
  const renewBeforeMs = (options.renewBeforeSeconds ?? 60) * 1000
  const url = `${options.baseUrl.replace(/\/+$/, "")}/oidc/token`
  let cached: { readonly token: string; readonly renewAt: number } | undefined
  let pending: Promise<string> | undefined

  const request = async (): Promise<string> => {
    // Counted from when the request left: the token cannot have been issued earlier than that.
    const started = now()
    let res: Response
    try {
      res = await doFetch(url, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded", accept: "application/json" },
        body: new URLSearchParams({
          grant_type: "client_credentials",
          client_id: options.clientId,
          client_secret: options.clientSecret,
          ...(options.scope === undefined ? {} : { scope: options.scope })
        })
      })
    } catch (cause) {
      throw new TokenError(0, "network_error", cause instanceof Error ? cause.message : String(cause))
    }
    const body = (await res.json().catch(() => ({}))) as Record<string, unknown>
    if (res.status !== 200 || typeof body.access_token !== "string") {
      throw new TokenError(
        res.status,
        typeof body.error === "string" ? body.error : "invalid_response",
        typeof body.error_description === "string" ? body.error_description : `unexpected answer from ${url}`
      )
    }
    const expiresIn = typeof body.expires_in === "number" ? body.expires_in : 0
    cached = { token: body.access_token, renewAt: started + expiresIn * 1000 - renewBeforeMs }
    return body.access_token
  }

  return {
    getToken: () => {
      if (cached !== undefined && now() < cached.renewAt) return Promise.resolve(cached.token)
      pending ??= request().finally(() => {
        pending = undefined
      })
      return pending
    },
    invalidate: () => {
      cached = undefined
    }
  }
}

/** A fixed token, a function answering one, or a `TokenSource`. @category models */
export type TokenInput = string | (() => string | Promise<string>) | TokenSource

/** @internal */
export const toTokenSource = (input: TokenInput): TokenSource =>
  typeof input === "string"
    ? { getToken: () => Promise.resolve(input), invalidate: () => {} }
    : typeof input === "function"
      ? { getToken: async () => input(), invalidate: () => {} }
      : input
