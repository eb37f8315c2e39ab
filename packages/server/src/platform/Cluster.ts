// Cluster wiring. On embedded PGlite the node is a SingleRunner (one process owns the database). On PostgreSQL every
// node joins one cluster over NodeClusterSocket, reachable at TROUPE_RUNNER_HOST:TROUPE_RUNNER_PORT, and the shard
// manager spreads entities over the nodes.
import { NodeClusterSocket } from "@effect/platform-node"
import { NodeCrypto } from "@effect/platform-node"
import { Effect, Layer, Option, Schema } from "effect"
import { Entity, RunnerAddress, Sharding, SingleRunner } from "effect/cluster"
import { Rpc } from "effect/rpc"
import { SqlClient } from "effect/sql"
import { AppConfig } from "./AppConfig.ts"

/** Which node this is, as other nodes and logs name it. */
export const nodeName = (config: { readonly runnerHost: string; readonly runnerPort: number }) =>
  `${config.runnerHost}:${config.runnerPort}/${process.pid}`

/** A probe entity: answers with the node that hosts it. Proves messages are routed (tests, /ready). */
export const NodeProbe = Entity.make("NodeProbe", [
  Rpc.make("Whoami", { success: Schema.Struct({ entityId: Schema.String, node: Schema.String }) })
])

export const NodeProbeLayer = NodeProbe.toLayer(Effect.gen(function*() {
  const config = yield* AppConfig
  const node = nodeName(config)
  return NodeProbe.of({
    Whoami: ({ address }) => Effect.succeed({ entityId: address.entityId, node })
  })
}), { maxIdleTime: "1 minute" })

export const ClusterLayer = Layer.unwrap(Effect.gen(function*() {
  const config = yield* AppConfig
  // Every write to a distinct record or business key activates an entity (records/RecordEntity.ts): resident
  // entities = distinct keys written per second x idle time (10 s). Past TROUPE_MAX_ENTITIES a new entity is
  // refused and the write answers 503 with Retry-After; the default 50,000 serves ~5,000 distinct keys/s per node.
  const shardingDefaults = { entityMessagePollInterval: "5 seconds", maxResidentEntities: config.maxResidentEntities } as const
  if (!config.clustered) {
    return SingleRunner.layer({
      runnerStorage: "sql",
      shardingConfig: shardingDefaults
    }).pipe(Layer.provide(NodeCrypto.layerDigest))
  }
  return NodeClusterSocket.layer({
    storage: "sql",
    shardingConfig: {
      ...shardingDefaults,
      runnerAddress: Option.some(RunnerAddress.make(config.runnerHost, config.runnerPort))
    }
  })
})) as Layer.Layer<Sharding.Sharding, never, AppConfig | SqlClient.SqlClient>
