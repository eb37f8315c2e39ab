// Both lanes of the HTTP edge (HttpEdge.serve behind FastRoutes.fastServer, on a real socket) name each request's
// server span after its route pattern and count it under that pattern, with an in-memory tracer and metric registry;
// and who may scrape GET /metrics.
import { NodeHttpServer } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { Context, Effect, Layer, Metric, Option, Schema, Tracer } from "effect"
import { HttpServer } from "effect/http"
import { HttpApi, HttpApiBuilder, HttpApiEndpoint, HttpApiGroup } from "effect/http-api"
import { AppConfig } from "./AppConfig.ts"
import { type FastRoute, fastServer } from "./FastRoutes.ts"
import { routeLabels, serve } from "./HttpEdge.ts"
import { scrapeMetrics } from "./http.ts"

const api = HttpApi.make("telemetry").add(
  HttpApiGroup.make("things", { topLevel: true }).add(
    HttpApiEndpoint.get("get", "/things/:id", { params: { id: Schema.String }, success: Schema.Struct({ id: Schema.String }) })
  )
)
const App = HttpApiBuilder.layer(api).pipe(
  Layer.provide(HttpApiBuilder.group(api, "things", (handlers) => handlers.handle("get", ({ params }) => Effect.succeed({ id: params.id }))))
)
// the same endpoint in the fast lane, taken by requests with a bearer token
const fastThing: FastRoute = {
  method: "GET",
  pattern: /^\/things\/([^/]+)$/,
  run: ({ match }) => Effect.succeed({ status: 200, body: { id: match[1]! } })
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

const Edge = Layer.unwrap(Effect.gen(function*() {
  const routeOf = routeLabels(api)
  const FastServer = fastServer([fastThing], yield* Effect.context<never>(), { logRequests: false, maxBody: 1 << 20, routeOf })
  return serve(api, App, [], routeOf).pipe(
    Layer.provideMerge(NodeHttpServer.layer(() => new FastServer(), { port: 0, host: "127.0.0.1" }))
  )
})).pipe(
  Layer.provide(AppConfig.layerWith({ logLevel: "none" })),
  Layer.provide(Layer.succeed(Tracer.Tracer, tracer)),
  Layer.provide(Layer.succeed(Metric.MetricRegistry, registry))
)

const get = (path: string, headers: Record<string, string> = {}) =>
  Effect.gen(function*() {
    const base = HttpServer.formatAddress((yield* HttpServer.HttpServer).address)
    return yield* Effect.promise(() => fetch(`${base}${path}`, { headers }).then((res) => res.status))
  })

/** Server spans once ended (a span ends just after its response is written). */
const serverSpans = Effect.gen(function*() {
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
      Effect.gen(function*() {
        assert.strictEqual(yield* get("/things/a"), 200) // no token: the Effect stack
        assert.strictEqual(yield* get("/things/b", { authorization: "Bearer t" }), 200) // the fast lane
        assert.strictEqual(yield* get("/nothing/here"), 404)

        const server = yield* serverSpans
        assert.deepStrictEqual(server.map((s) => s.name).sort(), ["GET", "GET /things/:id", "GET /things/:id"])
        const fast = server.find((s) => s.attributes.get("troupe.fast_lane") === "answered")
        assert.strictEqual(fast?.name, "GET /things/:id")
        assert.strictEqual(fast?.attributes.get("http.response.status_code"), 200)
        const stack = server.find((s) => s.name === "GET /things/:id" && s !== fast)
        assert.strictEqual(stack?.attributes.get("http.route"), "/things/:id")

        const requests = Metric.snapshotUnsafe(Context.make(Metric.MetricRegistry, registry))
          .filter((m) => m.id === "troupe_http_requests_total")
          .map((m) => `${m.attributes?.route} ${m.attributes?.status} ${m.attributes?.lane} ${(m.state as Metric.CounterState<number>).count}`)
          .sort()
        assert.deepStrictEqual(requests, ["/things/:id 200 fast 1", "/things/:id 200 stack 1", "unmatched 404 stack 1"])
      }))
  })
})

describe("GET /metrics access", () => {
  const counter = Metric.counter("scrape_test_total", { incremental: true })
  const isolated = <A, E>(effect: Effect.Effect<A, E>) =>
    Effect.andThen(Metric.update(counter, 1), effect).pipe(Effect.provideService(Metric.MetricRegistry, new Map()))

  it.effect("is open without TROUPE_METRICS_TOKEN, and refreshes the database-backed gauges first", () =>
    Effect.gen(function*() {
      let refreshed = 0
      const scrape = scrapeMetrics(Option.none(), Effect.sync(() => void refreshed++))
      const text = yield* isolated(scrape(undefined))
      assert.include(text, "scrape_test_total 1")
      assert.strictEqual(refreshed, 1)
    }))

  it.effect("with the token set, answers its bearer only (401 otherwise)", () =>
    Effect.gen(function*() {
      const scrape = scrapeMetrics(Option.some("s3cret"), Effect.void)
      for (const header of [undefined, "Bearer nope", "Basic s3cret", "Bearer s3cre"]) {
        const error = yield* Effect.flip(isolated(scrape(header)))
        assert.strictEqual(error.statusCode, 401)
      }
      assert.include(yield* isolated(scrape("Bearer s3cret")), "scrape_test_total 1")
    }))
})
