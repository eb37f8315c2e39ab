// Identity hardening, end to end: nobody takes over a service account holding more than they do (rotate, revoke,
// delete, rename), identity management is for people only, nobody climbs through IAM groups or roles, service
// accounts ask only for their own scopes, a password change ends the sessions before it, and adding a member does
// not tell an owner who exists in other workspaces. Every refusal is a 4xx with the contract's error body.
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { createAccount, createUser, clientCredentialsToken, tokenRequest } from "./support/IdentityHelpers.ts"
import { startServer, type TestServer } from "./support/TestServer.ts"

let server: TestServer
let root: string
let base: string

beforeAll(async () => {
  server = await startServer()
  root = await server.adminToken()
  base = server.base
})

afterAll(async () => {
  await server?.close()
})

/** A refusal with the contract's error body. */
const expectError = (res: { status: number; body: any; headers: Headers }, status: number, code?: string) => {
  expect(res.status, JSON.stringify(res.body)).toBe(status)
  expect(Object.keys(res.body).sort()).toEqual(["code", "details", "error", "message", "requestId", "statusCode"])
  expect(res.body.statusCode).toBe(status)
  expect(res.body.message).toBeTypeOf("string")
  expect(Array.isArray(res.body.details)).toBe(true)
  expect(res.body.requestId).toBe(res.headers.get("x-request-id"))
  if (code !== undefined) expect(res.body.code).toBe(code)
}

const sa = (path = "") => `${base}/service-accounts${path}`
const g = (path = "") => `${base}/groups${path}`

describe("service accounts holding more than the caller", () => {
  it("an admin cannot rotate, revoke, delete or rename an owner-role account, and can one holding less", async () => {
    const adminUser = await createUser(server, root, "admin")
    const owned = await createAccount(server, root, { role: "owner", description: "the owner's robot" })
    const attempts = [
      ["POST", `/${owned.id}/rotate`, undefined],
      ["PUT", `/${owned.id}/rotate`, undefined],
      ["POST", `/${owned.id}/revoke`, undefined],
      ["DELETE", `/${owned.id}`, undefined],
      ["PUT", `/${owned.id}/name`, { name: "hijacked" }],
      ["PUT", `/${owned.id}/description`, { description: "hijacked" }]
    ] as const
    for (const [method, path, body] of attempts) {
      const res = await server.request(method, sa(path), { token: adminUser.token, body })
      expectError(res, 403, "PERMISSION_DENIED")
      expect(res.body.message).toContain("workspace:members")
      expect(res.body).not.toHaveProperty("clientSecret")
    }
    // nothing changed: the owner's robot keeps its secret, its token, its name, and acts as owner
    const after = await server.request("GET", sa(`/${owned.id}`), { token: adminUser.token })
    expect(after.body.name.startsWith("sa-")).toBe(true)
    expect(after.body.description).toBe("the owner's robot")
    expect(after.body.status).toBe("active")
    expect((await server.request("GET", `${base}/me`, { token: owned.token })).status).toBe(200)
    await clientCredentialsToken(server, owned.clientId, owned.clientSecret)

    // an account holding no more than the admin: every operation is allowed
    for (const body of [{ role: "admin" }, { role: "developer" }, { permissions: ["read:records", "secrets:reveal"] }]) {
      const lesser = await createAccount(server, root, body)
      const renamed = await server.request("PUT", sa(`/${lesser.id}/name`), { token: adminUser.token, body: { name: "renamed" } })
      expect(renamed.status, renamed.text).toBe(200)
      const described = await server.request("PUT", sa(`/${lesser.id}/description`), {
        token: adminUser.token,
        body: { description: "by the admin" }
      })
      expect(described.status).toBe(200)
      for (const method of ["POST", "PUT"]) {
        const rotated = await server.request(method, sa(`/${lesser.id}/rotate`), { token: adminUser.token })
        expect(rotated.status, rotated.text).toBe(200)
      }
      expect((await server.request("POST", sa(`/${lesser.id}/revoke`), { token: adminUser.token })).status).toBe(200)
      expect((await server.request("DELETE", sa(`/${lesser.id}`), { token: adminUser.token })).status).toBe(204)
    }

    // what an account holds includes its groups' policies: an admin denied webhooks cannot rotate a viewer account
    // whose group lets it list them
    const noWebhooks = (await server.request("POST", g(), { token: root, body: { name: "No webhooks" } })).body
    await server.request("POST", g(`/${noWebhooks.id}/policies`), {
      token: root,
      body: { action: "manage", resource: "webhooks", effect: "deny" }
    })
    await server.request("POST", g(`/${noWebhooks.id}/members`), { token: root, body: { userId: adminUser.userId } })
    const viaGroup = await createAccount(server, root, { role: "viewer" })
    const webhookGroup = (await server.request("POST", g(), { token: root, body: { name: "Webhook robots" } })).body
    await server.request("POST", g(`/${webhookGroup.id}/policies`), { token: root, body: { action: "list", resource: "webhooks" } })
    await server.request("POST", g(`/${webhookGroup.id}/members`), { token: root, body: { serviceAccountId: viaGroup.id } })
    expectError(await server.request("POST", sa(`/${viaGroup.id}/rotate`), { token: adminUser.token }), 403, "PERMISSION_DENIED")
    // the owner (and the platform administrator) may do everything
    const owner = await createUser(server, root, "owner")
    expect((await server.request("PUT", sa(`/${owned.id}/name`), { token: owner.token, body: { name: "ok" } })).status).toBe(200)
    expect((await server.request("POST", sa(`/${owned.id}/rotate`), { token: root })).status).toBe(200)
    expect((await server.request("DELETE", sa(`/${owned.id}`), { token: owner.token })).status).toBe(204)
    // unknown ids stay 404, not 403
    expectError(await server.request("POST", sa("/999999/rotate"), { token: adminUser.token }), 404, "NOT_FOUND")
  })
})

