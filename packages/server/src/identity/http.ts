// Handlers of the identity groups: decode (done by HttpApi), call the service, encode. The token endpoint reads
// its raw body itself (form-encoded or JSON, plus HTTP Basic client authentication) to answer RFC 6749 errors.
import { Api } from "@troupe/api/Api"
import { CurrentPrincipal, type Principal } from "@troupe/api/Authorization"
import { Effect, Layer, Option } from "effect"
import { type HttpServerRequest, HttpServerResponse } from "effect/http"
import { HttpApiBuilder } from "effect/http-api"
import { AppConfig } from "../platform/AppConfig.ts"
import { CorsOrigins } from "./CorsOrigins.ts"
import { clientAddress } from "../platform/ClientAddress.ts"
import { GroupService } from "./GroupService.ts"
import { MemberService } from "./MemberService.ts"
import { paging } from "./model.ts"
import { ServiceAccountService } from "./ServiceAccountService.ts"
import { alg, SigningKeys } from "./SigningKeys.ts"
import { OAuthError, TokenService } from "./TokenService.ts"
import { WorkspaceService } from "./WorkspaceService.ts"

const noStore = { "cache-control": "no-store", pragma: "no-cache" }

/** The caller, as the Authorization middleware resolved it. */
const withPrincipal = <A, E>(f: (p: Principal) => Effect.Effect<A, E>) => Effect.flatMap(Effect.service(CurrentPrincipal), f)

const oauthCodes: Record<number, string> = { 400: "BAD_REQUEST", 401: "UNAUTHORIZED", 429: "QUOTA_EXCEEDED" }

const oauthResponse = (e: OAuthError, basicUsed: boolean) =>
  HttpServerResponse.jsonUnsafe(
    {
      error: e.error,
      error_description: e.description,
      message: e.description,
      code: oauthCodes[e.status] ?? "BAD_REQUEST",
      statusCode: e.status,
      details: []
    },
    {
      status: e.status,
      headers: {
        ...noStore,
        ...(e.retryAfter === undefined ? {} : { "retry-after": String(e.retryAfter) }),
        ...(e.status === 401 && basicUsed ? { "www-authenticate": 'Basic realm="troupe"' } : {})
      }
    }
  )

const invalidRequest = (description: string) => new OAuthError({ status: 400, error: "invalid_request", description })

/** RFC 6749 §2.3.1: `Basic base64(urlencode(id):urlencode(secret))`. */
const basicCredentials = (header: string | undefined) => {
  if (header === undefined || !/^basic /i.test(header)) return Effect.succeed(undefined)
  const decoded = Buffer.from(header.slice(6).trim(), "base64").toString("utf8")
  const colon = decoded.indexOf(":")
  if (colon < 0) {
    return Effect.fail(new OAuthError({ status: 401, error: "invalid_client", description: "Malformed Basic credentials" }))
  }
  try {
    const formDecode = (s: string) => decodeURIComponent(s.replace(/\+/g, " "))
    return Effect.succeed({
      clientId: formDecode(decoded.slice(0, colon)),
      clientSecret: formDecode(decoded.slice(colon + 1))
    })
  } catch {
    return Effect.fail(new OAuthError({ status: 401, error: "invalid_client", description: "Malformed Basic credentials" }))
  }
}

