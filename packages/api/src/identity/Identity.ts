/**
 * Identity and access models on the wire: workspaces, members, service accounts, IAM groups and policies, tokens.
 * Timestamps are ISO-8601 strings; service-account ids are integers.
 *
 * @since 0.1.0
 */
import { Context, Schema } from "effect"
import { Permissions, Role } from "../Authorization.ts"
import { WorkspaceSlug } from "../Workspace.ts"

/**
 * Marks a group or endpoint that only people may call (service-account, member and group management need a user
 * token): a service-account token gets 403 even when it holds the permission. @category annotations
 */
export const RequiresUserToken = Context.Reference<boolean>("@troupe/api/identity/RequiresUserToken", {
  defaultValue: () => false
})

const Timestamp = Schema.String.annotate({ description: "ISO-8601 timestamp" })

/** Page/limit query of every identity list. @category models */
export const PageQuery = {
  page: Schema.optionalKey(Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: 1_000_000 }))),
  limit: Schema.optionalKey(Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: 100 })))
}

const listOf = <S extends Schema.Top>(item: S) =>
  Schema.Struct({ data: Schema.Array(item), total: Schema.Int, page: Schema.Int, limit: Schema.Int })

/** A service-account id: a positive 32-bit integer. @category models */
export const ServiceAccountId = Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: 2_147_483_647 }))

/** User and group ids are UUIDs. @category models */
export const Uuid = Schema.String.check(Schema.isUUID(undefined, { message: "expected a UUID" }))

/** Any permission a service account may be given. @category models */
export const PermissionName = Schema.Literals(Permissions)

// ---------------------------------------------------------------------------------------------------------------
// Workspaces

/** @category models */
export const WorkspaceInfo = Schema.Struct({
  slug: Schema.String,
  name: Schema.String,
  createdAt: Timestamp,
  createdBy: Schema.NullOr(Schema.String)
}).annotate({ identifier: "Workspace" })
export type WorkspaceInfo = typeof WorkspaceInfo.Type

/** @category models */
export const WorkspaceCreate = Schema.Struct({
  slug: WorkspaceSlug.check(Schema.isBetweenLength(1, 63, { message: "workspace slug must be 1 to 63 characters" })),
  name: Schema.optionalKey(Schema.String.check(Schema.isBetweenLength(1, 200)))
})

/** @category models */
export const WorkspaceList = listOf(WorkspaceInfo)

/** @category models */
export const SigningKeyInfo = Schema.Struct({ kid: Schema.String, alg: Schema.String, createdAt: Timestamp })

// ---------------------------------------------------------------------------------------------------------------
// Members and the caller

/** Login names: letters, digits and `._@+-`, 1 to 128 characters. @category models */
export const Username = Schema.String.check(
  Schema.isPattern(/^[A-Za-z0-9][A-Za-z0-9._@+-]{0,127}$/, {
    message: "username must be 1 to 128 letters, digits or ._@+- and start with a letter or digit"
  })
)

/** @category models */
export const Password = Schema.String.check(Schema.isBetweenLength(8, 256, { message: "password must be 8 to 256 characters" }))

/** @category models */
export const Member = Schema.Struct({
  userId: Schema.String,
  username: Schema.String,
  role: Role,
  createdAt: Timestamp
}).annotate({ identifier: "Member" })
export type Member = typeof Member.Type

/**
 * Add a user to the workspace. A new username needs a password (the user is created); an existing user is added
 * without one. @category models
 */
export const MemberCreate = Schema.Struct({
  username: Username,
  password: Schema.optionalKey(Password),
  role: Role
})

/** @category models */
export const MemberList = listOf(Member)

/** @category models */
export const RoleUpdate = Schema.Struct({ role: Role })

/** @category models */
export const PasswordChange = Schema.Struct({ currentPassword: Schema.String, newPassword: Password })

