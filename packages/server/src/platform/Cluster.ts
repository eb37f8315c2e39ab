// Cluster wiring. On embedded PGlite the node is a SingleRunner (one process owns the database). On PostgreSQL every
// node joins one cluster over NodeClusterSocket, reachable at TROUPE_RUNNER_HOST:TROUPE_RUNNER_PORT, and the shard
// manager spreads entities over the nodes.
import { NodeClusterSocket } from "@effect/platform-node"
import { NodeCrypto } from "@effect/platform-node"
import { Duration, Effect, Equal, Layer, Option, Schedule, Schema, Semaphore } from "effect"
import {
  Entity,
  RunnerAddress,
  RunnerHealth,
  Runners,
  RunnerStorage,
  type Sharding,
  ShardingConfig,
  SingleRunner,
  SocketRunner,
  SqlMessageStorage,
  SqlRunnerStorage
} from "effect/cluster"
import { Rpc, RpcSerialization } from "effect/rpc"
import type { SqlClient } from "effect/sql"
import { AppConfig } from "./AppConfig.ts"

/** Which node this is, as other nodes and logs name it. */
export const nodeName = (config: { readonly runnerHost: string; readonly runnerPort: number }) =>
  `${config.runnerHost}:${config.runnerPort}/${process.pid}`

/** Where other nodes reach this one: its runner address, as the cluster itself records it (no process details). */
export const runnerAddress = (config: { readonly runnerHost: string; readonly runnerPort: number }) =>
  `${config.runnerHost}:${config.runnerPort}`

/** A probe entity: answers with the runner address of the node hosting it. Proves messages are routed (/ready). */
export const NodeProbe = Entity.make("NodeProbe", [
  Rpc.make("Whoami", { success: Schema.Struct({ entityId: Schema.String, node: Schema.String }) })
])

export const NodeProbeLayer = NodeProbe.toLayer(
  Effect.gen(function* () {
    const config = yield* AppConfig
    const node = runnerAddress(config)
    return NodeProbe.of({
      Whoami: ({ address }) => Effect.succeed({ entityId: address.entityId, node })
    })
  }),
  { maxIdleTime: "1 minute" }
)

export const ClusterLayer = Layer.unwrap(
  Effect.gen(function* () {
    const config = yield* AppConfig
    // Every write to a distinct record or business key activates an entity (records/RecordEntity.ts): resident
    // entities = distinct keys written per second x idle time (10 s). Past TROUPE_MAX_ENTITIES a new entity is
    // refused and the write answers 503 with Retry-After; the default 50,000 serves ~5,000 distinct keys/s per node.
    // simulateRemoteSerialization off: a message to an entity on this node is handed over as it is, not encoded and
    // decoded as if it crossed the wire (about 0.3 ms of CPU per PATCH measured). The multi-node tests cover the wire.
    const shardingDefaults = {
      entityMessagePollInterval: "5 seconds",
      maxResidentEntities: config.maxResidentEntities,
      simulateRemoteSerialization: false
    } as const
    // Failover: a node that dies stops refreshing its runner row and shard locks (its advisory locks go with its
    // PostgreSQL session). The others notice through the ping health check (QuickPingHealth: about a second after a
    // SIGKILL) or, when the health check ran on the dead node, within the lock expiration (runners not seen for that
    // long drop out of the assignment), and take its shards over on their next refresh (scripts/chaos.ts measures it).
    // Each knob costs a small statement (or a ping) per node per interval.
    const failover = {
      shardLockExpiration: Duration.seconds(config.clusterLockExpirationSeconds),
      shardLockRefreshInterval: Duration.seconds(Math.max(0.5, config.clusterLockExpirationSeconds / 3)),
      runnerHealthCheckInterval: Duration.seconds(config.clusterHealthCheckSeconds),
      refreshAssignmentsInterval: Duration.seconds(config.clusterRefreshSeconds)
    }
    if (!config.clustered) {
      // runner and shard locks in memory: one process owns an embedded database, so there is nobody to coordinate
      // with, and locks kept in the database would hold a node restarted after a crash until they expired
      return SingleRunner.layer({
        runnerStorage: "memory",
        shardingConfig: shardingDefaults
      }).pipe(Layer.provide(NodeCrypto.layerDigest))
    }
    const self = RunnerAddress.make(config.runnerHost, config.runnerPort)
    const shardingConfig = { ...shardingDefaults, ...failover, runnerAddress: Option.some(self) }
    // NodeClusterSocket.layer({ storage: "sql" }), put together here to change three parts (below): shard releases a
    // few at a time, a quicker ping health check, and every node watching for dead runners
    const health = QuickPingHealth.pipe(Layer.provide(Runners.layerRpc), Layer.provide(NodeClusterSocket.layerClientProtocol))
    return SocketRunner.layer.pipe(
      Layer.provide([NodeClusterSocket.layerSocketServer, NodeClusterSocket.layerClientProtocol]),
      Layer.merge(Layer.effectDiscard(watchForDeadRunners(self, failover.runnerHealthCheckInterval))),
      Layer.provide(health),
      Layer.provideMerge(SqlMessageStorage.layer.pipe(Layer.provide(NodeCrypto.layerDigest))),
      Layer.provide(FewReleasesAtOnce.pipe(Layer.provide(Layer.orDie(SqlRunnerStorage.layer)))),
      Layer.provide(ShardingConfig.layerFromEnv(shardingConfig)),
      Layer.provide(RpcSerialization.layerSchemaBinary())
    )
  })
) as Layer.Layer<Sharding.Sharding, never, AppConfig | SqlClient.SqlClient>

