import { rolePermissions, policyPermissions } from "@troupe/api/identity/Roles"
import { describe, expect, it } from "@effect/vitest"
import { resolvePermissions } from "./Permissions.ts"

const sorted = (s: Iterable<string>) => [...s].sort()

describe("role permissions (README: Roles and permissions)", () => {
  it("viewer reads what the contract names; developer writes data and functions; admin adds webhooks, triggers, accounts; owner all", () => {
    expect(sorted(rolePermissions.viewer)).toStrictEqual([
      "read:functions",
      "read:notifications",
      "read:records",
      "read:storage",
      "read:structures",
      "read:webhooks"
    ])
    expect(sorted(rolePermissions.developer)).toStrictEqual(
      sorted([
        ...rolePermissions.viewer,
        "write:structures",
        "write:records",
        "write:functions",
        "execute:functions",
        "write:storage",
        "write:notifications"
      ])
    )
    expect(sorted(rolePermissions.admin)).toStrictEqual(
      sorted([
        ...rolePermissions.developer,
        "write:webhooks",
        "read:triggers",
        "write:triggers",
        "read:service-accounts",
        "write:service-accounts",
        "secrets:reveal",
        "read:cors",
        "write:cors",
        "manage:notifications"
      ])
    )
    expect([...rolePermissions.owner]).toEqual(expect.arrayContaining([...rolePermissions.admin, "workspace:members"]))
    expect([...rolePermissions.admin]).not.toContain("workspace:members")
    expect([...rolePermissions.viewer].filter((p) => !p.startsWith("read:"))).toStrictEqual([])
    expect([...rolePermissions.viewer]).not.toContain("read:service-accounts")
  })
})

describe("policies", () => {
  it("maps actions onto permissions per resource", () => {
    expect(sorted(policyPermissions("retrieve", "records"))).toStrictEqual(["read:records"])
    expect(sorted(policyPermissions("list", "structures"))).toStrictEqual(["read:structures"])
    expect(sorted(policyPermissions("update", "records"))).toStrictEqual(["write:records"])
    expect(sorted(policyPermissions("validate", "structures"))).toStrictEqual(["write:structures"])
    expect(sorted(policyPermissions("execute", "compute-functions"))).toStrictEqual(["execute:functions"])
    expect(sorted(policyPermissions("manage", "compute-functions"))).toStrictEqual([
      "execute:functions",
      "read:functions",
      "write:functions"
    ])
    expect(sorted(policyPermissions("manage", "function-triggers"))).toStrictEqual(["execute:functions", "read:triggers", "write:triggers"])
    expect(sorted(policyPermissions("retrieve", "secrets"))).toStrictEqual(["secrets:reveal"])
    expect(sorted(policyPermissions("list", "cors"))).toStrictEqual(["read:cors"])
    expect(sorted(policyPermissions("manage", "cors"))).toStrictEqual(["read:cors", "write:cors"])
    expect([...policyPermissions("execute", "records")]).toStrictEqual([])
    expect([...policyPermissions("list", "*")]).toEqual(expect.arrayContaining(["read:records", "read:webhooks", "read:service-accounts"]))
    expect([...policyPermissions("list", "*")]).not.toContain("write:records")
  })

  it("resolves role + explicit + group allows, and a deny wins over everything", () => {
    const viewerPlus = resolvePermissions("viewer", [], [{ action: "create", resource: "records", effect: "allow" }])
    expect(viewerPlus.has("write:records")).toBe(true)
    expect(viewerPlus.has("write:structures")).toBe(false)
    const explicit = resolvePermissions(undefined, ["read:records"], [])
    expect(sorted(explicit)).toStrictEqual(["read:records"])
    const denied = resolvePermissions(
      "owner",
      [],
      [
        { action: "manage", resource: "records", effect: "deny" },
        { action: "create", resource: "records", effect: "allow" }
      ]
    )
    expect(denied.has("write:records")).toBe(false)
    expect(denied.has("read:records")).toBe(false)
    expect(denied.has("read:structures")).toBe(true)
    // unknown actions (such as "read") grant nothing
    const readPolicy = [{ action: "read", resource: "records", effect: "allow" }]
    expect(sorted(resolvePermissions(undefined, [], readPolicy))).toStrictEqual([])
    expect(sorted(resolvePermissions(undefined, [], []))).toStrictEqual([])
  })
})
