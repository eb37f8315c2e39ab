// Identity end to end over HTTP: bootstrap, the token endpoint (both grants, RFC 6749 errors), JWKS verified by an
// independent JOSE verifier, workspaces, members, service accounts (every route of README: Identity and access ›
// Routes, and its errors), IAM groups and policies, signing-key rotation, and that no secret leaks into answers or logs.
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { ApiClient } from "@troupe/client/ApiClient"
import { clientCredentials, clientCredentialsFetch } from "@troupe/client/TokenSource"
import { Effect } from "effect"
import { FetchHttpClient } from "effect/http"
import * as Jose from "jose"
import { claims, createAccount, createUser, clientCredentialsToken, tokenRequest } from "./support/IdentityHelpers.ts"
import { startServer, type TestServer } from "./support/TestServer.ts"

let server: TestServer
let admin: string
let base: string
const secretsSeen: Array<string> = []

beforeAll(async () => {
  server = await startServer()
  admin = await server.adminToken()
  base = server.base
})

afterAll(async () => {
  await server?.close()
})

const expectError = (res: { status: number; body: any }, status: number, code?: string) => {
  expect(res.status, JSON.stringify(res.body)).toBe(status)
  expect(res.body.statusCode).toBe(status)
  expect(res.body.message).toBeTypeOf("string")
  expect(Array.isArray(res.body.details)).toBe(true)
  if (code !== undefined) expect(res.body.code).toBe(code)
}

describe("bootstrap and the password grant", () => {
  it("admin owns the default workspace and is a platform administrator", async () => {
    const me = await server.request("GET", `${base}/me`, { token: admin })
    expect(me.status).toBe(200)
    expect(me.body.kind).toBe("user")
    expect(me.body.name).toBe("admin")
    expect(me.body.workspace).toBe("default")
    expect(me.body.role).toBe("owner")
    expect(me.body.isPlatformAdmin).toBe(true)
    expect(me.body.permissions).toContain("workspace:members")
  })

  it("issues a user token with the contract's fields and claims", async () => {
    const res = await tokenRequest(server, {
      grant_type: "password",
      username: "admin",
      password: server.adminPassword,
      scope: "openid workspace:default"
    })
    expect(res.status).toBe(200)
    expect(res.body.token_type).toBe("Bearer")
    expect(res.body.expires_in).toBe(25200)
    expect(res.body.scope).toBe("openid workspace:default")
    expect(res.headers.get("cache-control")).toBe("no-store")
    const c = claims(res.body.access_token)
    expect(c.workspace).toBe("default")
    expect(c.isServiceAccount).toBe("false")
    expect(c.exp! - c.iat!).toBe(25200)
    expect(Array.isArray(c.groups)).toBe(true)
  })

  it("without a workspace scope uses the bootstrap workspace; JSON bodies work too", async () => {
    const res = await fetch(`${server.baseUrl}/oidc/token`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ grant_type: "password", username: "admin", password: server.adminPassword })
    })
    expect(res.status).toBe(200)
    const body = (await res.json()) as { access_token: string }
    expect(claims(body.access_token).workspace).toBe("default")
  })

  it("answers RFC 6749 errors", async () => {
    const bad = await tokenRequest(server, { grant_type: "password", username: "admin", password: "wrong-password" })
    expect(bad.status).toBe(401)
    expect(bad.body.error).toBe("invalid_client")
    expect(bad.body.error_description).toBeTypeOf("string")
    expect(bad.body.message).toBeTypeOf("string")
    const unknown = await tokenRequest(server, { grant_type: "password", username: "nobody-here", password: "whatever123" })
    expect(unknown.status).toBe(401)
    expect(unknown.body.error).toBe("invalid_client")
    // same answer for an unknown user and a wrong password: no user enumeration
    expect(unknown.body.error_description).toBe(bad.body.error_description)
    const missing = await tokenRequest(server, { grant_type: "password", username: "admin" })
    expect(missing.status).toBe(400)
    expect(missing.body.error).toBe("invalid_request")
    const noGrant = await tokenRequest(server, { username: "admin" })
    expect(noGrant.status).toBe(400)
    expect(noGrant.body.error).toBe("invalid_request")
    const grant = await tokenRequest(server, { grant_type: "authorization_code", code: "x" })
    expect(grant.status).toBe(400)
    expect(grant.body.error).toBe("unsupported_grant_type")
    const scope = await tokenRequest(server, {
      grant_type: "password",
      username: "admin",
      password: server.adminPassword,
      scope: "openid workspace:no-such-workspace"
    })
    expect(scope.status).toBe(400)
    expect(scope.body.error).toBe("invalid_scope")
    const repeated = await fetch(`${server.baseUrl}/oidc/token`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: "grant_type=password&grant_type=client_credentials"
    })
    expect(repeated.status).toBe(400)
    expect(((await repeated.json()) as any).error).toBe("invalid_request")
    const text = await fetch(`${server.baseUrl}/oidc/token`, {
      method: "POST",
      headers: { "content-type": "text/plain" },
      body: "grant_type=password"
    })
    expect(text.status).toBe(400)
    expect(((await text.json()) as any).error).toBe("invalid_request")
  })
})