describe("identity management needs a user token", () => {
  it("members and groups refuse service-account tokens that hold the permission; /me still answers", async () => {
    const robot = await createAccount(server, root, { role: "owner" })
    const me = await server.request("GET", `${base}/me`, { token: robot.token })
    expect(me.status).toBe(200)
    expect(me.body.permissions).toContain("workspace:members")
    const group = (await server.request("POST", g(), { token: root, body: { name: "Robot-proof" } })).body
    for (const [method, path, body] of [
      ["GET", `${base}/members`, undefined],
      ["POST", `${base}/members`, { username: "robot-made", password: "robot-made-pw", role: "owner" }],
      ["GET", `${base}/members/00000000-0000-4000-8000-000000000000`, undefined],
      ["PUT", `${base}/members/00000000-0000-4000-8000-000000000000/role`, { role: "owner" }],
      ["DELETE", `${base}/members/00000000-0000-4000-8000-000000000000`, undefined],
      ["GET", g(), undefined],
      ["POST", g(), { name: "Robots" }],
      ["GET", g(`/${group.id}`), undefined],
      ["POST", g(`/${group.id}/policies`), { action: "manage", resource: "*" }],
      ["POST", g(`/${group.id}/members`), { serviceAccountId: robot.id }],
      ["DELETE", g(`/${group.id}`), undefined]
    ] as const) {
      const res = await server.request(method, path, { token: robot.token, body })
      expectError(res, 403, "PERMISSION_DENIED")
      expect(res.body.message).toContain("user token")
    }
    expect((await server.request("GET", g(`/${group.id}`), { token: root })).body.policies.length).toBe(0)
  })
})

