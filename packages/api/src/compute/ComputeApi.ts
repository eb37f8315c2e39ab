/**
 * Compute routes (README "Functions and triggers"): functions (and the simplified `/functions`),
 * drafts, triggers and function runs, under `/workspace/{ws}/api/v1`. Reading needs `read:functions` (triggers:
 * `read:triggers`), changing `write:functions` (`write:triggers`), running anything `execute:functions` and counts
 * against the workspace's `functions` rate class. Draft routes check the permission of the draft's resource type.
 *
 * @since 0.1.0
 */
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import { Authorization, RateClass, RequiredPermission } from "../Authorization.ts"
import { BadRequest, Conflict, Forbidden, NotFound, TooManyRequests } from "../Errors.ts"
import { workspaceBase, WorkspaceParams } from "../Workspace.ts"
import {
  ComputeFunction,
  Deleted,
  Draft,
  DraftCreate,
  DraftList,
  DraftListQuery,
  DraftUpdate,
  ExecutionParams,
  FunctionCreate,
  FunctionList,
  FunctionRun,
  FunctionRunList,
  FunctionUpdate,
  FunctionVersionList,
  JobQueued,
  RerunHistory,
  RerunQueued,
  RerunRequest,
  ResourceListQuery,
  RunListQuery,
  SimpleFunctionList,
  TestExecution,
  Trigger,
  TriggerAction,
  TriggerCreate,
  TriggerList,
  TriggerUpdate,
  TriggerVersionList
} from "./Compute.ts"

const idParams = { ...WorkspaceParams, id: Schema.String }
const errors = [BadRequest, Forbidden, NotFound, Conflict, TooManyRequests] as const
/** Execute bodies are optional: no body is `{}`. */
const executeBody = [ExecutionParams, Schema.Null] as const

/** Create, read, update and delete of a function: the same under /compute-functions and /functions. */
const functionCrud = [
  HttpApiEndpoint.post("create", "/", {
    params: WorkspaceParams,
    payload: FunctionCreate,
    success: ComputeFunction.pipe(HttpApiSchema.status(201)),
    error: errors
  })
    .annotate(RequiredPermission, "write:functions")
    .annotate(RateClass, "writes"),
  HttpApiEndpoint.get("get", "/:id", {
    params: idParams,
    success: ComputeFunction,
    error: errors
  })
    .annotate(RequiredPermission, "read:functions")
    .annotate(RateClass, "reads"),
  HttpApiEndpoint.put("update", "/:id", {
    params: idParams,
    payload: FunctionUpdate,
    success: ComputeFunction,
    error: errors
  })
    .annotate(RequiredPermission, "write:functions")
    .annotate(RateClass, "writes"),
  HttpApiEndpoint.delete("delete", "/:id", {
    params: idParams,
    success: Deleted,
    error: errors
  })
    .annotate(RequiredPermission, "write:functions")
    .annotate(RateClass, "writes")
] as const

/** @category groups */
export class ComputeFunctionsApi extends HttpApiGroup.make("computeFunctions")
  .add(
    ...functionCrud,
    HttpApiEndpoint.get("list", "/", {
      params: WorkspaceParams,
      query: ResourceListQuery,
      success: FunctionList,
      error: errors
    })
      .annotate(RequiredPermission, "read:functions")
      .annotate(RateClass, "reads"),
    HttpApiEndpoint.post("test", "/test", {
      params: WorkspaceParams,
      payload: TestExecution,
      success: JobQueued,
      error: errors
    })
      .annotate(RequiredPermission, "execute:functions")
      .annotate(RateClass, "functions"),
    HttpApiEndpoint.get("versions", "/:id/versions", {
      params: idParams,
      success: FunctionVersionList,
      error: errors
    })
      .annotate(RequiredPermission, "read:functions")
      .annotate(RateClass, "reads"),
    HttpApiEndpoint.post("publish", "/:id/publish", {
      params: idParams,
      success: ComputeFunction.pipe(HttpApiSchema.status(201)),
      error: errors
    })
      .annotate(RequiredPermission, "write:functions")
      .annotate(RateClass, "writes")
  )
  .middleware(Authorization)
  .prefix(`${workspaceBase}/compute-functions`)
  .annotateMerge(
    OpenApi.annotations({
      title: "Compute functions",
      description:
        "JavaScript that defines `async function run()`, run in a sandbox with `api`, `triggerParams` and " +
        "`executionParams`. Every update stores a version. `POST /test` queues a run of any code on `default-trigger`; " +
        "follow it with `GET /function-runs?jobId=`. `POST /{draftId}/publish` turns a function draft into a function."
    })
  ) {}

