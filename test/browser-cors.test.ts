// CORS of CONTRACT §9 over HTTP, on real nodes (PGlite; with DATABASE_URL two PostgreSQL nodes sharing the database,
// each checked): the workspace list (GET/PUT /settings/cors) beside the node-wide TROUPE_CORS_ORIGINS, preflights
// answered before authentication on every kind of route (fast lane, HttpApi, realtime, HTTP triggers, the token
// endpoint, the /data alias), the headers of answers in both lanes (the fast lane's counted in /metrics) and on
// errors, 429s and SSE, and every bad input of the issue: no grant, never a 500. The browser's side of the same
// rules is test/browser-app.test.ts.
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { createUser } from "./support/IdentityHelpers.ts"
import { client, createStructure, expectError, expectStatus } from "./support/records.ts"
import { startServer, type TestNode, type TestServer } from "./support/TestServer.ts"
import { eventually } from "./support/wait.ts"

const postgres = (process.env.DATABASE_URL ?? "") !== ""
/** allowed by the default workspace's list */
const APP = "http://app.example:5173"
/** allowed node-wide (TROUPE_CORS_ORIGINS) */
const NODE_WIDE = "https://console.example"
const OTHER = "https://elsewhere.example"
const base = "/workspace/default/api/v1"

let server: TestServer
let nodes: Array<TestNode> = []
let admin: string

const preflight = (node: TestNode, path: string, origin: string, method: string, headers?: string) =>
  node.request("OPTIONS", path, {
    headers: {
      origin,
      "access-control-request-method": method,
      ...(headers === undefined ? {} : { "access-control-request-headers": headers })
    }
  })

/** The Access-Control-* headers of an answer. */
const granted = (headers: Headers) => [...headers.keys()].filter((k) => k.startsWith("access-control-"))

const expectGrant = (res: { status: number; headers: Headers; text: string }, origin: string) => {
  expect(res.status, res.text).toBe(204)
  expect(res.headers.get("access-control-allow-origin")).toBe(origin)
  expect(res.headers.get("access-control-max-age")).toBe("600")
  expect(res.headers.get("vary")).toMatch(/\bOrigin\b/)
  expect(res.headers.get("access-control-allow-credentials")).toBeNull()
  const allowed = res.headers.get("access-control-allow-headers") ?? ""
  for (const h of ["authorization", "content-type", "idempotency-key", "if-match", "last-event-id"]) expect(allowed).toContain(h)
}

const expectNoGrant = (res: { status: number; headers: Headers; text: string }) => {
  expect(res.status, res.text).toBeLessThan(500)
  expect(granted(res.headers), res.text).toEqual([])
}

/** The fast lane's count of answered requests for a route and method, from /metrics. */
const fastCount = async (node: TestNode, route: string, method: string) => {
  const text = (await node.request("GET", "/metrics")).text
  let sum = 0
  for (const line of text.split("\n")) {
    if (!line.startsWith("troupe_http_requests_total{")) continue
    if (line.includes(`route="${route}"`) && line.includes(`method="${method}"`) && line.includes('lane="fast"')) {
      sum += Number(line.slice(line.lastIndexOf(" ") + 1))
    }
  }
  return sum
}

beforeAll(async () => {
  server = await startServer({
    clustered: postgres,
    env: { TROUPE_CORS_ORIGINS: `${NODE_WIDE}, http://localhost:9`, TROUPE_LIMIT_QUERIES: "5" }
  })
  nodes = [server]
  if (postgres) nodes.push(await server.startPeer())
  admin = await server.adminToken()
  const put = await server.request("PUT", `${base}/settings/cors`, { token: admin, body: { allowedOrigins: [APP] } })
  expectStatus(put, 200)
})

afterAll(async () => {
  await server?.close()
})