/** Form-encoded (the standard) or JSON; every parameter at most once (RFC 6749 §3.2). */
const tokenParams = (request: HttpServerRequest.HttpServerRequest) =>
  Effect.gen(function* () {
    const contentType = (request.headers["content-type"] ?? "").toLowerCase()
    const text = yield* Effect.mapError(request.text, () => invalidRequest("Could not read the request body"))
    const params: Record<string, string> = {}
    if (contentType.startsWith("application/x-www-form-urlencoded")) {
      for (const [k, v] of new URLSearchParams(text)) {
        if (Object.hasOwn(params, k)) return yield* Effect.fail(invalidRequest(`Parameter "${k}" is repeated`))
        params[k] = v
      }
      return params
    }
    if (/^application\/([\w.+-]+\+)?json/.test(contentType)) {
      let body: unknown
      try {
        body = JSON.parse(text)
      } catch {
        return yield* Effect.fail(invalidRequest("Malformed JSON body"))
      }
      if (body === null || typeof body !== "object" || Array.isArray(body)) {
        return yield* Effect.fail(invalidRequest("Expected a JSON object"))
      }
      for (const [k, v] of Object.entries(body)) {
        if (typeof v === "string") params[k] = v
        else if (typeof v === "number" || typeof v === "boolean") params[k] = String(v)
        else if (v !== null) return yield* Effect.fail(invalidRequest(`Parameter "${k}" must be a string`))
      }
      return params
    }
    return yield* Effect.fail(invalidRequest("Content-Type must be application/x-www-form-urlencoded"))
  })

export const OidcHandlers = HttpApiBuilder.group(
  Api,
  "oidc",
  Effect.fn(function* (handlers) {
    const tokens = yield* TokenService
    const keys = yield* SigningKeys
    const { trustProxyHops } = yield* AppConfig
    const issuer = keys.issuer
    const discovery = {
      issuer,
      token_endpoint: `${issuer}/oidc/token`,
      jwks_uri: `${issuer}/oidc/jwks`,
      grant_types_supported: ["client_credentials", "password"],
      token_endpoint_auth_methods_supported: ["client_secret_post", "client_secret_basic"],
      response_types_supported: ["token"],
      subject_types_supported: ["public"],
      id_token_signing_alg_values_supported: [alg],
      scopes_supported: ["openid", "workspace:<slug>"],
      claims_supported: [
        "sub",
        "iss",
        "aud",
        "iat",
        "exp",
        "jti",
        "workspace",
        "isServiceAccount",
        "groups",
        "scope",
        "client_id",
        "preferred_username",
        "role"
      ]
    }
    return handlers
      .handleRaw("token", ({ request }) => {
        const basicUsed = /^basic /i.test(request.headers.authorization ?? "")
        return Effect.gen(function* () {
          const basic = yield* basicCredentials(request.headers.authorization)
          const params = yield* tokenParams(request)
          // the login throttle's address: behind trusted proxies, the one they saw (platform/ClientAddress.ts)
          const address = clientAddress(Option.getOrUndefined(request.remoteAddress), request.headers["x-forwarded-for"], trustProxyHops)
          const answer = yield* tokens.token({ params, basic, address })
          return HttpServerResponse.jsonUnsafe(answer, { headers: noStore })
        }).pipe(Effect.catchTag("OAuthError", (e) => Effect.succeed(oauthResponse(e, basicUsed))))
      })
      .handleRaw("jwks", () =>
        Effect.map(keys.jwks, (set) => HttpServerResponse.jsonUnsafe(set, { headers: { "cache-control": "public, max-age=60" } }))
      )
      .handle("discovery", () => Effect.succeed(discovery))
  })
)

export const WorkspacesHandlers = HttpApiBuilder.group(
  Api,
  "workspaces",
  Effect.fn(function* (handlers) {
    const workspaces = yield* WorkspaceService
    const keys = yield* SigningKeys
    return handlers
      .handle("create", ({ payload }) => withPrincipal((p) => workspaces.create(payload, p)))
      .handle("list", ({ query }) => workspaces.list(paging(query)))
      .handle("get", ({ params }) => workspaces.get(params.slug))
      .handle("delete", ({ params }) => workspaces.delete(params.slug))
      .handle("rotateSigningKey", () => keys.rotate)
  })
)

const principalInfo = (p: Principal) => ({
  kind: p.kind,
  id: p.id,
  name: p.name,
  workspace: p.workspace,
  role: p.role ?? null,
  permissions: [...p.permissions].sort(),
  isPlatformAdmin: p.isPlatformAdmin,
  groups: [...p.groups]
})

