/**
 * Compute (README "Functions and triggers"): functions and their versions, drafts, triggers and
 * function runs. Ids are UUIDs; an id that is not one answers 400 ("invalid id format"), an unknown one 404.
 *
 * @since 0.1.0
 */
import { Schema } from "effect"

const optional = Schema.optionalKey
const Timestamp = Schema.String.annotate({ description: "ISO-8601 timestamp" })
const JsonObject = Schema.Record(Schema.String, Schema.Json)

const Name = Schema.String.check(
  Schema.isPattern(/\S/, { message: "name must not be blank" }),
  Schema.isMaxLength(200, { message: "name must be at most 200 characters" })
)
const Description = Schema.NullOr(Schema.String.check(Schema.isMaxLength(5000, { message: "description must be at most 5000 characters" })))
/** Function source: at most 1 MiB of JavaScript defining `async function run()`. */
const Code = Schema.String.check(
  Schema.isPattern(/\S/, { message: "code must not be empty" }),
  Schema.isMaxLength(1024 * 1024, { message: "code must be at most 1 MiB" })
).annotate({ description: "JavaScript that defines `async function run()`" })

/** 1-based page and page size, from the query string. @category models */
const pageQuery = (maxLimit: number, defaultLimit: number) => ({
  page: optional(
    Schema.FiniteFromString.check(Schema.isInt(), Schema.isBetween({ minimum: 1, maximum: 1_000_000 })).annotate({
      description: "1-based page (default 1)"
    })
  ),
  limit: optional(
    Schema.FiniteFromString.check(Schema.isInt(), Schema.isBetween({ minimum: 1, maximum: maxLimit })).annotate({
      description: `Page size (default ${defaultLimit}, at most ${maxLimit})`
    })
  )
})

/** Query of the function and trigger lists. @category models */
export const ResourceListQuery = {
  ...pageQuery(1000, 500),
  search: optional(Schema.String.annotate({ description: "Case-insensitive substring of `searchField`" })),
  searchField: optional(Schema.Literals(["name", "description", "id"]).annotate({ description: "Default name" })),
  sort: optional(
    Schema.String.annotate({
      description: 'JSON array of {field, direction} (e.g. [{"field":"name","direction":"asc"}]), or "-name"'
    })
  )
}

// ------------------------------------------------------------------------------------------------ functions

/** @category models */
export const ComputeFunction = Schema.Struct({
  id: Schema.String,
  name: Schema.String,
  description: Schema.NullOr(Schema.String),
  code: Schema.String,
  codeHash: Schema.String.annotate({ description: "SHA-256 of the code, hex" }),
  version: Schema.Int,
  workspaceSlug: Schema.String,
  createdBy: Schema.NullOr(Schema.String),
  updatedBy: Schema.NullOr(Schema.String),
  createdAt: Timestamp,
  updatedAt: Timestamp
}).annotate({ identifier: "ComputeFunction" })
/** @category models */
export type ComputeFunction = typeof ComputeFunction.Type

/** A function as listed: without its code. @category models */
export const FunctionSummary = ComputeFunction.mapFields(({ code: _, ...rest }) => rest).annotate({ identifier: "FunctionSummary" })
/** @category models */
export type FunctionSummary = typeof FunctionSummary.Type

/** @category models */
export const FunctionCreate = Schema.Struct({
  name: Name,
  description: optional(Description),
  code: Code
}).annotate({ identifier: "FunctionCreate" })
/** @category models */
export type FunctionCreate = typeof FunctionCreate.Type

/** @category models */
export const FunctionUpdate = Schema.Struct({
  name: optional(Name),
  description: optional(Description),
  code: optional(Code)
}).annotate({ identifier: "FunctionUpdate" })
/** @category models */
export type FunctionUpdate = typeof FunctionUpdate.Type

/** @category models */
export const FunctionList = Schema.Struct({
  functions: Schema.Array(FunctionSummary),
  total: Schema.Int,
  page: Schema.Int,
  limit: Schema.Int
}).annotate({ identifier: "FunctionList" })

/** The simplified `/functions` list. @category models */
export const SimpleFunctionList = Schema.Struct({
  data: Schema.Array(FunctionSummary),
  total: Schema.Int,
  page: Schema.Int,
  limit: Schema.Int
}).annotate({ identifier: "SimpleFunctionList" })

/** @category models */
export const Deleted = Schema.Struct({ success: Schema.Boolean, message: Schema.String }).annotate({ identifier: "Deleted" })

/** One stored version of a function: every create and update adds one. @category models */
export const FunctionVersion = Schema.Struct({
  functionId: Schema.String,
  version: Schema.Int,
  name: Schema.String,
  description: Schema.NullOr(Schema.String),
  code: Schema.String,
  codeHash: Schema.String,
  createdBy: Schema.NullOr(Schema.String),
  createdAt: Timestamp
}).annotate({ identifier: "FunctionVersion" })
/** @category models */
export type FunctionVersion = typeof FunctionVersion.Type