describe("GET/PUT /settings/cors", () => {
  it("admins read and replace the list, stored canonical and each once; others are refused", async () => {
    const put = await server.request("PUT", `${base}/settings/cors`, {
      token: admin,
      body: { allowedOrigins: ["HTTP://App.Example:5173", "https://x.example:443", "https://x.example"] }
    })
    expectStatus(put, 200)
    expect(put.body).toEqual({ allowedOrigins: [APP, "https://x.example"] })
    expect((await server.request("GET", `${base}/settings/cors`, { token: admin })).body).toEqual(put.body)
    const developer = await createUser(server, admin, "developer")
    expectError(await server.request("GET", `${base}/settings/cors`, { token: developer.token }), 403, "PERMISSION_DENIED")
    expectError(
      await server.request("PUT", `${base}/settings/cors`, { token: developer.token, body: { allowedOrigins: [] } }),
      403,
      "PERMISSION_DENIED"
    )
    const adminUser = await createUser(server, admin, "admin")
    expectStatus(await server.request("PUT", `${base}/settings/cors`, { token: adminUser.token, body: { allowedOrigins: [APP] } }), 200)
    expectError(await server.request("GET", `${base}/settings/cors`), 401)
  })

  it("bad origins and more than 100 are a 400 naming the entry, and change nothing", async () => {
    const bad: Array<[unknown, string, RegExp]> = [
      [["https://ok.example", "*"], "allowedOrigins[1]", /node-wide/],
      [["null"], "allowedOrigins[0]", /null/],
      [["https://ok.example/app"], "allowedOrigins[0]", /no path/],
      [["https://user:secret@ok.example"], "allowedOrigins[0]", /password/],
      [["ok.example"], "allowedOrigins[0]", /scheme/],
      [["https://ok.example:70000"], "allowedOrigins[0]", /port/],
      [[42], "allowedOrigins[0]", /string/i],
      [Array.from({ length: 101 }, (_, i) => `https://a${i}.example`), "allowedOrigins", /at most 100/],
      ["https://ok.example", "allowedOrigins", /array/i]
    ]
    for (const [allowedOrigins, field, why] of bad) {
      const res = await server.request("PUT", `${base}/settings/cors`, { token: admin, body: { allowedOrigins } })
      expectError(res, 400, "VALIDATION_ERROR")
      expect(res.body.details[0].field, JSON.stringify(allowedOrigins)).toBe(field)
      expect(res.body.details[0].message).toMatch(why)
    }
    expectError(await server.request("PUT", `${base}/settings/cors`, { token: admin, body: {} }), 400, "VALIDATION_ERROR")
    expect((await server.request("GET", `${base}/settings/cors`, { token: admin })).body).toEqual({ allowedOrigins: [APP] })
    const hundred = Array.from({ length: 100 }, (_, i) => `https://a${i}.example`)
    expectStatus(await server.request("PUT", `${base}/settings/cors`, { token: admin, body: { allowedOrigins: [...hundred, APP] } }), 400)
    expectStatus(
      await server.request("PUT", `${base}/settings/cors`, { token: admin, body: { allowedOrigins: [...hundred.slice(1), APP] } }),
      200
    )
    expectStatus(await server.request("PUT", `${base}/settings/cors`, { token: admin, body: { allowedOrigins: [APP] } }), 200)
  })
})

