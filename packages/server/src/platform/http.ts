// Handlers of the system group: liveness and readiness.
import { Api } from "@troupe/api/Api"
import { serviceUnavailable } from "@troupe/api/Errors"
import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { SqlClient } from "effect/sql"
import * as Crypto from "node:crypto"
import { AppConfig } from "./AppConfig.ts"
import { NodeProbe, nodeName } from "./Cluster.ts"

export const SystemHandlers = HttpApiBuilder.group(Api, "system", Effect.fn(function*(handlers) {
  const sql = yield* SqlClient.SqlClient
  const probe = yield* NodeProbe.client
  const servedBy = nodeName(yield* AppConfig)
  // Ready = the database answers and an entity message makes a round trip through the cluster.
  const ready = Effect.gen(function*() {
    yield* sql`SELECT 1`
    const answer = yield* probe(`ready-${Crypto.randomUUID()}`).Whoami()
    return { status: "ready" as const, node: answer.node }
  }).pipe(
    Effect.timeout("5 seconds"),
    Effect.catchCause(() => Effect.fail(serviceUnavailable("The node has not joined the cluster or the database is unreachable")))
  )
  return handlers
    .handle("health", () => Effect.succeed({ status: "ok" as const }))
    .handle("ready", () => ready)
    .handle("clusterProbe", ({ params }) =>
      probe(params.id).Whoami().pipe(
        Effect.map((answer) => ({ ...answer, servedBy })),
        Effect.timeout("10 seconds"),
        Effect.catchCause(() => Effect.fail(serviceUnavailable("The entity could not be reached")))
      ))
}))
