// The node's metrics, scraped at GET /metrics (Prometheus text format, effect/observability's PrometheusMetrics over
// Effect's Metric registry). Updates stay in memory: a request adds to a counter and a histogram through a cached
// series (one Map lookup each, no attribute merging), and a gauge whose value already lives in some structure is
// read from it when scraped. The few gauges that need the database (queued runs) are refreshed by MetricsScrape
// just before a scrape is formatted, never on a request. Every label is low-cardinality: routes are the router's
// patterns, methods and statuses come from small fixed sets. The domains define their own metrics beside their code
// (events/EventMetrics.ts, compute/RunMetrics.ts); the README's "What to watch on /metrics" lists them all.
import { Clock, Context, Effect, Layer, Metric, type Scope } from "effect"

/** Gauges refreshed from the database at scrape time (wired in Server.ts, which knows the domains). */
export class MetricsScrape extends Context.Service<MetricsScrape, { readonly refresh: Effect.Effect<void> }>()(
  "@troupe/server/platform/MetricsScrape"
) {
  static readonly none = Layer.succeed(MetricsScrape, { refresh: Effect.void })
}

/** Seconds, from 1 ms to 30 s: fast reads land in the first buckets, slow queries and function calls in the last. */
export const latencyBuckets = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30]

/** One series per distinct key, each a metric of its own with fixed attributes: updating it is a Map lookup. */
export const seriesCache = <M>(make: (attributes: Record<string, string>) => M) => {
  const cache = new Map<string, M>()
  return (key: string, attributes: () => Record<string, string>): M => {
    let series = cache.get(key)
    if (series === undefined) cache.set(key, (series = make(attributes())))
    return series
  }
}

/**
 * A gauge read when metrics are scraped (`read` gets the current time in ms), registered for as long as the current
 * scope lasts: the series disappears with whatever it reads (a singleton moved to another node, a layer closed).
 */
export const scrapedGauge = (gauge: Metric.Gauge<number>, read: (nowMs: number) => number): Effect.Effect<void, never, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.map(Effect.context<never>(), (context) => {
      const clock = Context.get(context, Clock.Clock)
      return Metric.registerUnsafe(gauge, context, {
        get: () => ({ value: read(clock.currentTimeMillisUnsafe()) }),
        update: () => {},
        modify: () => {}
      })
    }),
    (registration) => Effect.sync(registration.remove)
  ).pipe(Effect.asVoid)

// HTTP -----------------------------------------------------------------------------------------------------------

const requestsDescription =
  "HTTP requests answered, by route pattern, method, status and lane (fast: answered before the Effect HTTP stack)"
const durationDescription = "Time from a request's arrival to its response (headers, for streams), in seconds, by route pattern and method"

const knownMethods = new Set(["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"])

/** A request method as a label: anything outside the usual few is `other` (the method is the client's choice). */
export const methodLabel = (method: string) => (knownMethods.has(method) ? method : "other")

/** Requests no route matches (404, 405). */
export const UNMATCHED = "unmatched"

const requestSeries = seriesCache((attributes) =>
  Metric.counter("troupe_http_requests_total", { description: requestsDescription, incremental: true, attributes })
)
const durationSeries = seriesCache((attributes) =>
  Metric.histogram("troupe_http_request_duration_seconds", {
    description: durationDescription,
    boundaries: latencyBuckets,
    attributes
  })
)

/**
 * Counts one answered request and observes its latency: synchronous and allocation-light, for both lanes. `context`
 * holds the metric registry (the node's runtime context).
 */
export const recordRequest = (
  context: Context.Context<never>,
  rawMethod: string,
  route: string,
  status: number,
  seconds: number,
  lane: "stack" | "fast"
) => {
  const method = methodLabel(rawMethod)
  const series = `${method} ${route}`
  requestSeries(`${series} ${status} ${lane}`, () => ({
    method,
    route,
    status: String(status),
    status_class: `${Math.floor(status / 100)}xx`,
    lane
  })).updateUnsafe(1, context)
  durationSeries(series, () => ({ method, route })).updateUnsafe(seconds, context)
}
