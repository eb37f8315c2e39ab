// Uploads that share a metadata commit (StorageService's group commit, StorageRepo.insertMany): concurrent uploads
// into two workspaces, without a quota, each keep their own name, folder, metadata, size and checksum; every
// workspace's usage is the sum of its files; each file gets its own file.uploaded event; clients that go away once
// their body is sent (while the commit may be under way) leave no row without its bytes. Runs on the node's default
// store (disk on PGlite, chunk rows on PostgreSQL with DATABASE_URL). The quota's race is in storage.test.ts.
import * as Crypto from "node:crypto"
import * as Http from "node:http"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { startServer, type TestServer } from "./support/TestServer.ts"
import { startReceiver } from "./support/WebhookReceiver.ts"

let server: TestServer

beforeAll(async () => {
  server = await startServer({ env: { TROUPE_WEBHOOK_RETRY_DELAYS: "1,1,1", TROUPE_LIMIT_WRITES: "0" } })
}, 300_000)

afterAll(async () => {
  await server?.close()
})

const workspace = async (slug: string) => {
  const root = await server.adminToken()
  expect((await server.request("POST", "/workspace/api/v1/workspaces", { token: root, body: { slug } })).status).toBe(201)
  const token = await server.userToken("admin", server.adminPassword, slug)
  return { slug, token, base: `/storage/workspace/${slug}/api/v1` }
}

describe("uploads sharing a commit", () => {
  it("concurrent uploads into two workspaces keep their own fields; usage sums them; one event each", { timeout: 120_000 }, async () => {
    const [a, b] = [await workspace("batch-a"), await workspace("batch-b")]
    const hooks = await startReceiver()
    try {
      for (const ws of [a, b]) {
        const hook = await server.request("POST", `/workspace/${ws.slug}/api/v1/webhooks`, {
          token: ws.token,
          body: { url: `${hooks.url}/${ws.slug}`, events: ["file.uploaded"] }
        })
        expect(hook.status).toBe(201)
      }
      const sent = Array.from({ length: 24 }, (_, i) => ({
        ws: i % 3 === 0 ? b : a,
        bytes: Crypto.randomBytes(1 + i * 977),
        name: `f-${i}.bin`,
        folder: `dir${i % 4}`,
        metadata: { i }
      }))
      const answers = await Promise.all(
        sent.map(async (s) => {
          const form = new FormData()
          form.append("folder", s.folder)
          form.append("file", new Blob([s.bytes]), s.name)
          form.append("metadata", JSON.stringify(s.metadata))
          const res = await fetch(`${server.baseUrl}${s.ws.base}/upload`, {
            method: "POST",
            headers: { authorization: `Bearer ${s.ws.token}` },
            body: form
          })
          return { status: res.status, body: (await res.json()) as any }
        })
      )
      for (const [i, s] of sent.entries()) {
        const got = answers[i]!
        expect(got.status).toBe(201)
        expect(got.body).toMatchObject({
          name: s.name,
          folder: s.folder,
          size: s.bytes.length,
          metadata: s.metadata,
          checksum: `sha256:${Crypto.createHash("sha256").update(s.bytes).digest("hex")}`
        })
        const meta = await server.request("GET", `${s.ws.base}/files/${got.body.id}/metadata`, { token: s.ws.token })
        expect(meta.body).toEqual(got.body)
        const res = await fetch(`${server.baseUrl}${s.ws.base}/files/${got.body.id}`, {
          headers: { authorization: `Bearer ${s.ws.token}` }
        })
        expect(Buffer.from(await res.arrayBuffer()).equals(s.bytes)).toBe(true)
      }
      for (const ws of [a, b]) {
        const mine = sent.filter((s) => s.ws === ws)
        const usage = (await server.request("GET", `${ws.base}/usage`, { token: ws.token })).body
        expect(usage).toMatchObject({ files: mine.length, bytes: mine.reduce((n, s) => n + s.bytes.length, 0) })
        expect((await server.request("GET", `${ws.base}/files?limit=100`, { token: ws.token })).body.total).toBe(mine.length)
      }
      await hooks.waitFor((hits) => hits.length >= sent.length, 60_000, "one file.uploaded per upload")
      const ids = hooks.hits.map((h) => h.json.data.id).sort()
      expect(ids).toEqual(answers.map((x) => x.body.id).sort())
      for (const hit of hooks.hits) expect(hit.json.data).toEqual(answers.find((x) => x.body.id === hit.json.data.id)!.body)
    } finally {
      await hooks.close()
    }
  })

  it("clients gone once their body is sent: every committed file has its bytes, and the usage is their sum", {
    timeout: 120_000
  }, async () => {
    const ws = await workspace("batch-gone")
    const boundary = "GoneAfterBody"
    const bodies = Array.from({ length: 32 }, (_, i) =>
      Buffer.concat([
        Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="g-${i}.bin"\r\n\r\n`),
        Crypto.randomBytes(20_000 + i * 1000),
        Buffer.from(`\r\n--${boundary}--\r\n`)
      ])
    )
    await Promise.all(
      bodies.map(
        (body, i) =>
          new Promise<void>((resolve) => {
            const req = Http.request(`${server.baseUrl}${ws.base}/upload`, {
              method: "POST",
              headers: {
                authorization: `Bearer ${ws.token}`,
                "content-type": `multipart/form-data; boundary=${boundary}`,
                "content-length": body.length
              }
            })
            req.on("error", () => resolve())
            req.on("response", (res) => {
              res.resume()
              res.on("end", () => resolve())
            })
            // gone at a different moment each (0 to 465 ms after the body): before the commit, while it runs, after
            req.end(body, () =>
              setTimeout(() => {
                req.destroy()
                resolve()
              }, i * 15)
            )
          })
      )
    )
    // an upload whose client left may still be committing: read the usage between two equal listings (a commit
    // writes the row and the usage in one transaction, so nothing committed in between)
    const listing = async () => (await server.request("GET", `${ws.base}/files?limit=100`, { token: ws.token })).body
    let list = await listing()
    let usage = (await server.request("GET", `${ws.base}/usage`, { token: ws.token })).body
    for (let again = await listing(); again.total !== list.total; again = await listing()) {
      await new Promise((r) => setTimeout(r, 200))
      list = await listing()
      usage = (await server.request("GET", `${ws.base}/usage`, { token: ws.token })).body
    }
    let bytes = 0
    for (const file of list.data) {
      const res = await fetch(`${server.baseUrl}${ws.base}/files/${file.id}`, { headers: { authorization: `Bearer ${ws.token}` } })
      expect(res.status).toBe(200)
      expect((await res.arrayBuffer()).byteLength).toBe(file.size)
      bytes += file.size
    }
    expect(usage).toMatchObject({ files: list.total, bytes })
  })
})
