/**
 * Health, readiness and metrics, the routes every node answers without a workspace token; and the cluster probe, a
 * diagnostic for platform administrators.
 *
 * @since 0.1.0
 */
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import { Authorization, RateClass, RequiredPermission } from "./Authorization.ts"
import { ServiceUnavailable, Unauthorized } from "./Errors.ts"

/** @category models */
export const Health = Schema.Struct({ status: Schema.Literal("ok") })

/** The Prometheus text exposition format (version 0.0.4). @category models */
export const MetricsText = Schema.String.pipe(HttpApiSchema.asText({ contentType: "text/plain; version=0.0.4; charset=utf-8" }))

/** @category groups */
export class SystemApi extends HttpApiGroup.make("system", { topLevel: true }).add(
  HttpApiEndpoint.get("health", "/health", { success: Health }),
  HttpApiEndpoint.get("ready", "/ready", {
    success: Schema.Struct({ status: Schema.Literal("ready") }),
    error: ServiceUnavailable
  }),
  HttpApiEndpoint.get("metrics", "/metrics", { success: MetricsText, error: Unauthorized }).annotateMerge(
    OpenApi.annotations({
      summary: "This node's metrics, in the Prometheus text format",
      description:
        "Request counts and latencies by route, resident entities, relay lag, webhook deliveries, SSE " +
        'clients and function runs, as this node sees them (README, "What to watch on /metrics"). Open, unless ' +
        "the node sets TROUPE_METRICS_TOKEN: then `Authorization: Bearer <that token>` is required (401 otherwise)."
    })
  )
) {}

/**
 * Which node hosts the probe entity `entityId` (`node`) and which answered the request (`servedBy`), each as its
 * cluster runner address `host:port`. @category models
 */
export const ClusterProbe = Schema.Struct({ entityId: Schema.String, node: Schema.String, servedBy: Schema.String }).annotate({
  identifier: "ClusterProbe"
})

/**
 * Proves cross-node routing: each id is one entity, placed by shard, so it is kept to platform administrators
 * (every new id occupies an entity slot of its node for a minute). @category groups
 */
export class ClusterApi extends HttpApiGroup.make("cluster")
  .add(
    HttpApiEndpoint.get("probe", "/cluster/probe/:id", {
      params: { id: Schema.String.check(Schema.isMaxLength(128)) },
      success: ClusterProbe,
      error: ServiceUnavailable
    })
      .annotate(RequiredPermission, "platform:admin")
      .annotate(RateClass, "reads")
  )
  .middleware(Authorization)
  .prefix("/workspace/api/v1")
  .annotateMerge(
    OpenApi.annotations({
      title: "Cluster",
      description: "Diagnostics for platform administrators: which node hosts an entity."
    })
  ) {}
