// How a caller's permission set is computed: role, explicit permissions (service accounts) and the policies of its
// groups. A group's allow adds permissions, a deny removes them whatever granted them (explicit deny wins).
import type { Permission, Role } from "@troupe/api/Authorization"
import { isPolicyAction, isPolicyResource, policyPermissions, rolePermissions } from "@troupe/api/identity/Roles"

export interface PolicyStatement {
  readonly action: string
  readonly resource: string
  readonly effect: string
}

export const resolvePermissions = (
  role: Role | undefined,
  explicit: ReadonlyArray<string>,
  policies: ReadonlyArray<PolicyStatement>
): Set<string> => {
  const out = new Set<string>(role === undefined ? [] : rolePermissions[role])
  for (const p of explicit) out.add(p)
  const denied = new Set<Permission>()
  for (const policy of policies) {
    if (!isPolicyAction(policy.action) || !isPolicyResource(policy.resource)) continue
    const granted = policyPermissions(policy.action, policy.resource)
    if (policy.effect === "deny") for (const p of granted) denied.add(p)
    else for (const p of granted) out.add(p)
  }
  for (const p of denied) out.delete(p)
  return out
}

export const isRole = (u: unknown): u is Role => u === "viewer" || u === "developer" || u === "admin" || u === "owner"

/**
 * What of `granted` the caller does not hold (nothing for platform administrators). Nobody hands out, or takes the
 * credentials of, more than they hold: creating or managing a service account, a role, a group policy or membership.
 */
export const notHeld = (
  by: { readonly isPlatformAdmin: boolean; readonly permissions: ReadonlySet<string> },
  granted: Iterable<string>
): Array<string> => (by.isPlatformAdmin ? [] : [...new Set(granted)].filter((p) => !by.permissions.has(p)))
