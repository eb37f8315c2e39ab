// Identity end to end over HTTP: bootstrap, the token endpoint (both grants, RFC 6749 errors), JWKS verified by an
// independent JOSE verifier, workspaces, members, service accounts (every route of compute-and-auth.md §4.6 and
// its errors), IAM groups and policies, signing-key rotation, and that no secret leaks into answers or logs.
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { ApiClient } from "@troupe/client/ApiClient"
import { clientCredentials, clientCredentialsFetch } from "@troupe/client/TokenSource"
import { Effect } from "effect"
import { FetchHttpClient } from "effect/http"
import * as Jose from "jose"
import { claims, createAccount, createUser, serviceToken, tokenRequest } from "./support/IdentityHelpers.ts"
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
  assert.strictEqual(res.status, status, JSON.stringify(res.body))
  assert.strictEqual(res.body.statusCode, status)
  assert.isString(res.body.message)
  assert.isArray(res.body.details)
  if (code !== undefined) assert.strictEqual(res.body.code, code)
}

describe("bootstrap and the password grant", () => {
  it("admin owns the default workspace and is a platform administrator", async () => {
    const me = await server.request("GET", `${base}/me`, { token: admin })
    assert.strictEqual(me.status, 200)
    assert.strictEqual(me.body.kind, "user")
    assert.strictEqual(me.body.name, "admin")
    assert.strictEqual(me.body.workspace, "default")
    assert.strictEqual(me.body.role, "owner")
    assert.isTrue(me.body.isPlatformAdmin)
    assert.include(me.body.permissions, "workspace:members")
  })

  it("issues a user token with the contract's fields and claims", async () => {
    const res = await tokenRequest(server, {
      grant_type: "password",
      username: "admin",
      password: server.adminPassword,
      scope: "openid workspace:default"
    })
    assert.strictEqual(res.status, 200)
    assert.strictEqual(res.body.token_type, "Bearer")
    assert.strictEqual(res.body.expires_in, 25200)
    assert.strictEqual(res.body.scope, "openid workspace:default")
    assert.strictEqual(res.headers.get("cache-control"), "no-store")
    const c = claims(res.body.access_token)
    assert.strictEqual(c.workspace, "default")
    assert.strictEqual(c.isServiceAccount, "false")
    assert.strictEqual(c.exp! - c.iat!, 25200)
    assert.isArray(c.groups)
  })

  it("without a workspace scope uses the bootstrap workspace; JSON bodies work too", async () => {
    const res = await fetch(`${server.baseUrl}/oidc/token`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ grant_type: "password", username: "admin", password: server.adminPassword })
    })
    assert.strictEqual(res.status, 200)
    const body = (await res.json()) as { access_token: string }
    assert.strictEqual(claims(body.access_token).workspace, "default")
  })

  it("answers RFC 6749 errors", async () => {
    const bad = await tokenRequest(server, { grant_type: "password", username: "admin", password: "wrong-password" })
    assert.strictEqual(bad.status, 401)
    assert.strictEqual(bad.body.error, "invalid_client")
    assert.isString(bad.body.error_description)
    assert.isString(bad.body.message)
    const unknown = await tokenRequest(server, { grant_type: "password", username: "nobody-here", password: "whatever123" })
    assert.strictEqual(unknown.status, 401)
    assert.strictEqual(unknown.body.error, "invalid_client")
    // same answer for an unknown user and a wrong password: no user enumeration
    assert.strictEqual(unknown.body.error_description, bad.body.error_description)
    const missing = await tokenRequest(server, { grant_type: "password", username: "admin" })
    assert.strictEqual(missing.status, 400)
    assert.strictEqual(missing.body.error, "invalid_request")
    const noGrant = await tokenRequest(server, { username: "admin" })
    assert.strictEqual(noGrant.status, 400)
    assert.strictEqual(noGrant.body.error, "invalid_request")
    const grant = await tokenRequest(server, { grant_type: "authorization_code", code: "x" })
    assert.strictEqual(grant.status, 400)
    assert.strictEqual(grant.body.error, "unsupported_grant_type")
    const scope = await tokenRequest(server, {
      grant_type: "password",
      username: "admin",
      password: server.adminPassword,
      scope: "openid workspace:no-such-workspace"
    })
    assert.strictEqual(scope.status, 400)
    assert.strictEqual(scope.body.error, "invalid_scope")
    const repeated = await fetch(`${server.baseUrl}/oidc/token`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: "grant_type=password&grant_type=client_credentials"
    })
    assert.strictEqual(repeated.status, 400)
    assert.strictEqual(((await repeated.json()) as any).error, "invalid_request")
    const text = await fetch(`${server.baseUrl}/oidc/token`, {
      method: "POST",
      headers: { "content-type": "text/plain" },
      body: "grant_type=password"
    })
    assert.strictEqual(text.status, 400)
    assert.strictEqual(((await text.json()) as any).error, "invalid_request")
  })
})

