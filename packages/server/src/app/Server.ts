// The whole node as one Layer: used by main.ts and by in-process tests.
import { NodeHttpServer } from "@effect/platform-node"
import { Api } from "@troupe/api/Api"
import { Effect, Layer, References } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { ComputeLayer } from "../compute/ComputeLayer.ts"
import { EventTriggersLayer } from "../compute/EventTriggers.ts"
import { HTTP_TRIGGER_PATHS, HttpTriggerRoute } from "../compute/HttpTriggerRoute.ts"
import { refreshQueuedRuns } from "../compute/RunMetrics.ts"
import { RunRepo } from "../compute/RunRepo.ts"
import { SchedulerLayer } from "../compute/Scheduler.ts"
import { CONSOLE_PATHS, ConsoleRoute } from "../console/ConsoleRoute.ts"
import { ComputeHandlers } from "../compute/http.ts"
import { EventsLayer } from "../events/EventsLayer.ts"
import { WebhooksHandlers } from "../events/http.ts"
import { RealtimeRoute, realtimeRoutes } from "../events/RealtimeRoute.ts"
import { Authenticator } from "../identity/Authenticate.ts"
import { IdentityHandlers } from "../identity/http.ts"
import { IdentityLayer } from "../identity/IdentityLayer.ts"
import { CorsOrigins } from "../identity/CorsOrigins.ts"
import { NotificationHandlers } from "../notification/http.ts"
import { IntelligenceHandlers } from "../intelligence/http.ts"
import { IntelligenceLayer } from "../intelligence/IntelligenceLayer.ts"
import { ObserverLayer } from "../intelligence/Observer.ts"
import { NotificationLayer } from "../notification/NotificationLayer.ts"
import { QueryHandlers } from "../query/http.ts"
import { StorageHandlers, StorageSignedHandlers } from "../storage/http.ts"
import { FileLookupLayer } from "../storage/FileLookupLayer.ts"
import { StorageLayer } from "../storage/StorageLayer.ts"
import { FileReferrersLayer } from "../records/FileReferrersLayer.ts"
import { QueryIndexesLayer } from "../query/QueryIndexes.ts"
import { QueryPool } from "../query/QueryPool.ts"
import { fastQueryRoutes } from "../query/FastQuery.ts"
import { fastRunRoutes } from "../compute/FastRuns.ts"
import { fastSendRoutes } from "../notification/FastSends.ts"
import { fastSearchRoutes } from "../search/FastSearch.ts"
import { fastStorageRoutes } from "../storage/FastDownload.ts"
import { fastUploadRoutes } from "../storage/FastUpload.ts"
import { QueryService } from "../query/QueryService.ts"
import { RecordEngineLayer, RecordEntityLayer, RecordKeyEntityLayer, RecordWriter } from "../records/RecordEntity.ts"
import { fastReadRoutes } from "../records/FastRead.ts"
import { fastWriteRoutes } from "../records/WriteRoutes.ts"
import { RecordsHandlers } from "../records/http.ts"
import { RecordQuery } from "../query/RecordQuery.ts"
import { RecordService } from "../records/RecordService.ts"
import { TtlSweeperLayer } from "../records/TtlSweeper.ts"
import { SearchHandlers } from "../search/http.ts"
import { LexiconLayer } from "../search/Lexicon.ts"
import { SearchLayer } from "../search/SearchLayer.ts"
import { StructuresHandlers } from "../structures/http.ts"
import { StructureService } from "../structures/StructureService.ts"
import { VersionRetentionLayer } from "../structures/VersionRetention.ts"
import { AppConfig } from "../platform/AppConfig.ts"
import { answerClientErrors } from "../platform/ClientErrors.ts"
import { corsPolicy, withCors } from "../platform/Cors.ts"
import { fastLane, fastServer, FastRoutes } from "../platform/FastRoutes.ts"
import { ClusterLayer, NodeProbeLayer } from "../platform/Cluster.ts"
import { DatabaseLayer } from "../platform/Database.ts"
import { EmbeddedVacuumLayer } from "../platform/EmbeddedVacuum.ts"
import { draining } from "../platform/Drain.ts"
import { SystemHandlers } from "../platform/http.ts"
import { OpenApiRoutes } from "../platform/OpenApiRoute.ts"
import { StartLineLayer } from "../platform/StartLine.ts"
import { routeLabels, serve, uploadBodyLimit } from "../platform/HttpEdge.ts"
import { MetricsScrape } from "../platform/Metrics.ts"
import { Notifier } from "../platform/Notifier.ts"
import { TracingLayer } from "../platform/Tracing.ts"

/** What GET /metrics reads from the database when scraped (everything else is in memory). */
const MetricsScrapeLive = Layer.effect(
  MetricsScrape,
  Effect.gen(function* () {
    const runs = yield* RunRepo
    return MetricsScrape.of({
      refresh: refreshQueuedRuns(runs).pipe(Effect.catchCause((cause) => Effect.logWarning("metrics: reading queued runs failed", cause)))
    })
  })
)

/** Every HttpApi group's handlers. */
const Handlers = Layer.mergeAll(
  SystemHandlers.pipe(Layer.provide(MetricsScrapeLive)),
  IdentityHandlers,
  StructuresHandlers,
  RecordsHandlers,
  WebhooksHandlers,
  QueryHandlers,
  ComputeHandlers,
  NotificationHandlers,
  StorageHandlers,
  StorageSignedHandlers,
  SearchHandlers,
  IntelligenceHandlers
)

