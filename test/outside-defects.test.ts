// Defects found by using the product from outside (issue 33), end to end on one node: a structure slug whose parts
// start with digits in the query language, a datetime in ISO 8601 basic form, and the line the node logs when it
// listens. Each case failed before its fix.
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type Client, client, createStructure, expectStatus } from "./support/records.ts"
import { startServer, type TestServer } from "./support/TestServer.ts"

let server: TestServer
let api: Client

beforeAll(async () => {
  server = await startServer({ env: { TROUPE_LOG_LEVEL: "info" } })
  api = client(server, await server.adminToken())
}, 300_000)

afterAll(async () => {
  await server?.close()
})

const suffix = Date.now().toString(36)

describe("defects found from outside", () => {
  it("the node logs where it listens, the console and docs URLs and its database", () => {
    const line = `Troupe listening on ${server.baseUrl} (console ${server.baseUrl}/console, API reference ${server.baseUrl}/docs, database: `
    expect(server.output()).toContain(line)
  })

  it("the query language reads slugs whose parts start with digits", async () => {
    for (const recordSlug of [`items-3d-${suffix}`, `3d-models-${suffix}`, `acc-items-09cb14e9-${suffix}`, `2024-${suffix}`]) {
      await createStructure(api, { name: recordSlug, recordSlug, properties: [{ name: "n", type: "number" }] })
      expectStatus(await api.call("POST", "/records", { structureId: recordSlug, data: { n: 1 } }), 201)
      const res = await api.call("POST", "/query", { query: `FROM ${recordSlug} WHERE n = 1` })
      expectStatus(res, 200)
      expect(res.body.results).toHaveLength(1)
    }
  })

  it("a datetime in ISO 8601 basic form is accepted, compared and indexed like the extended form", async () => {
    const recordSlug = `when-${suffix}`
    await createStructure(api, {
      name: recordSlug,
      recordSlug,
      properties: [
        { name: "at", type: "datetime", indexed: true },
        { name: "label", type: "string" }
      ]
    })
    for (const [label, at] of [
      ["basic", "20250101T120000Z"],
      ["basic-offset", "20250101T1400+0100"],
      ["extended", "2025-01-02T12:00:00Z"]
    ]) {
      expectStatus(await api.call("POST", "/records", { structureId: recordSlug, data: { label, at } }), 201)
    }
    const after = await api.call("POST", "/query", {
      query: `FROM ${recordSlug} WHERE at > '20250101T130000Z' ORDER BY at`
    })
    expectStatus(after, 200)
    expect(after.body.results.map((r: any) => r.data.label)).toEqual(["extended"])
    const between = await api.call("POST", "/query", {
      query: `FROM ${recordSlug} WHERE at BETWEEN '2025-01-01T11:00:00Z' AND '20250101T131500Z' ORDER BY at`
    })
    expectStatus(between, 200)
    expect(between.body.results.map((r: any) => r.data.label)).toEqual(["basic", "basic-offset"])
    const bad = await api.call("POST", "/records", { structureId: recordSlug, data: { label: "x", at: "20251301T120000Z" } })
    expectStatus(bad, 400)
  })

  it("/docs and /openapi.json are compressed and carry an ETag; a revalidation is a 304", async () => {
    for (const [path, encoding] of [
      ["/docs", "br"],
      ["/openapi.json", "gzip"]
    ] as const) {
      const plain = await fetch(server.baseUrl + path, { headers: { "accept-encoding": "identity" } })
      const plainBytes = (await plain.arrayBuffer()).byteLength
      expect(plain.headers.get("content-encoding")).toBeNull()
      const etag = plain.headers.get("etag")
      expect(etag).toMatch(/^"[\w-]+"$/)
      expect(plain.headers.get("cache-control")).toBe("no-cache")
      const packed = await fetch(server.baseUrl + path, { headers: { "accept-encoding": encoding } })
      expect(packed.headers.get("content-encoding")).toBe(encoding)
      expect(packed.headers.get("etag")).toBe(etag)
      expect(Number(packed.headers.get("content-length"))).toBeLessThan(plainBytes / 3)
      expect((await packed.arrayBuffer()).byteLength).toBe(plainBytes) // fetch decodes it
      const again = await fetch(server.baseUrl + path, { headers: { "if-none-match": etag!, "accept-encoding": encoding } })
      expect(again.status).toBe(304)
    }
  })

  it("API answers over the threshold are compressed when the client accepts it, small ones never", async () => {
    const recordSlug = `big-${suffix}`
    await createStructure(api, { name: recordSlug, recordSlug, properties: [{ name: "text", type: "string" }] })
    const created = await api.call("POST", "/records", { structureId: recordSlug, data: { text: "x" } })
    expectStatus(created, 201)
    const rows = Array.from({ length: 40 }, (_, i) => ({ data: { text: `a record with some text, number ${i}` } }))
    expectStatus(await api.call("POST", "/records/bulk", { structureId: recordSlug, records: rows }), 201)
    const headers = { authorization: `Bearer ${api.token}`, "accept-encoding": "gzip, br" }
    // a list page (the fast lane) and the structures (the Effect stack)
    const list = await fetch(`${server.baseUrl}${server.base}/records/slug/${recordSlug}`, { headers })
    expect(list.headers.get("content-encoding")).toBe("br")
    expect(list.headers.get("vary")).toContain("accept-encoding")
    expect(((await list.json()) as { data: Array<unknown> }).data.length).toBeGreaterThan(10)
    const stack = await fetch(`${server.baseUrl}${server.base}/structures`, { headers: { ...headers, "accept-encoding": "gzip" } })
    expect(stack.headers.get("content-encoding")).toBe("gzip")
    const one = await fetch(`${server.baseUrl}${server.base}/records/${created.body.id}`, { headers })
    expect(one.status).toBe(200)
    expect(one.headers.get("content-encoding")).toBeNull()
  })

  it("/openapi.json describes the realtime stream and the HTTP triggers", async () => {
    const doc = (await server.request("GET", "/openapi.json")).body
    const events = doc.paths["/realtime/workspace/{workspace}/api/v1/events"]
    expect(Object.keys(events.get.responses["200"].content)).toEqual(["text/event-stream"])
    expect(events.get.parameters.map((p: any) => p.name)).toEqual(
      expect.arrayContaining(["workspace", "structure", "events", "lastEventId"])
    )
    for (const base of ["http-triggers", "webhook"]) {
      const trigger = doc.paths[`/workspace/{workspace}/api/v1/${base}/{path}`]
      expect(Object.keys(trigger).sort()).toEqual(["delete", "get", "patch", "post", "put"])
      expect(Object.keys(trigger.post.responses)).toEqual(expect.arrayContaining(["200", "202"]))
    }
    expect(doc.paths["/workspace/{workspace}/api/v1/records"]).toBeDefined()
  })

  it("GET /records/{id} shows restoredFrom while the current version is a restore, on both lanes", async () => {
    const recordSlug = `restore-${suffix}`
    await createStructure(api, { name: recordSlug, recordSlug, properties: [{ name: "n", type: "number" }] })
    const created = await api.call("POST", "/records", { structureId: recordSlug, data: { n: 1 } })
    expectStatus(created, 201)
    const id = created.body.id as string
    expectStatus(await api.call("PATCH", `/records/${id}`, { data: { n: 2 } }), 200)
    const restored = await api.call("POST", `/records/${id}/restore`, { version: 1 })
    expectStatus(restored, 200)
    expect(restored.body).toMatchObject({ version: 3, restoredFrom: 1 })
    // the fast lane (no query string) and the ordinary handler (a query option)
    for (const path of [`/records/${id}`, `/records/${id}?includeDeleted=false`]) {
      const got = await api.call("GET", path)
      expectStatus(got, 200)
      expect(got.body, path).toMatchObject({ version: 3, restoredFrom: 1, data: { n: 1 } })
    }
    expectStatus(await api.call("PATCH", `/records/${id}`, { data: { n: 4 } }), 200)
    const later = await api.call("GET", `/records/${id}`)
    expect(later.body.version).toBe(4)
    expect(later.body.restoredFrom).toBeUndefined()
  })
})
