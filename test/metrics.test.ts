// GET /metrics and OTLP traces on a real node (PGlite, or PostgreSQL when DATABASE_URL is set): requests in both
// lanes, a record update (a resident entity), webhook deliveries that succeed and that fail after retries, an open SSE
// stream and function runs move the metrics README "What to watch on /metrics" lists; the node's spans reach an OTLP
// receiver named after their routes.
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { computeClient } from "./support/compute.ts"
import { openSse, type SseConnection } from "./support/SseClient.ts"
import { startServer, type TestServer } from "./support/TestServer.ts"
import { type Receiver, startReceiver } from "./support/WebhookReceiver.ts"
import { sleep } from "./support/wait.ts"

const METRICS_TOKEN = "scrape-secret"

type Sample = { readonly name: string; readonly labels: Record<string, string>; readonly value: number }

/** The samples of a Prometheus text exposition. */
const parse = (text: string): Array<Sample> =>
  text
    .split("\n")
    .filter((line) => line.length > 0 && !line.startsWith("#"))
    .map((line) => {
      const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line)
      if (match === null) throw new Error(`not a sample line: ${line}`)
      const labels: Record<string, string> = {}
      for (const pair of (match[2] ?? "").matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) labels[pair[1]!] = pair[2]!
      return { name: match[1]!, labels, value: Number(match[3]) }
    })

/** The sum of the samples named `name` whose labels include `labels`, or undefined when there is none. */
const total = (samples: ReadonlyArray<Sample>, name: string, labels: Record<string, string> = {}) => {
  const found = samples.filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v))
  return found.length === 0 ? undefined : found.reduce((sum, s) => sum + s.value, 0)
}

const RECORD_ROUTE = "/workspace/:workspace/api/v1/records/:id"