/** @category models */
export const FunctionVersionList = Schema.Struct({ versions: Schema.Array(FunctionVersion) }).annotate({
  identifier: "FunctionVersionList"
})

/** Body of `POST /compute-functions/test`: the code and its `executionParams`. @category models */
export const TestExecution = Schema.Struct({
  code: Code,
  params: JsonObject.annotate({ description: "Becomes executionParams" })
}).annotate({ identifier: "TestExecution" })

/** A queued job (test, execute). The job id is the run id. @category models */
export const JobQueued = Schema.Struct({
  jobId: Schema.String,
  status: Schema.Literal("queued"),
  queuedAt: Timestamp
}).annotate({ identifier: "JobQueued" })
/** @category models */
export type JobQueued = typeof JobQueued.Type

/** Any JSON object: the whole body becomes `executionParams`. @category models */
export const ExecutionParams = JsonObject.annotate({ description: "Becomes executionParams as a whole" })

// ------------------------------------------------------------------------------------------------ drafts

/** @category models */
export const DraftResourceType = Schema.Literals(["compute-functions", "function-triggers"])
/** @category models */
export type DraftResourceType = typeof DraftResourceType.Type

/** @category models */
export const Draft = Schema.Struct({
  id: Schema.String,
  resourceType: DraftResourceType,
  data: JsonObject,
  workspaceSlug: Schema.String,
  createdBy: Schema.NullOr(Schema.String),
  createdAt: Timestamp,
  updatedAt: Timestamp
}).annotate({ identifier: "Draft" })
/** @category models */
export type Draft = typeof Draft.Type

/** @category models */
export const DraftCreate = Schema.Struct({
  resourceType: DraftResourceType,
  data: JsonObject.annotate({ description: "The resource's fields (functions: name, description, code)" })
}).annotate({ identifier: "DraftCreate" })

/** @category models */
export const DraftUpdate = Schema.Struct({ data: JsonObject }).annotate({ identifier: "DraftUpdate" })

/** @category models */
export const DraftList = Schema.Struct({
  drafts: Schema.Array(Draft),
  total: Schema.Int,
  page: Schema.Int,
  limit: Schema.Int
}).annotate({ identifier: "DraftList" })

/** @category models */
export const DraftListQuery = { ...pageQuery(1000, 100), resourceType: optional(DraftResourceType) }

// ------------------------------------------------------------------------------------------------ triggers

/** @category models */
export const ExecutionType = Schema.Literals(["on-demand", "event-driven", "scheduled", "http-trigger"])
/** @category models */
export type ExecutionType = typeof ExecutionType.Type

/** What a create accepts: the earlier spelling `webhook` is stored and shown as `http-trigger`. @category models */
export const ExecutionTypeInput = Schema.Literals(["on-demand", "event-driven", "scheduled", "http-trigger", "webhook"])

/** @category models */
export const Trigger = Schema.Struct({
  id: Schema.String,
  name: Schema.String,
  description: Schema.NullOr(Schema.String),
  functionId: Schema.NullOr(Schema.String),
  executionType: ExecutionType,
  triggerMetadata: JsonObject.annotate({
    description: "Depends on executionType; encrypted params show as {value, encrypted: true, keyVersion}"
  }),
  workspaceSlug: Schema.String,
  isSystem: Schema.Boolean,
  paused: Schema.Boolean,
  status: Schema.Literals(["active", "paused", "completed"]),
  version: Schema.Int,
  nextRunAt: optional(Schema.NullOr(Timestamp)),
  url: optional(Schema.String.annotate({ description: "HTTP triggers: the path that runs it" })),
  createdBy: Schema.NullOr(Schema.String),
  updatedBy: Schema.NullOr(Schema.String),
  createdAt: Timestamp,
  updatedAt: Timestamp
}).annotate({ identifier: "Trigger" })
/** @category models */
export type Trigger = typeof Trigger.Type

/** @category models */
export const TriggerCreate = Schema.Struct({
  name: Name,
  description: optional(Description),
  functionId: Schema.String,
  executionType: ExecutionTypeInput,
  triggerMetadata: optional(JsonObject)
}).annotate({ identifier: "TriggerCreate" })
/** @category models */
export type TriggerCreate = typeof TriggerCreate.Type

/** `executionType` may only be repeated unchanged (delete and recreate to change it). @category models */
export const TriggerUpdate = Schema.Struct({
  name: optional(Name),
  description: optional(Description),
  functionId: optional(Schema.String),
  executionType: optional(ExecutionTypeInput),
  triggerMetadata: optional(JsonObject)
}).annotate({ identifier: "TriggerUpdate" })
/** @category models */
export type TriggerUpdate = typeof TriggerUpdate.Type