describe("preflights", () => {
  // every kind of route: fast lane reads and writes, HttpApi, realtime, HTTP triggers, the token endpoint, the alias
  const routes: Array<[string, string, string]> = [
    ["GET", `${base}/records/00000000-0000-4000-8000-000000000000`, "authorization"],
    ["PATCH", `${base}/records/00000000-0000-4000-8000-000000000000`, "authorization, content-type, if-match"],
    ["POST", `${base}/records`, "authorization, content-type, idempotency-key"],
    ["POST", `${base}/query`, "authorization, content-type"],
    ["PUT", `${base}/settings/cors`, "authorization, content-type"],
    ["POST", `${base}/structures`, "authorization, content-type"],
    ["GET", "/realtime/workspace/default/api/v1/events?structure=notes", "authorization, last-event-id"],
    ["DELETE", `${base}/http-triggers/any/path`, "authorization, x-signature"],
    ["POST", "/oidc/token", "content-type"],
    ["GET", "/data/workspace/default/api/v1/records?structureId=notes", "authorization"]
  ]

  it("from an allowed origin: 204 with the grant on every kind of route, before authentication, on every node", async () => {
    for (const node of nodes) {
      for (const [method, path, headers] of routes) {
        const res = await preflight(node, path, APP, method, headers)
        expectGrant(res, APP)
        expect(res.headers.get("access-control-allow-methods")?.split(", ")).toContain(method)
      }
      expectGrant(await preflight(node, "/health", NODE_WIDE, "GET"), NODE_WIDE)
      expectGrant(await preflight(node, `${base}/records`, NODE_WIDE, "POST", "content-type"), NODE_WIDE)
    }
    // an HTTP trigger passes any header to its function: granted as asked
    const trigger = await preflight(server, `${base}/http-triggers/hook`, APP, "PUT", "X-Signature")
    expect(trigger.headers.get("access-control-allow-headers")).toContain("x-signature")
  })

  it("a workspace's origins hold on that workspace's routes only (and the token endpoint); node-wide ones everywhere", async () => {
    const other = await server.request("POST", "/workspace/api/v1/workspaces", { token: admin, body: { slug: "cors-other" } })
    expectStatus(other, 201)
    expectNoGrant(await preflight(server, "/workspace/cors-other/api/v1/records", APP, "POST", "content-type"))
    expectNoGrant(await preflight(server, "/workspace/api/v1/workspaces", APP, "GET"))
    expectNoGrant(await preflight(server, "/health", APP, "GET"))
    expectGrant(await preflight(server, "/workspace/cors-other/api/v1/records", NODE_WIDE, "POST", "content-type"), NODE_WIDE)
    expectGrant(await preflight(server, "/workspace/api/v1/workspaces", NODE_WIDE, "GET"), NODE_WIDE)
  })

  it("no grant (and never a 500) for a bad or unknown origin, or a method or header the route does not take", async () => {
    const record = `${base}/records`
    const refused: Array<[string, string, string, string | undefined]> = [
      [record, OTHER, "POST", "content-type"],
      [record, "null", "POST", "content-type"],
      [record, "not an origin", "GET", undefined],
      [record, `${APP}/path`, "GET", undefined],
      [record, `${APP}/`, "GET", undefined],
      [record, "http://user:pw@app.example:5173", "GET", undefined],
      [record, "HTTP://APP.EXAMPLE:5173", "GET", undefined],
      [record, `${APP}, ${NODE_WIDE}`, "GET", undefined],
      [record, "*", "GET", undefined],
      [record, "", "GET", undefined],
      [record, APP, "TRACE", undefined],
      [record, APP, "patch", undefined],
      [record, APP, "", undefined],
      [`${base}/query`, APP, "DELETE", undefined],
      ["/oidc/token", APP, "PUT", undefined],
      [record, APP, "POST", "content-type, x-custom"],
      [record, APP, "POST", "cookie"],
      [`${base}/http-triggers/hook`, APP, "POST", "bad header"],
      [`${base}/records/%00`, APP, "GET", undefined],
      [`${base}/records/%E0%A4%A`, APP, "GET", undefined]
    ]
    for (const [path, origin, method, headers] of refused) {
      const res = await preflight(server, path, origin, method, headers)
      expectNoGrant(res)
      expect([400, 403, 404], `${origin} ${method} ${path} ${headers}`).toContain(res.status)
      expect(res.body?.statusCode, res.text).toBe(res.status)
    }
    const unknown = await preflight(server, `${base}/no/such/route`, APP, "GET")
    expectError(unknown, 404, "NOT_FOUND")
    expectNoGrant(unknown)
    const wrongMethod = await preflight(server, `${base}/query`, APP, "DELETE")
    expectError(wrongMethod, 403, "PERMISSION_DENIED")
    expect(wrongMethod.body.message).toContain("POST")
    // OPTIONS without Origin is no preflight: the route's own answer, without a grant
    const plain = await server.request("OPTIONS", `${base}/records`, { headers: { "access-control-request-method": "GET" } })
    expectNoGrant(plain)
    expect(plain.status).toBe(405)
  })

  it("a change of the list holds on every node; an emptied list refuses again", async () => {
    const later = "https://later.example"
    expectNoGrant(await preflight(server, `${base}/records`, later, "POST", "content-type"))
    expectStatus(await server.request("PUT", `${base}/settings/cors`, { token: admin, body: { allowedOrigins: [APP, later] } }), 200)
    for (const node of nodes) {
      await eventually(async () => ((await preflight(node, `${base}/records`, later, "POST")).status === 204 ? true : undefined))
    }
    expectStatus(await server.request("PUT", `${base}/settings/cors`, { token: admin, body: { allowedOrigins: [APP] } }), 200)
    for (const node of nodes) {
      await eventually(async () => ((await preflight(node, `${base}/records`, later, "POST")).status === 403 ? true : undefined))
    }
  })
})

