// Handlers of the intelligence group: the caller from CurrentPrincipal, then one service call each. Jobs answer 202.
import { Api } from "@troupe/api/Api"
import { CurrentPrincipal, can, type Principal } from "@troupe/api/Authorization"
import { forbidden } from "@troupe/api/Errors"
import { Effect } from "effect"
import { HttpServerRequest } from "effect/http"
import { HttpApiBuilder } from "effect/http-api"
import { writerOf } from "../records/WriteRoutes.ts"
import { IntelligenceService } from "./IntelligenceService.ts"

const as = <A, E, R>(f: (p: Principal) => Effect.Effect<A, E, R>) => Effect.flatMap(Effect.service(CurrentPrincipal), f)

export const IntelligenceHandlers = HttpApiBuilder.group(
  Api,
  "intelligence",
  Effect.fn(function* (handlers) {
    const intel = yield* IntelligenceService
    const writer = Effect.gen(function* () {
      const principal = yield* Effect.service(CurrentPrincipal)
      const request = yield* HttpServerRequest.HttpServerRequest
      const address = request.remoteAddress._tag === "Some" ? request.remoteAddress.value : undefined
      return writerOf(principal, request.headers, address)
    })
    return handlers
      .handle("getSchemaDiscovery", ({ params }) => intel.getDiscovery(params.workspace, params.id))
      .handle("putSchemaDiscovery", ({ params, payload }) => as((p) => intel.putDiscovery(params.workspace, params.id, payload, p)))
      .handle("scanSchema", ({ params }) => as((p) => Effect.map(intel.scan(params.workspace, params.id, p), (jobId) => ({ jobId }))))
      .handle("triggerSchema", ({ params }) => as((p) => Effect.map(intel.trigger(params.workspace, params.id, p), (jobId) => ({ jobId }))))
      .handle("fieldProfiles", ({ params }) => intel.profiles(params.workspace, params.id))
      .handle("listSchemaSuggestions", ({ params, query }) => intel.schemaSuggestions(params.workspace, params.id, query))
      .handle("acceptSchemaSuggestion", ({ params }) => as((p) => intel.acceptSchema(params.workspace, params.id, params.suggestionId, p)))
      .handle("rejectSchemaSuggestion", ({ params }) => as((p) => intel.rejectSchema(params.workspace, params.id, params.suggestionId, p)))
      .handle("getAnomalyConfig", ({ params }) => intel.getAnomaly(params.workspace, params.id))
      .handle("putAnomalyConfig", ({ params, payload }) => intel.putAnomaly(params.workspace, params.id, payload))
      .handle("analyseAnomalies", ({ params }) =>
        as((p) => Effect.map(intel.analyse(params.workspace, params.id, p), (jobId) => ({ jobId })))
      )
      .handle("listInsights", ({ params, query }) => intel.insights(params.workspace, query))
      .handle("getInsight", ({ params }) => intel.insight(params.workspace, params.id))
      .handle("acknowledgeInsight", ({ params }) => intel.resolveInsight(params.workspace, params.id, "acknowledged"))
      .handle("dismissInsight", ({ params }) => intel.resolveInsight(params.workspace, params.id, "dismissed"))
      .handle("getAiConfig", ({ params }) => intel.getAi(params.workspace, params.id))
      .handle("putAiConfig", ({ params, payload }) => intel.putAi(params.workspace, params.id, payload))
      .handle("scanValidation", ({ params }) =>
        as((p) => Effect.map(intel.validate(params.workspace, params.id, p), (batchId) => ({ batchId })))
      )
      .handle("getValidationBatch", ({ params }) => intel.batch(params.workspace, params.id))
      .handle("listValidationSuggestions", ({ params, query }) => intel.validationSuggestions(params.workspace, query))
      .handle("acceptValidationSuggestion", ({ params }) =>
        as((p) =>
          can(p, "write:records")
            ? Effect.flatMap(writer, (w) => intel.acceptValidation(params.workspace, params.id, w))
            : Effect.fail(
                forbidden({ message: "Accepting a validation suggestion needs the write:records permission", code: "PERMISSION_DENIED" })
              )
        )
      )
      .handle("rejectValidationSuggestion", ({ params }) => intel.rejectValidation(params.workspace, params.id))
      .handle("getIntelligenceJob", ({ params }) => intel.job(params.workspace, params.id))
  })
)