describe("tokens on guarded routes", () => {
  it("401 without a token, with a malformed, forged or expired one", async () => {
    expectError(await server.request("GET", `${base}/me`), 401, "UNAUTHORIZED")
    expectError(await server.request("GET", `${base}/me`, { token: "not-a-jwt" }), 401, "UNAUTHORIZED")
    expectError(await server.request("GET", `${base}/me`, { headers: { authorization: "Basic YTpi" } }), 401, "UNAUTHORIZED")
    // signed by a key the server does not know
    const stranger = await Jose.generateKeyPair("ES256")
    const forged = await new Jose.SignJWT({ workspace: "default", isServiceAccount: "false", groups: [] })
      .setProtectedHeader({ alg: "ES256", kid: claims(admin).jti as string })
      .setSubject(claims(admin).sub!)
      .setIssuer(claims(admin).iss!)
      .setAudience(claims(admin).aud as string)
      .setIssuedAt()
      .setExpirationTime("1h")
      .sign(stranger.privateKey)
    expectError(await server.request("GET", `${base}/me`, { token: forged }), 401, "UNAUTHORIZED")
    // a genuine token with its payload altered
    const [h, , s] = admin.split(".")
    const payload = Buffer.from(JSON.stringify({ ...claims(admin), workspace: "other" })).toString("base64url")
    expectError(await server.request("GET", `${base}/me`, { token: `${h}.${payload}.${s}` }), 401)
    // alg none
    const none = new Jose.UnsecuredJWT({ workspace: "default", isServiceAccount: "false" })
      .setSubject(claims(admin).sub!)
      .setIssuer(claims(admin).iss!)
      .setAudience(claims(admin).aud as string)
      .setExpirationTime("1h")
      .encode()
    expectError(await server.request("GET", `${base}/me`, { token: none }), 401)
  })

  it("403 PERMISSION_DENIED for a token of another workspace", async () => {
    const res = await server.request("GET", "/workspace/another-ws/api/v1/me", { token: admin })
    expectError(res, 403, "PERMISSION_DENIED")
    // also through the /data and /iam aliases
    expectError(
      await server.request("GET", "/iam/workspace/another-ws/api/v1/service-accounts", { token: admin }),
      403,
      "PERMISSION_DENIED"
    )
  })
})

describe("JWKS and discovery", () => {
  it("an issued token verifies against /oidc/jwks with an independent verifier", async () => {
    const discovery = await server.request("GET", "/.well-known/openid-configuration")
    expect(discovery.status).toBe(200)
    const issuer = discovery.body.issuer as string
    expect(discovery.body.token_endpoint).toBe(`${issuer}/oidc/token`)
    expect(discovery.body.jwks_uri).toBe(`${issuer}/oidc/jwks`)
    expect(discovery.body.grant_types_supported).toContain("client_credentials")
    const jwks = await server.request("GET", "/oidc/jwks")
    expect(jwks.status).toBe(200)
    expect(jwks.body.keys.length).toBeGreaterThanOrEqual(1)
    for (const key of jwks.body.keys) {
      expect(key.d, "a private key component is published").toBeUndefined()
      expect(key.alg).toBe("ES256")
    }
    const account = await createAccount(server, admin, { role: "viewer" })
    const verifier = Jose.createRemoteJWKSet(new URL(`${server.baseUrl}/oidc/jwks`))
    const { payload, protectedHeader } = await Jose.jwtVerify(account.token, verifier, {
      issuer,
      audience: issuer,
      algorithms: ["ES256"]
    })
    expect(protectedHeader.alg).toBe("ES256")
    expect(payload.sub).toBe(account.clientId)
    expect(payload.workspace).toBe("default")
    expect(payload.isServiceAccount).toBe("true")
    expect(payload.groups).toStrictEqual([])
    expect(payload.exp! - payload.iat!).toBe(25200)
  })
})

describe("workspaces (platform administrators)", () => {
  it("create, list, get, delete with slug rules", async () => {
    const created = await server.request("POST", "/workspace/api/v1/workspaces", {
      token: admin,
      body: { slug: "team-alpha", name: "Team Alpha" }
    })
    expect(created.status, created.text).toBe(201)
    expect(created.body.slug).toBe("team-alpha")
    expect(created.body.name).toBe("Team Alpha")
    expect(created.body.createdAt).toBeTypeOf("string")
    expectError(
      await server.request("POST", "/workspace/api/v1/workspaces", { token: admin, body: { slug: "team-alpha" } }),
      409,
      "CONFLICT"
    )
    for (const slug of ["Team", "team_alpha", "-team", "team-", "a--b", "", "api", "x".repeat(64)]) {
      expectError(await server.request("POST", "/workspace/api/v1/workspaces", { token: admin, body: { slug } }), 400)
    }
    expectError(await server.request("POST", "/workspace/api/v1/workspaces", { token: admin, body: {} }), 400, "VALIDATION_ERROR")
    const list = await server.request("GET", "/workspace/api/v1/workspaces?limit=100", { token: admin })
    expect(list.status).toBe(200)
    expect(list.body.data.map((w: any) => w.slug)).toEqual(expect.arrayContaining(["default", "team-alpha"]))
    expect(list.body.page).toBe(1)
    expect(list.body.limit).toBe(100)
    expect(list.body.total).toBeGreaterThanOrEqual(2)
    expectError(await server.request("GET", "/workspace/api/v1/workspaces?limit=0", { token: admin }), 400)
    const got = await server.request("GET", "/workspace/api/v1/workspaces/team-alpha", { token: admin })
    expect(got.status).toBe(200)
    expect(got.body.slug).toBe("team-alpha")
    expectError(await server.request("GET", "/workspace/api/v1/workspaces/nope", { token: admin }), 404, "NOT_FOUND")

    // the creator owns it and can sign in to it; the token is useless on the default workspace
    const alpha = await server.userToken("admin", server.adminPassword, "team-alpha")
    const me = await server.request("GET", "/workspace/team-alpha/api/v1/me", { token: alpha })
    expect(me.body.role).toBe("owner")
    expectError(await server.request("GET", `${base}/me`, { token: alpha }), 403, "PERMISSION_DENIED")
    const sa = await createAccount(server, alpha, { role: "viewer" }, "team-alpha")

    expect((await server.request("DELETE", "/workspace/api/v1/workspaces/team-alpha", { token: admin })).status).toBe(204)
    expectError(await server.request("GET", "/workspace/api/v1/workspaces/team-alpha", { token: admin }), 404)
    expectError(await server.request("DELETE", "/workspace/api/v1/workspaces/team-alpha", { token: admin }), 404)
    // everything inside went with it
    expectError(await server.request("GET", "/workspace/team-alpha/api/v1/me", { token: sa.token }), 401)
    const again = await tokenRequest(server, { grant_type: "client_credentials", client_id: sa.clientId, client_secret: sa.clientSecret })
    expect(again.status).toBe(401)
  })

  it("is refused to everyone but platform administrators", async () => {
    const owner = await createUser(server, admin, "owner")
    expectError(await server.request("GET", "/workspace/api/v1/workspaces", { token: owner.token }), 403, "PERMISSION_DENIED")
    expectError(
      await server.request("POST", "/workspace/api/v1/workspaces", { token: owner.token, body: { slug: "mine" } }),
      403,
      "PERMISSION_DENIED"
    )
    expectError(await server.request("GET", "/workspace/api/v1/workspaces"), 401)
  })
})