/** The simplified listing of the same functions. @category groups */
export class FunctionsApi extends HttpApiGroup.make("functions")
  .add(
    HttpApiEndpoint.get("list", "/", {
      params: WorkspaceParams,
      query: ResourceListQuery,
      success: SimpleFunctionList,
      error: errors
    })
      .annotate(RequiredPermission, "read:functions")
      .annotate(RateClass, "reads"),
    ...functionCrud,
    HttpApiEndpoint.post("execute", "/:id/execute", {
      params: idParams,
      payload: executeBody,
      success: JobQueued,
      error: errors
    })
      .annotate(RequiredPermission, "execute:functions")
      .annotate(RateClass, "functions")
  )
  .middleware(Authorization)
  .prefix(`${workspaceBase}/functions`)
  .annotateMerge(
    OpenApi.annotations({
      title: "Functions (simplified)",
      description:
        "The same functions as /compute-functions. `POST /{id}/execute` queues a run of the function " +
        "(on `default-trigger`); the whole body becomes executionParams."
    })
  ) {}

/** @category groups */
export class DraftsApi extends HttpApiGroup.make("drafts")
  .add(
    HttpApiEndpoint.post("create", "/", {
      params: WorkspaceParams,
      payload: DraftCreate,
      success: Draft.pipe(HttpApiSchema.status(201)),
      error: errors
    }).annotate(RateClass, "writes"),
    HttpApiEndpoint.get("list", "/", {
      params: WorkspaceParams,
      query: DraftListQuery,
      success: DraftList,
      error: errors
    }).annotate(RateClass, "reads"),
    HttpApiEndpoint.get("get", "/:id", {
      params: idParams,
      success: Draft,
      error: errors
    }).annotate(RateClass, "reads"),
    HttpApiEndpoint.put("update", "/:id", {
      params: idParams,
      payload: DraftUpdate,
      success: Draft,
      error: errors
    }).annotate(RateClass, "writes"),
    HttpApiEndpoint.delete("delete", "/:id", {
      params: idParams,
      success: Deleted,
      error: errors
    }).annotate(RateClass, "writes")
  )
  .middleware(Authorization)
  .prefix(`${workspaceBase}/drafts`)
  .annotateMerge(
    OpenApi.annotations({
      title: "Drafts",
      description:
        "Functions (`resourceType: compute-functions`) and triggers (`function-triggers`) held for " +
        "review. Each route needs the read or write permission of the draft's resource type. Publish through " +
        "`POST /compute-functions/{draftId}/publish` or `POST /function-triggers/{draftId}/publish`."
    })
  ) {}

