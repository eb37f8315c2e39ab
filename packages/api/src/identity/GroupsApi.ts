/**
 * IAM groups: named sets of users and service accounts holding policies `{action, resource, effect}`. A member
 * holds every permission its groups allow, minus those any of them deny. Owners manage groups; readers need
 * `read:service-accounts`. Every route needs a user token, and nobody grants through a group (a policy, a member,
 * or a lifted deny) a permission they do not hold (403).
 *
 * @since 0.1.0
 */
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import { Authorization, RateClass, RequiredPermission } from "../Authorization.ts"
import { BadRequest, Conflict, Forbidden, NotFound } from "../Errors.ts"
import { workspaceBase, WorkspaceParams } from "../Workspace.ts"
import {
  Group,
  GroupCreate,
  GroupList,
  GroupMemberAdd,
  PageQuery,
  Policy,
  PolicyCreate,
  RequiresUserToken,
  ServiceAccountId,
  Uuid
} from "./Identity.ts"

const groupParams = { ...WorkspaceParams, groupId: Uuid }

/** @category groups */
export class GroupsApi extends HttpApiGroup.make("groups")
  .add(
    HttpApiEndpoint.post("create", "/", {
      params: WorkspaceParams,
      payload: GroupCreate,
      success: Group.pipe(HttpApiSchema.status(201)),
      error: [BadRequest, Conflict]
    })
      .annotate(RequiredPermission, "workspace:members")
      .annotate(RateClass, "writes"),
    HttpApiEndpoint.get("list", "/", {
      params: WorkspaceParams,
      query: PageQuery,
      success: GroupList
    })
      .annotate(RequiredPermission, "read:service-accounts")
      .annotate(RateClass, "reads"),
    HttpApiEndpoint.get("get", "/:groupId", {
      params: groupParams,
      success: Group,
      error: NotFound
    })
      .annotate(RequiredPermission, "read:service-accounts")
      .annotate(RateClass, "reads"),
    HttpApiEndpoint.delete("delete", "/:groupId", {
      params: groupParams,
      success: HttpApiSchema.NoContent,
      error: [NotFound, Forbidden]
    })
      .annotate(RequiredPermission, "workspace:members")
      .annotate(RateClass, "writes"),
    HttpApiEndpoint.post("addPolicy", "/:groupId/policies", {
      params: groupParams,
      payload: PolicyCreate,
      success: Policy.pipe(HttpApiSchema.status(201)),
      error: [BadRequest, NotFound, Forbidden]
    })
      .annotate(RequiredPermission, "workspace:members")
      .annotate(RateClass, "writes"),
    HttpApiEndpoint.delete("removePolicy", "/:groupId/policies/:policyId", {
      params: { ...groupParams, policyId: Uuid },
      success: HttpApiSchema.NoContent,
      error: [NotFound, Forbidden]
    })
      .annotate(RequiredPermission, "workspace:members")
      .annotate(RateClass, "writes"),
    HttpApiEndpoint.post("addMember", "/:groupId/members", {
      params: groupParams,
      payload: GroupMemberAdd,
      success: Group.pipe(HttpApiSchema.status(201)),
      error: [BadRequest, NotFound, Conflict, Forbidden]
    })
      .annotate(RequiredPermission, "workspace:members")
      .annotate(RateClass, "writes"),
    HttpApiEndpoint.delete("removeUser", "/:groupId/members/users/:userId", {
      params: { ...groupParams, userId: Uuid },
      success: HttpApiSchema.NoContent,
      error: [NotFound, Forbidden]
    })
      .annotate(RequiredPermission, "workspace:members")
      .annotate(RateClass, "writes"),
    HttpApiEndpoint.delete("removeServiceAccount", "/:groupId/members/service-accounts/:serviceAccountId", {
      params: { ...groupParams, serviceAccountId: ServiceAccountId },
      success: HttpApiSchema.NoContent,
      error: [NotFound, Forbidden]
    })
      .annotate(RequiredPermission, "workspace:members")
      .annotate(RateClass, "writes")
  )
  .middleware(Authorization)
  .prefix(`${workspaceBase}/groups`)
  .annotate(RequiresUserToken, true)
  .annotateMerge(
    OpenApi.annotations({
      title: "IAM groups",
      description: "Groups of users and service accounts holding policies {action, resource, effect}."
    })
  ) {}