export const MembersHandlers = HttpApiBuilder.group(
  Api,
  "members",
  Effect.fn(function* (handlers) {
    const members = yield* MemberService
    return handlers
      .handle("list", ({ params, query }) => members.list(params.workspace, paging(query)))
      .handle("add", ({ params, payload }) => withPrincipal((p) => members.add(params.workspace, p, payload)))
      .handle("get", ({ params }) => members.get(params.workspace, params.userId))
      .handle("setRole", ({ params, payload }) => withPrincipal((p) => members.setRole(params.workspace, p, params.userId, payload.role)))
      .handle("remove", ({ params }) => members.remove(params.workspace, params.userId))
      .handle("me", () => Effect.map(Effect.service(CurrentPrincipal), principalInfo))
      .handle("changePassword", ({ payload }) => withPrincipal((p) => members.changePassword(p, payload)))
  })
)

export const ServiceAccountsHandlers = HttpApiBuilder.group(
  Api,
  "serviceAccounts",
  Effect.fn(function* (handlers) {
    const accounts = yield* ServiceAccountService
    return handlers
      .handle("create", ({ params, payload }) => withPrincipal((p) => accounts.create(params.workspace, p, payload)))
      .handle("list", ({ params, query }) => withPrincipal((p) => accounts.list(params.workspace, p, paging(query))))
      .handle("get", ({ params }) => withPrincipal((p) => accounts.get(params.workspace, p, params.id)))
      .handle("setName", ({ params, payload }) => withPrincipal((p) => accounts.setName(params.workspace, p, params.id, payload.name)))
      .handle("setDescription", ({ params, payload }) =>
        withPrincipal((p) => accounts.setDescription(params.workspace, p, params.id, payload.description))
      )
      .handle("rotate", ({ params }) => withPrincipal((p) => accounts.rotate(params.workspace, p, params.id)))
      .handle("rotatePut", ({ params }) => withPrincipal((p) => accounts.rotate(params.workspace, p, params.id)))
      .handle("revoke", ({ params }) => withPrincipal((p) => accounts.revoke(params.workspace, p, params.id)))
      .handle("delete", ({ params }) => withPrincipal((p) => accounts.delete(params.workspace, p, params.id)))
  })
)

export const GroupsHandlers = HttpApiBuilder.group(
  Api,
  "groups",
  Effect.fn(function* (handlers) {
    const groups = yield* GroupService
    return handlers
      .handle("create", ({ params, payload }) => groups.create(params.workspace, payload))
      .handle("list", ({ params, query }) => groups.list(params.workspace, paging(query)))
      .handle("get", ({ params }) => groups.get(params.workspace, params.groupId))
      .handle("delete", ({ params }) => withPrincipal((p) => groups.delete(params.workspace, p, params.groupId)))
      .handle("addPolicy", ({ params, payload }) => withPrincipal((p) => groups.addPolicy(params.workspace, p, params.groupId, payload)))
      .handle("removePolicy", ({ params }) =>
        withPrincipal((p) => groups.removePolicy(params.workspace, p, params.groupId, params.policyId))
      )
      .handle("addMember", ({ params, payload }) => withPrincipal((p) => groups.addMember(params.workspace, p, params.groupId, payload)))
      .handle("removeUser", ({ params }) =>
        withPrincipal((p) => groups.removeMember(params.workspace, p, params.groupId, "user", params.userId))
      )
      .handle("removeServiceAccount", ({ params }) =>
        withPrincipal((p) => groups.removeMember(params.workspace, p, params.groupId, "service-account", String(params.serviceAccountId)))
      )
  })
)

export const SettingsHandlers = HttpApiBuilder.group(
  Api,
  "settings",
  Effect.fn(function* (handlers) {
    const cors = yield* CorsOrigins
    return handlers
      .handle("getCors", ({ params }) => cors.get(params.workspace))
      .handle("setCors", ({ params, payload }) => withPrincipal((p) => cors.set(params.workspace, payload.allowedOrigins, p)))
  })
)

/** Every identity group's handlers. */
export const IdentityHandlers = Layer.mergeAll(
  OidcHandlers,
  WorkspacesHandlers,
  MembersHandlers,
  ServiceAccountsHandlers,
  GroupsHandlers,
  SettingsHandlers
)