/** @category groups */
export class FunctionTriggersApi extends HttpApiGroup.make("functionTriggers")
  .add(
    HttpApiEndpoint.post("create", "/", {
      params: WorkspaceParams,
      payload: TriggerCreate,
      success: Trigger.pipe(HttpApiSchema.status(201)),
      error: errors
    })
      .annotate(RequiredPermission, "write:triggers")
      .annotate(RateClass, "writes"),
    HttpApiEndpoint.get("list", "/", {
      params: WorkspaceParams,
      query: ResourceListQuery,
      success: TriggerList,
      error: errors
    })
      .annotate(RequiredPermission, "read:triggers")
      .annotate(RateClass, "reads"),
    HttpApiEndpoint.get("get", "/:id", {
      params: idParams,
      success: Trigger,
      error: errors
    })
      .annotate(RequiredPermission, "read:triggers")
      .annotate(RateClass, "reads"),
    HttpApiEndpoint.put("update", "/:id", {
      params: idParams,
      payload: TriggerUpdate,
      success: Trigger,
      error: errors
    })
      .annotate(RequiredPermission, "write:triggers")
      .annotate(RateClass, "writes"),
    HttpApiEndpoint.delete("delete", "/:id", {
      params: idParams,
      success: TriggerAction,
      error: errors
    })
      .annotate(RequiredPermission, "write:triggers")
      .annotate(RateClass, "writes"),
    HttpApiEndpoint.get("versions", "/:id/versions", {
      params: idParams,
      success: TriggerVersionList,
      error: errors
    })
      .annotate(RequiredPermission, "read:triggers")
      .annotate(RateClass, "reads"),
    HttpApiEndpoint.post("execute", "/:id/execute", {
      params: idParams,
      payload: executeBody,
      success: JobQueued,
      error: errors
    })
      .annotate(RequiredPermission, "execute:functions")
      .annotate(RateClass, "functions"),
    HttpApiEndpoint.patch("pause", "/:id/pause", {
      params: idParams,
      success: TriggerAction,
      error: errors
    })
      .annotate(RequiredPermission, "write:triggers")
      .annotate(RateClass, "writes"),
    HttpApiEndpoint.patch("resume", "/:id/resume", {
      params: idParams,
      success: TriggerAction,
      error: errors
    })
      .annotate(RequiredPermission, "write:triggers")
      .annotate(RateClass, "writes"),
    HttpApiEndpoint.post("publish", "/:id/publish", {
      params: idParams,
      success: Trigger.pipe(HttpApiSchema.status(201)),
      error: errors
    })
      .annotate(RequiredPermission, "write:triggers")
      .annotate(RateClass, "writes")
  )
  .middleware(Authorization)
  .prefix(`${workspaceBase}/function-triggers`)
  .annotateMerge(
    OpenApi.annotations({
      title: "Function triggers",
      description:
        "When a function runs: on demand (`POST /{id}/execute`), on a record event, on a schedule " +
        "(interval, cron, once; time zones) or on an HTTP call. `executionType` cannot change. `default-trigger` " +
        "is the system trigger of test executions: it cannot be updated, deleted or executed."
    })
  ) {}

/** @category groups */
export class FunctionRunsApi extends HttpApiGroup.make("functionRuns")
  .add(
    HttpApiEndpoint.get("list", "/", {
      params: WorkspaceParams,
      query: RunListQuery,
      success: [FunctionRunList, FunctionRun],
      error: errors
    })
      .annotate(RequiredPermission, "read:functions")
      .annotate(RateClass, "reads"),
    HttpApiEndpoint.get("get", "/:id", {
      params: idParams,
      success: FunctionRun,
      error: errors
    })
      .annotate(RequiredPermission, "read:functions")
      .annotate(RateClass, "reads"),
    HttpApiEndpoint.post("rerun", "/:id/rerun", {
      params: idParams,
      payload: [RerunRequest, Schema.Null],
      success: RerunQueued,
      error: errors
    })
      .annotate(RequiredPermission, "execute:functions")
      .annotate(RateClass, "functions"),
    HttpApiEndpoint.get("rerunHistory", "/:id/rerun-history", {
      params: idParams,
      success: RerunHistory,
      error: errors
    })
      .annotate(RequiredPermission, "read:functions")
      .annotate(RateClass, "reads")
  )
  .middleware(Authorization)
  .prefix(`${workspaceBase}/function-runs`)
  .annotateMerge(
    OpenApi.annotations({
      title: "Function runs",
      description:
        "Every execution is a run (the job id is the run id). `?jobId=` answers that run; otherwise a " +
        "page newest first, filtered by functionId, triggerId, status and executionSource."
    })
  ) {}
