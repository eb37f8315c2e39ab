// Signed downloads (no token) count as reads of the URL's workspace: past TROUPE_LIMIT_READS they answer 429 with
// the contract body and Retry-After, share the budget with token reads, leave other workspaces alone, and recover
// in the next window. An altered URL is refused before it is counted.
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { alteredSignature } from "./support/SignedUrls.ts"
import { startServer, type TestServer } from "./support/TestServer.ts"
import { sleep } from "./support/wait.ts"

const windowSeconds = 4
const READS = 3
let server: TestServer

/** Waits for the start of the next limit window (windows are aligned to the clock). */
const nextWindow = async () => {
  const ms = windowSeconds * 1000
  await sleep(ms - (Date.now() % ms) + 50)
}

beforeAll(async () => {
  server = await startServer({ env: { TROUPE_LIMIT_READS: String(READS), TROUPE_LIMIT_WINDOW_SECONDS: String(windowSeconds) } })
}, 300_000)

afterAll(async () => {
  await server?.close()
})

/** A workspace holding one file, and a signed URL of it (made in an earlier window than the caller's checks). */
const fileWithUrl = async (slug: string) => {
  const root = await server.adminToken()
  expect((await server.request("POST", "/workspace/api/v1/workspaces", { token: root, body: { slug } })).status).toBe(201)
  const token = await server.userToken("admin", server.adminPassword, slug)
  const base = `/storage/workspace/${slug}/api/v1`
  const form = new FormData()
  form.append("file", new Blob(["hello"]), "a.txt")
  const up = await fetch(`${server.baseUrl}${base}/upload`, { method: "POST", headers: { authorization: `Bearer ${token}` }, body: form })
  expect(up.status).toBe(201)
  const file = (await up.json()) as { id: string }
  const signed = await server.request("POST", `${base}/files/${file.id}/signed-url`, { token, body: { expiresIn: 600 } })
  expect(signed.status).toBe(200)
  return { token, base, id: file.id, url: signed.body.url as string }
}

describe("signed downloads and the reads limit", () => {
  it("count as reads of the URL's workspace", { timeout: 120_000 }, async () => {
    // slugs of this attempt, so that a retry starts afresh
    const attempt = Math.random().toString(36).slice(2, 8)
    const a = await fileWithUrl(`limited-a-${attempt}`)
    const b = await fileWithUrl(`limited-b-${attempt}`)
    await nextWindow()
    // an altered URL is refused (403) and not counted
    expect((await fetch(alteredSignature(a.url))).status).toBe(403)
    for (let i = 0; i < READS; i++) {
      const ok = await fetch(a.url)
      expect(ok.status).toBe(200)
      expect(await ok.text()).toBe("hello")
    }
    const limited = await fetch(a.url)
    expect(limited.status).toBe(429)
    const body = (await limited.json()) as Record<string, unknown>
    expect(body).toMatchObject({ code: "QUOTA_EXCEEDED", statusCode: 429, error: expect.any(String), message: expect.any(String) })
    const retryAfter = Number(limited.headers.get("retry-after"))
    expect(retryAfter).toBeGreaterThanOrEqual(1)
    expect(retryAfter).toBeLessThanOrEqual(windowSeconds)
    // one budget with the token reads of the same workspace; another workspace has its own
    expect((await server.request("GET", `${a.base}/files/${a.id}/metadata`, { token: a.token })).status).toBe(429)
    expect((await fetch(b.url)).status).toBe(200)
    // the next window admits it again
    await nextWindow()
    expect((await fetch(a.url)).status).toBe(200)
  })
})
