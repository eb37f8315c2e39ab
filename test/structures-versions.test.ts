// Structure versioning end to end: with enableVersioning every definition change is kept and readable, pins keep a
// version through retention while pinnedVersionsRetained is on, maxVersions is applied on each write, and the
// retention singleton (ticking every half second here) ages versions out by maxAgeDays with no write at all.
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { startServer, type TestServer } from "./support/TestServer.ts"
import { eventually } from "./support/wait.ts"

let server: TestServer
let token: string
let seq = 0
const unique = (prefix: string) => `${prefix} ${++seq}`

const api = (method: string, path: string, body?: unknown) =>
  server.request(method, server.base + path, body === undefined ? { token } : { token, body })

const ok = async (method: string, path: string, body?: unknown) => {
  const res = await api(method, path, body)
  expect(res.status, `${method} ${path}: ${JSON.stringify(res.body)}`).toBe(200)
  return res.body
}

const versionNumbers = async (id: string): Promise<Array<number>> =>
  (await ok("GET", `/structures/${id}/versions`)).versions.map((v: any) => v.version)

beforeAll(async () => {
  server = await startServer({ env: { TROUPE_STRUCTURE_RETENTION_TICK_SECONDS: "0.5" } })
  token = await server.adminToken()
})

afterAll(async () => {
  await server?.close()
})

describe("structure versions", () => {
  it("keeps nothing while enableVersioning is off", async () => {
    const s = await ok("POST", "/structures", { name: unique("Unversioned"), properties: [] })
    await ok("PUT", `/structures/${s.id}`, { description: "x" })
    expect(await versionNumbers(s.id)).toEqual([])
    expect((await api("GET", `/structures/${s.id}/versions/1`)).status).toBe(404)
  })

  it("keeps every definition change, newest first, each readable by number", async () => {
    const s = await ok("POST", "/structures", {
      name: unique("Versioned"),
      enableVersioning: true,
      properties: [{ name: "a", type: "string" }]
    })
    const v2 = await ok("PUT", `/structures/${s.id}`, { properties: [{ id: "new", name: "b", type: "number" }] })
    const v3 = await ok("DELETE", `/structures/${s.id}/properties`, { ids: [s.properties[0].id] })
    expect([s.version, v2.version, v3.version]).toEqual([1, 2, 3])
    const list = await ok("GET", `/structures/${s.id}/versions`)
    expect(list.versions.map((v: any) => v.version)).toEqual([3, 2, 1])
    for (const v of list.versions) {
      expect(v).toMatchObject({ structureId: s.id, pinned: false })
      expect(typeof v.createdAt).toBe("string")
      expect(typeof v.createdBy).toBe("string")
    }
    const second = await ok("GET", `/structures/${s.id}/versions/2`)
    expect(second.definition.properties.map((p: any) => p.name)).toEqual(["a", "b"])
    expect(second.definition.version).toBe(2)
    const first = await ok("GET", `/structures/${s.id}/versions/1`)
    expect(first.definition.properties.map((p: any) => p.name)).toEqual(["a"])
    const missing = await api("GET", `/structures/${s.id}/versions/9`)
    expect(missing.status).toBe(404)
    expect(missing.body.code).toBe("NOT_FOUND")
    expect((await api("GET", `/structures/${s.id}/versions/abc`)).status).toBe(400)
  })

  it("an update that changes nothing makes no version; metadata changes make none either", async () => {
    const s = await ok("POST", "/structures", { name: unique("No Op"), enableVersioning: true, description: "same", properties: [] })
    const same = await ok("PUT", `/structures/${s.id}`, { description: "same" })
    expect(same.version).toBe(1)
    await ok("PUT", `/structures/${s.id}/metadata`, { migrationInProgress: true })
    expect(await versionNumbers(s.id)).toEqual([1])
  })

  it("starts keeping versions from the update that turns versioning on", async () => {
    const s = await ok("POST", "/structures", { name: unique("Late"), properties: [] })
    await ok("PUT", `/structures/${s.id}`, { description: "v2" })
    const on = await ok("PUT", `/structures/${s.id}`, { enableVersioning: true })
    expect(await versionNumbers(s.id)).toEqual([on.version])
    const off = await ok("PUT", `/structures/${s.id}`, { enableVersioning: false })
    expect(await versionNumbers(s.id)).toEqual([on.version])
    expect(off.enableVersioning).toBe(false)
  })

  it("pins and unpins versions; unknown versions are 404", async () => {
    const s = await ok("POST", "/structures", { name: unique("Pins"), enableVersioning: true, properties: [] })
    const pinned = await ok("POST", `/structures/${s.id}/versions/1/pin`)
    expect(pinned).toMatchObject({ version: 1, pinned: true })
    expect((await ok("GET", `/structures/${s.id}/versions/1`)).pinned).toBe(true)
    const unpinned = await ok("POST", `/structures/${s.id}/versions/1/unpin`)
    expect(unpinned.pinned).toBe(false)
    expect((await api("POST", `/structures/${s.id}/versions/7/pin`)).status).toBe(404)
  })

  it("maxVersions keeps the newest versions on each write; pinned ones survive while pinnedVersionsRetained", async () => {
    const s = await ok("POST", "/structures", {
      name: unique("Max Versions"),
      enableVersioning: true,
      retentionPolicy: { maxVersions: 2 },
      properties: []
    })
    await ok("POST", `/structures/${s.id}/versions/1/pin`)
    for (const d of ["a", "b", "c"]) await ok("PUT", `/structures/${s.id}`, { description: d })
    // pinnedVersionsRetained defaults to true
    expect(await versionNumbers(s.id)).toEqual([4, 3, 1])
    await ok("PUT", `/structures/${s.id}`, { retentionPolicy: { maxVersions: 2, pinnedVersionsRetained: false } })
    expect(await versionNumbers(s.id)).toEqual([5, 4])
  })

  it("checks the retention policy", async () => {
    const res = await api("POST", "/structures", {
      name: unique("Bad Policy"),
      enableVersioning: true,
      retentionPolicy: { maxVersions: 0, maxAgeDays: -1, cleanupIntervalHours: 0 },
      properties: []
    })
    expect(res.status).toBe(400)
    expect(res.body.details.map((d: any) => d.field).sort()).toEqual([
      "retentionPolicy.cleanupIntervalHours",
      "retentionPolicy.maxAgeDays",
      "retentionPolicy.maxVersions"
    ])
  })

  it("the retention singleton ages versions out by maxAgeDays without any write (pinned and current stay)", async () => {
    const s = await ok("POST", "/structures", {
      name: unique("Aging"),
      enableVersioning: true,
      // versions older than 15 s go; the singleton looks every ~0.5 s
      retentionPolicy: { maxAgeDays: 15 / 86_400, cleanupIntervalHours: 0.4 / 3600 },
      properties: []
    })
    await ok("PUT", `/structures/${s.id}`, { description: "two" })
    await ok("PUT", `/structures/${s.id}`, { description: "three" })
    await ok("POST", `/structures/${s.id}/versions/1/pin`)
    // seconds younger than maxAgeDays: the writes themselves removed nothing
    expect(await versionNumbers(s.id)).toEqual([3, 2, 1])
    const left = await eventually(async () => {
      const numbers = await versionNumbers(s.id)
      return numbers.length === 2 ? numbers : undefined
    }, 40_000)
    expect(left).toEqual([3, 1])
    expect((await ok("GET", `/structures/${s.id}`)).version).toBe(3)
  })
})
