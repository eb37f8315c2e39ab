// Handlers of the system group (liveness, readiness, metrics) and of the platform administrators' cluster probe.
import { Api } from "@troupe/api/Api"
import { serviceUnavailable, unauthorized } from "@troupe/api/Errors"
import { Effect, Layer, Option, Redacted } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { PrometheusMetrics } from "effect/observability"
import { SqlClient } from "effect/sql"
import * as Crypto from "node:crypto"
import { AppConfig } from "./AppConfig.ts"
import { NodeProbe, runnerAddress } from "./Cluster.ts"
import { bearerOf } from "./EdgeInput.ts"
import { MetricsScrape } from "./Metrics.ts"

const digest = (text: string) => Crypto.createHash("sha256").update(text).digest()

/**
 * GET /metrics: the registry as Prometheus text, after `refresh` (the database-backed gauges, bounded: a slow database
 * delays a scrape by at most 2 s and leaves those gauges at their last value). Open without `token`; with it, only
 * `Authorization: Bearer <token>` (compared in constant time) is answered.
 */
export const scrapeMetrics = (token: Option.Option<string>, refresh: Effect.Effect<void>) => {
  const expected = Option.map(token, digest)
  const refreshed = refresh.pipe(Effect.timeout("2 seconds"), Effect.ignore)
  return (authorization: string | undefined) =>
    Effect.gen(function* () {
      if (Option.isSome(expected)) {
        const given = bearerOf(authorization)
        if (given === undefined || !Crypto.timingSafeEqual(digest(given), expected.value)) {
          return yield* Effect.fail(unauthorized("GET /metrics needs Authorization: Bearer <TROUPE_METRICS_TOKEN>"))
        }
      }
      yield* refreshed
      return yield* PrometheusMetrics.format()
    })
}

const SystemGroup = HttpApiBuilder.group(
  Api,
  "system",
  Effect.fn(function* (handlers) {
    const sql = yield* SqlClient.SqlClient
    const probe = yield* NodeProbe.client
    // Ready = the database answers and an entity message makes a round trip through the cluster. One fixed entity per
    // node (not one per call): polling /ready never fills the node's entity budget, and says nothing about the nodes.
    const config = yield* AppConfig
    const readyEntity = `ready:${runnerAddress(config)}`
    const ready = Effect.gen(function* () {
      yield* sql`SELECT 1`
      yield* probe(readyEntity).Whoami()
      return { status: "ready" as const }
    }).pipe(
      Effect.timeout("5 seconds"),
      Effect.catchCause(() => Effect.fail(serviceUnavailable("The node has not joined the cluster or the database is unreachable")))
    )
    const metrics = scrapeMetrics(Option.map(config.metricsToken, Redacted.value), (yield* MetricsScrape).refresh)
    return handlers
      .handle("health", () => Effect.succeed({ status: "ok" as const }))
      .handle("ready", () => ready)
      .handle("metrics", ({ request }) => metrics(request.headers.authorization))
  })
)

const ClusterGroup = HttpApiBuilder.group(
  Api,
  "cluster",
  Effect.fn(function* (handlers) {
    const probe = yield* NodeProbe.client
    const servedBy = runnerAddress(yield* AppConfig)
    return handlers.handle("probe", ({ params }) =>
      probe(params.id)
        .Whoami()
        .pipe(
          Effect.map((answer) => ({ ...answer, servedBy })),
          Effect.timeout("10 seconds"),
          Effect.catchCause(() => Effect.fail(serviceUnavailable("The entity could not be reached")))
        )
    )
  })
)

export const SystemHandlers = Layer.mergeAll(SystemGroup, ClusterGroup)
