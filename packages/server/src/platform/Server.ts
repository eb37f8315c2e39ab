// The whole node as one Layer: used by main.ts and by in-process tests.
import { NodeHttpServer } from "@effect/platform-node"
import { Api } from "@troupe/api/Api"
import { Effect, Layer } from "effect"
import { HttpApiBuilder, HttpApiScalar } from "effect/http-api"
import { createServer } from "node:http"
import { AppConfig } from "./AppConfig.ts"
import { ClusterLayer, NodeProbeLayer } from "./Cluster.ts"
import { DatabaseLayer } from "./Database.ts"
import { SystemHandlers } from "./http.ts"
import { serve } from "./HttpEdge.ts"

/** Every HttpApi group's handlers. */
const Handlers = Layer.mergeAll(SystemHandlers)

/** Every cluster entity hosted by this node. */
const Entities = Layer.mergeAll(NodeProbeLayer)

const ApiRoutes = HttpApiBuilder.layer(Api, { openapiPath: "/openapi.json" }).pipe(Layer.provide(Handlers))
const DocsRoute = HttpApiScalar.layer(Api, { path: "/docs" })
const Routes = Layer.mergeAll(ApiRoutes, DocsRoute)

const Runtime = Entities.pipe(
  Layer.provideMerge(ClusterLayer),
  Layer.provideMerge(DatabaseLayer)
)

const HttpLive = Layer.unwrap(Effect.gen(function*() {
  const config = yield* AppConfig
  return serve(Api, Routes, [["GET", "/docs"], ["GET", "/openapi.json"]]).pipe(
    Layer.provide(NodeHttpServer.layer(createServer, { port: config.port, host: config.host }))
  )
}))

export const ServerLayer = HttpLive.pipe(
  Layer.provide(Runtime),
  Layer.provide(AppConfig.layer)
)