describe("members", () => {
  it("owners add users, set roles and remove members", async () => {
    const add = await server.request("POST", `${base}/members`, {
      token: admin,
      body: { username: "carol", password: "carol-password-1", role: "viewer" }
    })
    expect(add.status, add.text).toBe(201)
    expect(add.body.username).toBe("carol")
    expect(add.body.role).toBe("viewer")
    expect(add.body).not.toHaveProperty("password")
    expect(add.body).not.toHaveProperty("passwordHash")
    const carolId = add.body.userId as string
    const carol = await server.userToken("carol", "carol-password-1")
    expect((await server.request("GET", `${base}/me`, { token: carol })).body.role).toBe("viewer")

    expectError(
      await server.request("POST", `${base}/members`, { token: admin, body: { username: "carol", role: "viewer" } }),
      409,
      "CONFLICT"
    )
    expectError(
      await server.request("POST", `${base}/members`, {
        token: admin,
        body: { username: "carol", password: "another-pass-1", role: "admin" }
      }),
      409
    )
    expectError(await server.request("POST", `${base}/members`, { token: admin, body: { username: "dave", role: "viewer" } }), 400)
    expectError(
      await server.request("POST", `${base}/members`, { token: admin, body: { username: "dave", password: "short", role: "viewer" } }),
      400,
      "VALIDATION_ERROR"
    )
    expectError(
      await server.request("POST", `${base}/members`, {
        token: admin,
        body: { username: "dave", password: "long-enough-1", role: "king" }
      }),
      400,
      "VALIDATION_ERROR"
    )
    expectError(
      await server.request("POST", `${base}/members`, {
        token: admin,
        body: { username: "bad name", password: "long-enough-1", role: "viewer" }
      }),
      400
    )

    const list = await server.request("GET", `${base}/members?page=1&limit=50`, { token: admin })
    expect(list.status).toBe(200)
    expect(list.body.data.map((m: any) => m.username)).toEqual(expect.arrayContaining(["admin", "carol"]))
    expect(list.body.page).toBe(1)
    expect(list.body.limit).toBe(50)
    const got = await server.request("GET", `${base}/members/${carolId}`, { token: admin })
    expect(got.body.username).toBe("carol")
    expectError(await server.request("GET", `${base}/members/00000000-0000-4000-8000-000000000000`, { token: admin }), 404)
    expectError(await server.request("GET", `${base}/members/not-a-uuid`, { token: admin }), 400, "VALIDATION_ERROR")

    // a role change applies to tokens already issued
    expectError(await server.request("POST", `${base}/service-accounts`, { token: carol, body: { name: "x" } }), 403)
    const promoted = await server.request("PUT", `${base}/members/${carolId}/role`, { token: admin, body: { role: "admin" } })
    expect(promoted.status).toBe(200)
    expect(promoted.body.role).toBe("admin")
    expect((await server.request("GET", `${base}/me`, { token: carol })).body.role).toBe("admin")
    expectError(await server.request("PUT", `${base}/members/${carolId}/role`, { token: admin, body: { role: "god" } }), 400)
    expectError(
      await server.request("PUT", `${base}/members/00000000-0000-4000-8000-000000000000/role`, { token: admin, body: { role: "viewer" } }),
      404
    )
    // members management is the owners' alone
    expectError(await server.request("GET", `${base}/members`, { token: carol }), 403, "PERMISSION_DENIED")

    expect((await server.request("DELETE", `${base}/members/${carolId}`, { token: admin })).status).toBe(204)
    expectError(await server.request("DELETE", `${base}/members/${carolId}`, { token: admin }), 404)
    // the removed member's token stops working at once, and signing in to this workspace is refused
    expectError(await server.request("GET", `${base}/me`, { token: carol }), 401)
    const login = await tokenRequest(server, {
      grant_type: "password",
      username: "carol",
      password: "carol-password-1",
      scope: "openid workspace:default"
    })
    expect(login.status).toBe(400)
    expect(login.body.error).toBe("invalid_scope")

    // an existing user is added to another workspace without a password
    await server.request("POST", "/workspace/api/v1/workspaces", { token: admin, body: { slug: "team-beta" } })
    const adminBeta = await server.userToken("admin", server.adminPassword, "team-beta")
    const readd = await server.request("POST", "/workspace/team-beta/api/v1/members", {
      token: adminBeta,
      body: { username: "carol", role: "developer" }
    })
    expect(readd.status, readd.text).toBe(201)
    const carolBeta = await server.userToken("carol", "carol-password-1", "team-beta")
    expect((await server.request("GET", "/workspace/team-beta/api/v1/me", { token: carolBeta })).body.role).toBe("developer")
  })

  it("a workspace keeps at least one owner", async () => {
    const me = await server.request("GET", `${base}/me`, { token: admin })
    const adminId = me.body.id as string
    // admin is not the only owner if earlier tests added one; make a fresh workspace to be sure
    await server.request("POST", "/workspace/api/v1/workspaces", { token: admin, body: { slug: "solo" } })
    const solo = await server.userToken("admin", server.adminPassword, "solo")
    expectError(
      await server.request("PUT", `/workspace/solo/api/v1/members/${adminId}/role`, { token: solo, body: { role: "admin" } }),
      409,
      "CONFLICT"
    )
    expectError(await server.request("DELETE", `/workspace/solo/api/v1/members/${adminId}`, { token: solo }), 409, "CONFLICT")
    // with a second owner, the first may step down
    const other = await createUser(server, solo, "owner", "solo")
    const down = await server.request("PUT", `/workspace/solo/api/v1/members/${adminId}/role`, { token: solo, body: { role: "viewer" } })
    expect(down.status).toBe(200)
    expectError(await server.request("DELETE", `/workspace/solo/api/v1/members/${other.userId}`, { token: other.token }), 409, "CONFLICT")
  })

  it("users change their own password; service accounts have none", async () => {
    const user = await createUser(server, admin, "developer")
    expectError(
      await server.request("PUT", `${base}/me/password`, {
        token: user.token,
        body: { currentPassword: "wrong-one", newPassword: "brand-new-pass" }
      }),
      400
    )
    const ok = await server.request("PUT", `${base}/me/password`, {
      token: user.token,
      body: { currentPassword: user.password, newPassword: "brand-new-pass" }
    })
    expect(ok.status, ok.text).toBe(204)
    const old = await tokenRequest(server, { grant_type: "password", username: user.username, password: user.password })
    expect(old.status).toBe(401)
    const fresh = await tokenRequest(server, { grant_type: "password", username: user.username, password: "brand-new-pass" })
    expect(fresh.status).toBe(200)
    const sa = await createAccount(server, admin, { role: "viewer" })
    expectError(
      await server.request("PUT", `${base}/me/password`, {
        token: sa.token,
        body: { currentPassword: "x", newPassword: "brand-new-pass" }
      }),
      403
    )
  })
})

