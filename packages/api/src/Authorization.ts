/**
 * Bearer-token authorization, declared once for every guarded group. The server implements it (verifies the JWT,
 * checks the `workspace` claim against the URL, the endpoint's permission and its rate class); handlers read the
 * caller from `CurrentPrincipal`.
 *
 * @since 0.1.0
 */
import { Context, Schema } from "effect"
import { HttpApiMiddleware, HttpApiSecurity } from "effect/http-api"
import { Forbidden, TooManyRequests, Unauthorized } from "./Errors.ts"

/** Workspace roles, lowest to highest. @category models */
export const Role = Schema.Literals(["viewer", "developer", "admin", "owner"])
export type Role = typeof Role.Type

/**
 * Permission names (README "Roles and permissions"). `platform:admin` guards workspace
 * management. @category models
 */
export const Permissions = [
  "read:structures",
  "write:structures",
  "read:records",
  "write:records",
  "read:functions",
  "write:functions",
  "execute:functions",
  "read:storage",
  "write:storage",
  "read:webhooks",
  "write:webhooks",
  "read:triggers",
  "write:triggers",
  "read:service-accounts",
  "write:service-accounts",
  "secrets:reveal",
  "read:cors",
  "write:cors",
  "read:notifications",
  "write:notifications",
  "manage:notifications"
] as const
export type Permission = (typeof Permissions)[number] | "platform:admin" | "workspace:members"

/** Who is calling: a user or a service account, inside one workspace. @category models */
export interface Principal {
  readonly kind: "user" | "service"
  /** user id, or the service account's client id */
  readonly id: string
  /** username, or the service account's name */
  readonly name: string
  /** the token's `workspace` claim (always equal to the URL's workspace on workspace routes) */
  readonly workspace: string
  readonly role: Role | undefined
  /** every permission the caller holds (role, explicit permissions and group policies resolved) */
  readonly permissions: ReadonlySet<string>
  readonly isPlatformAdmin: boolean
  readonly groups: ReadonlyArray<string>
}

/** @category services */
export class CurrentPrincipal extends Context.Service<CurrentPrincipal, Principal>()("@troupe/api/CurrentPrincipal") {}

/** True when the caller holds the permission. @category guards */
export const can = (principal: Principal, permission: Permission): boolean =>
  principal.isPlatformAdmin || principal.permissions.has(permission)

/**
 * The permission an endpoint needs, as an endpoint annotation:
 * `HttpApiEndpoint.get(...).annotate(RequiredPermission, "read:records")`. Unset = any valid token.
 * @category annotations
 */
export const RequiredPermission = Context.Reference<Permission | undefined>("@troupe/api/RequiredPermission", {
  defaultValue: () => undefined
})

/** Rate classes, each with its own per-minute budget per workspace (README "Rate limits"). @category models */
export type RateClassName = "reads" | "writes" | "bulk" | "functions" | "queries" | "notifications"

/** The rate class of an endpoint, as an endpoint annotation. @category annotations */
export const RateClass = Context.Reference<RateClassName | undefined>("@troupe/api/RateClass", { defaultValue: () => undefined })

/** @category middleware */
export class Authorization extends HttpApiMiddleware.Service<
  Authorization,
  {
    provides: CurrentPrincipal
    requires: never
  }
>()("@troupe/api/Authorization", {
  requiredForClient: true,
  security: { bearer: HttpApiSecurity.bearer },
  error: [Unauthorized, Forbidden, TooManyRequests]
}) {}
