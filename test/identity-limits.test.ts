// Rate limits per workspace and class (429 + Retry-After + QUOTA_EXCEEDED, recovery after the window) and the
// slowdown of the token endpoint after repeated bad credentials, per client id and per username (each from one
// address), and per address; concurrent guesses are counted as they start.
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { createAccount, tokenRequest } from "./support/IdentityHelpers.ts"
import { startServer, type TestServer } from "./support/TestServer.ts"
import { sleep } from "./support/wait.ts"

const windowSeconds = 4
let server: TestServer
let admin: string
let other: string
let account: { id: number; clientId: string; clientSecret: string; token: string }
/** bad credentials sent from this test's address so far (the address rule locks at 20) */
let failures = 0

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
  expect(created.status).toBe(201)
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
      expect((await server.request("GET", me, { token })).status).toBe(200)
    }
    const limited = await server.request("GET", me, { token: admin })
    expect(limited.status).toBe(429)
    expect(limited.body.code).toBe("QUOTA_EXCEEDED")
    expect(limited.body.statusCode).toBe(429)
    const retryAfter = Number(limited.headers.get("retry-after"))
    expect(retryAfter).toBeGreaterThanOrEqual(1)
    expect(retryAfter).toBeLessThanOrEqual(windowSeconds)
    expect((await server.request("GET", `${server.base}/service-accounts`, { token: account.token })).status).toBe(429)
    // another class and another workspace have their own budgets
    const write = await server.request("PUT", `${server.base}/service-accounts/${account.id}/description`, {
      token: admin,
      body: { description: "still writable" }
    })
    expect(write.status).toBe(200)
    expect((await server.request("GET", "/workspace/other/api/v1/me", { token: other })).status).toBe(200)
    // writes: the second is the last one allowed
    expect(
      (await server.request("PUT", `${server.base}/service-accounts/${account.id}/name`, { token: admin, body: { name: "n" } })).status
    ).toBe(200)
    const writeLimited = await server.request("POST", `${server.base}/service-accounts/${account.id}/revoke`, { token: admin })
    expect(writeLimited.status).toBe(429)
    expect(writeLimited.headers.has("retry-after")).toBe(true)
    // after the window the workspace may read again
    await sleep(retryAfter * 1000 + 100)
    expect((await server.request("GET", me, { token: admin })).status).toBe(200)
    // the service account was not revoked by the refused call
    expect((await server.request("GET", me, { token: account.token })).status).toBe(200)
  })

  it("the token endpoint and unauthenticated calls are not counted against the workspace", async () => {
    await nextWindow()
    for (let i = 0; i < 6; i++) {
      expect((await server.request("GET", `${server.base}/me`)).status).toBe(401)
    }
    expect(
      (await tokenRequest(server, { grant_type: "client_credentials", client_id: account.clientId, client_secret: account.clientSecret }))
        .status
    ).toBe(200)
    expect((await server.request("GET", `${server.base}/me`, { token: admin })).status).toBe(200)
  })
})

describe("slowdown after bad credentials", () => {
  it("per client id: locked after 5 failures, even for the right secret, until Retry-After", async () => {
    const victim = await createAccount(server, admin, { role: "viewer" })
    const wrong = { grant_type: "client_credentials", client_id: victim.clientId, client_secret: `sk_${"1".repeat(64)}` }
    for (let i = 0; i < 5; i++) {
      const res = await tokenRequest(server, wrong)
      failures++
      expect(res.status).toBe(401)
      expect(res.body.error).toBe("invalid_client")
    }
    const right = { grant_type: "client_credentials", client_id: victim.clientId, client_secret: victim.clientSecret }
    const locked = await tokenRequest(server, right)
    expect(locked.status).toBe(429)
    expect(locked.body.error).toBe("slow_down")
    expect(locked.body.code).toBe("QUOTA_EXCEEDED")
    const wait = Number(locked.headers.get("retry-after"))
    expect(wait).toBeGreaterThanOrEqual(1)
    // other clients are not affected
    expect(
      (await tokenRequest(server, { grant_type: "client_credentials", client_id: account.clientId, client_secret: account.clientSecret }))
        .status
    ).toBe(200)
    await sleep(wait * 1000 + 100)
    expect((await tokenRequest(server, right)).status).toBe(200)
    // the success cleared the count: one more mistake is a plain 401 again
    expect((await tokenRequest(server, wrong)).status).toBe(401)
    failures++
  })

  it("per username for the password grant", async () => {
    await nextWindow()
    const add = await server.request("POST", `${server.base}/members`, {
      token: admin,
      body: { username: "slowpoke", password: "slowpoke-password", role: "viewer" }
    })
    expect(add.status).toBe(201)
    for (let i = 0; i < 5; i++) {
      expect((await tokenRequest(server, { grant_type: "password", username: "slowpoke", password: `guess-${i}` })).status).toBe(401)
      failures++
    }
    const locked = await tokenRequest(server, { grant_type: "password", username: "slowpoke", password: "slowpoke-password" })
    expect(locked.status).toBe(429)
    expect(locked.body.error).toBe("slow_down")
    expect(locked.headers.has("retry-after")).toBe(true)
  })

  it("concurrent wrong passwords cannot get past the allowance: attempts are counted as they start", async () => {
    // adding the member is a write: a fresh window so the earlier tests' writes cannot make it a 429
    await nextWindow()
    const add = await server.request("POST", `${server.base}/members`, {
      token: admin,
      body: { username: "burst", password: "burst-password-1", role: "viewer" }
    })
    expect(add.status).toBe(201)
    const answers = await Promise.all(
      Array.from({ length: 30 }, (_, i) => tokenRequest(server, { grant_type: "password", username: "burst", password: `guess-${i}` }))
    )
    const wrong = answers.filter((r) => r.status === 401).length
    failures += wrong
    expect(wrong, "no more guesses checked than the allowance").toBeLessThanOrEqual(5)
    expect(wrong).toBeGreaterThanOrEqual(1)
    for (const r of answers.filter((r) => r.status !== 401)) {
      expect(r.status).toBe(429)
      expect(r.body.error).toBe("slow_down")
      expect(r.headers.has("retry-after")).toBe(true)
    }
    if (wrong === 5) {
      const locked = await tokenRequest(server, { grant_type: "password", username: "burst", password: "burst-password-1" })
      expect(locked.status).toBe(429)
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
    expect(failures).toBe(20)
    expect(attempts).toBeGreaterThanOrEqual(1)
    const locked = await tokenRequest(server, {
      grant_type: "client_credentials",
      client_id: account.clientId,
      client_secret: account.clientSecret
    })
    expect(locked.status).toBe(429)
    expect(locked.body.error).toBe("slow_down")
    // bearer tokens already issued keep working: the slowdown is about guessing credentials
    expect((await server.request("GET", `${server.base}/me`, { token: account.token })).status).toBe(200)
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
    expect(failed).toBe(20)
    const right = { grant_type: "client_credentials", client_id: sa.clientId, client_secret: sa.clientSecret }
    // the same TCP peer (this test), another client behind the proxy: not locked
    expect((await tokenRequest(proxied, right, from("198.51.100.2"))).status).toBe(200)
    // the client that failed 20 times is, whatever it writes to the left of what the proxy appended
    expect((await tokenRequest(proxied, right, from("198.51.100.1"))).status).toBe(429)
    expect((await tokenRequest(proxied, right, from("203.0.113.50, 198.51.100.1"))).status).toBe(429)
  })
})
