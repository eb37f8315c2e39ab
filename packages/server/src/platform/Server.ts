// The whole node as one Layer: used by main.ts and by in-process tests.
import { NodeHttpServer } from "@effect/platform-node"
import { Api } from "@troupe/api/Api"
import { Effect, Layer } from "effect"
import { HttpApiBuilder, HttpApiScalar } from "effect/http-api"
import { EventsLayer } from "../events/EventsLayer.ts"
import { WebhooksHandlers } from "../events/http.ts"
import { RealtimeRoute, realtimeRoutes } from "../events/RealtimeRoute.ts"
import { IdentityHandlers } from "../identity/http.ts"
import { IdentityLayer } from "../identity/IdentityLayer.ts"
import { QueryHandlers } from "../query/http.ts"
import { QueryIndexesLayer } from "../query/QueryIndexes.ts"
import { QueryPool } from "../query/QueryPool.ts"
import { fastQueryRoutes } from "../query/FastQuery.ts"
import { QueryService } from "../query/QueryService.ts"
import { RecordEntityLayer, RecordKeyEntityLayer, RecordWriter } from "../records/RecordEntity.ts"
import { fastReadRoutes } from "../records/FastRead.ts"
import { RecordsHandlers } from "../records/http.ts"
import { RecordQuery } from "../records/RecordQuery.ts"
import { RecordService } from "../records/RecordService.ts"
import { TtlSweeperLayer } from "../records/TtlSweeper.ts"
import { StructuresHandlers } from "../structures/http.ts"
import { StructureService } from "../structures/StructureService.ts"
import { VersionRetentionLayer } from "../structures/VersionRetention.ts"
import { AppConfig } from "./AppConfig.ts"
import { fastServer, FastRoutes } from "./FastRoutes.ts"
import { ClusterLayer, NodeProbeLayer } from "./Cluster.ts"
import { DatabaseLayer } from "./Database.ts"
import { SystemHandlers } from "./http.ts"
import { serve } from "./HttpEdge.ts"
import { Notifier } from "./Notifier.ts"

/** Every HttpApi group's handlers. */
const Handlers = Layer.mergeAll(SystemHandlers, IdentityHandlers, StructuresHandlers, RecordsHandlers, WebhooksHandlers, QueryHandlers)

/** Every cluster entity and singleton hosted by this node. */
const Entities = Layer.mergeAll(NodeProbeLayer, RecordEntityLayer, RecordKeyEntityLayer, TtlSweeperLayer(), VersionRetentionLayer())

/** Domain services, each needing only the database, the cluster and the identity layer below it. */
const Domains = Layer.mergeAll(RecordWriter.layer, RecordQuery.layer, EventsLayer, QueryService.layer, QueryIndexesLayer).pipe(
  Layer.provideMerge(QueryPool.layer),
  Layer.provideMerge(RecordService.layer),
  Layer.provideMerge(StructureService.layer),
  Layer.provideMerge(Notifier.layer)
)

const ApiRoutes = HttpApiBuilder.layer(Api, { openapiPath: "/openapi.json" }).pipe(Layer.provide(Handlers))
const DocsRoute = HttpApiScalar.layer(Api, { path: "/docs" })
const Routes = Layer.mergeAll(ApiRoutes, DocsRoute, RealtimeRoute)

const Runtime = Entities.pipe(
  Layer.provideMerge(Domains),
  // identity: Authorization middleware (needed by every guarded group), Authenticator, Secrets, rate limits
  Layer.provideMerge(IdentityLayer),
  Layer.provideMerge(ClusterLayer),
  Layer.provideMerge(DatabaseLayer)
)

const HttpLive = Layer.unwrap(Effect.gen(function*() {
  const config = yield* AppConfig
  // the node's http.Server answers the fast routes itself and hands every other request to the Effect stack
  const FastServer = fastServer(yield* FastRoutes, yield* Effect.context<never>(), {
    logRequests: ["debug", "info"].includes(config.logLevel),
    maxBody: config.maxBodyBytes
  })
  return serve(Api, Routes, [["GET", "/docs"], ["GET", "/openapi.json"], ...realtimeRoutes]).pipe(
    Layer.provide(NodeHttpServer.layer(() => new FastServer(), { port: config.port, host: config.host }))
  )
})).pipe(Layer.provide(Layer.effect(FastRoutes, Effect.map(Effect.all([fastReadRoutes, fastQueryRoutes]), (lists) => lists.flat()))))

export const ServerLayer = HttpLive.pipe(
  Layer.provide(Runtime),
  Layer.provide(AppConfig.layer)
)