describe("GET /metrics and traces on a real node", () => {
  let server: TestServer
  let token: string
  let hooks: Receiver
  let otlp: Receiver
  let sse: SseConnection | undefined

  const scrape = async () => {
    const res = await server.request("GET", "/metrics", { token: METRICS_TOKEN })
    expect(res.status, res.text).toBe(200)
    expect(res.headers.get("content-type")).toMatch(/^text\/plain; version=0\.0\.4/)
    return parse(res.text)
  }

  beforeAll(async () => {
    hooks = await startReceiver((hit) => (hit.path === "/fail" ? 500 : 200))
    otlp = await startReceiver()
    server = await startServer({
      env: {
        TROUPE_METRICS_TOKEN: METRICS_TOKEN,
        TROUPE_WEBHOOK_RETRY_DELAYS: "0.1,0.1",
        OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url
      }
    })
    token = await server.adminToken()
  })
  afterAll(async () => {
    sse?.close()
    await server?.close()
    await hooks?.close()
    await otlp?.close()
  })

  it("answers only the configured bearer token when TROUPE_METRICS_TOKEN is set, and is in /openapi.json", async () => {
    expect((await server.request("GET", "/metrics")).status).toBe(401)
    expect((await server.request("GET", "/metrics", { token: "wrong" })).status).toBe(401)
    const doc = await server.request("GET", "/openapi.json")
    expect(Object.keys(doc.body.paths)).toContain("/metrics")
  })

  it("moves every metric with requests, entities, relayed events, webhooks, SSE clients and function runs", async () => {
    const before = await scrape()
    const call = (method: string, path: string, body?: unknown, extra: Record<string, string> = {}) =>
      server.request(method, `${server.base}${path}`, { token, ...(body === undefined ? {} : { body }), headers: extra })

    // a webhook that answers, one that never does (3 attempts: 2 retried, then failed)
    for (const [name, path] of [
      ["ok", "/ok"],
      ["fail", "/fail"]
    ] as const) {
      const res = await call("POST", "/webhooks", { name, url: `${hooks.url}${path}`, events: ["record.created"] })
      expect(res.status, res.text).toBe(201)
    }
    sse = await openSse(`${server.baseUrl}/realtime/workspace/${server.workspace}/api/v1/events?access_token=${token}`)
    expect(sse.status).toBe(200)

    expect((await call("POST", "/structures", { name: "Books", properties: [{ name: "title", type: "string" }] })).status).toBeLessThan(300)
    const created = await call("POST", "/records", { structureId: "books", data: { title: "Dune" } })
    expect(created.status, created.text).toBe(201)
    const id = created.body.id as string
    for (let i = 0; i < 3; i++) expect((await call("GET", `/records/${id}`)).status).toBe(200) // the fast lane
    expect((await call("GET", `/records/${id}?includeDeleted=false`)).status).toBe(200) // a query string: the stack
    expect((await call("PATCH", `/records/${id}`, { data: { title: "Dune II" } })).status).toBe(200)
    expect((await call("DELETE", `/records/${id}`)).status).toBe(200) // the Record entity
    expect((await server.request("GET", "/no/such/route")).status).toBe(404)

    const compute = computeClient(server, token)
    expect((await compute.runCode("async function run() { return 1 }")).status).toBe("completed")
    expect((await compute.runCode("async function run() { throw new Error('no') }")).status).toBe("failed")
    await hooks.waitFor((hits) => hits.some((h) => h.path === "/ok") && hits.filter((h) => h.path === "/fail").length >= 3)

    // counters are recorded just after the outcome is written: scrape until the last ones are in
    let after = await scrape()
    for (let i = 0; i < 50 && (total(after, "troupe_webhook_deliveries_total", { outcome: "failed" }) ?? 0) < 1; i++) {
      await sleep(100)
      after = await scrape()
    }
    const moved = (name: string, labels: Record<string, string> = {}) =>
      (total(after, name, labels) ?? 0) - (total(before, name, labels) ?? 0)

    const names = new Set(after.map((s) => s.name))
    for (const name of [
      "troupe_http_requests_total",
      "troupe_http_request_duration_seconds_bucket",
      "troupe_http_request_duration_seconds_sum",
      "troupe_http_request_duration_seconds_count",
      "effect_cluster_entities",
      "troupe_events_relayed_total",
      "troupe_events_relay_lag_seconds",
      "troupe_events_relay_failures_total",
      "troupe_webhook_deliveries_total",
      "troupe_webhook_deliveries_in_flight",
      "troupe_sse_clients",
      "troupe_function_runs_total",
      "troupe_function_run_duration_seconds_count",
      "troupe_function_runs_running",
      "troupe_function_runs_queued"
    ])
      expect(names, name).toContain(name)

    // requests, by route pattern and lane; the histogram counts them too
    expect(moved("troupe_http_requests_total", { route: RECORD_ROUTE, method: "GET", status: "200", lane: "fast" })).toBe(3)
    expect(moved("troupe_http_requests_total", { route: RECORD_ROUTE, method: "GET", lane: "stack" })).toBe(1)
    expect(moved("troupe_http_requests_total", { route: RECORD_ROUTE, method: "PATCH", status_class: "2xx" })).toBe(1)
    expect(moved("troupe_http_requests_total", { route: "/workspace/:workspace/api/v1/records", method: "POST", status: "201" })).toBe(1)
    expect(moved("troupe_http_requests_total", { route: "unmatched", status: "404" })).toBeGreaterThanOrEqual(1)
    expect(moved("troupe_http_request_duration_seconds_count", { route: RECORD_ROUTE, method: "GET" })).toBe(4)
    // no raw URL (record id) ever becomes a label
    expect(after.some((s) => Object.values(s.labels).some((v) => v.includes(id)))).toBe(false)

    expect(total(after, "effect_cluster_entities", { type: "Record" })).toBeGreaterThanOrEqual(1)
    expect(moved("troupe_events_relayed_total")).toBeGreaterThanOrEqual(2) // record.created, record.updated, function.*
    expect(total(after, "troupe_events_relay_lag_seconds")).toBeLessThan(60)
    expect(moved("troupe_webhook_deliveries_total", { outcome: "delivered" })).toBeGreaterThanOrEqual(1)
    expect(moved("troupe_webhook_deliveries_total", { outcome: "retried" })).toBeGreaterThanOrEqual(2)
    expect(moved("troupe_webhook_deliveries_total", { outcome: "failed" })).toBeGreaterThanOrEqual(1)
    expect(total(after, "troupe_sse_clients")).toBeGreaterThanOrEqual(1)
    expect(moved("troupe_function_runs_total", { status: "completed" })).toBeGreaterThanOrEqual(1)
    expect(moved("troupe_function_runs_total", { status: "failed" })).toBeGreaterThanOrEqual(1)
    expect(moved("troupe_function_run_duration_seconds_count")).toBeGreaterThanOrEqual(2)
    expect(total(after, "troupe_function_runs_queued")).toBe(0)

    sse.close()
    sse = undefined
    for (let i = 0; i < 50 && total(await scrape(), "troupe_sse_clients") !== 0; i++) await sleep(100)
    expect(total(await scrape(), "troupe_sse_clients")).toBe(0)
  })

  it("exports spans over OTLP, a server span per request named after its route (both lanes)", async () => {
    const spans = () =>
      otlp.hits
        .filter((h) => h.path === "/v1/traces")
        .flatMap((h) =>
          (h.json?.resourceSpans ?? []).flatMap((rs: any) => {
            const service = rs.resource.attributes.find((a: any) => a.key === "service.name")?.value.stringValue
            return rs.scopeSpans.flatMap((ss: any) => ss.spans.map((s: any) => ({ service, name: s.name as string, kind: s.kind })))
          })
        )
    const routes = [`GET ${RECORD_ROUTE}`, `PATCH ${RECORD_ROUTE}`, "POST /workspace/:workspace/api/v1/records", "POST /oidc/token", "GET"]
    const methods = ["RecordEngine.update", "StructureService.create"]
    // the exporter sends every 5 s, and the spans of one request may ride different exports: wait for all of them
    await otlp.waitFor(
      () => {
        const names = new Set(spans().map((s) => s.name))
        return [...routes, ...methods].every((name) => names.has(name))
      },
      20_000,
      "the spans of every route and service method the test called"
    )
    const server = spans().filter((s) => s.kind === 2)
    expect(server.every((s) => s.service === "troupe")).toBe(true)
    expect(server.map((s) => s.name)).toEqual(expect.arrayContaining(routes))
    // service methods have their spans (RecordService's reads only while spans are exported)
    expect(spans().map((s) => s.name)).toEqual(expect.arrayContaining(methods))
  })
})