describe("nobody climbs through groups or roles", () => {
  it("an owner denied a permission cannot grant it by policy, membership, lifted deny or role", async () => {
    // an owner denied secrets:reveal by a group the platform administrator made
    const limited = await createUser(server, root, "owner")
    const noSecrets = (await server.request("POST", g(), { token: root, body: { name: "No secrets" } })).body
    const deny = await server.request("POST", g(`/${noSecrets.id}/policies`), {
      token: root,
      body: { action: "manage", resource: "secrets", effect: "deny" }
    })
    expect(deny.status).toBe(201)
    await server.request("POST", g(`/${noSecrets.id}/members`), { token: root, body: { userId: limited.userId } })
    const me = await server.request("GET", `${base}/me`, { token: limited.token })
    expect(me.body.permissions).not.toContain("secrets:reveal")
    expect(me.body.permissions).toContain("workspace:members")

    // a policy granting it
    const mine = await server.request("POST", g(), { token: limited.token, body: { name: "Mine" } })
    expect(mine.status).toBe(201)
    for (const body of [
      { action: "retrieve", resource: "secrets" },
      { action: "manage", resource: "*" }
    ]) {
      const res = await server.request("POST", g(`/${mine.body.id}/policies`), { token: limited.token, body })
      expectError(res, 403, "PERMISSION_DENIED")
      expect(res.body.message).toContain("secrets:reveal")
    }
    // policies within what it holds, and denies, are fine
    expect(
      (
        await server.request("POST", g(`/${mine.body.id}/policies`), {
          token: limited.token,
          body: { action: "list", resource: "records" }
        })
      ).status
    ).toBe(201)
    expect(
      (
        await server.request("POST", g(`/${mine.body.id}/policies`), {
          token: limited.token,
          body: { action: "retrieve", resource: "secrets", effect: "deny" }
        })
      ).status
    ).toBe(201)

    // membership of a group granting it
    const target = await createUser(server, root, "viewer")
    const revealers = (await server.request("POST", g(), { token: root, body: { name: "Revealers" } })).body
    await server.request("POST", g(`/${revealers.id}/policies`), { token: root, body: { action: "retrieve", resource: "secrets" } })
    expectError(
      await server.request("POST", g(`/${revealers.id}/members`), { token: limited.token, body: { userId: target.userId } }),
      403,
      "PERMISSION_DENIED"
    )
    const robot = await createAccount(server, root, {})
    expectError(
      await server.request("POST", g(`/${revealers.id}/members`), { token: limited.token, body: { serviceAccountId: robot.id } }),
      403,
      "PERMISSION_DENIED"
    )
    expect(
      (await server.request("POST", g(`/${mine.body.id}/members`), { token: limited.token, body: { userId: target.userId } })).status
    ).toBe(201)

    // lifting the deny: removing the policy, the member, or the group
    expectError(
      await server.request("DELETE", g(`/${noSecrets.id}/policies/${deny.body.id}`), { token: limited.token }),
      403,
      "PERMISSION_DENIED"
    )
    expectError(
      await server.request("DELETE", g(`/${noSecrets.id}/members/users/${limited.userId}`), { token: limited.token }),
      403,
      "PERMISSION_DENIED"
    )
    expectError(await server.request("DELETE", g(`/${noSecrets.id}`), { token: limited.token }), 403, "PERMISSION_DENIED")
    expect((await server.request("GET", `${base}/me`, { token: limited.token })).body.permissions).not.toContain("secrets:reveal")

    // roles holding it
    expectError(
      await server.request("PUT", `${base}/members/${target.userId}/role`, { token: limited.token, body: { role: "admin" } }),
      403,
      "PERMISSION_DENIED"
    )
    expectError(
      await server.request("POST", `${base}/members`, {
        token: limited.token,
        body: { username: `made-by-limited-${Date.now()}`, password: "long-enough-pw", role: "owner" }
      }),
      403,
      "PERMISSION_DENIED"
    )
    expect(
      (await server.request("PUT", `${base}/members/${target.userId}/role`, { token: limited.token, body: { role: "developer" } })).status
    ).toBe(200)

    // the platform administrator may do it all
    expect((await server.request("POST", g(`/${revealers.id}/members`), { token: root, body: { userId: target.userId } })).status).toBe(201)
    expect((await server.request("DELETE", g(`/${noSecrets.id}/members/users/${limited.userId}`), { token: root })).status).toBe(204)
    // and once the deny is lifted, the owner holds it again and may pass it on
    expect((await server.request("GET", `${base}/me`, { token: limited.token })).body.permissions).toContain("secrets:reveal")
    expect(
      (
        await server.request("POST", g(`/${mine.body.id}/policies`), {
          token: limited.token,
          body: { action: "retrieve", resource: "secrets" }
        })
      ).status
    ).toBe(201)
  })
})

