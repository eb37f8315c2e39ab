/**
 * Workspace members (Owners add users, set roles, remove members) and the caller's own identity (`/me`). Managing
 * members needs a user token (service-account tokens get 403 even with the permission), and nobody gives a role
 * holding permissions they do not hold.
 *
 * @since 0.1.0
 */
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import { Authorization, RateClass, RequiredPermission } from "../Authorization.ts"
import { BadRequest, Conflict, Forbidden, NotFound } from "../Errors.ts"
import { workspaceBase, WorkspaceParams } from "../Workspace.ts"
import {
  Member,
  MemberCreate,
  MemberList,
  PageQuery,
  PasswordChange,
  PrincipalInfo,
  RequiresUserToken,
  RoleUpdate,
  Uuid
} from "./Identity.ts"

const memberParams = { ...WorkspaceParams, userId: Uuid }

/** @category groups */
export class MembersApi extends HttpApiGroup.make("members")
  .add(
    HttpApiEndpoint.get("list", "/members", {
      params: WorkspaceParams,
      query: PageQuery,
      success: MemberList
    })
      .annotate(RequiredPermission, "workspace:members")
      .annotate(RateClass, "reads")
      .annotate(RequiresUserToken, true),
    HttpApiEndpoint.post("add", "/members", {
      params: WorkspaceParams,
      payload: MemberCreate,
      success: Member.pipe(HttpApiSchema.status(201)),
      error: [BadRequest, Conflict, Forbidden]
    })
      .annotate(RequiredPermission, "workspace:members")
      .annotate(RateClass, "writes")
      .annotate(RequiresUserToken, true),
    HttpApiEndpoint.get("get", "/members/:userId", {
      params: memberParams,
      success: Member,
      error: NotFound
    })
      .annotate(RequiredPermission, "workspace:members")
      .annotate(RateClass, "reads")
      .annotate(RequiresUserToken, true),
    HttpApiEndpoint.put("setRole", "/members/:userId/role", {
      params: memberParams,
      payload: RoleUpdate,
      success: Member,
      error: [NotFound, Conflict, Forbidden]
    })
      .annotate(RequiredPermission, "workspace:members")
      .annotate(RateClass, "writes")
      .annotate(RequiresUserToken, true),
    HttpApiEndpoint.delete("remove", "/members/:userId", {
      params: memberParams,
      success: HttpApiSchema.NoContent,
      error: [NotFound, Conflict]
    })
      .annotate(RequiredPermission, "workspace:members")
      .annotate(RateClass, "writes")
      .annotate(RequiresUserToken, true),
    HttpApiEndpoint.get("me", "/me", {
      params: WorkspaceParams,
      success: PrincipalInfo
    }).annotate(RateClass, "reads"),
    HttpApiEndpoint.put("changePassword", "/me/password", {
      params: WorkspaceParams,
      payload: PasswordChange,
      success: HttpApiSchema.NoContent,
      error: [BadRequest, Forbidden]
    }).annotate(RateClass, "writes")
  )
  .middleware(Authorization)
  .prefix(workspaceBase)
  .annotateMerge(
    OpenApi.annotations({
      title: "Members",
      description: "Users of a workspace and their roles (Owners), and the caller's own identity."
    })
  ) {}