/** @category models */
export const TriggerList = Schema.Struct({
  triggers: Schema.Array(Trigger),
  total: Schema.Int,
  page: Schema.Int,
  limit: Schema.Int
}).annotate({ identifier: "TriggerList" })

/** Answer of trigger delete, pause and resume. @category models */
export const TriggerAction = Schema.Struct({
  success: Schema.Boolean,
  message: Schema.String,
  trigger: optional(Trigger)
}).annotate({ identifier: "TriggerAction" })

/** One stored version of a trigger. @category models */
export const TriggerVersion = Schema.Struct({
  triggerId: Schema.String,
  version: Schema.Int,
  name: Schema.String,
  description: Schema.NullOr(Schema.String),
  functionId: Schema.NullOr(Schema.String),
  triggerMetadata: JsonObject,
  createdBy: Schema.NullOr(Schema.String),
  createdAt: Timestamp
}).annotate({ identifier: "TriggerVersion" })

/** @category models */
export const TriggerVersionList = Schema.Struct({ versions: Schema.Array(TriggerVersion) }).annotate({ identifier: "TriggerVersionList" })

// ------------------------------------------------------------------------------------------------ runs

/** @category models */
export const RunStatus = Schema.Literals(["queued", "running", "completed", "failed", "timed_out"])
/** @category models */
export type RunStatus = typeof RunStatus.Type

/** @category models */
export const ExecutionSource = Schema.Literals(["manual", "trigger", "scheduled", "webhook", "rerun"])
/** @category models */
export type ExecutionSource = typeof ExecutionSource.Type

/** @category models */
export const RunLog = Schema.Struct({
  level: Schema.Literals(["debug", "info", "warn", "error"]),
  message: Schema.String,
  at: Timestamp
})

/** @category models */
export const FunctionRun = Schema.Struct({
  id: Schema.String,
  jobId: Schema.String,
  functionId: Schema.NullOr(Schema.String),
  triggerId: Schema.NullOr(Schema.String),
  workspaceSlug: Schema.String,
  status: RunStatus,
  executionSource: ExecutionSource,
  result: Schema.NullOr(Schema.Json),
  error: Schema.NullOr(Schema.String),
  logs: Schema.Array(RunLog),
  startedAt: Schema.NullOr(Timestamp),
  finishedAt: Schema.NullOr(Timestamp),
  durationMs: Schema.NullOr(Schema.Number),
  memoryUsageBytes: Schema.NullOr(Schema.Number),
  cpuUsageSeconds: Schema.NullOr(Schema.Number),
  functionCodeHash: Schema.NullOr(Schema.String),
  functionVersion: Schema.NullOr(Schema.String),
  executionContext: JsonObject,
  isRerun: Schema.Boolean,
  originalRunId: Schema.NullOr(Schema.String),
  rerunCount: Schema.Int,
  rerunBy: Schema.NullOr(Schema.String),
  rerunReason: Schema.NullOr(Schema.String),
  scheduledFor: Schema.NullOr(Timestamp),
  queuedAt: Timestamp,
  createdAt: Timestamp
}).annotate({ identifier: "FunctionRun" })
/** @category models */
export type FunctionRun = typeof FunctionRun.Type

/** @category models */
export const FunctionRunList = Schema.Struct({
  data: Schema.Array(FunctionRun),
  total: Schema.Int,
  page: Schema.Int,
  limit: Schema.Int
}).annotate({ identifier: "FunctionRunList" })

/** `jobId` answers that one run; otherwise a page, newest first. @category models */
export const RunListQuery = {
  ...pageQuery(1000, 50),
  jobId: optional(Schema.String),
  functionId: optional(Schema.String),
  triggerId: optional(Schema.String),
  status: optional(RunStatus),
  executionSource: optional(ExecutionSource)
}

/** @category models */
export const RerunRequest = Schema.Struct({
  useLatestCode: optional(Schema.Boolean.annotate({ description: "Accepted; the latest code is always used" })),
  reason: optional(Schema.String.check(Schema.isMaxLength(2000))),
  overrideParams: optional(JsonObject.annotate({ description: "Shallow-merged over the stored parameters" }))
}).annotate({ identifier: "RerunRequest" })
/** @category models */
export type RerunRequest = typeof RerunRequest.Type

/** @category models */
export const RerunQueued = Schema.Struct({
  jobId: Schema.String,
  message: Schema.String,
  status: Schema.Literal("queued"),
  queuedAt: Timestamp
}).annotate({ identifier: "RerunQueued" })

/** @category models */
export const RerunHistory = Schema.Struct({
  originalRunId: Schema.String,
  rerunCount: Schema.Int,
  reruns: Schema.Array(FunctionRun)
}).annotate({ identifier: "RerunHistory" })