describe("token hygiene", () => {
  it("a service account asks only for openid and its own workspace", async () => {
    const account = await createAccount(server, root, { role: "viewer" })
    const ask = (scope: string) =>
      tokenRequest(server, { grant_type: "client_credentials", client_id: account.clientId, client_secret: account.clientSecret, scope })
    for (const scope of ["openid", "workspace:default", "openid  workspace:default"]) {
      expect((await ask(scope)).status, scope).toBe(200)
    }
    for (const scope of ["openid admin", "offline_access", "openid workspace:default platform:admin", "workspace:other"]) {
      const res = await ask(scope)
      expect(res.status, scope).toBe(400)
      expect(res.body.error).toBe("invalid_scope")
      expect(res.body.statusCode).toBe(400)
    }
    const created = await server.request("POST", sa(), { token: root, body: { name: "scoped", scope: "openid admin" } })
    expectError(created, 400, "VALIDATION_ERROR")
    expect(created.body.details[0].field).toBe("scope")
  })

  it("tokens issued before a password change are refused after it, on every route", async () => {
    const user = await createUser(server, root, "developer")
    const second = await tokenRequest(server, { grant_type: "password", username: user.username, password: user.password })
    expect(second.status).toBe(200)
    const changed = await server.request("PUT", `${base}/me/password`, {
      token: user.token,
      body: { currentPassword: user.password, newPassword: "a-brand-new-password" }
    })
    expect(changed.status, changed.text).toBe(204)
    for (const token of [user.token, second.body.access_token as string]) {
      expectError(await server.request("GET", `${base}/me`, { token }), 401, "UNAUTHORIZED")
      const read = await server.request("GET", `${base}/records?structureId=x`, { token })
      expect(read.status).toBe(401)
      expect(read.body.code).toBe("UNAUTHORIZED")
    }
    const fresh = await tokenRequest(server, { grant_type: "password", username: user.username, password: "a-brand-new-password" })
    expect(fresh.status).toBe(200)
    expect((await server.request("GET", `${base}/me`, { token: fresh.body.access_token })).status).toBe(200)
  })
})

describe("adding members tells nothing about other workspaces", () => {
  it("an existing user of another workspace answers like a new username", async () => {
    // an owner of a new workspace who is no platform administrator
    await server.request("POST", "/workspace/api/v1/workspaces", { token: root, body: { slug: "elsewhere" } })
    const rootThere = await server.userToken("admin", server.adminPassword, "elsewhere")
    const owner = await createUser(server, rootThere, "owner", "elsewhere")
    const stranger = await createUser(server, root, "viewer") // exists, in "default" only
    const add = (body: Record<string, unknown>) =>
      server.request("POST", "/workspace/elsewhere/api/v1/members", { token: owner.token, body })

    const unknownNoPassword = await add({ username: `nobody-${Date.now()}`, role: "viewer" })
    const existingNoPassword = await add({ username: stranger.username, role: "viewer" })
    expectError(unknownNoPassword, 400, "VALIDATION_ERROR")
    expectError(existingNoPassword, 400, "VALIDATION_ERROR")
    expect(existingNoPassword.body.message).toBe(unknownNoPassword.body.message)
    expect(existingNoPassword.body.details).toStrictEqual(unknownNoPassword.body.details)

    const existingWithPassword = await add({ username: stranger.username, password: "a-guess-at-it", role: "viewer" })
    expectError(existingWithPassword, 409, "CONFLICT")
    expect(existingWithPassword.body.message).not.toContain("exists")
    expect(existingWithPassword.body.message).not.toContain("member")
    expect(existingWithPassword.body.message).not.toContain("workspace")
    // the stranger did not join, and their password still works
    const login = await tokenRequest(server, {
      grant_type: "password",
      username: stranger.username,
      password: stranger.password,
      scope: "openid workspace:elsewhere"
    })
    expect(login.body.error).toBe("invalid_scope")

    // someone who already sees the user (an owner of a workspace they are in, or a platform administrator) adds them
    const both = await createUser(server, root, "owner")
    await server.request("POST", "/workspace/elsewhere/api/v1/members", {
      token: rootThere,
      body: { username: both.username, role: "owner" }
    })
    const bothThere = await server.userToken(both.username, both.password, "elsewhere")
    const added = await server.request("POST", "/workspace/elsewhere/api/v1/members", {
      token: bothThere,
      body: { username: stranger.username, role: "viewer" }
    })
    expect(added.status, added.text).toBe(201)
  })
})