describe("service accounts", () => {
  const sa = (path = "") => `${base}/service-accounts${path}`

  it("create answers 201 with the secret once; get and list never show it", async () => {
    const res = await server.request("POST", sa(), {
      token: admin,
      body: { name: "ci-runner", description: "builds", permissions: ["read:records", "write:records"] }
    })
    expect(res.status, res.text).toBe(201)
    const b = res.body
    expect(b.id).toBeTypeOf("number")
    expect(b.clientId).toMatch(/^ci_[0-9a-f]{24}$/)
    expect(b.clientSecret).toMatch(/^sk_[0-9a-f]{64}$/)
    secretsSeen.push(b.clientSecret)
    expect(b.name).toBe("ci-runner")
    expect(b.description).toBe("builds")
    expect(b.workspace).toBe("default")
    expect(b.grant_types).toStrictEqual(["client_credentials"])
    expect(b.scope).toBe("openid")
    expect(b.permissions).toStrictEqual(["read:records", "write:records"])
    expect(b.role).toBeNull()
    expect(b.createdAt).toBeTypeOf("string")
    expect(b.createdBy).toBe(claims(admin).sub)

    const got = await server.request("GET", sa(`/${b.id}`), { token: admin })
    expect(got.status).toBe(200)
    expect(got.body.clientId).toBe(b.clientId)
    expect(got.body).not.toHaveProperty("clientSecret")
    expect(got.text).not.toContain(b.clientSecret)
    expect(got.text).not.toContain("secret_hash")

    const list = await server.request("GET", sa("?page=1&limit=2"), { token: admin })
    expect(list.status).toBe(200)
    expect(Object.keys(list.body).sort()).toEqual(["data", "limit", "page", "total"])
    expect(list.body.page).toBe(1)
    expect(list.body.limit).toBe(2)
    expect(list.body.data.length).toBeLessThanOrEqual(2)
    expect(list.body.total).toBeGreaterThanOrEqual(1)
    expect(list.text).not.toContain("clientSecret")
    const page2 = await server.request("GET", sa(`?page=2&limit=1`), { token: admin })
    expect(page2.body.page).toBe(2)
    expectError(await server.request("GET", sa("?page=0"), { token: admin }), 400)
    expectError(await server.request("GET", sa("?limit=1000"), { token: admin }), 400)

    // role form
    const roleForm = await server.request("POST", sa(), {
      token: admin,
      body: { name: "deployer", role: "developer", scope: "openid workspace:default" }
    })
    expect(roleForm.status).toBe(201)
    expect(roleForm.body.role).toBe("developer")
    expect(roleForm.body.scope).toBe("openid workspace:default")
    secretsSeen.push(roleForm.body.clientSecret)
  })

  it("create rejects bad input with 400 and details", async () => {
    const bad = async (body: unknown) => {
      const res = await server.request("POST", sa(), { token: admin, body })
      expectError(res, 400)
      expect(res.body.details.length).toBeGreaterThanOrEqual(1)
      return res
    }
    await bad({})
    await bad({ name: "   " })
    await bad({ name: 42 })
    await bad({ name: "x", role: "developer", permissions: ["read:records"] })
    await bad({ name: "x", permissions: ["read:everything"] })
    await bad({ name: "x", role: "emperor" })
    await bad({ name: "x", grant_types: ["password"] })
    await bad({ name: "x", scope: "openid workspace:elsewhere" })
    const malformed = await server.request("POST", sa(), {
      token: admin,
      raw: "{not json",
      headers: { "content-type": "application/json" }
    })
    expect(malformed.status).toBe(400)
  })

  it("nobody grants what they do not hold; service-account tokens cannot manage accounts", async () => {
    const adminUser = await createUser(server, admin, "admin")
    const ok = await server.request("POST", sa(), { token: adminUser.token, body: { name: "by-admin", role: "admin" } })
    expect(ok.status).toBe(201)
    expectError(
      await server.request("POST", sa(), { token: adminUser.token, body: { name: "too-much", role: "owner" } }),
      403,
      "PERMISSION_DENIED"
    )
    const robot = await createAccount(server, admin, { role: "owner" })
    for (const [method, path] of [
      ["GET", sa()],
      ["POST", sa()],
      ["GET", sa(`/${ok.body.id}`)],
      ["POST", sa(`/${ok.body.id}/rotate`)]
    ] as const) {
      const body = method === "POST" ? { name: "x" } : undefined
      expectError(await server.request(method, path, { token: robot.token, body }), 403, "PERMISSION_DENIED")
    }
    const viewer = await createUser(server, admin, "viewer")
    expectError(await server.request("GET", sa(), { token: viewer.token }), 403, "PERMISSION_DENIED")
  })

  it("name and description updates; 404 and 400 for unknown and malformed ids", async () => {
    const account = await createAccount(server, admin, { role: "viewer", description: "old" })
    const named = await server.request("PUT", sa(`/${account.id}/name`), { token: admin, body: { name: "renamed" } })
    expect(named.status).toBe(200)
    expect(named.body.name).toBe("renamed")
    const described = await server.request("PUT", sa(`/${account.id}/description`), { token: admin, body: { description: "new words" } })
    expect(described.status).toBe(200)
    expect(described.body.description).toBe("new words")
    expect(described.body.name).toBe("renamed")
    const cleared = await server.request("PUT", sa(`/${account.id}/description`), { token: admin, body: { description: null } })
    expect(cleared.body.description).toBeNull()
    expectError(await server.request("PUT", sa(`/${account.id}/name`), { token: admin, body: {} }), 400)
    expectError(await server.request("PUT", sa(`/${account.id}/name`), { token: admin, body: { name: "" } }), 400)
    // the account still signs in under its new name
    expect((await server.request("GET", `${base}/me`, { token: account.token })).body.name).toBe("renamed")
    for (const [method, suffix, body] of [
      ["GET", "", undefined],
      ["PUT", "/name", { name: "x" }],
      ["PUT", "/description", { description: "x" }],
      ["POST", "/rotate", undefined],
      ["PUT", "/rotate", undefined],
      ["POST", "/revoke", undefined],
      ["DELETE", "", undefined]
    ] as const) {
      expectError(await server.request(method, sa(`/999999${suffix}`), { token: admin, body }), 404, "NOT_FOUND")
      expectError(await server.request(method, sa(`/abc${suffix}`), { token: admin, body }), 400, "VALIDATION_ERROR")
      expectError(await server.request(method, sa(`/1.5${suffix}`), { token: admin, body }), 400)
      expectError(await server.request(method, sa(`/99999999999${suffix}`), { token: admin, body }), 400)
    }
    // an account of another workspace is not found from here
    const betaToken = await server.userToken("admin", server.adminPassword, "team-beta")
    const foreign = await createAccount(server, betaToken, { role: "viewer" }, "team-beta")
    expectError(await server.request("GET", sa(`/${foreign.id}`), { token: admin }), 404)
    expectError(await server.request("DELETE", sa(`/${foreign.id}`), { token: admin }), 404)
    // and its token is useless here
    expectError(await server.request("GET", `${base}/me`, { token: foreign.token }), 403, "PERMISSION_DENIED")
  })

  it("rotate invalidates the old secret and the tokens issued under it at once (POST and PUT)", async () => {
    for (const method of ["POST", "PUT"] as const) {
      const account = await createAccount(server, admin, { role: "viewer" })
      expect((await server.request("GET", `${base}/me`, { token: account.token })).status).toBe(200)
      const rotated = await server.request(method, sa(`/${account.id}/rotate`), { token: admin })
      expect(rotated.status, rotated.text).toBe(200)
      expect(Object.keys(rotated.body).sort()).toEqual(["clientId", "clientSecret", "id", "name", "updatedAt", "workspace"])
      expect(rotated.body.clientId).toBe(account.clientId)
      expect(rotated.body.clientSecret).toMatch(/^sk_[0-9a-f]{64}$/)
      expect(rotated.body.clientSecret).not.toBe(account.clientSecret)
      secretsSeen.push(rotated.body.clientSecret)
      expectError(await server.request("GET", `${base}/me`, { token: account.token }), 401, "UNAUTHORIZED")
      const old = await tokenRequest(server, {
        grant_type: "client_credentials",
        client_id: account.clientId,
        client_secret: account.clientSecret
      })
      expect(old.status).toBe(401)
      expect(old.body.error).toBe("invalid_client")
      const fresh = await clientCredentialsToken(server, account.clientId, rotated.body.clientSecret)
      expect((await server.request("GET", `${base}/me`, { token: fresh })).status).toBe(200)
    }
  })

  it("revoke disables the account and its tokens; rotate brings it back with a new secret", async () => {
    const account = await createAccount(server, admin, { role: "viewer" })
    const revoked = await server.request("POST", sa(`/${account.id}/revoke`), { token: admin })
    expect(revoked.status).toBe(200)
    expect(revoked.body.status).toBe("revoked")
    expectError(await server.request("GET", `${base}/me`, { token: account.token }), 401)
    const refused = await tokenRequest(server, {
      grant_type: "client_credentials",
      client_id: account.clientId,
      client_secret: account.clientSecret
    })
    expect(refused.status).toBe(401)
    expect(refused.body.error).toBe("invalid_client")
    expect((await server.request("GET", sa(`/${account.id}`), { token: admin })).body.status).toBe("revoked")
    const rotated = await server.request("POST", sa(`/${account.id}/rotate`), { token: admin })
    expect((await server.request("GET", sa(`/${account.id}`), { token: admin })).body.status).toBe("active")
    const token = await clientCredentialsToken(server, account.clientId, rotated.body.clientSecret)
    expect((await server.request("GET", `${base}/me`, { token })).status).toBe(200)
  })

  it("delete removes the account; its tokens and secret stop working", async () => {
    const account = await createAccount(server, admin, { role: "viewer" })
    expect((await server.request("DELETE", sa(`/${account.id}`), { token: admin })).status).toBe(204)
    expectError(await server.request("GET", sa(`/${account.id}`), { token: admin }), 404)
    expectError(await server.request("GET", `${base}/me`, { token: account.token }), 401)
    const refused = await tokenRequest(server, {
      grant_type: "client_credentials",
      client_id: account.clientId,
      client_secret: account.clientSecret
    })
    expect(refused.status).toBe(401)
  })

  it("client credentials: HTTP Basic, scopes, bad requests", async () => {
    const account = await createAccount(server, admin, { permissions: ["read:records"] })
    const basic = Buffer.from(`${account.clientId}:${account.clientSecret}`).toString("base64")
    const viaBasic = await tokenRequest(server, { grant_type: "client_credentials" }, { authorization: `Basic ${basic}` })
    expect(viaBasic.status).toBe(200)
    expect(viaBasic.body.expires_in).toBe(25200)
    expect(viaBasic.body.scope).toBe("openid")
    const scoped = await tokenRequest(server, {
      grant_type: "client_credentials",
      client_id: account.clientId,
      client_secret: account.clientSecret,
      scope: "workspace:default"
    })
    expect(scoped.status).toBe(200)
    expect(scoped.body.scope).toBe("workspace:default")
    const elsewhere = await tokenRequest(server, {
      grant_type: "client_credentials",
      client_id: account.clientId,
      client_secret: account.clientSecret,
      scope: "openid workspace:team-beta"
    })
    expect(elsewhere.status).toBe(400)
    expect(elsewhere.body.error).toBe("invalid_scope")
    const wrong = await tokenRequest(server, {
      grant_type: "client_credentials",
      client_id: account.clientId,
      client_secret: `sk_${"0".repeat(64)}`
    })
    expect(wrong.status).toBe(401)
    expect(wrong.body.error).toBe("invalid_client")
    const wrongBasic = await tokenRequest(
      server,
      { grant_type: "client_credentials" },
      {
        authorization: `Basic ${Buffer.from(`${account.clientId}:nope`).toString("base64")}`
      }
    )
    expect(wrongBasic.status).toBe(401)
    expect(wrongBasic.headers.get("www-authenticate") ?? "").toContain("Basic")
    const missing = await tokenRequest(server, { grant_type: "client_credentials", client_id: account.clientId })
    expect(missing.status).toBe(400)
    expect(missing.body.error).toBe("invalid_request")
    const both = await tokenRequest(
      server,
      { grant_type: "client_credentials", client_id: account.clientId, client_secret: account.clientSecret },
      {
        authorization: `Basic ${basic}`
      }
    )
    expect(both.status).toBe(400)
  })
})

