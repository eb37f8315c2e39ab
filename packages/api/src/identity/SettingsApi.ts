/**
 * Workspace settings: the browser origins allowed to call the workspace's routes (CONTRACT §9), beside the
 * node-wide `TROUPE_CORS_ORIGINS`. Reading needs `read:cors`, changing needs `write:cors` (admin and owner).
 *
 * @since 0.1.0
 */
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import { Authorization, RateClass, RequiredPermission } from "../Authorization.ts"
import { BadRequest } from "../Errors.ts"
import { workspaceBase, WorkspaceParams } from "../Workspace.ts"
import { CorsSettings } from "./Cors.ts"

/** @category groups */
export class SettingsApi extends HttpApiGroup.make("settings")
  .add(
    HttpApiEndpoint.get("getCors", "/settings/cors", {
      params: WorkspaceParams,
      success: CorsSettings
    })
      .annotate(RequiredPermission, "read:cors")
      .annotate(RateClass, "reads"),
    HttpApiEndpoint.put("setCors", "/settings/cors", {
      params: WorkspaceParams,
      payload: CorsSettings,
      success: CorsSettings,
      error: BadRequest
    })
      .annotate(RequiredPermission, "write:cors")
      .annotate(RateClass, "writes")
      .annotateMerge(
        OpenApi.annotations({
          description:
            "Replaces the workspace's allowed origins (at most 100, each scheme://host[:port]: no path, no credentials, " +
            "no `*`). They hold on every node within moments; the answer is the list as stored (canonical, each once)."
        })
      )
  )
  .middleware(Authorization)
  .prefix(workspaceBase)
  .annotateMerge(
    OpenApi.annotations({
      title: "Settings",
      description: "Workspace settings: the browser origins allowed to call this workspace (CORS)."
    })
  ) {}