describe("tokens on guarded routes", () => {
  it("401 without a token, with a malformed, forged or expired one", async () => {
    expectError(await server.request("GET", `${base}/me`), 401, "UNAUTHORIZED")
    expectError(await server.request("GET", `${base}/me`, { token: "not-a-jwt" }), 401, "UNAUTHORIZED")
    expectError(
      await server.request("GET", `${base}/me`, { headers: { authorization: "Basic YTpi" } }),
      401,
      "UNAUTHORIZED"
    )
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
    const none = new Jose.UnsecuredJWT({ workspace: "default", isServiceAccount: "false" }).setSubject(claims(admin).sub!)
      .setIssuer(claims(admin).iss!).setAudience(claims(admin).aud as string).setExpirationTime("1h").encode()
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
    assert.strictEqual(discovery.status, 200)
    const issuer = discovery.body.issuer as string
    assert.strictEqual(discovery.body.token_endpoint, `${issuer}/oidc/token`)
    assert.strictEqual(discovery.body.jwks_uri, `${issuer}/oidc/jwks`)
    assert.include(discovery.body.grant_types_supported, "client_credentials")
    const jwks = await server.request("GET", "/oidc/jwks")
    assert.strictEqual(jwks.status, 200)
    assert.isAtLeast(jwks.body.keys.length, 1)
    for (const key of jwks.body.keys) {
      assert.isUndefined(key.d, "a private key component is published")
      assert.strictEqual(key.alg, "ES256")
    }
    const account = await createAccount(server, admin, { role: "viewer" })
    const verifier = Jose.createRemoteJWKSet(new URL(`${server.baseUrl}/oidc/jwks`))
    const { payload, protectedHeader } = await Jose.jwtVerify(account.token, verifier, {
      issuer,
      audience: issuer,
      algorithms: ["ES256"]
    })
    assert.strictEqual(protectedHeader.alg, "ES256")
    assert.strictEqual(payload.sub, account.clientId)
    assert.strictEqual(payload.workspace, "default")
    assert.strictEqual(payload.isServiceAccount, "true")
    assert.deepStrictEqual(payload.groups, [])
    assert.strictEqual(payload.exp! - payload.iat!, 25200)
  })
})