describe("IAM groups and policies", () => {
  const g = (path = "") => `${base}/groups${path}`

  it("create, list, get, delete; names unique per workspace", async () => {
    const created = await server.request("POST", g(), { token: admin, body: { name: "Readers", description: "read only" } })
    expect(created.status, created.text).toBe(201)
    expect(created.body.name).toBe("Readers")
    expect(created.body.policies).toStrictEqual([])
    expect(created.body.members).toStrictEqual([])
    expectError(await server.request("POST", g(), { token: admin, body: { name: "Readers" } }), 409)
    expectError(await server.request("POST", g(), { token: admin, body: { name: "" } }), 400)
    const list = await server.request("GET", g(), { token: admin })
    expect(list.status).toBe(200)
    expect(list.body.data.map((x: any) => x.name)).toContain("Readers")
    expect(Object.keys(list.body).sort()).toEqual(["data", "limit", "page", "total"])
    expect((await server.request("GET", g(`/${created.body.id}`), { token: admin })).body.name).toBe("Readers")
    expectError(await server.request("GET", g("/00000000-0000-4000-8000-000000000000"), { token: admin }), 404)
    expectError(await server.request("GET", g("/nope"), { token: admin }), 400)
    expect((await server.request("DELETE", g(`/${created.body.id}`), { token: admin })).status).toBe(204)
    expectError(await server.request("DELETE", g(`/${created.body.id}`), { token: admin }), 404)
  })

  it("policies validate actions (read is rejected) and resources", async () => {
    const group = (await server.request("POST", g(), { token: admin, body: { name: "Validators" } })).body
    const read = await server.request("POST", g(`/${group.id}/policies`), { token: admin, body: { action: "read", resource: "records" } })
    expectError(read, 400, "VALIDATION_ERROR")
    expect(read.body.details[0].field).toBe("action")
    expect(read.body.message).toContain("read")
    expectError(
      await server.request("POST", g(`/${group.id}/policies`), { token: admin, body: { action: "fly", resource: "records" } }),
      400
    )
    expectError(
      await server.request("POST", g(`/${group.id}/policies`), { token: admin, body: { action: "list", resource: "planets" } }),
      400
    )
    expectError(
      await server.request("POST", g(`/${group.id}/policies`), { token: admin, body: { action: "execute", resource: "records" } }),
      400
    )
    expectError(
      await server.request("POST", g(`/${group.id}/policies`), {
        token: admin,
        body: { action: "list", resource: "records", effect: "maybe" }
      }),
      400
    )
    expectError(await server.request("POST", g(`/${group.id}/policies`), { token: admin, body: { resource: "records" } }), 400)
    for (const action of ["create", "retrieve", "list", "update", "delete", "manage", "validate"]) {
      const ok = await server.request("POST", g(`/${group.id}/policies`), { token: admin, body: { action, resource: "structures" } })
      expect(ok.status, `${action}: ${ok.text}`).toBe(201)
      expect(ok.body.effect).toBe("allow")
    }
    const exec = await server.request("POST", g(`/${group.id}/policies`), {
      token: admin,
      body: { action: "execute", resource: "compute-functions" }
    })
    expect(exec.status).toBe(201)
    expectError(
      await server.request("POST", g(`/00000000-0000-4000-8000-000000000000/policies`), {
        token: admin,
        body: { action: "list", resource: "records" }
      }),
      404
    )
  })

  it("service accounts and users get permissions through groups, immediately, and deny wins", async () => {
    const account = await createAccount(server, admin, {}) // neither role nor permissions: refused everything
    const me = await server.request("GET", `${base}/me`, { token: account.token })
    expect(me.body.permissions).toStrictEqual([])
    expectError(await server.request("GET", `${base}/webhooks`, { token: account.token }), 403, "PERMISSION_DENIED")

    const group = (await server.request("POST", g(), { token: admin, body: { name: "Auditors" } })).body
    const policy = await server.request("POST", g(`/${group.id}/policies`), {
      token: admin,
      body: { action: "list", resource: "webhooks" }
    })
    expect(policy.status).toBe(201)
    const added = await server.request("POST", g(`/${group.id}/members`), { token: admin, body: { serviceAccountId: account.id } })
    expect(added.status, added.text).toBe(201)
    expect(added.body.members.map((m: any) => m.type)).toStrictEqual(["service-account"])
    expectError(await server.request("POST", g(`/${group.id}/members`), { token: admin, body: { serviceAccountId: account.id } }), 409)
    expectError(await server.request("POST", g(`/${group.id}/members`), { token: admin, body: {} }), 400)
    expectError(await server.request("POST", g(`/${group.id}/members`), { token: admin, body: { serviceAccountId: 999999 } }), 404)
    expectError(
      await server.request("POST", g(`/${group.id}/members`), { token: admin, body: { userId: "00000000-0000-4000-8000-000000000000" } }),
      404
    )

    // the token issued before joining the group now holds the permission
    const after = await server.request("GET", `${base}/me`, { token: account.token })
    expect(after.body.permissions).toStrictEqual(["read:webhooks"])
    expect(after.body.groups).toStrictEqual(["Auditors"])
    expect((await server.request("GET", `${base}/webhooks`, { token: account.token })).status).toBe(200)
    // a new token carries the group in its claims
    const fresh = claims(await clientCredentialsToken(server, account.clientId, account.clientSecret))
    expect(fresh.groups).toStrictEqual(["Auditors"])

    // a user too; and an explicit deny beats the role
    const user = await createUser(server, admin, "admin")
    expect((await server.request("GET", `${base}/service-accounts`, { token: user.token })).status).toBe(200)
    const deny = (await server.request("POST", g(), { token: admin, body: { name: "No service accounts" } })).body
    await server.request("POST", g(`/${deny.id}/policies`), {
      token: admin,
      body: { action: "manage", resource: "service-accounts", effect: "deny" }
    })
    const joined = await server.request("POST", g(`/${deny.id}/members`), { token: admin, body: { userId: user.userId } })
    expect(joined.status).toBe(201)
    expectError(await server.request("GET", `${base}/service-accounts`, { token: user.token }), 403, "PERMISSION_DENIED")
    expect((await server.request("DELETE", g(`/${deny.id}/members/users/${user.userId}`), { token: admin })).status).toBe(204)
    expectError(await server.request("DELETE", g(`/${deny.id}/members/users/${user.userId}`), { token: admin }), 404)
    expect((await server.request("GET", `${base}/service-accounts`, { token: user.token })).status).toBe(200)

    // removing the policy or the membership takes the permission away again
    expect((await server.request("DELETE", g(`/${group.id}/policies/${policy.body.id}`), { token: admin })).status).toBe(204)
    expectError(await server.request("DELETE", g(`/${group.id}/policies/${policy.body.id}`), { token: admin }), 404)
    expectError(await server.request("GET", `${base}/webhooks`, { token: account.token }), 403)
    await server.request("POST", g(`/${group.id}/policies`), { token: admin, body: { action: "list", resource: "webhooks" } })
    expect((await server.request("GET", `${base}/webhooks`, { token: account.token })).status).toBe(200)
    expect((await server.request("DELETE", g(`/${group.id}/members/service-accounts/${account.id}`), { token: admin })).status).toBe(204)
    expectError(await server.request("DELETE", g(`/${group.id}/members/service-accounts/${account.id}`), { token: admin }), 404)
    expectError(await server.request("GET", `${base}/webhooks`, { token: account.token }), 403)
    // only owners manage groups
    expectError(await server.request("POST", g(), { token: user.token, body: { name: "Mine" } }), 403, "PERMISSION_DENIED")
  })
})

