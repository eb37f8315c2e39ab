// Rate limits per workspace and class (429 + Retry-After + QUOTA_EXCEEDED, recovery after the window) and the
// slowdown of the token endpoint after repeated bad credentials, per client id and per username (each from one
// address), and per address; concurrent guesses are counted as they start.
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { createAccount, tokenRequest } from "./support/IdentityHelpers.ts"
import { startServer, type TestServer } from "./support/TestServer.ts"

const windowSeconds = 4
let server: TestServer
let admin: string
let other: string
let account: { id: number; clientId: string; clientSecret: string; token: string }
/** bad credentials sent from this test's address so far (the address rule locks at 20) */
let failures = 0

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

/** Waits for the start of the next limit window (windows are aligned to the clock). */
const nextWindow = async () => {
  const ms = windowSeconds * 1000
  await sleep(ms - (Date.now() % ms) + 50)
}

beforeAll(async () => {
  server = await startServer({
    env: {
      TROUPE_LIMIT_READS: "4",
      TROUPE_LIMIT_WRITES: "2",
      TROUPE_LIMIT_WINDOW_SECONDS: String(windowSeconds)
    }
  })
  admin = await server.adminToken()
  const created = await server.request("POST", "/workspace/api/v1/workspaces", { token: admin, body: { slug: "other" } })
  assert.strictEqual(created.status, 201)
  other = await server.userToken("admin", server.adminPassword, "other")
  await nextWindow()
  account = await createAccount(server, admin, { role: "admin" })
})

afterAll(async () => {
  await server?.close()
})

describe("rate limits", () => {
  it("429 with Retry-After and QUOTA_EXCEEDED past the limit, per workspace and class, then recovery", async () => {
    await nextWindow()
    const me = `${server.base}/me`
    // reads are counted per workspace, whoever calls: 2 by the user, 2 by the service account
    for (const token of [admin, admin, account.token, account.token]) {
      assert.strictEqual((await server.request("GET", me, { token })).status, 200)
    }
    const limited = await server.request("GET", me, { token: admin })
    assert.strictEqual(limited.status, 429)
    assert.strictEqual(limited.body.code, "QUOTA_EXCEEDED")
    assert.strictEqual(limited.body.statusCode, 429)
    const retryAfter = Number(limited.headers.get("retry-after"))
    assert.isAtLeast(retryAfter, 1)
    assert.isAtMost(retryAfter, windowSeconds)
    assert.strictEqual(
      (await server.request("GET", `${server.base}/service-accounts`, { token: account.token })).status,
      429
    )
    // another class and another workspace have their own budgets
    const write = await server.request("PUT", `${server.base}/service-accounts/${account.id}/description`, {
      token: admin,
      body: { description: "still writable" }
    })
    assert.strictEqual(write.status, 200)
    assert.strictEqual((await server.request("GET", "/workspace/other/api/v1/me", { token: other })).status, 200)
    // writes: the second is the last one allowed
    assert.strictEqual(
      (await server.request("PUT", `${server.base}/service-accounts/${account.id}/name`, { token: admin, body: { name: "n" } })).status,
      200
    )
    const writeLimited = await server.request("POST", `${server.base}/service-accounts/${account.id}/revoke`, { token: admin })
    assert.strictEqual(writeLimited.status, 429)
    assert.isTrue(writeLimited.headers.has("retry-after"))
    // after the window the workspace may read again
    await sleep(retryAfter * 1000 + 100)
    assert.strictEqual((await server.request("GET", me, { token: admin })).status, 200)
    // the service account was not revoked by the refused call
    assert.strictEqual((await server.request("GET", me, { token: account.token })).status, 200)
  })

  it("the token endpoint and unauthenticated calls are not counted against the workspace", async () => {
    await nextWindow()
    for (let i = 0; i < 6; i++) {
      assert.strictEqual((await server.request("GET", `${server.base}/me`)).status, 401)
    }
    assert.strictEqual(
      (await tokenRequest(server, { grant_type: "client_credentials", client_id: account.clientId, client_secret: account.clientSecret })).status,
      200
    )
    assert.strictEqual((await server.request("GET", `${server.base}/me`, { token: admin })).status, 200)
  })
})

