/**
 * Access tokens without Effect. A service account's (client-credentials grant) and, for scripts, a user's
 * (password grant) are fetched from `POST {baseUrl}/oidc/token`, cached, and renewed 60 s before they expire;
 * concurrent callers share one request. Troupe issues no refresh token: a new token is simply requested. In a
 * browser, `signIn` asks for a user's token once and `handedToken` holds whatever token the app hands in.
 *
 * ```ts
 * const tokens = clientCredentials({ baseUrl, clientId, clientSecret })
 * const troupe = createTroupeClient({ baseUrl, workspace: "default", tokenProvider: tokens })
 *
 * // a browser app
 * const session = handedToken({ onExpired: showSignIn })
 * session.set(await signIn({ baseUrl, workspace: "default", username, password }))
 * const api = createTroupeClient({ baseUrl, workspace: "default", tokenProvider: session })
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

/** Where and how tokens are asked for. @category models */
export interface TokenEndpointOptions {
  /** Troupe's origin, e.g. `http://localhost:8080` (the token endpoint is `/oidc/token` below it) */
  readonly baseUrl: string
  /** renew this many seconds before expiry (default 60) */
  readonly renewBeforeSeconds?: number | undefined
  /** the clock, in epoch milliseconds (tests) */
  readonly now?: (() => number) | undefined
  /** the fetch to use (default: the global one) */
  readonly fetch?: typeof globalThis.fetch | undefined
}

/** @category models */
export interface ClientCredentialsOptions extends TokenEndpointOptions {
  readonly clientId: string
  readonly clientSecret: string
  /** e.g. `openid workspace:my-ws`; the account's own scope when omitted */
  readonly scope?: string | undefined
}

/** @category models */
export interface PasswordOptions extends TokenEndpointOptions {
  readonly username: string
  readonly password: string
  /** the workspace the token is for (scope `openid workspace:<slug>`) */
  readonly workspace: string
}

/** A token as the token endpoint issued it. @category models */
export interface IssuedToken {
  readonly accessToken: string
  /** epoch milliseconds; undefined when unknown (a token handed in without its expiry) */
  readonly expiresAt: number | undefined
  readonly scope?: string | undefined
}

/** One request to `POST {baseUrl}/oidc/token` with form `params`. */
const requestToken = async (options: TokenEndpointOptions, params: Record<string, string>): Promise<IssuedToken> => {
  const now = options.now ?? Date.now
  const doFetch = options.fetch ?? globalThis.fetch
  const url = `${options.baseUrl.replace(/\/+$/, "")}/oidc/token`
  // Counted from when the request left: the token cannot have been issued earlier than that.
  const started = now()
  let res: Response
  try {
    res = await doFetch(url, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded", accept: "application/json" },
      body: new URLSearchParams(params)
    })
  } catch (cause) {
    // in a browser, also what a call refused by CORS looks like
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
  return {
    accessToken: body.access_token,
    expiresAt: started + expiresIn * 1000,
    ...(typeof body.scope === "string" ? { scope: body.scope } : {})
  }
}

/** A source that asks the token endpoint with `params` whenever its token is missing or about to expire. */
const renewing = (options: TokenEndpointOptions, params: Record<string, string>): TokenSource => {
  const now = options.now ?? Date.now
  const renewBeforeMs = (options.renewBeforeSeconds ?? 60) * 1000
  let cached: { readonly token: string; readonly renewAt: number } | undefined
  let pending: Promise<string> | undefined
  const request = async () => {
    const issued = await requestToken(options, params)
    cached = { token: issued.accessToken, renewAt: (issued.expiresAt ?? 0) - renewBeforeMs }
    return issued.accessToken
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

/**
 * A token source for one service account.
 *
 * @category constructors
 */
export const clientCredentials = (options: ClientCredentialsOptions): TokenSource =>
  renewing(options, {
    grant_type: "client_credentials",
    client_id: options.clientId,
    client_secret: options.clientSecret,
    ...(options.scope === undefined ? {} : { scope: options.scope })
  })

const passwordParams = (options: PasswordOptions) => ({
  grant_type: "password",
  username: options.username,
  password: options.password,
  scope: `openid workspace:${options.workspace}`
})

/**
 * A token source for a user (password grant) that keeps the password to sign in again when the token nears its
 * expiry: for scripts and tools. In a browser prefer `signIn` and `handedToken`, which keep no password.
 *
 * @category constructors
 */
export const passwordGrant = (options: PasswordOptions): TokenSource => renewing(options, passwordParams(options))

/**
 * Signs a user in once (password grant) and answers the token; the password is not kept. Fails with a TokenError
 * (`invalid_grant` for bad credentials, `invalid_scope` for a workspace the user is not a member of,
 * `network_error` when the endpoint could not be reached or, in a browser, refused the page's origin).
 *
 * @category constructors
 */
export const signIn = (options: PasswordOptions): Promise<IssuedToken> => requestToken(options, passwordParams(options))

/** A token source the app fills in: from `signIn`, its own login flow or storage. @category models */
export interface TokenStore extends TokenSource {
  /** Sets the token (a bare string: expiry unknown) or forgets it (undefined). */
  readonly set: (token: IssuedToken | string | undefined) => void
  readonly current: () => IssuedToken | undefined
}

/** @category models */
export interface HandedTokenOptions {
  readonly initial?: IssuedToken | string | undefined
  /**
   * Called when the token is missing, expired or refused by the server (a 401): the app signs the user in again
   * and `set`s the new token.
   */
  readonly onExpired?: (() => void) | undefined
  /** the clock, in epoch milliseconds (tests) */
  readonly now?: (() => number) | undefined
}

/**
 * Tokens handed in by the app. `getToken` answers the current one while it is valid; without one it calls
 * `onExpired` and fails with a TokenError `login_required`. Troupe issues no refresh token: an expired user token
 * means signing in again.
 *
 * @category constructors
 */
export const handedToken = (options: HandedTokenOptions = {}): TokenStore => {
  const now = options.now ?? Date.now
  const normalize = (t: IssuedToken | string | undefined) => (typeof t === "string" ? { accessToken: t, expiresAt: undefined } : t)
  let token = normalize(options.initial)
  const expired = () => {
    token = undefined
    options.onExpired?.()
  }
  return {
    set: (t) => {
      token = normalize(t)
    },
    current: () => token,
    getToken: () => {
      if (token !== undefined && (token.expiresAt === undefined || now() < token.expiresAt)) return Promise.resolve(token.accessToken)
      expired()
      return Promise.reject(new TokenError(0, "login_required", "no valid token: sign in again"))
    },
    invalidate: () => {
      if (token !== undefined) expired()
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
