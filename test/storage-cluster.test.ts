// Storage across two real nodes sharing only DATABASE_URL (PostgreSQL only: PGlite is one process). The default
// store of a PostgreSQL node keeps the bytes in the database, so a file uploaded through node A downloads through
// node B (whole and by range), a URL signed by A works on B (the signing key is in the database), and a delete
// through B is seen by A.
import * as Crypto from "node:crypto"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { startServer, type TestNode, type TestServer } from "./support/TestServer.ts"

describe.runIf(process.env.DATABASE_URL)("storage across two nodes", () => {
  let a: TestServer
  let b: TestNode
  let token: string
  const base = "/storage/workspace/default/api/v1"

  beforeAll(async () => {
    // one deployment, one public URL: tokens name it as issuer, so either node accepts them
    a = await startServer({ clustered: true, env: { TROUPE_PUBLIC_URL: "http://127.0.0.1:1" } })
    b = await a.startPeer()
    token = await a.adminToken()
  }, 300_000)

  afterAll(async () => {
    await a?.close()
  })

  it("uploads through A, downloads and signs across nodes, deletes through B", async () => {
    const bytes = Crypto.randomBytes(1_300_000)
    const form = new FormData()
    form.append("folder", "shared")
    form.append("file", new Blob([bytes]), "cluster.bin")
    const up = await fetch(`${a.baseUrl}${base}/upload`, { method: "POST", headers: { authorization: `Bearer ${token}` }, body: form })
    expect(up.status).toBe(201)
    const file = (await up.json()) as { id: string; size: number }

    const whole = await fetch(`${b.baseUrl}${base}/files/${file.id}`, { headers: { authorization: `Bearer ${token}` } })
    expect(whole.status).toBe(200)
    expect(Buffer.from(await whole.arrayBuffer()).equals(bytes)).toBe(true)
    const part = await fetch(`${b.baseUrl}${base}/files/${file.id}`, {
      headers: { authorization: `Bearer ${token}`, range: "bytes=262100-524400" }
    })
    expect(part.status).toBe(206)
    expect(Buffer.from(await part.arrayBuffer()).equals(bytes.subarray(262100, 524401))).toBe(true)

    // signed on A (its URL names the public origin), verified on B
    const signed = await a.request("POST", `${base}/files/${file.id}/signed-url`, { token, body: { expiresIn: 120 } })
    expect(signed.status).toBe(200)
    const path = new URL(signed.body.url)
    const viaB = await fetch(`${b.baseUrl}${path.pathname}${path.search}`)
    expect(viaB.status).toBe(200)
    expect(Buffer.from(await viaB.arrayBuffer()).equals(bytes)).toBe(true)

    expect((await b.request("DELETE", `${base}/files/${file.id}`, { token })).status).toBe(200)
    expect((await a.request("GET", `${base}/files/${file.id}/metadata`, { token })).status).toBe(404)
    expect((await fetch(`${a.baseUrl}${path.pathname}${path.search}`)).status).toBe(404)
  })
})