describe("workspaces (platform administrators)", () => {
  it("create, list, get, delete with slug rules", async () => {
    const created = await server.request("POST", "/workspace/api/v1/workspaces", { token: admin, body: { slug: "team-alpha", name: "Team Alpha" } })
    assert.strictEqual(created.status, 201, created.text)
    assert.strictEqual(created.body.slug, "team-alpha")
    assert.strictEqual(created.body.name, "Team Alpha")
    assert.isString(created.body.createdAt)
    expectError(
      await server.request("POST", "/workspace/api/v1/workspaces", { token: admin, body: { slug: "team-alpha" } }),
      409,
      "CONFLICT"
    )
    for (const slug of ["Team", "team_alpha", "-team", "team-", "a--b", "", "api", "x".repeat(64)]) {
      expectError(await server.request("POST", "/workspace/api/v1/workspaces", { token: admin, body: { slug } }), 400)
    }
    expectError(
      await server.request("POST", "/workspace/api/v1/workspaces", { token: admin, body: {} }),
      400,
      "VALIDATION_ERROR"
    )
    const list = await server.request("GET", "/workspace/api/v1/workspaces?limit=100", { token: admin })
    assert.strictEqual(list.status, 200)
    assert.includeMembers(list.body.data.map((w: any) => w.slug), ["default", "team-alpha"])
    assert.strictEqual(list.body.page, 1)
    assert.strictEqual(list.body.limit, 100)
    assert.isAtLeast(list.body.total, 2)
    expectError(await server.request("GET", "/workspace/api/v1/workspaces?limit=0", { token: admin }), 400)
    const got = await server.request("GET", "/workspace/api/v1/workspaces/team-alpha", { token: admin })
    assert.strictEqual(got.status, 200)
    assert.strictEqual(got.body.slug, "team-alpha")
    expectError(await server.request("GET", "/workspace/api/v1/workspaces/nope", { token: admin }), 404, "NOT_FOUND")

    // the creator owns it and can sign in to it; the token is useless on the default workspace
    const alpha = await server.userToken("admin", server.adminPassword, "team-alpha")
    const me = await server.request("GET", "/workspace/team-alpha/api/v1/me", { token: alpha })
    assert.strictEqual(me.body.role, "owner")
    expectError(await server.request("GET", `${base}/me`, { token: alpha }), 403, "PERMISSION_DENIED")
    const sa = await createAccount(server, alpha, { role: "viewer" }, "team-alpha")

    assert.strictEqual(
      (await server.request("DELETE", "/workspace/api/v1/workspaces/team-alpha", { token: admin })).status,
      204
    )
    expectError(await server.request("GET", "/workspace/api/v1/workspaces/team-alpha", { token: admin }), 404)
    expectError(await server.request("DELETE", "/workspace/api/v1/workspaces/team-alpha", { token: admin }), 404)
    // everything inside went with it
    expectError(await server.request("GET", "/workspace/team-alpha/api/v1/me", { token: sa.token }), 401)
    const again = await tokenRequest(server, { grant_type: "client_credentials", client_id: sa.clientId, client_secret: sa.clientSecret })
    assert.strictEqual(again.status, 401)
  })

  it("is refused to everyone but platform administrators", async () => {
    const owner = await createUser(server, admin, "owner")
    expectError(
      await server.request("GET", "/workspace/api/v1/workspaces", { token: owner.token }),
      403,
      "PERMISSION_DENIED"
    )
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
    assert.strictEqual(add.status, 201, add.text)
    assert.strictEqual(add.body.username, "carol")
    assert.strictEqual(add.body.role, "viewer")
    assert.notProperty(add.body, "password")
    assert.notProperty(add.body, "passwordHash")
    const carolId = add.body.userId as string
    const carol = await server.userToken("carol", "carol-password-1")
    assert.strictEqual((await server.request("GET", `${base}/me`, { token: carol })).body.role, "viewer")

    expectError(
      await server.request("POST", `${base}/members`, { token: admin, body: { username: "carol", role: "viewer" } }),
      409,
      "CONFLICT"
    )
    expectError(
      await server.request("POST", `${base}/members`, { token: admin, body: { username: "carol", password: "another-pass-1", role: "admin" } }),
      409
    )
    expectError(
      await server.request("POST", `${base}/members`, { token: admin, body: { username: "dave", role: "viewer" } }),
      400
    )
    expectError(
      await server.request("POST", `${base}/members`, { token: admin, body: { username: "dave", password: "short", role: "viewer" } }),
      400,
      "VALIDATION_ERROR"
    )
    expectError(
      await server.request("POST", `${base}/members`, { token: admin, body: { username: "dave", password: "long-enough-1", role: "king" } }),
      400,
      "VALIDATION_ERROR"
    )
    expectError(
      await server.request("POST", `${base}/members`, { token: admin, body: { username: "bad name", password: "long-enough-1", role: "viewer" } }),
      400
    )

    const list = await server.request("GET", `${base}/members?page=1&limit=50`, { token: admin })
    assert.strictEqual(list.status, 200)
    assert.includeMembers(list.body.data.map((m: any) => m.username), ["admin", "carol"])
    assert.strictEqual(list.body.page, 1)
    assert.strictEqual(list.body.limit, 50)
    const got = await server.request("GET", `${base}/members/${carolId}`, { token: admin })
    assert.strictEqual(got.body.username, "carol")
    expectError(
      await server.request("GET", `${base}/members/00000000-0000-4000-8000-000000000000`, { token: admin }),
      404
    )
    expectError(await server.request("GET", `${base}/members/not-a-uuid`, { token: admin }), 400, "VALIDATION_ERROR")

    // a role change applies to tokens already issued
    expectError(await server.request("POST", `${base}/service-accounts`, { token: carol, body: { name: "x" } }), 403)
    const promoted = await server.request("PUT", `${base}/members/${carolId}/role`, { token: admin, body: { role: "admin" } })
    assert.strictEqual(promoted.status, 200)
    assert.strictEqual(promoted.body.role, "admin")
    assert.strictEqual((await server.request("GET", `${base}/me`, { token: carol })).body.role, "admin")
    expectError(
      await server.request("PUT", `${base}/members/${carolId}/role`, { token: admin, body: { role: "god" } }),
      400
    )
    expectError(
      await server.request("PUT", `${base}/members/00000000-0000-4000-8000-000000000000/role`, { token: admin, body: { role: "viewer" } }),
      404
    )
    // members management is the owners' alone
    expectError(await server.request("GET", `${base}/members`, { token: carol }), 403, "PERMISSION_DENIED")

    assert.strictEqual((await server.request("DELETE", `${base}/members/${carolId}`, { token: admin })).status, 204)
    expectError(await server.request("DELETE", `${base}/members/${carolId}`, { token: admin }), 404)
    // the removed member's token stops working at once, and signing in to this workspace is refused
    expectError(await server.request("GET", `${base}/me`, { token: carol }), 401)
    const login = await tokenRequest(server, { grant_type: "password", username: "carol", password: "carol-password-1", scope: "openid workspace:default" })
    assert.strictEqual(login.status, 400)
    assert.strictEqual(login.body.error, "invalid_scope")

    // an existing user is added to another workspace without a password
    await server.request("POST", "/workspace/api/v1/workspaces", { token: admin, body: { slug: "team-beta" } })
    const adminBeta = await server.userToken("admin", server.adminPassword, "team-beta")
    const readd = await server.request("POST", "/workspace/team-beta/api/v1/members", {
      token: adminBeta,
      body: { username: "carol", role: "developer" }
    })
    assert.strictEqual(readd.status, 201, readd.text)
    const carolBeta = await server.userToken("carol", "carol-password-1", "team-beta")
    assert.strictEqual(
      (await server.request("GET", "/workspace/team-beta/api/v1/me", { token: carolBeta })).body.role,
      "developer"
    )
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
      "LAST_OWNER"
    )
    expectError(
      await server.request("DELETE", `/workspace/solo/api/v1/members/${adminId}`, { token: solo }),
      409,
      "LAST_OWNER"
    )
    // with a second owner, the first may step down
    const other = await createUser(server, solo, "owner", "solo")
    const down = await server.request("PUT", `/workspace/solo/api/v1/members/${adminId}/role`, { token: solo, body: { role: "viewer" } })
    assert.strictEqual(down.status, 200)
    expectError(
      await server.request("DELETE", `/workspace/solo/api/v1/members/${other.userId}`, { token: other.token }),
      409,
      "LAST_OWNER"
    )
  })

  it("users change their own password; service accounts have none", async () => {
    const user = await createUser(server, admin, "developer")
    expectError(
      await server.request("PUT", `${base}/me/password`, { token: user.token, body: { currentPassword: "wrong-one", newPassword: "brand-new-pass" } }),
      400
    )
    const ok = await server.request("PUT", `${base}/me/password`, {
      token: user.token,
      body: { currentPassword: user.password, newPassword: "brand-new-pass" }
    })
    assert.strictEqual(ok.status, 204, ok.text)
    const old = await tokenRequest(server, { grant_type: "password", username: user.username, password: user.password })
    assert.strictEqual(old.status, 401)
    const fresh = await tokenRequest(server, { grant_type: "password", username: user.username, password: "brand-new-pass" })
    assert.strictEqual(fresh.status, 200)
    const sa = await createAccount(server, admin, { role: "viewer" })
    expectError(
      await server.request("PUT", `${base}/me/password`, { token: sa.token, body: { currentPassword: "x", newPassword: "brand-new-pass" } }),
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
    assert.strictEqual(res.status, 201, res.text)
    const b = res.body
    assert.isNumber(b.id)
    assert.match(b.clientId, /^ci_[0-9a-f]{24}$/)
    assert.match(b.clientSecret, /^sk_[0-9a-f]{64}$/)
    secretsSeen.push(b.clientSecret)
    assert.strictEqual(b.name, "ci-runner")
    assert.strictEqual(b.description, "builds")
    assert.strictEqual(b.workspace, "default")
    assert.deepStrictEqual(b.grant_types, ["client_credentials"])
    assert.strictEqual(b.scope, "openid")
    assert.deepStrictEqual(b.permissions, ["read:records", "write:records"])
    assert.isNull(b.role)
    assert.isString(b.createdAt)
    assert.strictEqual(b.createdBy, claims(admin).sub)

    const got = await server.request("GET", sa(`/${b.id}`), { token: admin })
    assert.strictEqual(got.status, 200)
    assert.strictEqual(got.body.clientId, b.clientId)
    assert.notProperty(got.body, "clientSecret")
    assert.notInclude(got.text, b.clientSecret)
    assert.notInclude(got.text, "secret_hash")

    const list = await server.request("GET", sa("?page=1&limit=2"), { token: admin })
    assert.strictEqual(list.status, 200)
    assert.hasAllKeys(list.body, ["data", "total", "page", "limit"])
    assert.strictEqual(list.body.page, 1)
    assert.strictEqual(list.body.limit, 2)
    assert.isAtMost(list.body.data.length, 2)
    assert.isAtLeast(list.body.total, 1)
    assert.notInclude(list.text, "clientSecret")
    const page2 = await server.request("GET", sa(`?page=2&limit=1`), { token: admin })
    assert.strictEqual(page2.body.page, 2)
    expectError(await server.request("GET", sa("?page=0"), { token: admin }), 400)
    expectError(await server.request("GET", sa("?limit=1000"), { token: admin }), 400)

    // role form
    const roleForm = await server.request("POST", sa(), { token: admin, body: { name: "deployer", role: "developer", scope: "openid workspace:default" } })
    assert.strictEqual(roleForm.status, 201)
    assert.strictEqual(roleForm.body.role, "developer")
    assert.strictEqual(roleForm.body.scope, "openid workspace:default")
    secretsSeen.push(roleForm.body.clientSecret)
  })

  it("create rejects bad input with 400 and details", async () => {
    const bad = async (body: unknown) => {
      const res = await server.request("POST", sa(), { token: admin, body })
      expectError(res, 400)
      assert.isAtLeast(res.body.details.length, 1)
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
    const malformed = await server.request("POST", sa(), { token: admin, raw: "{not json", headers: { "content-type": "application/json" } })
    assert.strictEqual(malformed.status, 400)
  })

  it("nobody grants what they do not hold; service-account tokens cannot manage accounts", async () => {
    const adminUser = await createUser(server, admin, "admin")
    const ok = await server.request("POST", sa(), { token: adminUser.token, body: { name: "by-admin", role: "admin" } })
    assert.strictEqual(ok.status, 201)
    expectError(
      await server.request("POST", sa(), { token: adminUser.token, body: { name: "too-much", role: "owner" } }),
      403,
      "PERMISSION_DENIED"
    )
    const robot = await createAccount(server, admin, { role: "owner" })
    for (const [method, path] of [["GET", sa()], ["POST", sa()], ["GET", sa(`/${ok.body.id}`)], ["POST", sa(`/${ok.body.id}/rotate`)]] as const) {
      const body = method === "POST" ? { name: "x" } : undefined
      expectError(await server.request(method, path, { token: robot.token, body }), 403, "PERMISSION_DENIED")
    }
    const viewer = await createUser(server, admin, "viewer")
    expectError(await server.request("GET", sa(), { token: viewer.token }), 403, "PERMISSION_DENIED")
  })

  it("name and description updates; 404 and 400 for unknown and malformed ids", async () => {
    const account = await createAccount(server, admin, { role: "viewer", description: "old" })
    const named = await server.request("PUT", sa(`/${account.id}/name`), { token: admin, body: { name: "renamed" } })
    assert.strictEqual(named.status, 200)
    assert.strictEqual(named.body.name, "renamed")
    const described = await server.request("PUT", sa(`/${account.id}/description`), { token: admin, body: { description: "new words" } })
    assert.strictEqual(described.status, 200)
    assert.strictEqual(described.body.description, "new words")
    assert.strictEqual(described.body.name, "renamed")
    const cleared = await server.request("PUT", sa(`/${account.id}/description`), { token: admin, body: { description: null } })
    assert.isNull(cleared.body.description)
    expectError(await server.request("PUT", sa(`/${account.id}/name`), { token: admin, body: {} }), 400)
    expectError(await server.request("PUT", sa(`/${account.id}/name`), { token: admin, body: { name: "" } }), 400)
    // the account still signs in under its new name
    assert.strictEqual((await server.request("GET", `${base}/me`, { token: account.token })).body.name, "renamed")
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
      assert.strictEqual((await server.request("GET", `${base}/me`, { token: account.token })).status, 200)
      const rotated = await server.request(method, sa(`/${account.id}/rotate`), { token: admin })
      assert.strictEqual(rotated.status, 200, rotated.text)
      assert.hasAllKeys(rotated.body, ["id", "clientId", "clientSecret", "name", "workspace", "updatedAt"])
      assert.strictEqual(rotated.body.clientId, account.clientId)
      assert.match(rotated.body.clientSecret, /^sk_[0-9a-f]{64}$/)
      assert.notStrictEqual(rotated.body.clientSecret, account.clientSecret)
      secretsSeen.push(rotated.body.clientSecret)
      expectError(await server.request("GET", `${base}/me`, { token: account.token }), 401, "UNAUTHORIZED")
      const old = await tokenRequest(server, { grant_type: "client_credentials", client_id: account.clientId, client_secret: account.clientSecret })
      assert.strictEqual(old.status, 401)
      assert.strictEqual(old.body.error, "invalid_client")
      const fresh = await serviceToken(server, account.clientId, rotated.body.clientSecret)
      assert.strictEqual((await server.request("GET", `${base}/me`, { token: fresh })).status, 200)
    }
  })

  it("revoke disables the account and its tokens; rotate brings it back with a new secret", async () => {
    const account = await createAccount(server, admin, { role: "viewer" })
    const revoked = await server.request("POST", sa(`/${account.id}/revoke`), { token: admin })
    assert.strictEqual(revoked.status, 200)
    assert.strictEqual(revoked.body.status, "revoked")
    expectError(await server.request("GET", `${base}/me`, { token: account.token }), 401)
    const refused = await tokenRequest(server, { grant_type: "client_credentials", client_id: account.clientId, client_secret: account.clientSecret })
    assert.strictEqual(refused.status, 401)
    assert.strictEqual(refused.body.error, "invalid_client")
    assert.strictEqual((await server.request("GET", sa(`/${account.id}`), { token: admin })).body.status, "revoked")
    const rotated = await server.request("POST", sa(`/${account.id}/rotate`), { token: admin })
    assert.strictEqual((await server.request("GET", sa(`/${account.id}`), { token: admin })).body.status, "active")
    const token = await serviceToken(server, account.clientId, rotated.body.clientSecret)
    assert.strictEqual((await server.request("GET", `${base}/me`, { token })).status, 200)
  })

  it("delete removes the account; its tokens and secret stop working", async () => {
    const account = await createAccount(server, admin, { role: "viewer" })
    assert.strictEqual((await server.request("DELETE", sa(`/${account.id}`), { token: admin })).status, 204)
    expectError(await server.request("GET", sa(`/${account.id}`), { token: admin }), 404)
    expectError(await server.request("GET", `${base}/me`, { token: account.token }), 401)
    const refused = await tokenRequest(server, { grant_type: "client_credentials", client_id: account.clientId, client_secret: account.clientSecret })
    assert.strictEqual(refused.status, 401)
  })

  it("client credentials: HTTP Basic, scopes, bad requests", async () => {
    const account = await createAccount(server, admin, { permissions: ["read:records"] })
    const basic = Buffer.from(`${account.clientId}:${account.clientSecret}`).toString("base64")
    const viaBasic = await tokenRequest(server, { grant_type: "client_credentials" }, { authorization: `Basic ${basic}` })
    assert.strictEqual(viaBasic.status, 200)
    assert.strictEqual(viaBasic.body.expires_in, 25200)
    assert.strictEqual(viaBasic.body.scope, "openid")
    const scoped = await tokenRequest(server, {
      grant_type: "client_credentials",
      client_id: account.clientId,
      client_secret: account.clientSecret,
      scope: "workspace:default"
    })
    assert.strictEqual(scoped.status, 200)
    assert.strictEqual(scoped.body.scope, "workspace:default")
    const elsewhere = await tokenRequest(server, {
      grant_type: "client_credentials",
      client_id: account.clientId,
      client_secret: account.clientSecret,
      scope: "openid workspace:team-beta"
    })
    assert.strictEqual(elsewhere.status, 400)
    assert.strictEqual(elsewhere.body.error, "invalid_scope")
    const wrong = await tokenRequest(server, { grant_type: "client_credentials", client_id: account.clientId, client_secret: `sk_${"0".repeat(64)}` })
    assert.strictEqual(wrong.status, 401)
    assert.strictEqual(wrong.body.error, "invalid_client")
    const wrongBasic = await tokenRequest(server, { grant_type: "client_credentials" }, {
      authorization: `Basic ${Buffer.from(`${account.clientId}:nope`).toString("base64")}`
    })
    assert.strictEqual(wrongBasic.status, 401)
    assert.include(wrongBasic.headers.get("www-authenticate") ?? "", "Basic")
    const missing = await tokenRequest(server, { grant_type: "client_credentials", client_id: account.clientId })
    assert.strictEqual(missing.status, 400)
    assert.strictEqual(missing.body.error, "invalid_request")
    const both = await tokenRequest(server, { grant_type: "client_credentials", client_id: account.clientId, client_secret: account.clientSecret }, {
      authorization: `Basic ${basic}`
    })
    assert.strictEqual(both.status, 400)
  })
})

