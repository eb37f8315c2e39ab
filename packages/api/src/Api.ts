/**
 * The whole HTTP contract of Troupe: every group, shared by the server (handlers), the typed client and the
 * OpenAPI document.
 *
 * @since 0.1.0
 */
import { HttpApi, OpenApi } from "effect/http-api"
import { ComputeFunctionsApi, DraftsApi, FunctionRunsApi, FunctionsApi, FunctionTriggersApi } from "./compute/ComputeApi.ts"
import { WebhooksApi } from "./events/WebhooksApi.ts"
import { GroupsApi } from "./identity/GroupsApi.ts"
import { NotificationApi } from "./notification/NotificationApi.ts"
import { IntelligenceApi } from "./intelligence/IntelligenceApi.ts"
import { MembersApi } from "./identity/MembersApi.ts"
import { OidcApi } from "./identity/OidcApi.ts"
import { documentPermissions } from "./identity/OpenApiPermissions.ts"
import { ServiceAccountsApi } from "./identity/ServiceAccountsApi.ts"
import { SettingsApi } from "./identity/SettingsApi.ts"
import { StorageApi, StorageSignedApi } from "./storage/StorageApi.ts"
import { WorkspacesApi } from "./identity/WorkspacesApi.ts"
import { QueryApi } from "./query/QueryApi.ts"
import { RecordsApi } from "./records/RecordsApi.ts"
import { SearchApi } from "./search/SearchApi.ts"
import { StructuresApi } from "./structures/StructuresApi.ts"
import { ClusterApi, SystemApi } from "./System.ts"

// The OpenAPI transform reads the finished Api lazily (a class cannot name itself in its own base expression).
let self: HttpApi.Top | undefined

/** @category api */
export class Api extends HttpApi.make("troupe")
  .add(SystemApi, ClusterApi)
  .add(OidcApi, WorkspacesApi, MembersApi, ServiceAccountsApi, GroupsApi)
  .add(StructuresApi, RecordsApi)
  .add(QueryApi)
  .add(WebhooksApi)
  .add(ComputeFunctionsApi, FunctionsApi, DraftsApi, FunctionTriggersApi, FunctionRunsApi)
  .add(SettingsApi)
  .add(NotificationApi)
  .add(StorageApi, StorageSignedApi)
  .add(SearchApi)
  .add(IntelligenceApi)
  .annotateMerge(
    OpenApi.annotations({
      title: "Troupe API",
      description: "Workspace-scoped backend-as-a-service: structures, records, queries, webhooks, functions and triggers, identity.",
      // every operation's RequiredPermission / RateClass, as x-required-permission, x-rate-class and a sentence
      transform: documentPermissions(() => self!)
    })
  ) {}
self = Api as unknown as HttpApi.Top
