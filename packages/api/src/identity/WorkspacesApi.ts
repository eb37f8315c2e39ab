/**
 * Workspace management for platform administrators, under `/workspace/api/v1`: create, list, read and delete
 * workspaces, and rotate the token signing key.
 *
 * @since 0.1.0
 */
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import { Authorization, RateClass, RequiredPermission } from "../Authorization.ts"
import { BadRequest, Conflict, NotFound } from "../Errors.ts"
import { PageQuery, SigningKeyInfo, WorkspaceCreate, WorkspaceInfo, WorkspaceList } from "./Identity.ts"

const slugParams = { slug: Schema.String }

/** @category groups */
export class WorkspacesApi extends HttpApiGroup.make("workspaces")
  .add(
    HttpApiEndpoint.post("create", "/workspaces", {
      payload: WorkspaceCreate,
      success: WorkspaceInfo.pipe(HttpApiSchema.status(201)),
      error: [BadRequest, Conflict]
    })
      .annotate(RequiredPermission, "platform:admin")
      .annotate(RateClass, "writes"),
    HttpApiEndpoint.get("list", "/workspaces", {
      query: PageQuery,
      success: WorkspaceList
    })
      .annotate(RequiredPermission, "platform:admin")
      .annotate(RateClass, "reads"),
    HttpApiEndpoint.get("get", "/workspaces/:slug", {
      params: slugParams,
      success: WorkspaceInfo,
      error: NotFound
    })
      .annotate(RequiredPermission, "platform:admin")
      .annotate(RateClass, "reads"),
    HttpApiEndpoint.delete("delete", "/workspaces/:slug", {
      params: slugParams,
      success: HttpApiSchema.NoContent,
      error: NotFound
    })
      .annotate(RequiredPermission, "platform:admin")
      .annotate(RateClass, "writes"),
    HttpApiEndpoint.post("rotateSigningKey", "/signing-keys/rotate", {
      success: SigningKeyInfo
    })
      .annotate(RequiredPermission, "platform:admin")
      .annotate(RateClass, "writes")
  )
  .middleware(Authorization)
  .prefix("/workspace/api/v1")
  .annotateMerge(
    OpenApi.annotations({
      title: "Workspaces",
      description: "Workspace management (platform administrators). Slugs are lowercase, hyphen-separated and fixed."
    })
  ) {}
