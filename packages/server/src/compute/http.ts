// Handlers of the compute groups: the caller from CurrentPrincipal, then one service call each.
import { Api } from "@troupe/api/Api"
import { CurrentPrincipal, type Principal } from "@troupe/api/Authorization"
import { Effect, Layer } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { DraftService } from "./DraftService.ts"
import { FunctionService } from "./FunctionService.ts"
import { RunService } from "./RunService.ts"
import { TriggerService } from "./TriggerService.ts"

const caller = Effect.service(CurrentPrincipal)
const as = <A, E, R>(f: (p: Principal) => Effect.Effect<A, E, R>) => Effect.flatMap(caller, f)

const ComputeFunctionsHandlers = HttpApiBuilder.group(
  Api,
  "computeFunctions",
  Effect.fn(function* (handlers) {
    const functions = yield* FunctionService
    const runs = yield* RunService
    return handlers
      .handle("create", ({ params, payload }) => as((p) => functions.create(params.workspace, payload, p)))
      .handle("list", ({ params, query }) => functions.list(params.workspace, query))
      .handle("test", ({ params, payload }) =>
        Effect.andThen(
          functions.checkCode(payload.code),
          as((p) => runs.test(params.workspace, payload.code, payload.params, p))
        )
      )
      .handle("get", ({ params }) => functions.get(params.workspace, params.id))
      .handle("update", ({ params, payload }) => as((p) => functions.update(params.workspace, params.id, payload, p)))
      .handle("delete", ({ params }) => functions.delete(params.workspace, params.id))
      .handle("versions", ({ params }) => functions.versions(params.workspace, params.id))
      .handle("publish", ({ params }) => as((p) => functions.publish(params.workspace, params.id, p)))
  })
)

const FunctionsHandlers = HttpApiBuilder.group(
  Api,
  "functions",
  Effect.fn(function* (handlers) {
    const functions = yield* FunctionService
    const runs = yield* RunService
    return handlers
      .handle("list", ({ params, query }) =>
        Effect.map(functions.list(params.workspace, query), ({ functions: data, ...page }) => ({ data, ...page }))
      )
      .handle("create", ({ params, payload }) => as((p) => functions.create(params.workspace, payload, p)))
      .handle("get", ({ params }) => functions.get(params.workspace, params.id))
      .handle("update", ({ params, payload }) => as((p) => functions.update(params.workspace, params.id, payload, p)))
      .handle("delete", ({ params }) => functions.delete(params.workspace, params.id))
      .handle("execute", ({ params, payload }) => as((p) => runs.executeFunction(params.workspace, params.id, payload ?? {}, p)))
  })
)

const DraftsHandlers = HttpApiBuilder.group(
  Api,
  "drafts",
  Effect.fn(function* (handlers) {
    const drafts = yield* DraftService
    return handlers
      .handle("create", ({ params, payload }) => as((p) => drafts.create(params.workspace, payload, p)))
      .handle("list", ({ params, query }) => as((p) => drafts.list(params.workspace, query, p)))
      .handle("get", ({ params }) => as((p) => drafts.get(params.workspace, params.id, p)))
      .handle("update", ({ params, payload }) => as((p) => drafts.update(params.workspace, params.id, payload.data, p)))
      .handle("delete", ({ params }) => as((p) => drafts.delete(params.workspace, params.id, p)))
  })
)

const FunctionTriggersHandlers = HttpApiBuilder.group(
  Api,
  "functionTriggers",
  Effect.fn(function* (handlers) {
    const triggers = yield* TriggerService
    return handlers
      .handle("create", ({ params, payload }) => as((p) => triggers.create(params.workspace, payload, p)))
      .handle("list", ({ params, query }) => triggers.list(params.workspace, query))
      .handle("get", ({ params }) => triggers.get(params.workspace, params.id))
      .handle("update", ({ params, payload }) => as((p) => triggers.update(params.workspace, params.id, payload, p)))
      .handle("delete", ({ params }) => triggers.delete(params.workspace, params.id))
      .handle("versions", ({ params }) => triggers.versions(params.workspace, params.id))
      .handle("execute", ({ params, payload }) => as((p) => triggers.execute(params.workspace, params.id, payload ?? {}, p)))
      .handle("pause", ({ params }) => triggers.pause(params.workspace, params.id))
      .handle("resume", ({ params }) => triggers.resume(params.workspace, params.id))
      .handle("publish", ({ params }) => as((p) => triggers.publish(params.workspace, params.id, p)))
  })
)

const FunctionRunsHandlers = HttpApiBuilder.group(
  Api,
  "functionRuns",
  Effect.fn(function* (handlers) {
    const runs = yield* RunService
    return handlers
      .handle("list", ({ params, query }) => runs.list(params.workspace, query))
      .handle("get", ({ params }) => runs.get(params.workspace, params.id))
      .handle("rerun", ({ params, payload }) => as((p) => runs.rerun(params.workspace, params.id, payload ?? null, p)))
      .handle("rerunHistory", ({ params }) => runs.history(params.workspace, params.id))
  })
)

export const ComputeHandlers = Layer.mergeAll(
  ComputeFunctionsHandlers,
  FunctionsHandlers,
  DraftsHandlers,
  FunctionTriggersHandlers,
  FunctionRunsHandlers
)
