/**
 * The routes the server answers outside `HttpApi` (they stream, or take any method and body), declared here so that
 * the OpenAPI document and the generated clients see them: the realtime stream (server-sent events) and the HTTP
 * triggers. `DocumentedApi` is `Api` with these groups: it makes /openapi.json, /docs and the client-fetch types;
 * the server's handlers, fast lane and fuzzer keep to `Api`, since these routes are served by their own raw routes
 * (events/RealtimeRoute.ts, compute/HttpTriggerRoute.ts). They carry no OpenAPI `security`: their raw routes check the
 * token themselves (the stream also takes `?access_token=`), and each description says what they need.
 *
 * @since 0.1.0
 */
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import { Api } from "./Api.ts"
import { RateClass, RequiredPermission } from "./Authorization.ts"
import { JobQueued } from "./compute/Compute.ts"
import { BadRequest, Forbidden, NotFound, TooManyRequests, Unauthorized } from "./Errors.ts"
import { workspaceBase, WorkspaceParams } from "./Workspace.ts"

/** The query of the realtime stream. @category models */
export const RealtimeQuery = Schema.Struct({
  structure: Schema.optionalKey(Schema.String.annotate({ description: "Slugs or ids, comma-separated" })),
  events: Schema.optionalKey(Schema.String.annotate({ description: "Event names or `prefix.*`, comma-separated" })),
  lastEventId: Schema.optionalKey(Schema.String.annotate({ description: "Resume after this event id (as Last-Event-ID)" })),
  access_token: Schema.optionalKey(Schema.String.annotate({ description: "The bearer token, for clients that cannot send headers" }))
})

/** A `text/event-stream` body: `retry:`, then `id:` and `data: <event JSON>` per event, `: heartbeat` comments. */
const EventStream = Schema.String.annotate({
  identifier: "EventStream",
  description:
    "text/event-stream: `retry: 2000`, then per event `id: <event id>` and `data: <JSON>` with `event`, `id`, `timestamp`, `workspace`, `data`; a `: heartbeat` comment every TROUPE_SSE_HEARTBEAT_SECONDS; a last `stream.closed` message when access ends."
}).pipe(HttpApiSchema.asText({ contentType: "text/event-stream" }))

/** @category groups */
export class RealtimeApi extends HttpApiGroup.make("realtime")
  .add(
    HttpApiEndpoint.get("events", "/realtime/workspace/:workspace/api/v1/events", {
      params: WorkspaceParams,
      query: RealtimeQuery,
      headers: Schema.Struct({ "last-event-id": Schema.optionalKey(Schema.String) }),
      success: EventStream,
      error: [BadRequest, Unauthorized, Forbidden, TooManyRequests]
    })
      .annotate(RequiredPermission, "read:records")
      .annotate(
        OpenApi.Description,
        "The workspace's events as server-sent events (docs/events-and-realtime.md). Needs `Authorization: Bearer <token>` (or `?access_token=`) holding `read:records` (and `read:functions` for compute events)."
      )
  )
  .annotate(OpenApi.Title, "Realtime") {}

/** What an HTTP trigger's function returned (200) or threw (500). @category models */
export const HttpTriggerResult = Schema.Struct({
  success: Schema.Boolean,
  data: Schema.optionalKey(Schema.Unknown),
  error: Schema.optionalKey(Schema.Unknown),
  runId: Schema.String
}).annotate({ identifier: "HttpTriggerResult" })

const triggerParams = { ...WorkspaceParams, path: Schema.String.annotate({ description: "The trigger's path (may hold `/`)" }) }
const triggerQuery = Schema.Struct({ async: Schema.optionalKey(Schema.Literals(["true", "false"])) })
const triggerSuccess = [HttpTriggerResult, JobQueued.pipe(HttpApiSchema.status(202))] as const
const triggerDescription =
  "Runs the function of the HTTP trigger at this path as the caller: executionParams = {method, path, headers, query, body}. `?async=true` queues it (202) (docs/functions-and-triggers.md). Needs `Authorization: Bearer <token>` holding `execute:functions`. Counts against the workspace's `functions` rate limit."

const triggerBase = `${workspaceBase}/http-triggers` as const
const legacyBase = `${workspaceBase}/webhook` as const

const triggerEndpoint = (method: "get" | "post" | "put" | "patch" | "delete", base: typeof triggerBase | typeof legacyBase) => {
  const make = HttpApiEndpoint[method] as typeof HttpApiEndpoint.post
  const name = `${base === triggerBase ? "run" : "runLegacy"}${method[0]!.toUpperCase()}${method.slice(1)}`
  return make(name, `${base}/:path`, {
    params: triggerParams,
    query: triggerQuery,
    ...(method === "get" || method === "delete" ? {} : { payload: Schema.Unknown }),
    success: triggerSuccess,
    error: [BadRequest, Unauthorized, Forbidden, NotFound, TooManyRequests]
  })
    .annotate(RequiredPermission, "execute:functions")
    .annotate(RateClass, "functions")
    .annotate(OpenApi.Description, triggerDescription)
}

/** @category groups */
export class HttpTriggersApi extends HttpApiGroup.make("httpTriggers")
  .add(
    triggerEndpoint("get", triggerBase),
    triggerEndpoint("post", triggerBase),
    triggerEndpoint("put", triggerBase),
    triggerEndpoint("patch", triggerBase),
    triggerEndpoint("delete", triggerBase)
  )
  .add(
    triggerEndpoint("get", legacyBase),
    triggerEndpoint("post", legacyBase),
    triggerEndpoint("put", legacyBase),
    triggerEndpoint("patch", legacyBase),
    triggerEndpoint("delete", legacyBase)
  )
  .annotate(OpenApi.Title, "HTTP triggers") {}

/** `Api` and the raw routes: what /openapi.json and /docs describe and the generated clients are made from. */
export const DocumentedApi = Api.add(RealtimeApi, HttpTriggersApi)
