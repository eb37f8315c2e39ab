import { rolePermissions, policyPermissions } from "@troupe/api/identity/Roles"
import { assert, describe, it } from "@effect/vitest"
import { resolvePermissions } from "./Permissions.ts"

const sorted = (s: Iterable<string>) => [...s].sort()

describe("role permissions (CONTRACT.md §3)", () => {
  it("viewer reads; developer writes data and functions; admin adds webhooks, triggers, accounts; owner all", () => {
    assert.deepStrictEqual(
      sorted(rolePermissions.viewer),
      ["read:functions", "read:records", "read:storage", "read:structures"]
    )
    assert.deepStrictEqual(
      sorted(rolePermissions.developer),
      sorted([
        ...rolePermissions.viewer,
        "write:structures",
        "write:records",
        "write:functions",
        "execute:functions",
        "write:storage"
      ])
    )
    assert.deepStrictEqual(
      sorted(rolePermissions.admin),
      sorted([
        ...rolePermissions.developer,
        "read:webhooks",
        "write:webhooks",
        "read:triggers",
        "write:triggers",
        "read:service-accounts",
        "write:service-accounts",
        "secrets:reveal"
      ])
    )
    assert.includeMembers([...rolePermissions.owner], [...rolePermissions.admin, "workspace:members"])
    assert.notInclude([...rolePermissions.admin], "workspace:members")
    assert.notInclude([...rolePermissions.viewer], "read:webhooks")
  })
})

describe("policies", () => {
  it("maps actions onto permissions per resource", () => {
    assert.deepStrictEqual(sorted(policyPermissions("retrieve", "records")), ["read:records"])
    assert.deepStrictEqual(sorted(policyPermissions("list", "structures")), ["read:structures"])
    assert.deepStrictEqual(sorted(policyPermissions("update", "records")), ["write:records"])
    assert.deepStrictEqual(sorted(policyPermissions("validate", "structures")), ["write:structures"])
    assert.deepStrictEqual(sorted(policyPermissions("execute", "compute-functions")), ["execute:functions"])
    assert.deepStrictEqual(
      sorted(policyPermissions("manage", "compute-functions")),
      ["execute:functions", "read:functions", "write:functions"]
    )
    assert.deepStrictEqual(
      sorted(policyPermissions("manage", "function-triggers")),
      ["execute:functions", "read:triggers", "write:triggers"]
    )
    assert.deepStrictEqual(sorted(policyPermissions("retrieve", "secrets")), ["secrets:reveal"])
    assert.deepStrictEqual([...policyPermissions("execute", "records")], [])
    assert.includeMembers(
      [...policyPermissions("list", "*")],
      ["read:records", "read:webhooks", "read:service-accounts"]
    )
    assert.notInclude([...policyPermissions("list", "*")], "write:records")
  })

  it("resolves role + explicit + group allows, and a deny wins over everything", () => {
    const viewerPlus = resolvePermissions("viewer", [], [{ action: "create", resource: "records", effect: "allow" }])
    assert.isTrue(viewerPlus.has("write:records"))
    assert.isFalse(viewerPlus.has("write:structures"))
    const explicit = resolvePermissions(undefined, ["read:records"], [])
    assert.deepStrictEqual(sorted(explicit), ["read:records"])
    const denied = resolvePermissions("owner", [], [
      { action: "manage", resource: "records", effect: "deny" },
      { action: "create", resource: "records", effect: "allow" }
    ])
    assert.isFalse(denied.has("write:records"))
    assert.isFalse(denied.has("read:records"))
    assert.isTrue(denied.has("read:structures"))
    // unknown actions (such as "read") grant nothing
    const readPolicy = [{ action: "read", resource: "records", effect: "allow" }]
    assert.deepStrictEqual(sorted(resolvePermissions(undefined, [], readPolicy)), [])
    assert.deepStrictEqual(sorted(resolvePermissions(undefined, [], [])), [])
  })
})
