/**
 * The query language endpoint and aggregation (README "Query language", "Aggregation endpoint"). Both answer
 * `{results: [...]}`: records (generation B) for a plain query, flat rows keyed by group fields and aliases for
 * grouped or aggregate queries.
 *
 * @since 0.1.0
 */
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup } from "effect/http-api"
import { Authorization, RateClass, RequiredPermission } from "../Authorization.ts"
import { BadRequest, Forbidden, NotFound, ServiceUnavailable, TooManyRequests } from "../Errors.ts"
import { workspaceBase, WorkspaceParams } from "../Workspace.ts"

const errors = [BadRequest, Forbidden, NotFound, TooManyRequests, ServiceUnavailable] as const

/** Body of `POST /query`. @category models */
export const QueryRequest = Schema.Struct({
  query: Schema.String.annotate({
    description:
      "SELECT ... FROM <structure slug or name> [WHERE ...] [GROUP BY ...] [ORDER BY ...] [LIMIT n] " +
      "[OFFSET n] [INCLUDE <reference field>]"
  }),
  parameters: Schema.optionalKey(
    Schema.Record(Schema.String, Schema.Json).annotate({
      description: "Values bound to `:name` placeholders; an array fills an IN list"
    })
  ),
  includeDeleted: Schema.optionalKey(Schema.Boolean.annotate({ description: "Also match soft-deleted records" }))
}).annotate({ identifier: "QueryRequest" })
/** @category models */
export type QueryRequest = typeof QueryRequest.Type

/** One aggregate operation: `{sum|avg|min|max: field}` or `{count: "*"}` (`{count: field}` counts non-nulls). */
export const AggregateOperation = Schema.Record(Schema.String, Schema.String).annotate({
  identifier: "AggregateOperation",
  description: "Exactly one of sum, avg, min, max (a field) or count ('*' or a field)"
})

/** Body of `POST /records/{slug}/aggregate`. @category models */
export const AggregateRequest = Schema.Struct({
  filter: Schema.optionalKey(
    Schema.Json.annotate({
      description: 'Filter object: {"data.price": {"gte": 10}, "status": "active", "$or": [...]}'
    })
  ),
  groupBy: Schema.optionalKey(Schema.Union([Schema.String, Schema.Array(Schema.String)])),
  operations: Schema.Record(Schema.String, AggregateOperation),
  includeDeleted: Schema.optionalKey(Schema.Boolean),
  limit: Schema.optionalKey(Schema.Int.annotate({ description: "Groups returned, default and max 1000" }))
}).annotate({ identifier: "AggregateRequest" })
/** @category models */
export type AggregateRequest = typeof AggregateRequest.Type

/** `{results: [...]}`: records, or flat rows keyed by group fields and aliases. @category models */
export const QueryResults = Schema.Struct({ results: Schema.Array(Schema.Json) }).annotate({ identifier: "QueryResults" })

/** @category groups */
export class QueryApi extends HttpApiGroup.make("query")
  .add(
    HttpApiEndpoint.post("query", "/query", {
      params: WorkspaceParams,
      payload: QueryRequest,
      success: QueryResults,
      error: errors
    })
      .annotate(RequiredPermission, "read:records")
      .annotate(RateClass, "queries"),
    HttpApiEndpoint.post("aggregate", "/records/:slug/aggregate", {
      params: { ...WorkspaceParams, slug: Schema.String },
      payload: AggregateRequest,
      success: QueryResults,
      error: errors
    })
      .annotate(RequiredPermission, "read:records")
      .annotate(RateClass, "reads")
  )
  .middleware(Authorization)
  .prefix(workspaceBase) {}