/** The caller as the server sees it (GET /me). @category models */
export const PrincipalInfo = Schema.Struct({
  kind: Schema.Literals(["user", "service"]),
  id: Schema.String,
  name: Schema.String,
  workspace: Schema.String,
  role: Schema.NullOr(Role),
  permissions: Schema.Array(Schema.String),
  isPlatformAdmin: Schema.Boolean,
  groups: Schema.Array(Schema.String)
}).annotate({ identifier: "Principal" })

// ---------------------------------------------------------------------------------------------------------------
// Service accounts

const ServiceAccountFields = {
  id: ServiceAccountId,
  clientId: Schema.String,
  name: Schema.String,
  description: Schema.NullOr(Schema.String),
  workspace: Schema.String,
  grant_types: Schema.Array(Schema.String),
  scope: Schema.String,
  role: Schema.NullOr(Role),
  permissions: Schema.Array(Schema.String),
  status: Schema.Literals(["active", "revoked"]),
  createdAt: Timestamp,
  createdBy: Schema.NullOr(Schema.String),
  updatedAt: Timestamp
}

/** A service account as listed and read: never its secret. @category models */
export const ServiceAccount = Schema.Struct(ServiceAccountFields).annotate({ identifier: "ServiceAccount" })
export type ServiceAccount = typeof ServiceAccount.Type

/** The creation answer: the only time (with rotation) the secret is shown. @category models */
export const ServiceAccountCreated = Schema.Struct({ ...ServiceAccountFields, clientSecret: Schema.String }).annotate({
  identifier: "ServiceAccountCreated"
})

/** @category models */
export const ServiceAccountList = listOf(ServiceAccount)

const AccountName = Schema.String.check(
  Schema.isPattern(/\S/, { message: "name must not be blank" }),
  Schema.isMaxLength(200, { message: "name must be at most 200 characters" })
)
const AccountDescription = Schema.NullOr(
  Schema.String.check(Schema.isMaxLength(2000, { message: "description must be at most 2000 characters" }))
)

/**
 * `role` or `permissions` (not both); with neither the account can sign in and is refused everything.
 * `grant_types` defaults to `["client_credentials"]`, `scope` to `openid`. @category models
 */
export const ServiceAccountCreate = Schema.Struct({
  name: AccountName,
  description: Schema.optionalKey(AccountDescription),
  grant_types: Schema.optionalKey(Schema.Union([Schema.String, Schema.Array(Schema.String)])),
  scope: Schema.optionalKey(Schema.String.check(Schema.isMaxLength(1000))),
  role: Schema.optionalKey(Role),
  permissions: Schema.optionalKey(Schema.Array(PermissionName))
})

/** @category models */
export const NameUpdate = Schema.Struct({ name: AccountName })

/** @category models */
export const DescriptionUpdate = Schema.Struct({ description: AccountDescription })

/** The rotation answer: the new secret, shown once. @category models */
export const ServiceAccountRotated = Schema.Struct({
  id: ServiceAccountId,
  clientId: Schema.String,
  clientSecret: Schema.String,
  name: Schema.String,
  workspace: Schema.String,
  updatedAt: Timestamp
}).annotate({ identifier: "ServiceAccountRotated" })

// ---------------------------------------------------------------------------------------------------------------
// IAM groups and policies

/** @category models */
export const Policy = Schema.Struct({
  id: Schema.String,
  action: Schema.String,
  resource: Schema.String,
  effect: Schema.Literals(["allow", "deny"]),
  createdAt: Timestamp
}).annotate({ identifier: "Policy" })

/**
 * `action` one of create, retrieve, list, update, delete, manage, validate, execute (`read` is rejected);
 * `resource` records, structures, compute-functions, function-triggers, webhooks, service-accounts, storage,
 * notifications, cors, secrets or `*`; `effect` allow (default) or deny (deny wins). @category models
 */
export const PolicyCreate = Schema.Struct({
  action: Schema.String,
  resource: Schema.String,
  effect: Schema.optionalKey(Schema.Literals(["allow", "deny"]))
})

