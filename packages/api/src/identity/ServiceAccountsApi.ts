/**
 * Service accounts (README "Identity and access"): machine clients that exchange a client id and secret for a token.
 * Managed with a user token holding `write:service-accounts`; a service-account token is refused (403), and so is
 * anyone managing (renaming, rotating, revoking, deleting) an account that holds a permission they do not. Also
 * served under `/iam/` (rewritten at the edge).
 *
 * @since 0.1.0
 */
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import { Authorization, RateClass, RequiredPermission } from "../Authorization.ts"
import { BadRequest, Forbidden, NotFound } from "../Errors.ts"
import { workspaceBase, WorkspaceParams } from "../Workspace.ts"
import {
  DescriptionUpdate,
  NameUpdate,
  PageQuery,
  ServiceAccount,
  ServiceAccountCreate,
  ServiceAccountCreated,
  ServiceAccountId,
  ServiceAccountList,
  ServiceAccountRotated,
  RequiresUserToken
} from "./Identity.ts"

const idParams = { ...WorkspaceParams, id: ServiceAccountId }

/** @category groups */
export class ServiceAccountsApi extends HttpApiGroup.make("serviceAccounts")
  .add(
    HttpApiEndpoint.post("create", "/", {
      params: WorkspaceParams,
      payload: ServiceAccountCreate,
      success: ServiceAccountCreated.pipe(HttpApiSchema.status(201)),
      error: [BadRequest, Forbidden]
    })
      .annotate(RequiredPermission, "write:service-accounts")
      .annotate(RateClass, "writes"),
    HttpApiEndpoint.get("list", "/", {
      params: WorkspaceParams,
      query: PageQuery,
      success: ServiceAccountList
    })
      .annotate(RequiredPermission, "read:service-accounts")
      .annotate(RateClass, "reads"),
    HttpApiEndpoint.get("get", "/:id", {
      params: idParams,
      success: ServiceAccount,
      error: NotFound
    })
      .annotate(RequiredPermission, "read:service-accounts")
      .annotate(RateClass, "reads"),
    HttpApiEndpoint.put("setName", "/:id/name", {
      params: idParams,
      payload: NameUpdate,
      success: ServiceAccount,
      error: [NotFound, Forbidden]
    })
      .annotate(RequiredPermission, "write:service-accounts")
      .annotate(RateClass, "writes"),
    HttpApiEndpoint.put("setDescription", "/:id/description", {
      params: idParams,
      payload: DescriptionUpdate,
      success: ServiceAccount,
      error: [NotFound, Forbidden]
    })
      .annotate(RequiredPermission, "write:service-accounts")
      .annotate(RateClass, "writes"),
    HttpApiEndpoint.post("rotate", "/:id/rotate", {
      params: idParams,
      success: ServiceAccountRotated,
      error: [NotFound, Forbidden]
    })
      .annotate(RequiredPermission, "write:service-accounts")
      .annotate(RateClass, "writes"),
    HttpApiEndpoint.put("rotatePut", "/:id/rotate", {
      params: idParams,
      success: ServiceAccountRotated,
      error: [NotFound, Forbidden]
    })
      .annotate(RequiredPermission, "write:service-accounts")
      .annotate(RateClass, "writes"),
    HttpApiEndpoint.post("revoke", "/:id/revoke", {
      params: idParams,
      success: ServiceAccount,
      error: [NotFound, Forbidden]
    })
      .annotate(RequiredPermission, "write:service-accounts")
      .annotate(RateClass, "writes"),
    HttpApiEndpoint.delete("delete", "/:id", {
      params: idParams,
      success: HttpApiSchema.NoContent,
      error: [NotFound, Forbidden]
    })
      .annotate(RequiredPermission, "write:service-accounts")
      .annotate(RateClass, "writes")
  )
  .middleware(Authorization)
  .prefix(`${workspaceBase}/service-accounts`)
  .annotate(RequiresUserToken, true)
  .annotateMerge(
    OpenApi.annotations({
      title: "Service accounts",
      description: "Machine clients (client credentials). The secret is shown at creation and rotation only."
    })
  ) {}