describe("signing keys", () => {
  it("rotation keeps old tokens valid and publishes both keys", async () => {
    const before = await server.request("GET", "/oidc/jwks")
    const oldKid = Jose.decodeProtectedHeader(admin).kid
    expect(before.body.keys.map((k: any) => k.kid)).toContain(oldKid)
    const rotated = await server.request("POST", "/workspace/api/v1/signing-keys/rotate", { token: admin })
    expect(rotated.status).toBe(200)
    expect(rotated.body.kid).not.toBe(oldKid)
    expect(rotated.body.alg).toBe("ES256")
    const after = await server.request("GET", "/oidc/jwks")
    expect(after.body.keys.map((k: any) => k.kid)).toEqual(expect.arrayContaining([oldKid, rotated.body.kid]))
    expect((await server.request("GET", `${base}/me`, { token: admin })).status).toBe(200)
    const fresh = await tokenRequest(server, { grant_type: "password", username: "admin", password: server.adminPassword })
    expect(Jose.decodeProtectedHeader(fresh.body.access_token).kid).toBe(rotated.body.kid)
    const verifier = Jose.createLocalJWKSet(after.body)
    await Jose.jwtVerify(fresh.body.access_token, verifier)
    await Jose.jwtVerify(admin, verifier)
    const owner = await createUser(server, admin, "owner")
    expectError(await server.request("POST", "/workspace/api/v1/signing-keys/rotate", { token: owner.token }), 403)
  })
})

