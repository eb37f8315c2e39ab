/**
 * Health, readiness and the API's own description: the routes every node answers without a token.
 *
 * @since 0.1.0
 */
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup } from "effect/http-api"
import { ServiceUnavailable } from "./Errors.ts"

/** @category models */
export const Health = Schema.Struct({ status: Schema.Literal("ok") })

/** @category groups */
export class SystemApi extends HttpApiGroup.make("system", { topLevel: true }).add(
  HttpApiEndpoint.get("health", "/health", { success: Health }),
  HttpApiEndpoint.get("ready", "/ready", {
    success: Schema.Struct({ status: Schema.Literal("ready"), node: Schema.String }),
    error: ServiceUnavailable
  }),
  // Diagnostic: which node hosts the probe entity with this id (proves cross-node routing).
  HttpApiEndpoint.get("clusterProbe", "/cluster/probe/:id", {
    params: { id: Schema.String.pipe(Schema.check(Schema.isMaxLength(128))) },
    success: Schema.Struct({ entityId: Schema.String, node: Schema.String, servedBy: Schema.String }),
    error: ServiceUnavailable
  })
) {}
