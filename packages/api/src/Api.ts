/**
 * The whole HTTP contract of Troupe: every group, shared by the server (handlers), the typed client and the
 * OpenAPI document.
 *
 * @since 0.1.0
 */
import { HttpApi, OpenApi } from "effect/http-api"
import { SystemApi } from "./System.ts"

/** @category api */
export class Api extends HttpApi.make("troupe")
  .add(SystemApi)
  .annotateMerge(OpenApi.annotations({
    title: "Troupe API",
    description: "Workspace-scoped backend-as-a-service: structures, records, queries, webhooks, identity."
  }))
{}
