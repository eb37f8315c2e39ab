// Table-driven access control: every role and several permission sets (users, service accounts with a role, with
// explicit permissions, with none, with group policies) against every guarded operation the server documents in
// /openapi.json. A caller holding the operation's x-required-permission gets past the Authorization middleware;
// one lacking it gets 403 PERMISSION_DENIED; any token on another workspace gets 403. Operations marked
// x-user-token-only (service accounts, members, groups) refuse service-account tokens whatever they hold.
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { createAccount, createUser } from "./support/IdentityHelpers.ts"
import { startServer, type TestServer } from "./support/TestServer.ts"

// The permissions of each role (README: Identity and access › Roles and permissions), written out independently of
// the server's own table.
const reads = ["read:structures", "read:records", "read:functions", "read:storage", "read:webhooks", "read:notifications"]
const developer = [
  ...reads,
  "write:structures",
  "write:records",
  "write:functions",
  "execute:functions",
  "write:storage",
  "write:notifications"
]
const admin = [
  ...developer,
  "write:webhooks",
  "read:triggers",
  "write:triggers",
  "read:service-accounts",
  "write:service-accounts",
  "secrets:reveal",
  "read:cors",
  "write:cors",
  "manage:notifications"
]
const owner = [...admin, "workspace:members"]
const roleTable: Record<string, ReadonlyArray<string>> = { viewer: reads, developer, admin, owner }

interface Caller {
  readonly label: string
  readonly kind: "user" | "service"
  readonly platformAdmin: boolean
  readonly permissions: ReadonlySet<string>
  readonly token: string
}

interface Operation {
  readonly method: string
  readonly path: string
  readonly operationId: string
  readonly permission: string | null
  readonly userOnly: boolean
}

let server: TestServer
const callers: Array<Caller> = []
let operations: Array<Operation> = []

const uuid = "00000000-0000-4000-8000-000000000000"

const placeholder = (name: string, schema: any): string => {
  if (schema?.format === "uuid") return uuid
  if (typeof schema?.pattern === "string" && schema.pattern.includes("\\d+")) return "999999"
  if (schema?.type === "integer" || schema?.type === "number") return "999999"
  if (name === "version") return "1"
  if (/id$/i.test(name)) return uuid
  return "placeholder"
}

beforeAll(async () => {
  // limits off: this file makes hundreds of requests on purpose
  server = await startServer({
    env: {
      TROUPE_LIMIT_READS: "0",
      TROUPE_LIMIT_WRITES: "0",
      TROUPE_LIMIT_BULK: "0",
      TROUPE_LIMIT_FUNCTIONS: "0",
      TROUPE_LIMIT_QUERIES: "0"
    }
  })
  const root = await server.adminToken()
  const all = new Set([...owner])
  callers.push({ label: "platform admin (owner)", kind: "user", platformAdmin: true, permissions: all, token: root })
  for (const role of ["viewer", "developer", "admin", "owner"]) {
    const user = await createUser(server, root, role)
    callers.push({ label: `user ${role}`, kind: "user", platformAdmin: false, permissions: new Set(roleTable[role]), token: user.token })
  }
  for (const role of ["viewer", "admin"]) {
    const sa = await createAccount(server, root, { role })
    callers.push({
      label: `service account role ${role}`,
      kind: "service",
      platformAdmin: false,
      permissions: new Set(roleTable[role]),
      token: sa.token
    })
  }
  const explicit = ["read:records", "write:records", "read:service-accounts"]
  const withPermissions = await createAccount(server, root, { permissions: explicit })
  callers.push({
    label: "service account with permissions",
    kind: "service",
    platformAdmin: false,
    permissions: new Set(explicit),
    token: withPermissions.token
  })
  const nothing = await createAccount(server, root, {})
  callers.push({
    label: "service account with nothing",
    kind: "service",
    platformAdmin: false,
    permissions: new Set(),
    token: nothing.token
  })
  // a service account whose only grants come from a group: manage structures, list webhooks, read the CORS origins
  const grouped = await createAccount(server, root, {})
  const group = await server.request("POST", `${server.base}/groups`, { token: root, body: { name: "Schema keepers" } })
  await server.request("POST", `${server.base}/groups/${group.body.id}/policies`, {
    token: root,
    body: { action: "manage", resource: "structures" }
  })
  await server.request("POST", `${server.base}/groups/${group.body.id}/policies`, {
    token: root,
    body: { action: "list", resource: "webhooks" }
  })
  await server.request("POST", `${server.base}/groups/${group.body.id}/policies`, {
    token: root,
    body: { action: "retrieve", resource: "cors" }
  })
  await server.request("POST", `${server.base}/groups/${group.body.id}/members`, { token: root, body: { serviceAccountId: grouped.id } })
  callers.push({
    label: "service account via group policies",
    kind: "service",
    platformAdmin: false,
    permissions: new Set(["read:structures", "write:structures", "read:webhooks", "read:cors"]),
    token: grouped.token
  })
  // a developer user who is also in a group allowing webhook reads
  const devPlus = await createUser(server, root, "developer")
  await server.request("POST", `${server.base}/groups/${group.body.id}/members`, { token: root, body: { userId: devPlus.userId } })
  callers.push({
    label: "user developer + group",
    kind: "user",
    platformAdmin: false,
    permissions: new Set([...developer, "read:webhooks", "read:cors"]),
    token: devPlus.token
  })

  const doc = await server.request("GET", "/openapi.json")
  for (const [path, item] of Object.entries<any>(doc.body.paths)) {
    for (const [method, op] of Object.entries<any>(item)) {
      if (!Array.isArray(op?.security) || op.security.length === 0) continue
      let concrete = path
      for (const p of op.parameters ?? []) {
        if (p.in !== "path") continue
        concrete = concrete.replace(`{${p.name}}`, p.name === "workspace" ? server.workspace : placeholder(p.name, p.schema))
      }
      operations.push({
        method: method.toUpperCase(),
        path: concrete,
        operationId: op.operationId,
        permission: op["x-required-permission"] ?? null,
        userOnly: op["x-user-token-only"] === true
      })
    }
  }
  operations = operations.sort((a, b) => a.operationId.localeCompare(b.operationId))
})

