// @troupe/client-fetch against a real node: typed calls through openapi-fetch, the client-credentials token
// source, and the realtime helper (bearer header, reconnect with Last-Event-ID, a refused token replaced); then both
// publishable packages packed with npm pack, installed from their tarballs in an empty folder, and run.
import { execFile } from "node:child_process"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { promisify } from "node:util"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { subscribeEvents, type TroupeEvent } from "../packages/client-fetch/src/Realtime.ts"
import { clientCredentials } from "../packages/client-fetch/src/TokenSource.ts"
import { createTroupeClient } from "../packages/client-fetch/src/TroupeClient.ts"
import { startCuttingProxy } from "./support/CuttingProxy.ts"
import { startServer, type TestServer } from "./support/TestServer.ts"
import { until } from "./support/wait.ts"

const run = promisify(execFile)
const root = Path.resolve(import.meta.dirname, "..")

describe("@troupe/client-fetch", () => {
  let server: TestServer
  let token: string
  beforeAll(async () => {
    server = await startServer()
    token = await server.adminToken()
  })
  afterAll(async () => {
    await server?.close()
  })

  it("calls workspace routes by their short path, typed from the OpenAPI document", async () => {
    const troupe = createTroupeClient({ baseUrl: server.baseUrl, workspace: "default", token })
    const health = await troupe.root.GET("/health")
    expect(health.data).toEqual({ status: "ok" })
    const created = await troupe.POST("/structures", {
      body: { name: "Notes", properties: [{ name: "text", type: "string", required: true }] }
    })
    expect(created.response.status).toBe(200)
    expect(created.data?.recordSlug).toBe("notes")
    const record = await troupe.POST("/records", { body: { structureId: "notes", data: { text: "hello" } } })
    expect(record.response.status).toBe(201)
    const list = await troupe.GET("/records", { params: { query: { structureId: "notes", includeCount: "true" } } })
    expect(list.data?.pagination.total).toBe(1)
    const missing = await troupe.GET("/structures/slug/{recordSlug}", { params: { path: { recordSlug: "nope" } } })
    expect(missing.response.status).toBe(404)
    expect(missing.error).toMatchObject({ code: "STRUCTURE_NOT_FOUND" })
    const anonymous = await createTroupeClient({ baseUrl: server.baseUrl, workspace: "default" }).GET("/me")
    expect(anonymous.response.status).toBe(401)
  })

  it("signs calls with a client-credentials token, fetched once and cached", async () => {
    const account = await server.request("POST", `${server.base}/service-accounts`, {
      token,
      body: { name: "fetch-client", role: "developer" }
    })
    let requests = 0
    const tokens = clientCredentials({
      baseUrl: server.baseUrl,
      clientId: account.body.clientId,
      clientSecret: account.body.clientSecret,
      fetch: (input, init) => {
        requests++
        return fetch(input, init)
      }
    })
    const troupe = createTroupeClient({ baseUrl: server.baseUrl, workspace: "default", tokenProvider: tokens })
    const [a, b] = await Promise.all([troupe.GET("/me"), troupe.GET("/me")])
    expect(a.response.status).toBe(200)
    expect(b.response.status).toBe(200)
    await troupe.GET("/structures")
    expect(requests).toBe(1)
    const refused = clientCredentials({ baseUrl: server.baseUrl, clientId: account.body.clientId, clientSecret: "sk_wrong" })
    await expect(refused.getToken()).rejects.toMatchObject({ name: "TokenError", status: 401, error: "invalid_client" })
  })

  it("streams typed events with a bearer header, resumes after a dropped connection with Last-Event-ID, and replaces a refused token", async () => {
    const proxy = await startCuttingProxy(server.baseUrl)
    const received: Array<TroupeEvent> = []
    const errors: Array<number | undefined> = []
    const sentTokens: Array<string | null> = []
    let asked = 0
    const sub = subscribeEvents({
      baseUrl: proxy.baseUrl,
      workspace: "default",
      events: ["record.created"],
      structures: ["notes"],
      // the first token is refused (401): the helper invalidates and asks again
      token: () => (asked++ === 0 ? "not-a-token" : token),
      fetch: (input, init) => {
        sentTokens.push(new Headers(init?.headers).get("authorization"))
        return fetch(input, init)
      },
      onEvent: (e) => received.push(e),
      onError: (e) => errors.push(e.status)
    })
    try {
      await until(() => proxy.lastEventIds.length >= 2)
      const create = (text: string) =>
        server.request("POST", `${server.base}/records`, { token, body: { structureId: "notes", data: { text } } })
      await create("one")
      await until(() => received.length >= 1)
      // the proxy drops the stream after that event; EventSource reconnects with Last-Event-ID
      await until(() => proxy.lastEventIds.length >= 3)
      await create("two")
      await create("three")
      await until(() => received.length >= 3)
      expect(errors[0]).toBe(401)
      expect(sentTokens[0]).toBe("Bearer not-a-token")
      expect(sentTokens.at(-1)).toBe(`Bearer ${token}`)
      expect(proxy.lastEventIds[2]).toBe(received[0]!.id)
      const texts = received.map((e) => (e.event === "record.created" ? e.data.record.data.text : undefined))
      expect(texts).toEqual(["one", "two", "three"])
      expect(new Set(received.map((e) => e.id)).size).toBe(3)
      expect(received[0]).toMatchObject({ event: "record.created", workspace: "default", structure: "notes" })
      expect(sub.lastEventId()).toBe(received[2]!.id)
    } finally {
      sub.close()
      await proxy.close()
    }
  })

  it("packs both packages, installs the tarballs in an empty folder and runs them", async () => {
    const work = Fs.mkdtempSync(Path.join(Os.tmpdir(), "troupe-pack-"))
    try {
      const packed = await run(
        "npm",
        ["pack", "--json", "--pack-destination", work, "--workspace", "packages/client-fetch", "--workspace", "packages/cli"],
        { cwd: root, maxBuffer: 1 << 24 }
      )
      const files = JSON.parse(packed.stdout) as Array<{ name: string; filename: string; files: Array<{ path: string }> }>
      const fetchPkg = files.find((f) => f.name === "@troupe/client-fetch")!
      const cliPkg = files.find((f) => f.name === "@troupe/cli")!
      expect(fetchPkg.files.map((f) => f.path)).toEqual(
        expect.arrayContaining(["README.md", "dist/index.js", "dist/index.d.ts", "dist/schema.d.ts", "package.json"])
      )
      expect(cliPkg.files.map((f) => f.path)).toEqual(
        expect.arrayContaining(["README.md", "bin/troupe.mjs", "dist/main.js", "package.json"])
      )
      expect(cliPkg.files.some((f) => f.path.startsWith("src/"))).toBe(false)

      const app = Path.join(work, "app")
      Fs.mkdirSync(app)
      Fs.writeFileSync(Path.join(app, "package.json"), JSON.stringify({ name: "app", private: true, type: "module" }))
      // third-party dependencies come from the registry (the npm cache first)
      await run(
        "npm",
        [
          "install",
          "--prefer-offline",
          "--no-audit",
          "--no-fund",
          "--ignore-scripts",
          Path.join(work, fetchPkg.filename),
          Path.join(work, cliPkg.filename)
        ],
        { cwd: app, maxBuffer: 1 << 24 }
      )
      Fs.writeFileSync(
        Path.join(app, "smoke.mjs"),
        `
        import { createTroupeClient } from "@troupe/client-fetch"
        const troupe = createTroupeClient({ baseUrl: process.argv[2], workspace: "default", token: process.argv[3] })
        const me = await troupe.GET("/me")
        console.log(JSON.stringify({ status: me.response.status, name: me.data.name }))
      `
      )
      const smoke = await run(process.execPath, ["smoke.mjs", server.baseUrl, token], { cwd: app })
      expect(JSON.parse(smoke.stdout)).toEqual({ status: 200, name: "admin" })

      const env = { ...process.env, TROUPE_CONFIG: Path.join(work, "config.json") }
      const bin = Path.join(app, "node_modules/.bin/troupe")
      const login = await run(
        bin,
        ["login", "--url", server.baseUrl, "--username", "admin", "--password", server.adminPassword, "--json"],
        { cwd: app, env }
      )
      expect(JSON.parse(login.stdout)).toMatchObject({ workspace: "default" })
      const types = await run(bin, ["types"], { cwd: app, env })
      expect(types.stdout).toContain("export interface Notes {")
    } finally {
      Fs.rmSync(work, { recursive: true, force: true })
    }
  })
})
