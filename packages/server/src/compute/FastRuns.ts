// Starting runs in the fast lane (platform/FastRoutes.ts): `computeFunctions.test` (POST /compute-functions/test) and
// `functions.execute` (POST /functions/{id}/execute) with the same service calls as their ordinary handlers
// (compute/http.ts), after the lane's authentication and payload decoding. A run's HTTP start is a small part of the
// run, so the Effect stack's generic per-request work weighed on sustained runs/s (README "How runs execute").
import { Effect } from "effect"
import type { FastTable } from "../platform/FastRoutes.ts"
import { FunctionService } from "./FunctionService.ts"
import { RunService } from "./RunService.ts"

export const fastRunRoutes: Effect.Effect<FastTable, never, FunctionService | RunService> = Effect.gen(function* () {
  const functions = yield* FunctionService
  const runs = yield* RunService
  return {
    "computeFunctions.test": ({ params, payload, principal }) =>
      Effect.andThen(functions.checkCode(payload.code), runs.test(params.workspace, payload.code, payload.params, principal)).pipe(
        Effect.map((body) => ({ status: 200, body }))
      ),
    "functions.execute": ({ params, payload, principal }) =>
      Effect.map(runs.executeFunction(params.workspace, params.id, payload ?? {}, principal), (body) => ({ status: 200, body }))
  }
})