describe("group changes racing a delete", () => {
  it("members and policies added while the group or the account goes: 201 or 404, never a 500", async () => {
    for (let round = 0; round < 6; round++) {
      const group = await server.request("POST", g(), { token: root, body: { name: `race-${round}` } })
      expect(group.status, group.text).toBe(201)
      const accounts = await Promise.all([0, 1, 2, 3].map(() => createAccount(server, root, { role: "viewer" })))
      const adds = accounts.map((a) =>
        server.request("POST", g(`/${group.body.id}/members`), { token: root, body: { serviceAccountId: a.id } })
      )
      const policy = server.request("POST", g(`/${group.body.id}/policies`), {
        token: root,
        body: { action: "list", resource: "records" }
      })
      const goneAccount = server.request("DELETE", sa(`/${accounts[0]!.id}`), { token: root })
      const goneGroup = server.request("DELETE", g(`/${group.body.id}`), { token: root })
      const answers = await Promise.all([...adds, policy, goneAccount, goneGroup])
      for (const res of answers.slice(0, 5)) {
        expect([200, 201, 404], res.text).toContain(res.status)
        if (res.status === 404) expectError(res, 404, "NOT_FOUND")
      }
      expect(answers[5]!.status, answers[5]!.text).toBe(204)
      expect(answers[6]!.status, answers[6]!.text).toBe(204)
      expect((await server.request("GET", g(`/${group.body.id}`), { token: root })).status).toBe(404)
    }
  })
})

describe("a group deleted as soon as it exists", () => {
  it("its create still answers 201 with the group as created", async () => {
    for (let round = 0; round < 8; round++) {
      const name = `fleeting-${round}-${Math.random().toString(36).slice(2, 8)}`
      const created = server.request("POST", g(), { token: root, body: { name, description: "gone soon" } })
      let deleted = 0
      for (let tries = 0; tries < 200 && deleted === 0; tries++) {
        const list = await server.request("GET", `${g()}?limit=100`, { token: root })
        const found = list.body.data?.find((x: any) => x.name === name)
        if (found !== undefined) deleted = (await server.request("DELETE", g(`/${found.id}`), { token: root })).status
      }
      const res = await created
      expect(res.status, res.text).toBe(201)
      expect(res.body).toMatchObject({ name, description: "gone soon", policies: [], members: [] })
      expect(deleted).toBe(204)
    }
    expect(server.output()).not.toContain("request failed")
  })
})

describe("member changes racing a remove", () => {
  it("adding a user back while it is removed: 201 or 409, and the remove 204 or 404, never a 500", async () => {
    for (let round = 0; round < 6; round++) {
      const username = `racer-${round}-${Math.random().toString(36).slice(2, 8)}`
      const first = await server.request("POST", `${base}/members`, {
        token: root,
        body: { username, password: `pw-${Math.random().toString(36).slice(2)}-long`, role: "viewer" }
      })
      expect(first.status, first.text).toBe(201)
      const userId = first.body.userId as string
      const requests = Array.from({ length: 12 }, (_, i) =>
        i % 3 === 0
          ? server.request("DELETE", `${base}/members/${userId}`, { token: root })
          : i % 3 === 1
            ? server.request("POST", `${base}/members`, { token: root, body: { username, role: "viewer" } })
            : server.request("PUT", `${base}/members/${userId}/role`, { token: root, body: { role: "developer" } })
      )
      const answers = await Promise.all(requests)
      answers.forEach((res, i) => {
        const ok = i % 3 === 0 ? [204, 404] : i % 3 === 1 ? [201, 409] : [200, 404]
        expect(ok, res.text).toContain(res.status)
        if (res.status >= 400) expectError(res, res.status)
        if (res.status === 201) expect(res.body).toMatchObject({ userId, username, role: "viewer" })
      })
    }
    expect(server.output()).not.toContain("request failed")
  })
})