describe("answers", () => {
  const expectAllowed = (res: { headers: Headers; text: string }, origin = APP) => {
    expect(res.headers.get("access-control-allow-origin"), res.text).toBe(origin)
    expect(res.headers.get("vary")).toMatch(/\bOrigin\b/)
    const exposed = res.headers.get("access-control-expose-headers") ?? ""
    for (const h of ["etag", "retry-after", "location", "content-disposition", "content-range", "x-request-id"])
      expect(exposed).toContain(h)
    expect(res.headers.get("access-control-allow-credentials")).toBeNull()
  }

  it("to an allowed origin carry Allow-Origin, Vary and the expose list in both lanes, on successes and errors", async () => {
    const api = client(server, admin)
    const notes = await createStructure(api, { name: "CORS notes", properties: [{ name: "title", type: "string", required: true }] })
    const created = await api.call("POST", "/records", { structureId: notes.id, data: { title: "one" } }, { origin: APP })
    expectStatus(created, 201)
    expectAllowed(created)
    const id = created.body.id
    const route = "/workspace/:workspace/api/v1/records/:id"
    for (const node of nodes) {
      const before = await fastCount(node, route, "GET")
      const read = await node.request("GET", `${base}/records/${id}`, { token: admin, headers: { origin: APP } })
      expectStatus(read, 200)
      expectAllowed(read)
      // that one was the fast lane's; without a token the same route is the HttpApi stack's (401)
      expect(await fastCount(node, route, "GET")).toBe(before + 1)
      const stack = await node.request("GET", `${base}/records/${id}`, { headers: { origin: APP } })
      expectError(stack, 401)
      expectAllowed(stack)
    }
    const invalid = await api.call("POST", "/records", { structureId: notes.id, data: { title: 5 } }, { origin: APP })
    expectError(invalid, 400, "VALIDATION_ERROR")
    expectAllowed(invalid)
    const missing = await server.request("GET", `${base}/nothing-here`, { headers: { origin: APP } })
    expectError(missing, 404)
    expectAllowed(missing)
    const token = await server.request("POST", "/oidc/token", {
      raw: `grant_type=password&username=admin&password=${server.adminPassword}&scope=openid%20workspace:default`,
      headers: { "content-type": "application/x-www-form-urlencoded", origin: APP }
    })
    expectStatus(token, 200)
    expectAllowed(token)
    const trigger = await server.request("POST", `${base}/http-triggers/none`, { token: admin, headers: { origin: APP } })
    expectError(trigger, 404)
    expectAllowed(trigger)
    expectAllowed(await server.request("GET", "/health", { headers: { origin: NODE_WIDE } }), NODE_WIDE)
  })

  it("a 429 carries Retry-After, exposed to the page", async () => {
    const res = await eventually(
      async () => {
        const r = await server.request("POST", `${base}/query`, {
          token: admin,
          body: { query: "SELECT * FROM cors-notes" },
          headers: { origin: APP }
        })
        return r.status === 429 ? r : undefined
      },
      30_000,
      10
    )
    expectAllowed(res)
    expect(Number(res.headers.get("retry-after"))).toBeGreaterThan(0)
  })

  it("the event stream (EventSource with ?access_token=) answers with the grant", async () => {
    const controller = new AbortController()
    const res = await fetch(`${server.baseUrl}/realtime/workspace/default/api/v1/events?access_token=${admin}`, {
      headers: { origin: APP },
      signal: controller.signal
    })
    expect(res.status).toBe(200)
    expect(res.headers.get("content-type")).toContain("text/event-stream")
    expectAllowed(res as unknown as { headers: Headers; text: string })
    controller.abort()
  })

  it("to a disallowed or malformed origin carry no Access-Control-* header, only Vary: Origin", async () => {
    for (const origin of [OTHER, "null", `${APP}/x`, "garbage"]) {
      const res = await server.request("GET", `${base}/settings/cors`, { token: admin, headers: { origin } })
      expectStatus(res, 200)
      expect(granted(res.headers)).toEqual([])
      expect(res.headers.get("vary")).toBe("Origin")
    }
    const plain = await server.request("GET", "/health")
    expect(granted(plain.headers)).toEqual([])
  })

  it("a route's own Vary is kept beside Origin", async () => {
    const res = await fetch(`${server.baseUrl}/console`, { headers: { origin: NODE_WIDE, "accept-encoding": "gzip" } })
    expect(res.status).toBe(200)
    expect(res.headers.get("access-control-allow-origin")).toBe(NODE_WIDE)
    expect(res.headers.get("vary")?.split(/,\s*/)).toEqual(["Origin", "accept-encoding"])
    await res.arrayBuffer()
  })
})
