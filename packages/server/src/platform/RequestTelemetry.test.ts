// Both lanes of the HTTP edge (HttpEdge.serve behind FastRoutes.fastServer, on a real socket) name each request's
// server span after its route pattern and count it under that pattern, with an in-memory tracer and metric registry;
// and who may scrape GET /metrics.
import { NodeHttpServer } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { Authorization, type Principal } from "@troupe/api/Authorization"
import { Context, Effect, Layer, Metric, Option, References, Schema, Tracer } from "effect"
import { HttpServer } from "effect/http"
import { HttpApi, HttpApiBuilder, HttpApiEndpoint, HttpApiGroup } from "effect/http-api"
import { Authenticator } from "../identity/Authenticate.ts"
import { AuthorizationLive } from "../identity/AuthorizationLive.ts"
import { AppConfig } from "./AppConfig.ts"
import { fastLane, fastServer } from "./FastRoutes.ts"
import { routeLabels, serve } from "./HttpEdge.ts"
import { scrapeMetrics } from "./http.ts"

const api = HttpApi.make("telemetry").add(
  HttpApiGroup.make("things", { topLevel: true })
    .add(HttpApiEndpoint.get("get", "/things/:id", { params: { id: Schema.String }, success: Schema.Struct({ id: Schema.String }) }))
    .middleware(Authorization)
)
const caller: Principal = {
  kind: "user",
  id: "1",
  name: "tester",
  workspace: "default",
  role: "owner",
  permissions: new Set(),
  isPlatformAdmin: false,
  groups: []
}
// every bearer token is the caller; no token is a 401 from either lane's authentication
const authenticate = () => Effect.succeed(caller)
const App = HttpApiBuilder.layer(api).pipe(
  Layer.provide(
    HttpApiBuilder.group(api, "things", (handlers) => handlers.handle("get", ({ params }) => Effect.succeed({ id: params.id })))
  ),
  Layer.provide(AuthorizationLive),
  Layer.provide(Layer.succeed(Authenticator, { authenticate }))
)
// the same endpoint in the fast lane, which leaves `/things/stack` to the Effect stack
const fastThings = {
  "things.get": {
    accepts: ({ params }: { readonly params: Readonly<Record<string, unknown>> }) => params.id !== "stack",
    run: ({ params }: { readonly params: Readonly<Record<string, unknown>> }) => Effect.succeed({ status: 200, body: { id: params.id } })
  }
}

const spans: Array<Tracer.NativeSpan> = []
const tracer = Tracer.make({
  span(options) {
    const span = new Tracer.NativeSpan(options)
    spans.push(span)
    return span
  }
})
const registry: Metric.MetricRegistry = new Map()

const Edge = Layer.unwrap(
  Effect.gen(function* () {
    const routeOf = routeLabels(api)
    const lane = yield* fastLane(api, fastThings, authenticate)
    const FastServer = fastServer(lane, yield* Effect.context<never>(), { maxBody: 1 << 20 })
    return serve(api, App, [], routeOf).pipe(
      Layer.provideMerge(NodeHttpServer.layer(() => new FastServer(), { port: 0, host: "127.0.0.1" }))
    )
  })
).pipe(
  Layer.provide(AppConfig.layerWith({})),
  Layer.provide(Layer.succeed(References.MinimumLogLevel, "None")),
  Layer.provide(Layer.succeed(Tracer.Tracer, tracer)),
  Layer.provide(Layer.succeed(Metric.MetricRegistry, registry))
)

const get = (path: string, headers: Record<string, string> = {}) =>
  Effect.gen(function* () {
    const base = HttpServer.formatAddress((yield* HttpServer.HttpServer).address)
    return yield* Effect.promise(() => fetch(`${base}${path}`, { headers }).then((res) => res.status))
  })

/** Server spans once ended (a span ends just after its response is written). */
const serverSpans = Effect.gen(function* () {
  for (let i = 0; i < 100; i++) {
    const server = spans.filter((s) => s.kind === "server")
    if (server.length > 0 && server.every((s) => s.status._tag === "Ended")) return server
    yield* Effect.sleep("10 millis")
  }
  return spans.filter((s) => s.kind === "server")
})

describe("request telemetry", () => {
  it.layer(Edge)((it) => {
    it.effect("a span per request, named after its route in either lane; counts by route pattern", () =>
      Effect.gen(function* () {
        expect(yield* get("/things/stack", { authorization: "Bearer t" })).toBe(200) // not accepted by the lane: the Effect stack
        expect(yield* get("/things/b", { authorization: "Bearer t" })).toBe(200) // the fast lane
        expect(yield* get("/nothing/here")).toBe(404)

        const server = yield* serverSpans
        expect(server.map((s) => s.name).sort()).toStrictEqual(["GET", "GET /things/:id", "GET /things/:id"])
        const fast = server.find((s) => s.attributes.get("troupe.fast_lane") === "answered")
        expect(fast?.name).toBe("GET /things/:id")
        expect(fast?.attributes.get("http.response.status_code")).toBe(200)
        const stack = server.find((s) => s.name === "GET /things/:id" && s !== fast)
        expect(stack?.attributes.get("http.route")).toBe("/things/:id")

        const requests = Metric.snapshotUnsafe(Context.make(Metric.MetricRegistry, registry))
          .filter((m) => m.id === "troupe_http_requests_total")
          .map(
            (m) => `${m.attributes?.route} ${m.attributes?.status} ${m.attributes?.lane} ${(m.state as Metric.CounterState<number>).count}`
          )
          .sort()
        expect(requests).toStrictEqual(["/things/:id 200 fast 1", "/things/:id 200 stack 1", "unmatched 404 stack 1"])
      })
    )
  })
})

describe("GET /metrics access", () => {
  const counter = Metric.counter("scrape_test_total", { incremental: true })
  const isolated = <A, E>(effect: Effect.Effect<A, E>) =>
    Effect.andThen(Metric.update(counter, 1), effect).pipe(Effect.provideService(Metric.MetricRegistry, new Map()))

  it.effect("is open without TROUPE_METRICS_TOKEN, and refreshes the database-backed gauges first", () =>
    Effect.gen(function* () {
      let refreshed = 0
      const scrape = scrapeMetrics(
        Option.none(),
        Effect.sync(() => void refreshed++)
      )
      const text = yield* isolated(scrape(undefined))
      expect(text).toContain("scrape_test_total 1")
      expect(refreshed).toBe(1)
    })
  )

  it.effect("with the token set, answers its bearer only (401 otherwise)", () =>
    Effect.gen(function* () {
      const scrape = scrapeMetrics(Option.some("s3cret"), Effect.void)
      for (const header of [undefined, "Bearer nope", "Basic s3cret", "Bearer s3cre"]) {
        const error = yield* Effect.flip(isolated(scrape(header)))
        expect(error.statusCode).toBe(401)
      }
      expect(yield* isolated(scrape("Bearer s3cret"))).toContain("scrape_test_total 1")
    })
  )
})
