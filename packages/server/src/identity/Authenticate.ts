// Who is calling: a bearer token checked for signature (cached keys), exp, iss, aud and the `workspace` and
// `isServiceAccount` claims, then resolved against the node's AccessCache (so revoked, rotated or deleted service
// accounts and removed members are refused at once), matched against the URL's workspace, the endpoint's permission
// and the workspace's rate limit. Used by the HttpApi Authorization middleware and by raw routes (SSE).
import { can, type Permission, type Principal } from "@troupe/api/Authorization"
import { type Forbidden, forbidden, type TooManyRequests, type Unauthorized, unauthorized } from "@troupe/api/Errors"
import { Context, Effect, Layer } from "effect"
import { AccessCache } from "./AccessCache.ts"
import type { RateClassName } from "@troupe/api/Authorization"
import { RateLimiter } from "./RateLimiter.ts"
import { SigningKeys } from "./SigningKeys.ts"

export interface AuthenticateOptions {
  /** the workspace slug of the URL; undefined for routes outside a workspace (platform routes) */
  readonly workspace: string | undefined
  readonly permission?: Permission | undefined
  /** counts the request against the workspace's limit for this class */
  readonly rateClass?: RateClassName | undefined
}

export interface AuthenticatorShape {
  readonly authenticate: (
    token: string,
    options: AuthenticateOptions
  ) => Effect.Effect<Principal, Unauthorized | Forbidden | TooManyRequests>
}

export class Authenticator extends Context.Service<Authenticator, AuthenticatorShape>()("@troupe/server/identity/Authenticator") {
  static readonly layer: Layer.Layer<Authenticator, never, SigningKeys | AccessCache | RateLimiter> = Layer.effect(
    Authenticator,
    Effect.gen(function* () {
      const keys = yield* SigningKeys
      const cache = yield* AccessCache
      const limiter = yield* RateLimiter
      const authenticate = (token: string, options: AuthenticateOptions) =>
        Effect.gen(function* () {
          if (token.length === 0) return yield* Effect.fail(unauthorized("Missing bearer token"))
          const claims = yield* keys.verify(token)
          const ws = claims.workspace
          const kind = claims.isServiceAccount
          const sub = claims.sub
          if (typeof ws !== "string" || ws.length === 0 || typeof sub !== "string") {
            return yield* Effect.fail(unauthorized("Invalid token"))
          }
          if (kind !== "true" && kind !== "false") return yield* Effect.fail(unauthorized("Invalid token"))
          const principal = yield* cache.principal({
            kind: kind === "true" ? "service" : "user",
            sub,
            workspace: ws,
            secretVersion: typeof claims.sv === "number" ? claims.sv : undefined,
            passwordVersion: typeof claims.pv === "string" ? claims.pv : undefined
          })
          if (principal === undefined) {
            return yield* Effect.fail(
              unauthorized("Token is no longer valid (account revoked, rotated, deleted or removed, or password changed)")
            )
          }
          if (options.workspace !== undefined && options.workspace !== ws) {
            return yield* Effect.fail(forbidden(`This token is not valid for workspace "${options.workspace}"`))
          }
          if (options.permission !== undefined && !can(principal, options.permission)) {
            return yield* Effect.fail(forbidden(`Permission "${options.permission}" is required`))
          }
          if (options.rateClass !== undefined) yield* limiter.hit(ws, options.rateClass)
          return principal
        })
      return Authenticator.of({ authenticate })
    })
  )
}

/**
 * For raw (non-HttpApi) routes such as SSE: the caller of `token` on `workspace`, holding `permission` when given.
 * 401 for a missing/invalid/expired/revoked token, 403 for another workspace's token or a missing permission.
 */
export const authenticate = (
  token: string,
  workspace: string,
  permission?: Permission
): Effect.Effect<Principal, Unauthorized | Forbidden, Authenticator> =>
  Effect.flatMap(
    Effect.service(Authenticator),
    (a) => a.authenticate(token, { workspace, permission }) as Effect.Effect<Principal, Unauthorized | Forbidden>
  )
