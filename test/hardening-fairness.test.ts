// Hardening, end to end on one node (PGlite, or PostgreSQL when DATABASE_URL is set): caps that keep one workspace
// from taking what others need (webhooks per workspace, SSE connections per workspace, indexed properties per
// structure), SSE streams that end when their caller may no longer read, secrets that stay secret when a field
// becomes one (records, versions, changelog) and cannot be filtered on in any mode, and tokens kept out of logs.
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { createAccount, createUser } from "./support/IdentityHelpers.ts"
import { openSse, type SseConnection } from "./support/SseClient.ts"
import { startServer, type TestServer } from "./support/TestServer.ts"
import { sleep } from "./support/wait.ts"

describe("hardening: fairness and secrets", () => {
  let server: TestServer
  let token: string
  const open: Array<SseConnection> = []
  const eventsUrl = (query = "") => `${server.baseUrl}/realtime/workspace/${server.workspace}/api/v1/events${query}`
  const connect = async (bearer: string, query = "") => {
    const c = await openSse(eventsUrl(query), { authorization: `Bearer ${bearer}` })
    open.push(c)
    return c
  }
  const closeAll = async () => {
    for (const c of open.splice(0)) c.close()
    await sleep(200)
  }
  const structure = async (body: Record<string, unknown>) => {
    const res = await server.request("POST", `${server.base}/structures`, { token, body })
    expect(res.status, res.text).toBe(200)
    return res.body
  }
  const expectContractError = (res: { status: number; body: any }, status: number, code: string) => {
    expect(res.status, JSON.stringify(res.body)).toBe(status)
    expect(res.body).toMatchObject({ statusCode: status, code, error: expect.any(String), message: expect.any(String) })
    expect(Array.isArray(res.body.details)).toBe(true)
    expect(typeof res.body.requestId).toBe("string")
  }

  beforeAll(async () => {
    server = await startServer({
      env: {
        TROUPE_WEBHOOKS_PER_WORKSPACE: "3",
        TROUPE_SSE_MAX_CONNECTIONS: "2",
        TROUPE_SSE_HEARTBEAT_SECONDS: "0.5",
        TROUPE_LOG_LEVEL: "info"
      }
    })
    token = await server.adminToken()
  })
  afterAll(async () => {
    for (const c of open) c.close()
    await server?.close()
  })

  describe("webhooks", () => {
    it("a workspace holds at most TROUPE_WEBHOOKS_PER_WORKSPACE webhooks: one more is 409 CONFLICT", async () => {
      const create = (i: number) =>
        server.request("POST", `${server.base}/webhooks`, {
          token,
          body: { url: `http://127.0.0.1:9/hook-${i}`, events: ["record.created"], enabled: false }
        })
      const ids: Array<string> = []
      for (let i = 0; i < 3; i++) {
        const res = await create(i)
        expect(res.status, res.text).toBe(201)
        expect(res.body.secret).toMatch(/^whsec_/)
        ids.push(res.body.id)
      }
      const refused = await create(3)
      expectContractError(refused, 409, "CONFLICT")
      expect(refused.body.message).toMatch(/3 webhooks/)
      // a deleted one frees its place
      expect((await server.request("DELETE", `${server.base}/webhooks/${ids[0]}`, { token })).status).toBe(204)
      const again = await create(4)
      expect(again.status, again.text).toBe(201)
      // the secret is shown once, never read back
      const read = await server.request("GET", `${server.base}/webhooks/${again.body.id}`, { token })
      expect(read.status).toBe(200)
      expect(read.text).not.toContain(again.body.secret)
      expect(read.body.secret).toBeUndefined()
      for (const id of [...ids.slice(1), again.body.id]) {
        await server.request("DELETE", `${server.base}/webhooks/${id}`, { token })
      }
    })
  })

  describe("realtime", () => {
    it("caps open streams per workspace (429 TOO_MANY_CONNECTIONS with the contract body); a closed one frees its place", async () => {
      const a = await connect(token)
      const b = await connect(token)
      expect([a.status, b.status]).toEqual([200, 200])
      const refused = await openSse(eventsUrl(), { authorization: `Bearer ${token}` })
      expect(refused.status).toBe(429)
      expect(refused.headers.get("retry-after")).toMatch(/^\d+$/)
      expect(refused.errorBody).toMatchObject({ statusCode: 429, code: "TOO_MANY_CONNECTIONS", error: "Too Many Requests" })
      expect(typeof refused.errorBody.requestId).toBe("string")
      a.close()
      let next: SseConnection | undefined
      const deadline = Date.now() + 5_000
      while (Date.now() < deadline) {
        next = await openSse(eventsUrl(), { authorization: `Bearer ${token}` })
        if (next.status === 200) break
        await sleep(100)
      }
      expect(next?.status).toBe(200)
      open.push(next!)
      await closeAll()
    })

    it("ends the stream of a service account that is revoked, with a last stream.closed message", async () => {
      const account = await createAccount(server, token, { permissions: ["read:records"] })
      const sse = await connect(account.token)
      expect(sse.status).toBe(200)
      await sleep(300)
      const revoked = await server.request("POST", `${server.base}/service-accounts/${account.id}/revoke`, { token })
      expect(revoked.status, revoked.text).toBeLessThan(300)
      await sse.waitFor((m) => m.some((x) => x.json?.event === "stream.closed"), 10_000, "stream.closed")
      const last = sse.messages[sse.messages.length - 1]!
      expect(last.json).toMatchObject({ event: "stream.closed", reason: "access_revoked" })
      expect(last.id).toBeUndefined()
      const deadline = Date.now() + 5_000
      while (!sse.ended() && Date.now() < deadline) await sleep(25)
      expect(sse.ended()).toBe(true)
      // and it cannot come back with that token
      const again = await openSse(eventsUrl(), { authorization: `Bearer ${account.token}` })
      expect(again.status).toBe(401)
      await closeAll()
    })

    it("ends the stream of a member removed from the workspace; other streams go on", async () => {
      const member = await createUser(server, token, "developer")
      const theirs = await connect(member.token)
      const mine = await connect(token)
      expect([theirs.status, mine.status]).toEqual([200, 200])
      await sleep(300)
      const removed = await server.request("DELETE", `${server.base}/members/${member.userId}`, { token })
      expect(removed.status, removed.text).toBeLessThan(300)
      await theirs.waitFor((m) => m.some((x) => x.json?.event === "stream.closed"), 10_000, "stream.closed")
      expect(theirs.messages.at(-1)!.json.reason).toBe("access_revoked")
      await sleep(1_500)
      expect(mine.ended()).toBe(false)
      expect(mine.messages.some((x) => x.json?.event === "stream.closed")).toBe(false)
      await closeAll()
    })
  })

  describe("indexed properties", () => {
    const props = (n: number) => Array.from({ length: n }, (_, i) => ({ name: `f${i}`, type: "number", indexed: true }))

    it("a structure with more than 32 indexed properties is 400 naming each one past the 32nd", async () => {
      const res = await server.request("POST", `${server.base}/structures`, {
        token,
        body: { name: "Too indexed", properties: props(34) }
      })
      expectContractError(res, 400, "VALIDATION_ERROR")
      expect(res.body.details.map((d: any) => d.field)).toEqual(["properties[32].indexed", "properties[33].indexed"])
      expect(res.body.details[0].message).toContain("'f32'")
    })

    it("an update past the limit is refused the same way; 32 are fine", async () => {
      const s = await structure({ name: "Indexed", properties: props(32) })
      const res = await server.request("PUT", `${server.base}/structures/${s.id}`, {
        token,
        body: { properties: [{ id: "new", name: "one_more", type: "string", indexed: true }] }
      })
      expectContractError(res, 400, "VALIDATION_ERROR")
      expect(res.body.details[0].field).toBe("properties[32].indexed")
      expect(res.body.details[0].message).toContain("'one_more'")
    })
  })

  describe("secrets", () => {
    it("setting isSecret on a field with data encrypts it: records, versions and changelog show only the mask", async () => {
      const s = await structure({
        name: "Vault",
        properties: [
          { name: "label", type: "string" },
          { name: "pin", type: "string" },
          {
            name: "creds",
            type: "object",
            properties: [
              { name: "user", type: "string" },
              { name: "key", type: "string" }
            ]
          }
        ]
      })
      const created = await server.request("POST", `${server.base}/records`, {
        token,
        body: { structureId: s.id, data: { label: "a", pin: "pin-1111", creds: { user: "u", key: "key-2222" } } }
      })
      expect(created.status, created.text).toBe(201)
      const id = created.body.id
      const patched = await server.request("PATCH", `${server.base}/records/${id}`, {
        token,
        body: { data: { pin: "pin-3333", creds: { user: "u", key: "key-4444" } } }
      })
      expect(patched.status, patched.text).toBe(200)
      const plaintexts = ["pin-1111", "pin-3333", "key-2222", "key-4444"]
      const before = await server.request("GET", `${server.base}/records/${id}/history`, { token })
      expect(before.text).toContain("pin-1111") // not secret yet

      const pin = s.properties.find((p: any) => p.name === "pin")
      const creds = s.properties.find((p: any) => p.name === "creds")
      const key = creds.properties.find((p: any) => p.name === "key")
      const updated = await server.request("PUT", `${server.base}/structures/${s.id}`, {
        token,
        body: {
          properties: [
            { ...pin, isSecret: true },
            { ...creds, properties: creds.properties.map((p: any) => (p.id === key.id ? { ...p, isSecret: true } : p)) }
          ]
        }
      })
      expect(updated.status, updated.text).toBe(200)

      const reads = await Promise.all([
        server.request("GET", `${server.base}/records/${id}`, { token }),
        server.request("GET", `${server.base}/records/${id}/history`, { token }),
        server.request("GET", `${server.base}/records/${id}/changelog`, { token }),
        server.request("GET", `${server.base}/records/${id}?includeHistory=true&includeChangelog=true`, { token }),
        server.request("GET", `${server.base}/records/${id}?version=1`, { token }),
        server.request("GET", `${server.base}/structures/${s.recordSlug}/records/${id}/history`, { token }),
        server.request("GET", `${server.base}/records?structureId=${s.id}`, { token })
      ])
      for (const res of reads) {
        expect(res.status, res.text).toBe(200)
        for (const p of plaintexts) expect(res.text, `${p} in ${res.text}`).not.toContain(p)
      }
      const [record, history, changelog] = reads.map((r) => r.body)
      expect(record.data).toMatchObject({ label: "a", pin: "********", creds: { user: "u", key: "********" } })
      expect(history.versions.map((v: any) => v.data.pin)).toEqual(["********", "********"])
      expect(history.versions[0].changes.pin).toEqual({ old: "********", new: "********" })
      expect(changelog.entries[0].changes.pin).toMatchObject({ oldValue: "********", newValue: "********" })

      // stored encrypted under the right path: an admin may reveal the current values
      const revealed = await server.request("GET", `${server.base}/records/${id}?reveal=true`, { token })
      expect(revealed.body.data).toMatchObject({ pin: "pin-3333", creds: { key: "key-4444" } })
      const v1 = await server.request("GET", `${server.base}/records/${id}?version=1&reveal=true`, { token })
      expect(v1.status).toBe(200)
      // a secret field cannot be filtered on
      const filtered = await server.request("GET", `${server.base}/records?structureId=${s.id}&filter=pin:pin-3333`, { token })
      expectContractError(filtered, 400, "VALIDATION_ERROR")

      // renaming a secret keeps it readable; unsetting isSecret decrypts it back
      const renamed = await server.request("PUT", `${server.base}/structures/${s.id}`, {
        token,
        body: { properties: [{ ...pin, name: "code", isSecret: true }] }
      })
      expect(renamed.status, renamed.text).toBe(200)
      const afterRename = await server.request("GET", `${server.base}/records/${id}?reveal=true`, { token })
      expect(afterRename.body.data.code).toBe("pin-3333")
      const unset = await server.request("PUT", `${server.base}/structures/${s.id}`, {
        token,
        body: { properties: [{ ...pin, name: "code", isSecret: false }] }
      })
      expect(unset.status, unset.text).toBe(200)
      const plain = await server.request("GET", `${server.base}/records/${id}`, { token })
      expect(plain.body.data.code).toBe("pin-3333")
      expect(plain.body.data.creds.key).toBe("********")
    })

    it("a schemaless structure's secret field cannot be filtered, sorted or searched (400), on every list route", async () => {
      const s = await structure({
        name: "Loose",
        schemaDiscoveryMode: "schemaless",
        properties: [
          { name: "token", type: "string", isSecret: true },
          {
            name: "nested",
            type: "object",
            properties: [{ name: "inner", type: "string", isSecret: true }]
          }
        ]
      })
      const created = await server.request("POST", `${server.base}/records`, {
        token,
        body: { structureId: s.id, data: { token: "tok-5555", nested: { inner: "in-6666" }, free: "x" } }
      })
      expect(created.status, created.text).toBe(201)
      const slug = s.recordSlug
      const refused = [
        `${server.base}/records?structureId=${slug}&filter=token:tok-5555`,
        `${server.base}/records?structureId=${slug}&filter=token:~tok`,
        `${server.base}/records?structureId=${slug}&filter=nested.inner:in-6666`,
        `${server.base}/records?structureId=${slug}&sort=token`,
        `${server.base}/records?structureId=${slug}&search=tok&searchFields=token`,
        `${server.base}/records/slug/${slug}?token=tok-5555`,
        `${server.base}/records/slug/${slug}?token[startswith]=tok`,
        `${server.base}/structures/${slug}/records?query=${encodeURIComponent("token=='tok-5555'")}`
      ]
      for (const url of refused) {
        const res = await server.request("GET", url, { token })
        expect(res.status, `${url}: ${res.text}`).toBe(400)
        expect(res.body.statusCode).toBe(400)
      }
      const query = await server.request("POST", `${server.base}/query`, {
        token,
        body: { query: `FROM ${slug} WHERE token = 'tok-5555'` }
      })
      expect(query.status, query.text).toBe(400)
      // undeclared fields still filter as text
      const free = await server.request("GET", `${server.base}/records?structureId=${slug}&filter=free:x`, { token })
      expect(free.status, free.text).toBe(200)
      expect(free.body.results).toHaveLength(1)
      expect(free.text).not.toContain("tok-5555")
    })
  })

  describe("logs", () => {
    it("never log an access_token query value", async () => {
      const account = await createAccount(server, token, { permissions: ["read:records"] })
      const secret = account.token
      const sse = await openSse(eventsUrl(`?access_token=${encodeURIComponent(secret)}`))
      expect(sse.status).toBe(200)
      open.push(sse)
      await server.request("GET", `${server.base}/records?limit=1&access_token=${encodeURIComponent(secret)}`, { token })
      await server.request("GET", `${server.base}/structures?access_token=${encodeURIComponent(secret)}`)
      await openSse(eventsUrl(`?access_token=${encodeURIComponent(secret)}x`))
      await closeAll()
      await sleep(300)
      expect(server.output()).toContain('"request"') // request lines are logged at info
      expect(server.output()).not.toContain(secret)
      expect(server.output()).not.toContain(secret.split(".")[2])
    })
  })
})
