/**
 * Roles, permissions and group policies (README "Roles and permissions"): what each workspace role may do and which
 * permissions an IAM policy `{action, resource, effect}` grants. Shared by the server (authorization)
 * and clients (to explain a 403 before it happens).
 *
 * @since 0.1.0
 */
import { type Permission, Permissions, type Role } from "../Authorization.ts"

/**
 * Every `read:*` permission the contract names (its viewer = every read:*): those of the specification's list and
 * `read:webhooks`. Triggers and service accounts, which the contract gives to admin, are read from admin up.
 */
const viewer: ReadonlyArray<Permission> = [
  "read:structures",
  "read:records",
  "read:functions",
  "read:storage",
  "read:webhooks",
  "read:notifications"
]
const developer: ReadonlyArray<Permission> = [
  ...viewer,
  "write:structures",
  "write:records",
  "write:functions",
  "execute:functions",
  "write:storage",
  "write:notifications"
]
const admin: ReadonlyArray<Permission> = [
  ...developer,
  "write:webhooks",
  "read:triggers",
  "write:triggers",
  "read:service-accounts",
  "write:service-accounts",
  "secrets:reveal",
  "read:cors",
  "write:cors",
  // notification provider settings (SMTP and SMS credentials)
  "manage:notifications"
]
const owner: ReadonlyArray<Permission> = [...Permissions, "workspace:members"]

/** The permissions each role holds. @category models */
export const rolePermissions: Readonly<Record<Role, ReadonlyArray<Permission>>> = { viewer, developer, admin, owner }

/** IAM policy actions. `read` does not exist (use `retrieve` or `list`). @category models */
export const PolicyActions = ["create", "retrieve", "list", "update", "delete", "manage", "validate", "execute"] as const
export type PolicyAction = (typeof PolicyActions)[number]

/** Resources a policy can name; `*` means every resource. @category models */
export const PolicyResources = [
  "records",
  "structures",
  "compute-functions",
  "function-triggers",
  "webhooks",
  "service-accounts",
  "storage",
  "secrets",
  "notifications",
  "cors",
  "*"
] as const
export type PolicyResource = (typeof PolicyResources)[number]

/** The permission noun behind each policy resource. */
const nouns: Record<Exclude<PolicyResource, "*" | "secrets">, string> = {
  records: "records",
  structures: "structures",
  "compute-functions": "functions",
  "function-triggers": "triggers",
  webhooks: "webhooks",
  "service-accounts": "service-accounts",
  storage: "storage",
  notifications: "notifications",
  cors: "cors"
}

const single = (action: PolicyAction, resource: Exclude<PolicyResource, "*">): Array<Permission> => {
  if (resource === "secrets") {
    return action === "retrieve" || action === "list" || action === "manage" ? ["secrets:reveal"] : []
  }
  const noun = nouns[resource]
  const executable = resource === "compute-functions" || resource === "function-triggers"
  const out: Array<string> = []
  if (action === "retrieve" || action === "list" || action === "manage") out.push(`read:${noun}`)
  const writes = action === "create" || action === "update" || action === "delete" || action === "validate"
  if (writes || action === "manage") {
    out.push(`write:${noun}`)
  }
  if (executable && (action === "execute" || action === "manage")) out.push("execute:functions")
  if (resource === "notifications" && action === "manage") out.push("manage:notifications")
  return out as Array<Permission>
}

/**
 * The permissions a policy statement covers. Empty when the action means nothing for the resource (e.g. `execute`
 * on `records`); the server rejects such policies.
 *
 * @category guards
 */
export const policyPermissions = (action: PolicyAction, resource: PolicyResource): ReadonlyArray<Permission> => {
  if (resource !== "*") return single(action, resource)
  const all = new Set<Permission>()
  for (const r of PolicyResources) {
    if (r !== "*") for (const p of single(action, r)) all.add(p)
  }
  return [...all]
}

/** True when `u` is a policy action. @category guards */
export const isPolicyAction = (u: string): u is PolicyAction => (PolicyActions as ReadonlyArray<string>).includes(u)

/** True when `u` is a policy resource. @category guards */
export const isPolicyResource = (u: string): u is PolicyResource => (PolicyResources as ReadonlyArray<string>).includes(u)