describe("slowdown after bad credentials", () => {
  it("per client id: locked after 5 failures, even for the right secret, until Retry-After", async () => {
    const victim = await createAccount(server, admin, { role: "viewer" })
    const wrong = { grant_type: "client_credentials", client_id: victim.clientId, client_secret: `sk_${"1".repeat(64)}` }
    for (let i = 0; i < 5; i++) {
      const res = await tokenRequest(server, wrong)
      failures++
      assert.strictEqual(res.status, 401)
      assert.strictEqual(res.body.error, "invalid_client")
    }
    const right = { grant_type: "client_credentials", client_id: victim.clientId, client_secret: victim.clientSecret }
    const locked = await tokenRequest(server, right)
    assert.strictEqual(locked.status, 429)
    assert.strictEqual(locked.body.error, "slow_down")
    assert.strictEqual(locked.body.code, "QUOTA_EXCEEDED")
    const wait = Number(locked.headers.get("retry-after"))
    assert.isAtLeast(wait, 1)
    // other clients are not affected
    assert.strictEqual(
      (await tokenRequest(server, { grant_type: "client_credentials", client_id: account.clientId, client_secret: account.clientSecret })).status,
      200
    )
    await sleep(wait * 1000 + 100)
    assert.strictEqual((await tokenRequest(server, right)).status, 200)
    // the success cleared the count: one more mistake is a plain 401 again
    assert.strictEqual((await tokenRequest(server, wrong)).status, 401)
    failures++
  })

  it("per username for the password grant", async () => {
    await nextWindow()
    const add = await server.request("POST", `${server.base}/members`, {
      token: admin,
      body: { username: "slowpoke", password: "slowpoke-password", role: "viewer" }
    })
    assert.strictEqual(add.status, 201)
    for (let i = 0; i < 5; i++) {
      assert.strictEqual(
        (await tokenRequest(server, { grant_type: "password", username: "slowpoke", password: `guess-${i}` })).status,
        401
      )
      failures++
    }
    const locked = await tokenRequest(server, { grant_type: "password", username: "slowpoke", password: "slowpoke-password" })
    assert.strictEqual(locked.status, 429)
    assert.strictEqual(locked.body.error, "slow_down")
    assert.isTrue(locked.headers.has("retry-after"))
  })

  it("concurrent wrong passwords cannot get past the allowance: attempts are counted as they start", async () => {
    // adding the member is a write: a fresh window so the earlier tests' writes cannot make it a 429
    await nextWindow()
    const add = await server.request("POST", `${server.base}/members`, {
      token: admin,
      body: { username: "burst", password: "burst-password-1", role: "viewer" }
    })
    assert.strictEqual(add.status, 201)
    const answers = await Promise.all(
      Array.from({ length: 30 }, (_, i) => tokenRequest(server, { grant_type: "password", username: "burst", password: `guess-${i}` }))
    )
    const wrong = answers.filter((r) => r.status === 401).length
    failures += wrong
    assert.isAtMost(wrong, 5, "no more guesses checked than the allowance")
    assert.isAtLeast(wrong, 1)
    for (const r of answers.filter((r) => r.status !== 401)) {
      assert.strictEqual(r.status, 429)
      assert.strictEqual(r.body.error, "slow_down")
      assert.isTrue(r.headers.has("retry-after"))
    }
    if (wrong === 5) {
      const locked = await tokenRequest(server, { grant_type: "password", username: "burst", password: "burst-password-1" })
      assert.strictEqual(locked.status, 429)
    }
  })

  it("per address: 20 failures from one address lock every client id there", async () => {
    let status = 401
    let attempts = 0
    while (status === 401 && failures < 20) {
      const res = await tokenRequest(server, {
        grant_type: "client_credentials",
        client_id: `ci_${Math.random().toString(16).slice(2).padEnd(24, "0").slice(0, 24)}`,
        client_secret: `sk_${"2".repeat(64)}`
      })
      status = res.status
      attempts++
      if (status === 401) failures++
    }
    assert.strictEqual(failures, 20)
    assert.isAtLeast(attempts, 1)
    const locked = await tokenRequest(server, { grant_type: "client_credentials", client_id: account.clientId, client_secret: account.clientSecret })
    assert.strictEqual(locked.status, 429)
    assert.strictEqual(locked.body.error, "slow_down")
    // bearer tokens already issued keep working: the slowdown is about guessing credentials
    assert.strictEqual((await server.request("GET", `${server.base}/me`, { token: account.token })).status, 200)
  })
})

describe("slowdown behind a trusted proxy (TROUPE_TRUST_PROXY_HOPS=1)", () => {
  let proxied: TestServer
  beforeAll(async () => {
    proxied = await startServer({ env: { TROUPE_TRUST_PROXY_HOPS: "1" } })
  })
  afterAll(async () => {
    await proxied?.close()
  })

  it("counts failures per address the proxy saw: one client locked out does not lock out the others", async () => {
    const admin = await proxied.adminToken()
    const sa = await createAccount(proxied, admin, { role: "viewer" })
    const from = (address: string) => ({ "x-forwarded-for": address })
    const wrong = { grant_type: "client_credentials", client_id: sa.clientId, client_secret: `sk_${"3".repeat(64)}` }
    let failed = 0
    for (let i = 0; i < 30 && failed < 20; i++) {
      const res = await tokenRequest(proxied, { ...wrong, client_id: `ci_${String(i).padStart(24, "0")}` }, from("198.51.100.1"))
      if (res.status === 401) failed++
    }
    assert.strictEqual(failed, 20)
    const right = { grant_type: "client_credentials", client_id: sa.clientId, client_secret: sa.clientSecret }
    // the same TCP peer (this test), another client behind the proxy: not locked
    assert.strictEqual((await tokenRequest(proxied, right, from("198.51.100.2"))).status, 200)
    // the client that failed 20 times is, whatever it writes to the left of what the proxy appended
    assert.strictEqual((await tokenRequest(proxied, right, from("198.51.100.1"))).status, 429)
    assert.strictEqual((await tokenRequest(proxied, right, from("203.0.113.50, 198.51.100.1"))).status, 429)
  })
})