/**
 * Runner health by ping, as effect/cluster's `RunnerHealth.layerPing` (which the cluster's health-check singleton
 * runs against every runner each TROUPE_CLUSTER_HEALTH_CHECK_SECONDS), but quicker to call a dead node dead. A ping
 * to a killed node fails at once (its runner port refuses the connection); `layerPing` retries it five times 500 ms
 * apart, so a SIGKILLed node kept its shards for 2.5 s more than needed, most of the failover. Here a failed ping is
 * retried twice 250 ms apart: a live node whose cached connection broke answers the retry on a fresh one. A ping
 * that hangs still waits 10 s per attempt, so a slow node is not taken for a dead one.
 */
export const quickPing = (runners: Pick<Runners.Runners["Service"], "ping">) =>
  RunnerHealth.RunnerHealth.of({
    isAlive: (address) =>
      runners
        .ping(address)
        .pipe(
          Effect.timeout(Duration.seconds(10)),
          Effect.retry({ times: 2, schedule: Schedule.spaced(Duration.millis(250)) }),
          Effect.isSuccess
        )
  })

export const QuickPingHealth = Layer.effect(RunnerHealth.RunnerHealth, Effect.map(Runners.Runners, quickPing))

/**
 * Every `interval`, this node pings every other runner still marked healthy and marks those that are dead
 * unhealthy, as effect/cluster's health check does. That check is a cluster singleton: when the node that dies is
 * the one running it, nobody pings the dead node, and its death is noticed only when its heartbeat expires
 * (TROUPE_CLUSTER_LOCK_EXPIRATION_SECONDS, then a refresh): 5.4-6.3 s in the chaos run against 1.5-3 s otherwise.
 * Run on every node, the check does not die with any one of them. It only ever marks a runner unhealthy (the
 * singleton marks it healthy again if it answers), never the last healthy one (as effect/cluster's), and a verdict
 * that takes longer than two seconds (a ping that hangs: a slow node, not a dead one) is no verdict.
 */
export const watchForDeadRunners = (self: RunnerAddress.RunnerAddress, interval: Duration.Input) =>
  Effect.gen(function* () {
    const storage = yield* RunnerStorage.RunnerStorage
    const health = yield* RunnerHealth.RunnerHealth
    const check = Effect.flatMap(storage.getRunners, (runners) => {
      let healthy = runners.filter(([, isHealthy]) => isHealthy).length
      return Effect.forEach(
        runners,
        ([runner, isHealthy]) =>
          !isHealthy || Equal.equals(runner.address, self)
            ? Effect.void
            : Effect.flatMap(Effect.timeoutOption(health.isAlive(runner.address), Duration.seconds(2)), (alive) => {
                if (Option.getOrElse(alive, () => true) || healthy <= 1) return Effect.void
                healthy--
                return Effect.andThen(
                  storage.setRunnerHealth(runner.address, false),
                  Effect.logInfo("cluster: a runner stopped answering; marked unhealthy").pipe(
                    Effect.annotateLogs({ runner: `${runner.address.host}:${runner.address.port}` })
                  )
                )
              }),
        { concurrency: "unbounded", discard: true }
      )
    })
    yield* check.pipe(
      Effect.catchCause((cause) => Effect.logDebug("cluster: dead runner check failed", cause)),
      Effect.repeat(Schedule.spaced(interval)),
      Effect.forkScoped
    )
  })

/** Shard releases in flight on the lock connection at once (FewReleasesAtOnce). */
export const RELEASES_AT_ONCE = 4

/**
 * The SQL runner storage with its shard releases taken a few at a time. On PostgreSQL a runner holds its shard locks
 * (advisory locks) on one reserved connection, and releasing a shard is two statements on it. When shards move (a
 * node joins and the others hand it a third of theirs, or a node drains), the runner releases a hundred shards at
 * once: queued together on that connection, each with its own deadline of a lock refresh interval, they time out and
 * retry, and the lock refresh queued behind them times out too. A runner whose refresh fails takes its lock storage
 * for unhealthy and interrupts every entity it holds (requests in flight fail with 500) before releasing everything.
 * With RELEASES_AT_ONCE in flight each release finishes within its deadline and the refresh gets its turn; a few
 * rather than one keep the connection's pipeline busy (measured under the chaos load: the longest stall of a key
 * while a joining node took its shards was 7.9 s one at a time, 2.4-3.6 s four at a time).
 */
export const FewReleasesAtOnce = Layer.effect(
  RunnerStorage.RunnerStorage,
  Effect.gen(function* () {
    const storage = yield* RunnerStorage.RunnerStorage
    const few = yield* Semaphore.make(RELEASES_AT_ONCE)
    return RunnerStorage.RunnerStorage.of({
      ...storage,
      release: (address, shardId) => few.withPermits(1)(storage.release(address, shardId))
    })
  })
)
