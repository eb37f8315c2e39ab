// GET /openapi.json and GET /docs: the OpenAPI document of `DocumentedApi` (the HttpApi routes and the raw ones:
// realtime, HTTP triggers), made once per node; the edge compresses it and gives it an ETag (Compression.ts).
import { DocumentedApi } from "@troupe/api/RawRoutes"
import { Effect, Layer } from "effect"
import { HttpRouter, HttpServerResponse } from "effect/http"
import { HttpApiScalar, OpenApi } from "effect/http-api"

const OpenApiJson = HttpRouter.use((router) =>
  Effect.gen(function* () {
    const response = HttpServerResponse.jsonUnsafe(OpenApi.fromApi(DocumentedApi))
    yield* router.add("GET", "/openapi.json", Effect.succeed(response))
  })
)

export const OpenApiRoutes = Layer.mergeAll(OpenApiJson, HttpApiScalar.layer(DocumentedApi, { path: "/docs" }))