describe("IAM groups and policies", () => {
  const g = (path = "") => `${base}/groups${path}`

  it("create, list, get, delete; names unique per workspace", async () => {
    const created = await server.request("POST", g(), { token: admin, body: { name: "Readers", description: "read only" } })
    assert.strictEqual(created.status, 201, created.text)
    assert.strictEqual(created.body.name, "Readers")
    assert.deepStrictEqual(created.body.policies, [])
    assert.deepStrictEqual(created.body.members, [])
    expectError(await server.request("POST", g(), { token: admin, body: { name: "Readers" } }), 409)
    expectError(await server.request("POST", g(), { token: admin, body: { name: "" } }), 400)
    const list = await server.request("GET", g(), { token: admin })
    assert.strictEqual(list.status, 200)
    assert.include(list.body.data.map((x: any) => x.name), "Readers")
    assert.hasAllKeys(list.body, ["data", "total", "page", "limit"])
    assert.strictEqual((await server.request("GET", g(`/${created.body.id}`), { token: admin })).body.name, "Readers")
    expectError(await server.request("GET", g("/00000000-0000-4000-8000-000000000000"), { token: admin }), 404)
    expectError(await server.request("GET", g("/nope"), { token: admin }), 400)
    assert.strictEqual((await server.request("DELETE", g(`/${created.body.id}`), { token: admin })).status, 204)
    expectError(await server.request("DELETE", g(`/${created.body.id}`), { token: admin }), 404)
  })

  it("policies validate actions (read is rejected) and resources", async () => {
    const group = (await server.request("POST", g(), { token: admin, body: { name: "Validators" } })).body
    const read = await server.request("POST", g(`/${group.id}/policies`), { token: admin, body: { action: "read", resource: "records" } })
    expectError(read, 400, "VALIDATION_ERROR")
    assert.strictEqual(read.body.details[0].field, "action")
    assert.include(read.body.message, "read")
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
      await server.request("POST", g(`/${group.id}/policies`), { token: admin, body: { action: "list", resource: "records", effect: "maybe" } }),
      400
    )
    expectError(
      await server.request("POST", g(`/${group.id}/policies`), { token: admin, body: { resource: "records" } }),
      400
    )
    for (const action of ["create", "retrieve", "list", "update", "delete", "manage", "validate"]) {
      const ok = await server.request("POST", g(`/${group.id}/policies`), { token: admin, body: { action, resource: "structures" } })
      assert.strictEqual(ok.status, 201, `${action}: ${ok.text}`)
      assert.strictEqual(ok.body.effect, "allow")
    }
    const exec = await server.request("POST", g(`/${group.id}/policies`), { token: admin, body: { action: "execute", resource: "compute-functions" } })
    assert.strictEqual(exec.status, 201)
    expectError(
      await server.request("POST", g(`/00000000-0000-4000-8000-000000000000/policies`), { token: admin, body: { action: "list", resource: "records" } }),
      404
    )
  })

  it("service accounts and users get permissions through groups, immediately, and deny wins", async () => {
    const account = await createAccount(server, admin, {}) // neither role nor permissions: refused everything
    const me = await server.request("GET", `${base}/me`, { token: account.token })
    assert.deepStrictEqual(me.body.permissions, [])
    expectError(await server.request("GET", `${base}/webhooks`, { token: account.token }), 403, "PERMISSION_DENIED")

    const group = (await server.request("POST", g(), { token: admin, body: { name: "Auditors" } })).body
    const policy = await server.request("POST", g(`/${group.id}/policies`), {
      token: admin,
      body: { action: "list", resource: "webhooks" }
    })
    assert.strictEqual(policy.status, 201)
    const added = await server.request("POST", g(`/${group.id}/members`), { token: admin, body: { serviceAccountId: account.id } })
    assert.strictEqual(added.status, 201, added.text)
    assert.deepStrictEqual(added.body.members.map((m: any) => m.type), ["service-account"])
    expectError(
      await server.request("POST", g(`/${group.id}/members`), { token: admin, body: { serviceAccountId: account.id } }),
      409
    )
    expectError(await server.request("POST", g(`/${group.id}/members`), { token: admin, body: {} }), 400)
    expectError(
      await server.request("POST", g(`/${group.id}/members`), { token: admin, body: { serviceAccountId: 999999 } }),
      404
    )
    expectError(
      await server.request("POST", g(`/${group.id}/members`), { token: admin, body: { userId: "00000000-0000-4000-8000-000000000000" } }),
      404
    )

    // the token issued before joining the group now holds the permission
    const after = await server.request("GET", `${base}/me`, { token: account.token })
    assert.deepStrictEqual(after.body.permissions, ["read:webhooks"])
    assert.deepStrictEqual(after.body.groups, ["Auditors"])
    assert.strictEqual((await server.request("GET", `${base}/webhooks`, { token: account.token })).status, 200)
    // a new token carries the group in its claims
    const fresh = claims(await serviceToken(server, account.clientId, account.clientSecret))
    assert.deepStrictEqual(fresh.groups, ["Auditors"])

    // a user too; and an explicit deny beats the role
    const user = await createUser(server, admin, "admin")
    assert.strictEqual((await server.request("GET", `${base}/service-accounts`, { token: user.token })).status, 200)
    const deny = (await server.request("POST", g(), { token: admin, body: { name: "No service accounts" } })).body
    await server.request("POST", g(`/${deny.id}/policies`), { token: admin, body: { action: "manage", resource: "service-accounts", effect: "deny" } })
    const joined = await server.request("POST", g(`/${deny.id}/members`), { token: admin, body: { userId: user.userId } })
    assert.strictEqual(joined.status, 201)
    expectError(
      await server.request("GET", `${base}/service-accounts`, { token: user.token }),
      403,
      "PERMISSION_DENIED"
    )
    assert.strictEqual(
      (await server.request("DELETE", g(`/${deny.id}/members/users/${user.userId}`), { token: admin })).status,
      204
    )
    expectError(await server.request("DELETE", g(`/${deny.id}/members/users/${user.userId}`), { token: admin }), 404)
    assert.strictEqual((await server.request("GET", `${base}/service-accounts`, { token: user.token })).status, 200)

    // removing the policy or the membership takes the permission away again
    assert.strictEqual(
      (await server.request("DELETE", g(`/${group.id}/policies/${policy.body.id}`), { token: admin })).status,
      204
    )
    expectError(await server.request("DELETE", g(`/${group.id}/policies/${policy.body.id}`), { token: admin }), 404)
    expectError(await server.request("GET", `${base}/webhooks`, { token: account.token }), 403)
    await server.request("POST", g(`/${group.id}/policies`), { token: admin, body: { action: "list", resource: "webhooks" } })
    assert.strictEqual((await server.request("GET", `${base}/webhooks`, { token: account.token })).status, 200)
    assert.strictEqual(
      (await server.request("DELETE", g(`/${group.id}/members/service-accounts/${account.id}`), { token: admin })).status,
      204
    )
    expectError(
      await server.request("DELETE", g(`/${group.id}/members/service-accounts/${account.id}`), { token: admin }),
      404
    )
    expectError(await server.request("GET", `${base}/webhooks`, { token: account.token }), 403)
    // only owners manage groups
    expectError(
      await server.request("POST", g(), { token: user.token, body: { name: "Mine" } }),
      403,
      "PERMISSION_DENIED"
    )
  })
})