/** Every cluster entity and singleton hosted by this node. */
const Entities = Layer.mergeAll(
  NodeProbeLayer,
  RecordEntityLayer,
  RecordKeyEntityLayer,
  TtlSweeperLayer(),
  VersionRetentionLayer(),
  SchedulerLayer,
  EmbeddedVacuumLayer
)

/** Domain services, each needing only the database, the cluster and the identity layer below it. */
const Domains = ComputeLayer.pipe(
  Layer.provideMerge(IntelligenceLayer),
  Layer.provideMerge(
    Layer.mergeAll(
      RecordQuery.layer,
      EventsLayer,
      QueryService.layer,
      QueryIndexesLayer,
      NotificationLayer,
      // deleting a file applies the onDelete of records' `format: "file"` properties
      StorageLayer.pipe(Layer.provide(FileReferrersLayer)),
      SearchLayer
    )
  ),
  // the one entry point of record writes (the storage's file deletes reach records through it too)
  Layer.provideMerge(RecordWriter.layer),
  Layer.provideMerge(QueryPool.layer),
  Layer.provideMerge(RecordService.layer),
  Layer.provideMerge(RecordEngineLayer),
  // undeclared fields of relayed writes reach schema discovery (intelligence/Observer.ts)
  Layer.provideMerge(ObserverLayer),
  // the words of relayed writes reach the search lexicon (search/Lexicon.ts)
  Layer.provideMerge(LexiconLayer),
  // record events and failed writes reach event-driven triggers (read by the relay and by the record engine)
  Layer.provideMerge(EventTriggersLayer),
  Layer.provideMerge(StructureService.layer),
  // records check and expand `format: "file"` values through it
  Layer.provideMerge(FileLookupLayer),
  Layer.provideMerge(CorsOrigins.layer),
  Layer.provideMerge(Notifier.layer)
)

const ApiRoutes = HttpApiBuilder.layer(Api).pipe(Layer.provide(Handlers))
// /openapi.json and /docs describe the raw routes too (realtime, HTTP triggers): @troupe/api/RawRoutes
const Routes = Layer.mergeAll(ApiRoutes, OpenApiRoutes, RealtimeRoute, HttpTriggerRoute, ConsoleRoute)

const Runtime = Entities.pipe(
  Layer.provideMerge(Domains),
  // identity: Authorization middleware (needed by every guarded group), Authenticator, Secrets, rate limits
  Layer.provideMerge(IdentityLayer),
  Layer.provideMerge(ClusterLayer),
  Layer.provideMerge(DatabaseLayer)
)

const HttpLive = Layer.unwrap(
  Effect.gen(function* () {
    const config = yield* AppConfig
    const rawRoutes = [
      ["GET", "/docs"],
      ["GET", "/openapi.json"],
      ...realtimeRoutes,
      ...CONSOLE_PATHS.map((p) => ["GET", p] as const)
    ] as const
    // a request's route pattern (metrics, span names), the same for both lanes
    const routeOf = routeLabels(Api, rawRoutes, HTTP_TRIGGER_PATHS)
    // the node's http.Server answers the fast routes itself and hands every other request to the Effect stack
    // on SIGTERM its keep-alive connections end after the request they carry (Drain.ts)
    const authenticator = yield* Authenticator
    const FastServer = draining(
      fastServer(yield* fastLane(Api, yield* FastRoutes, authenticator.authenticate), yield* Effect.context<never>(), {
        maxBody: config.maxBodyBytes,
        maxJsonDepth: config.maxJsonDepth,
        maxUpload: uploadBodyLimit(config)
      })
    )
    // CORS (platform/Cors.ts): decided as a request enters, before either lane sees it
    const cors = corsPolicy({ node: config.corsOrigins, workspaces: yield* CorsOrigins, routeOf, anyHeaderRoutes: HTTP_TRIGGER_PATHS })
    const NodeServer = withCors(FastServer, cors, yield* Effect.context<never>())
    return serve(Api, Routes, rawRoutes, routeOf).pipe(
      Layer.merge(StartLineLayer),
      Layer.provide(NodeHttpServer.layer(() => answerClientErrors(new NodeServer()), { port: config.port, host: config.host }))
    )
  })
).pipe(
  Layer.provide(
    Layer.effect(
      FastRoutes,
      Effect.map(
        Effect.all([
          fastReadRoutes,
          fastWriteRoutes,
          fastQueryRoutes,
          fastRunRoutes,
          fastStorageRoutes,
          fastUploadRoutes,
          fastSearchRoutes,
          fastSendRoutes
        ]),
        (tables) => Object.assign({}, ...tables)
      )
    )
  )
)

/** TROUPE_LOG_LEVEL as Effect's minimum log level, for every fiber the layers below start. */
const LogLevelLive = Layer.effect(
  References.MinimumLogLevel,
  Effect.gen(function* () {
    return (yield* AppConfig).minimumLogLevel
  })
)

export const ServerLayer = HttpLive.pipe(
  Layer.provide(Runtime),
  Layer.provide(LogLevelLive),
  // spans of everything above (requests, services, background work) go to OTLP when configured
  Layer.provide(TracingLayer),
  Layer.provide(AppConfig.layer)
)
