// The server side of @troupe/api's Authorization middleware: reads the bearer token, the URL's `workspace` param
// and the endpoint's RequiredPermission / RateClass annotations, and provides CurrentPrincipal to the handler.
import { Authorization, CurrentPrincipal, type Permission, RateClass, RequiredPermission } from "@troupe/api/Authorization"
import { forbidden, type TooManyRequests } from "@troupe/api/Errors"
import { RequiresUserToken } from "@troupe/api/identity/Identity"
import { Context, Data, Effect, Layer, Option, Redacted } from "effect"
import { HttpRouter, HttpServerRequest, HttpServerResponse } from "effect/http"
import type { HttpApiEndpoint, HttpApiGroup } from "effect/http-api"
import { Authenticator } from "./Authenticate.ts"
import type { RateClassName } from "@troupe/api/Authorization"

interface Needs {
  readonly permission: Permission | undefined
  readonly rateClass: RateClassName | undefined
  readonly userOnly: boolean
}

const isLimit = (e: unknown): e is TooManyRequests => (e as { statusCode?: unknown }).statusCode === 429

class Limited extends Data.TaggedError("Limited")<{ readonly error: TooManyRequests }> {}

const needsCache = new WeakMap<object, Needs>()

const needsOf = (endpoint: HttpApiEndpoint.Top, group: HttpApiGroup.Top): Needs => {
  let needs = needsCache.get(endpoint)
  if (needs === undefined) {
    const annotations = Context.merge(group.annotations, endpoint.annotations)
    needs = {
      permission: Context.get(annotations, RequiredPermission),
      rateClass: Context.get(annotations, RateClass),
      userOnly: Context.get(annotations, RequiresUserToken)
    }
    needsCache.set(endpoint, needs)
  }
  return needs
}

// `/workspace/<ws>/api/v1/...` (the edge has already rewritten the /data and /iam aliases)
const workspaceInUrl = /^\/workspace\/([^/?#]+)\/api\/v1(?:[/?#]|$)/

const urlWorkspace = Effect.gen(function* () {
  const route = yield* Effect.serviceOption(HttpRouter.RouteContext)
  if (Option.isSome(route)) {
    const param = route.value.params.workspace
    if (param !== undefined) return param
  }
  const request = yield* HttpServerRequest.HttpServerRequest
  const match = workspaceInUrl.exec(request.url)
  if (match === null || match[1] === "api") return undefined
  try {
    return decodeURIComponent(match[1]!)
  } catch {
    return match[1]!
  }
})

/** The contract's 429 body with Retry-After (also answered by routes without a token: signed downloads). */
export const tooManyResponse = (error: TooManyRequests): HttpServerResponse.HttpServerResponse =>
  HttpServerResponse.jsonUnsafe(
    { error: error.error, message: error.message, code: error.code, statusCode: error.statusCode, details: error.details },
    { status: 429, headers: { "retry-after": String((error as TooManyRequests & { retryAfter?: number }).retryAfter ?? 1) } }
  )

export const AuthorizationLive: Layer.Layer<Authorization, never, Authenticator> = Layer.effect(
  Authorization,
  Effect.gen(function* () {
    const authenticator = yield* Authenticator
    return Authorization.of({
      bearer: (httpEffect, { credential, endpoint, group }) =>
        Effect.gen(function* () {
          const needs = needsOf(endpoint, group)
          const workspace = yield* urlWorkspace
          const principal = yield* authenticator
            .authenticate(Redacted.value(credential), {
              workspace,
              permission: needs.permission,
              rateClass: needs.rateClass
            })
            .pipe(Effect.catchIf(isLimit, (error) => Effect.fail(new Limited({ error }))))
          if (needs.userOnly && principal.kind !== "user") {
            return yield* Effect.fail(forbidden("This route needs a user token; service-account tokens cannot manage identities"))
          }
          return yield* Effect.provideService(httpEffect, CurrentPrincipal, principal)
        }).pipe(
          // HttpApi would encode a declared error by its schema alone, dropping Retry-After: answer 429 here.
          Effect.catchTag("Limited", ({ error }) => Effect.succeed(tooManyResponse(error)))
        )
    })
  })
)