describe("typed client", () => {
  it("a client-credentials token source caches its token and drives the typed client", async () => {
    const account = await createAccount(server, admin, { role: "admin" })
    const program = Effect.gen(function* () {
      const source = yield* clientCredentials({
        baseUrl: server.baseUrl,
        clientId: account.clientId,
        clientSecret: account.clientSecret
      })
      const first = yield* source.get
      const second = yield* source.get
      const client = yield* Effect.provide(Effect.service(ApiClient), ApiClient.layer({ baseUrl: server.baseUrl, token: source.provider }))
      const me = yield* client.members.me({ params: { workspace: "default" } })
      const refused = yield* Effect.flip(client.serviceAccounts.list({ params: { workspace: "default" }, query: {} }))
      const bad = yield* clientCredentials({ baseUrl: server.baseUrl, clientId: account.clientId, clientSecret: "sk_wrong" })
      const error = yield* Effect.flip(bad.get)
      return { first, second, me, refused, error }
    }).pipe(Effect.provide(FetchHttpClient.layer))
    const out = await Effect.runPromise(program)
    expect(out.first).toBe(out.second)
    expect(claims(out.first).sub).toBe(account.clientId)
    expect(out.me.kind).toBe("service")
    expect(out.me.id).toBe(account.clientId)
    expect((out.refused as any).statusCode).toBe(403)
    expect(out.error._tag).toBe("TokenError")
    expect(out.error.status).toBe(401)
    expect(out.error.error).toBe("invalid_client")
    const plain = clientCredentialsFetch({ baseUrl: server.baseUrl, clientId: account.clientId, clientSecret: account.clientSecret })
    const [a, b] = await Promise.all([plain.getToken(), plain.getToken()])
    expect(a).toBe(b)
    expect(await plain.getToken()).toBe(a)
  })
})

describe("secrets stay secret", () => {
  it("no client secret, password or private key appears in the logs or the OpenAPI document", async () => {
    expect(secretsSeen.length).toBeGreaterThanOrEqual(3)
    const output = server.output()
    for (const secret of secretsSeen) expect(output).not.toContain(secret)
    expect(output).not.toContain(server.adminPassword)
    expect(output).not.toContain("carol-password-1")
    // a private EC key component (base64url, 43 characters) never shows up
    expect(output).not.toMatch(/"d"\s*:\s*"[A-Za-z0-9_-]{40,}"/)
    const doc = await server.request("GET", "/openapi.json")
    expect(doc.status).toBe(200)
    const op = doc.body.paths["/workspace/{workspace}/api/v1/service-accounts"].post
    expect(op["x-required-permission"]).toBe("write:service-accounts")
    expect(op["x-rate-class"]).toBe("writes")
    expect(op.security).toStrictEqual([{ bearer: [] }])
  })
})
