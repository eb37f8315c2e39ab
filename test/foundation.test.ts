// The foundation end to end: a real node started exactly as `npm start` runs it, its system routes, the API
// description, and every error path of the HTTP edge answered with the contract's one error body.
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { startServer, type TestServer } from "./support/TestServer.ts"

const expectContractError = (body: any, status: number, code: string) => {
  expect(body).toMatchObject({ statusCode: status, code })
  expect(typeof body.error).toBe("string")
  expect(typeof body.message).toBe("string")
  expect(Array.isArray(body.details)).toBe(true)
  expect(typeof body.requestId).toBe("string")
}

describe("foundation", () => {
  let server: TestServer
  beforeAll(async () => {
    server = await startServer({ env: { TROUPE_MAX_BODY_BYTES: "2048" } })
  })
  afterAll(async () => {
    await server?.close()
  })

  it("runs on Node 24", () => {
    expect(process.version).toMatch(/^v24\./)
  })

  it("TROUPE_LOG_LEVEL is the minimum level of everything the node logs (the harness runs nodes at warn)", async () => {
    expect((await server.request("GET", "/health")).status).toBe(200)
    // background fibers (relay, scheduler) and request lines log at info: none of it shows at warn
    expect(server.output()).not.toContain('"level":"INFO"')
    expect(server.output()).not.toContain("running on this node")
  })

  it("answers /health and /ready", async () => {
    const health = await server.request("GET", "/health")
    expect(health.status).toBe(200)
    expect(health.body).toEqual({ status: "ok" })
    const ready = await server.request("GET", "/ready")
    expect(ready.status).toBe(200)
    expect(ready.body.status).toBe("ready")
  })

  it("puts a request id on every response, and keeps a caller's", async () => {
    const a = await server.request("GET", "/health")
    expect(a.headers.get("x-request-id")).toMatch(/^[0-9a-f-]{36}$/)
    const b = await server.request("GET", "/nope", { headers: { "x-request-id": "trace-123" } })
    expect(b.headers.get("x-request-id")).toBe("trace-123")
    expect(b.body.requestId).toBe("trace-123")
  })

  it("serves the OpenAPI document and the reference page", async () => {
    const doc = await server.request("GET", "/openapi.json")
    expect(doc.status).toBe(200)
    expect(doc.body.openapi).toMatch(/^3\.1/)
    expect(Object.keys(doc.body.paths)).toContain("/health")
    const docs = await server.request("GET", "/docs")
    expect(docs.status).toBe(200)
    expect(docs.headers.get("content-type")).toContain("text/html")
  })

  it("404 for an unknown route", async () => {
    const res = await server.request("GET", "/no/such/route")
    expect(res.status).toBe(404)
    expectContractError(res.body, 404, "NOT_FOUND")
  })

  it("405 for a known route with the wrong method", async () => {
    const res = await server.request("DELETE", "/health")
    expect(res.status).toBe(405)
    expectContractError(res.body, 405, "METHOD_NOT_ALLOWED")
    expect(res.headers.get("allow")).toContain("GET")
  })

  it("415 for a body that is not JSON", async () => {
    const res = await server.request("POST", `${server.base}/structures`, {
      raw: "name=x",
      headers: { "content-type": "text/plain" }
    })
    expect(res.status).toBe(415)
    expectContractError(res.body, 415, "UNSUPPORTED_MEDIA_TYPE")
  })

  it("413 for a body over the configured limit", async () => {
    const res = await server.request("POST", `${server.base}/structures`, { body: { name: "x".repeat(5000) } })
    expect(res.status).toBe(413)
    expectContractError(res.body, 413, "PAYLOAD_TOO_LARGE")
  })

  it("stamps the request id into errors raised by handlers and middleware", async () => {
    const unauthorized = await server.request("GET", `${server.base}/structures`)
    expect(unauthorized.status).toBe(401)
    expectContractError(unauthorized.body, 401, "UNAUTHORIZED")
    expect(unauthorized.body.requestId).toBe(unauthorized.headers.get("x-request-id"))
    const token = await server.adminToken()
    const missing = await server.request("GET", `${server.base}/structures/00000000-0000-4000-8000-000000000000`, { token })
    expect(missing.status).toBe(404)
    expectContractError(missing.body, 404, "STRUCTURE_NOT_FOUND")
    expect(missing.body.requestId).toBe(missing.headers.get("x-request-id"))
  })

  it("400 with the contract body for malformed JSON and for schema failures", async () => {
    const token = await server.adminToken()
    const malformed = await server.request("POST", `${server.base}/records`, {
      token,
      raw: "{not json",
      headers: { "content-type": "application/json" }
    })
    expect(malformed.status).toBe(400)
    expect(malformed.body.statusCode).toBe(400)
    expect(typeof malformed.body.requestId).toBe("string")
    const wrongShape = await server.request("POST", `${server.base}/records`, { token, body: { structureId: 42 } })
    expect(wrongShape.status).toBe(400)
    expect(wrongShape.body.details.length).toBeGreaterThan(0)
    expect(wrongShape.body.details[0]).toHaveProperty("field")
    expect(wrongShape.body.details[0]).toHaveProperty("property")
  })

  it("serves the probe entity through the cluster runner, to platform administrators only", async () => {
    // the old public route is gone: it created an entity per id for anyone and told host, port and pid
    expect((await server.request("GET", "/cluster/probe/abc")).status).toBe(404)
    const probe = "/workspace/api/v1/cluster/probe/abc"
    const anonymous = await server.request("GET", probe)
    expect(anonymous.status).toBe(401)
    expect(anonymous.body.code).toBe("UNAUTHORIZED")
    const admin = await server.adminToken()
    const res = await server.request("GET", probe, { token: admin })
    expect(res.status).toBe(200)
    expect(res.body.entityId).toBe("abc")
    expect(res.body.node).toBe(res.body.servedBy)
    // the runner address other nodes use, and nothing about the process
    expect(res.body.node).toMatch(/^[^/\s]+:\d+$/)
    // /ready says ready and nothing about the nodes
    expect((await server.request("GET", "/ready")).body).toEqual({ status: "ready" })
  })

  it("stops on SIGTERM with exit code 0", async () => {
    const { startNode } = await import("./support/TestServer.ts")
    const env: Record<string, string> = server.databaseUrl
      ? { DATABASE_URL: server.databaseUrl }
      : { DATABASE_URL: "", TROUPE_DATA_DIR: "memory://" }
    const node = await startNode({ ...env, TROUPE_ADMIN_PASSWORD: "x-password-1" })
    const code = await node.stop("SIGTERM")
    expect(code).toBe(0)
  })
})
