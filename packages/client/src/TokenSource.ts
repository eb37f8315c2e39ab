/**
 * Access tokens for service accounts (client credentials, README "Getting a token"): fetched from
 * `POST {baseUrl}/oidc/token`, cached, and renewed shortly before they expire (60 s by default). Concurrent callers
 * share one request. There is no refresh token: a new one is simply requested.
 *
 * ```ts
 * const tokens = yield* TokenSource.clientCredentials({ baseUrl, clientId, clientSecret })
 * const client = ApiClient.layer({ baseUrl, token: tokens.provider })
 * ```
 *
 * @since 0.1.0
 */
import { Clock, Data, Effect, Option, Redacted, Semaphore } from "effect"
import { HttpClient, HttpClientRequest } from "effect/http"

/** The token endpoint refused the request (RFC 6749 error) or could not be reached. @category errors */
export class TokenError extends Data.TaggedError("TokenError")<{
  /** HTTP status, 0 when the endpoint could not be reached */
  readonly status: number
  /** RFC 6749 error code (`invalid_client`, `slow_down`, ...) or `network_error` */
  readonly error: string
  readonly description: string
}> {
  override get message() {
    return `token request failed (${this.status} ${this.error}): ${this.description}`
  }
}

/** @category models */
export interface ClientCredentialsOptions {
  /** Troupe's origin, e.g. `http://localhost:8080` (the token endpoint is `/oidc/token` below it) */
  readonly baseUrl: string
  readonly clientId: string
  readonly clientSecret: string | Redacted.Redacted<string>
  /** e.g. `openid workspace:my-ws`; the account's own scope when omitted */
  readonly scope?: string
  /** renew this many seconds before expiry (default 60) */
  readonly renewBeforeSeconds?: number
}

/** @category models */
export interface TokenSource {
  /** A valid access token: the cached one, or a fresh one when it is missing or about to expire. */
  readonly get: Effect.Effect<string, TokenError>
  /** `get` with failures as defects: the shape `ApiClient.layer({ token })` takes. */
  readonly provider: Effect.Effect<string>
  /** Forgets the cached token (e.g. after a 401), so the next `get` asks for a new one. */
  readonly invalidate: Effect.Effect<void>
}

const reveal = (secret: string | Redacted.Redacted<string>) => (Redacted.isRedacted(secret) ? Redacted.value(secret) : secret)

interface Cached {
  readonly token: string
  /** epoch ms after which the token is renewed */
  readonly renewAt: number
}

/**
 * A token source for one service account. Needs an `HttpClient` (e.g. `FetchHttpClient.layer`).
 *
 * @category constructors
 */
export const clientCredentials = (options: ClientCredentialsOptions): Effect.Effect<TokenSource, never, HttpClient.HttpClient> =>
  Effect.gen(function* () {
    const http = yield* HttpClient.HttpClient
    const lock = yield* Semaphore.make(1)
    const renewBeforeMs = (options.renewBeforeSeconds ?? 60) * 1000
    const url = `${options.baseUrl.replace(/\/+$/, "")}/oidc/token`
    let cached: Option.Option<Cached> = Option.none()

    const fetchToken = Effect.gen(function* () {
      const secret = reveal(options.clientSecret)
      const request = HttpClientRequest.post(url).pipe(
        HttpClientRequest.acceptJson,
        HttpClientRequest.bodyUrlParams({
          grant_type: "client_credentials",
          client_id: options.clientId,
          client_secret: secret,
          ...(options.scope === undefined ? {} : { scope: options.scope })
        })
      )
      const started = yield* Clock.currentTimeMillis
      const response = yield* Effect.mapError(
        http.execute(request),
        (e) => new TokenError({ status: 0, error: "network_error", description: e.message })
      )
      const body = yield* Effect.orElseSucceed(response.json, () => ({}) as unknown)
      const fields = (typeof body === "object" && body !== null ? body : {}) as Record<string, unknown>
      if (response.status !== 200 || typeof fields.access_token !== "string") {
        return yield* Effect.fail(
          new TokenError({
            status: response.status,
            error: typeof fields.error === "string" ? fields.error : "invalid_response",
            description:
              typeof fields.error_description === "string"
                ? fields.error_description
                : typeof fields.message === "string"
                  ? fields.message
                  : `unexpected answer from ${url}`
          })
        )
      }
      const expiresIn = typeof fields.expires_in === "number" ? fields.expires_in : 0
      // Counted from when the request left: the token cannot have been issued earlier than that.
      const next: Cached = { token: fields.access_token, renewAt: started + expiresIn * 1000 - renewBeforeMs }
      cached = Option.some(next)
      return next.token
    })

    const fresh = (now: number) => Option.filter(cached, (c) => now < c.renewAt)

    const get = Effect.gen(function* () {
      const now = yield* Clock.currentTimeMillis
      const hit = fresh(now)
      if (Option.isSome(hit)) return hit.value.token
      // One request at a time; whoever waited finds the token the first one fetched.
      return yield* lock.withPermits(1)(
        Effect.gen(function* () {
          const again = fresh(yield* Clock.currentTimeMillis)
          return Option.isSome(again) ? again.value.token : yield* fetchToken
        })
      )
    })

    return {
      get,
      provider: Effect.orDie(get),
      invalidate: Effect.sync(() => {
        cached = Option.none()
      })
    }
  })

/**
 * The same cache without Effect, over the global `fetch`: `const token = await source.getToken()`.
 *
 * @category constructors
 */
export const clientCredentialsFetch = (options: ClientCredentialsOptions & { readonly now?: () => number }) => {
  const now = options.now ?? Date.now
  const renewBeforeMs = (options.renewBeforeSeconds ?? 60) * 1000
  const url = `${options.baseUrl.replace(/\/+$/, "")}/oidc/token`
  let cached: Cached | undefined
  let pending: Promise<string> | undefined
  const request = async () => {
    const started = now()
    const secret = reveal(options.clientSecret)
    const res = await fetch(url, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded", accept: "application/json" },
      body: new URLSearchParams({
        grant_type: "client_credentials",
        client_id: options.clientId,
        client_secret: secret,
        ...(options.scope === undefined ? {} : { scope: options.scope })
      })
    })
    const body = (await res.json().catch(() => ({}))) as Record<string, unknown>
    if (res.status !== 200 || typeof body.access_token !== "string") {
      throw new TokenError({
        status: res.status,
        error: typeof body.error === "string" ? body.error : "invalid_response",
        description: typeof body.error_description === "string" ? body.error_description : `unexpected answer from ${url}`
      })
    }
    cached = {
      token: body.access_token,
      renewAt: started + (typeof body.expires_in === "number" ? body.expires_in : 0) * 1000 - renewBeforeMs
    }
    return cached.token
  }
  return {
    getToken: (): Promise<string> => {
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