describe("signing keys", () => {
  it("rotation keeps old tokens valid and publishes both keys", async () => {
    const before = await server.request("GET", "/oidc/jwks")
    const oldKid = Jose.decodeProtectedHeader(admin).kid
    assert.include(before.body.keys.map((k: any) => k.kid), oldKid)
    const rotated = await server.request("POST", "/workspace/api/v1/signing-keys/rotate", { token: admin })
    assert.strictEqual(rotated.status, 200)
    assert.notStrictEqual(rotated.body.kid, oldKid)
    assert.strictEqual(rotated.body.alg, "ES256")
    const after = await server.request("GET", "/oidc/jwks")
    assert.includeMembers(after.body.keys.map((k: any) => k.kid), [oldKid, rotated.body.kid])
    assert.strictEqual((await server.request("GET", `${base}/me`, { token: admin })).status, 200)
    const fresh = await tokenRequest(server, { grant_type: "password", username: "admin", password: server.adminPassword })
    assert.strictEqual(Jose.decodeProtectedHeader(fresh.body.access_token).kid, rotated.body.kid)
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
    const program = Effect.gen(function*() {
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
    assert.strictEqual(out.first, out.second)
    assert.strictEqual(claims(out.first).sub, account.clientId)
    assert.strictEqual(out.me.kind, "service")
    assert.strictEqual(out.me.id, account.clientId)
    assert.strictEqual((out.refused as any).statusCode, 403)
    assert.strictEqual(out.error._tag, "TokenError")
    assert.strictEqual(out.error.status, 401)
    assert.strictEqual(out.error.error, "invalid_client")
    const plain = clientCredentialsFetch({ baseUrl: server.baseUrl, clientId: account.clientId, clientSecret: account.clientSecret })
    const [a, b] = await Promise.all([plain.getToken(), plain.getToken()])
    assert.strictEqual(a, b)
    assert.strictEqual(await plain.getToken(), a)
  })
})

describe("secrets stay secret", () => {
  it("no client secret, password or private key appears in the logs or the OpenAPI document", async () => {
    assert.isAtLeast(secretsSeen.length, 3)
    const output = server.output()
    for (const secret of secretsSeen) assert.notInclude(output, secret)
    assert.notInclude(output, server.adminPassword)
    assert.notInclude(output, "carol-password-1")
    // a private EC key component (base64url, 43 characters) never shows up
    assert.notMatch(output, /"d"\s*:\s*"[A-Za-z0-9_-]{40,}"/)
    const doc = await server.request("GET", "/openapi.json")
    assert.strictEqual(doc.status, 200)
    const op = doc.body.paths["/workspace/{workspace}/api/v1/service-accounts"].post
    assert.strictEqual(op["x-required-permission"], "write:service-accounts")
    assert.strictEqual(op["x-rate-class"], "writes")
    assert.deepStrictEqual(op.security, [{ bearer: [] }])
  })
})