afterAll(async () => {
  await server?.close()
})

const holds = (caller: Caller, permission: string | null) =>
  permission === null || caller.platformAdmin || (permission !== "platform:admin" && caller.permissions.has(permission))

const call = (caller: Caller, op: Operation, path = op.path) =>
  server.request(op.method, path, {
    token: caller.token,
    ...(op.method === "POST" || op.method === "PUT" || op.method === "PATCH" ? { body: {} } : {})
  })

describe("roles and permission sets against every guarded operation", () => {
  it("the document lists the guarded identity operations with their permissions", () => {
    const byId = new Map(operations.map((o) => [o.operationId, o.permission]))
    expect(byId.get("workspaces.create")).toBe("platform:admin")
    expect(byId.get("members.add")).toBe("workspace:members")
    expect(byId.get("serviceAccounts.list")).toBe("read:service-accounts")
    expect(byId.get("serviceAccounts.rotate")).toBe("write:service-accounts")
    expect(byId.get("groups.addPolicy")).toBe("workspace:members")
    expect(byId.get("members.me")).toBeNull()
    expect(operations.length).toBeGreaterThanOrEqual(30)
    // people only: service accounts, members (but /me and the password) and groups
    const userOnly = operations.filter((o) => o.userOnly).map((o) => o.operationId)
    for (const id of ["serviceAccounts.rotate", "members.list", "members.add", "members.setRole", "groups.addPolicy", "groups.list"]) {
      expect(userOnly).toContain(id)
    }
    expect(userOnly).not.toContain("members.me")
    expect(userOnly).not.toContain("members.changePassword")
    expect(userOnly.filter((id) => !/^(serviceAccounts|members|groups)\./.test(id))).toStrictEqual([])
  })

  it("each caller passes exactly the operations its permissions allow", async () => {
    const failures: Array<string> = []
    for (const caller of callers) {
      for (const op of operations) {
        const res = await call(caller, op)
        const label = `${caller.label} ${op.method} ${op.path} (${op.permission ?? "any"}) -> ${res.status} ${res.text.slice(0, 160)}`
        const deniedByMiddleware = res.status === 403 && typeof res.body?.message === "string" && res.body.message.startsWith("Permission ")
        if (res.status === 401 || res.status === 429) {
          failures.push(`unexpected ${label}`)
        } else if (holds(caller, op.permission)) {
          // identity management is for users: it refuses service-account tokens
          if (caller.kind === "service" && op.userOnly) {
            if (res.status !== 403 || res.body.code !== "PERMISSION_DENIED") failures.push(`expected user-token 403: ${label}`)
          } else if (deniedByMiddleware) {
            failures.push(`denied although allowed: ${label}`)
          }
        } else if (!(deniedByMiddleware && res.body.code === "PERMISSION_DENIED")) {
          failures.push(`allowed although denied: ${label}`)
        }
      }
    }
    expect(failures).toStrictEqual([])
  })

  it("every caller's token is refused on another workspace", async () => {
    const failures: Array<string> = []
    for (const caller of callers) {
      for (const op of operations.filter((o) => o.path.startsWith(`/workspace/${server.workspace}/`))) {
        const res = await call(caller, op, op.path.replace(`/workspace/${server.workspace}/`, "/workspace/some-other-ws/"))
        if (res.status !== 403 || res.body.code !== "PERMISSION_DENIED") {
          failures.push(`${caller.label} ${op.method} ${op.path} on another workspace -> ${res.status}`)
        }
      }
    }
    expect(failures).toStrictEqual([])
  })

  it("no token at all is 401 on every guarded operation", async () => {
    const failures: Array<string> = []
    for (const op of operations) {
      const res = await server.request(op.method, op.path, op.method === "GET" || op.method === "DELETE" ? {} : { body: {} })
      if (res.status !== 401 || res.body.code !== "UNAUTHORIZED") failures.push(`${op.method} ${op.path} -> ${res.status}`)
    }
    expect(failures).toStrictEqual([])
  })
})