/** @category models */
export const GroupMember = Schema.Struct({
  type: Schema.Literals(["user", "service-account"]),
  id: Schema.String,
  name: Schema.String
})

/** Exactly one of `userId` or `serviceAccountId`. @category models */
export const GroupMemberAdd = Schema.Struct({
  userId: Schema.optionalKey(Uuid),
  serviceAccountId: Schema.optionalKey(ServiceAccountId)
})

/** @category models */
export const Group = Schema.Struct({
  id: Schema.String,
  workspace: Schema.String,
  name: Schema.String,
  description: Schema.NullOr(Schema.String),
  createdAt: Timestamp,
  policies: Schema.Array(Policy),
  members: Schema.Array(GroupMember)
}).annotate({ identifier: "Group" })
export type Group = typeof Group.Type

/** @category models */
export const GroupCreate = Schema.Struct({
  name: Schema.String.check(
    Schema.isPattern(/^[A-Za-z0-9][A-Za-z0-9 ._:-]{0,99}$/, {
      message: "group name must be 1 to 100 letters, digits, spaces or ._:- and start with a letter or digit"
    })
  ),
  description: Schema.optionalKey(AccountDescription)
})

/** @category models */
export const GroupList = listOf(Group)

// ---------------------------------------------------------------------------------------------------------------
// Tokens

/** RFC 6749 token request (form-encoded; JSON is accepted too). @category models */
export const TokenRequest = Schema.Struct({
  grant_type: Schema.String,
  client_id: Schema.optionalKey(Schema.String),
  client_secret: Schema.optionalKey(Schema.String),
  username: Schema.optionalKey(Schema.String),
  password: Schema.optionalKey(Schema.String),
  scope: Schema.optionalKey(Schema.String)
})

/** @category models */
export const TokenResponse = Schema.Struct({
  access_token: Schema.String,
  token_type: Schema.Literal("Bearer"),
  expires_in: Schema.Int,
  scope: Schema.String
}).annotate({ identifier: "TokenResponse" })
export type TokenResponse = typeof TokenResponse.Type

const oauthFields = {
  error: Schema.String,
  error_description: Schema.String,
  message: Schema.String,
  code: Schema.String,
  statusCode: Schema.Int,
  details: Schema.Array(Schema.Unknown)
}

/**
 * RFC 6749 §5.2 error: `invalid_request`, `unsupported_grant_type`, `invalid_scope`, `unauthorized_client`.
 * @category errors
 */
export class TokenBadRequest extends Schema.Error<TokenBadRequest>("TokenBadRequest")(oauthFields, { httpApiStatus: 400 }) {}
/** `invalid_client`: unknown client, wrong secret or password, revoked account. @category errors */
export class TokenUnauthorized extends Schema.Error<TokenUnauthorized>("TokenUnauthorized")(oauthFields, { httpApiStatus: 401 }) {}
/** `slow_down`: too many bad credentials for this client or address; see `Retry-After`. @category errors */
export class TokenSlowDown extends Schema.Error<TokenSlowDown>("TokenSlowDown")(oauthFields, { httpApiStatus: 429 }) {}

/** A JSON Web Key Set. @category models */
export const Jwks = Schema.Struct({ keys: Schema.Array(Schema.Record(Schema.String, Schema.Json)) })

/** OpenID Provider metadata (the parts Troupe serves). @category models */
export const Discovery = Schema.Struct({
  issuer: Schema.String,
  token_endpoint: Schema.String,
  jwks_uri: Schema.String,
  grant_types_supported: Schema.Array(Schema.String),
  token_endpoint_auth_methods_supported: Schema.Array(Schema.String),
  response_types_supported: Schema.Array(Schema.String),
  subject_types_supported: Schema.Array(Schema.String),
  id_token_signing_alg_values_supported: Schema.Array(Schema.String),
  scopes_supported: Schema.Array(Schema.String),
  claims_supported: Schema.Array(Schema.String)
})
