// Rows of the compute tables as the repos read them, their wire forms, and the errors every compute service shares.
import type {
  ComputeFunction,
  Draft,
  DraftResourceType,
  ExecutionSource,
  ExecutionType,
  FunctionRun,
  FunctionVersion,
  RunStatus,
  Trigger
} from "@troupe/api/compute/Compute"
import { badRequest, type BadRequest, conflict, type ErrorDetail, notFound, errorDetail } from "@troupe/api/Errors"
import { Effect } from "effect"
import * as Crypto from "node:crypto"
import { iso, isoOrNull, json, num } from "../lib/rows.ts"
import { isUuid } from "../query/RecordRow.ts"
import { isObject } from "../lib/JsonPath.ts"

export { isUuid }

/**
 * How deep runs may start runs: `api.invokeTrigger` from a run, or an event-driven trigger fired by a run's own
 * write. Past it the invocation fails, and the triggered run is stored already failed (a loop stops here).
 */
export const MAX_RUN_DEPTH = 8

export const sha256 = (text: string) => Crypto.createHash("sha256").update(text).digest("hex")

const str = (v: unknown): string | null => (v === null || v === undefined ? null : String(v))
const obj = (v: unknown): Record<string, unknown> => {
  const parsed = json<unknown>(v)
  return isObject(parsed) ? parsed : {}
}

// ------------------------------------------------------------------------------------------------ errors

export const invalid = (field: string, message: string): BadRequest =>
  badRequest({ message, code: "VALIDATION_ERROR", details: [errorDetail(field, message)] })

export const invalidAll = (problems: ReadonlyArray<ErrorDetail>): BadRequest =>
  badRequest({ message: problems.map((p) => `${p.field}: ${p.message}`).join("; "), code: "VALIDATION_ERROR", details: problems })

/** A path id that is no UUID is a 400 (invalid id format), an unknown one a 404. */
export const checkId = (kind: string, id: string): Effect.Effect<void, BadRequest> =>
  isUuid(id) ? Effect.void : Effect.fail(badRequest({ message: `Invalid ${kind} ID: ${id.slice(0, 64)}` }))

export const functionNotFound = (id: string) => notFound({ message: `Function ${id} not found` })
export const triggerNotFound = (id: string) => notFound({ message: `Trigger ${id} not found` })
export const draftNotFound = (id: string) => notFound({ message: `Draft ${id} not found` })
export const runNotFound = (id: string) => notFound({ message: `Function run ${id} not found` })
export const nameTaken = (kind: "Function" | "Trigger", name: string) =>
  conflict({ message: `${kind} name "${name}" already exists in this workspace` })

// ------------------------------------------------------------------------------------------------ functions

export interface FunctionRow {
  readonly id: string
  readonly workspace: string
  readonly name: string
  readonly description: string | null
  readonly code: string
  readonly codeHash: string
  readonly version: number
  readonly createdBy: string | null
  readonly updatedBy: string | null
  readonly createdAt: string
  readonly updatedAt: string
}

export const functionRow = (r: any): FunctionRow => ({
  id: String(r.id),
  workspace: r.workspace,
  name: r.name,
  description: r.description ?? null,
  code: r.code ?? "",
  codeHash: r.code_hash,
  version: num(r.version),
  createdBy: str(r.created_by),
  updatedBy: str(r.updated_by),
  createdAt: iso(r.created_at),
  updatedAt: iso(r.updated_at)
})

export const toFunction = (f: FunctionRow): ComputeFunction => ({
  id: f.id,
  name: f.name,
  description: f.description,
  code: f.code,
  codeHash: f.codeHash,
  version: f.version,
  workspaceSlug: f.workspace,
  createdBy: f.createdBy,
  updatedBy: f.updatedBy,
  createdAt: f.createdAt,
  updatedAt: f.updatedAt
})

export const toFunctionSummary = (f: FunctionRow) => {
  const { code: _, ...rest } = toFunction(f)
  return rest
}

export const toFunctionVersion = (r: any): FunctionVersion => ({
  functionId: String(r.function_id),
  version: num(r.version),
  name: r.name,
  description: r.description ?? null,
  code: r.code,
  codeHash: r.code_hash,
  createdBy: str(r.created_by),
  createdAt: iso(r.created_at)
})

// ------------------------------------------------------------------------------------------------ triggers

export interface TriggerRow {
  readonly id: string
  readonly workspace: string
  readonly name: string
  readonly description: string | null
  readonly functionId: string | null
  readonly executionType: ExecutionType
  /** stored form: encrypted params as `{value: "enc:…", encrypted: true, keyVersion}` */
  readonly metadata: Record<string, unknown>
  readonly isSystem: boolean
  readonly paused: boolean
  readonly httpPath: string | null
  readonly event: string | null
  readonly recordSlug: string | null
  readonly nextRunAt: string | null
  readonly version: number
  readonly createdBy: string | null
  readonly createdByKind: "user" | "service" | null
  readonly updatedBy: string | null
  readonly createdAt: string
  readonly updatedAt: string
}

export const triggerRow = (r: any): TriggerRow => ({
  id: String(r.id),
  workspace: r.workspace,
  name: r.name,
  description: r.description ?? null,
  functionId: str(r.function_id),
  executionType: r.execution_type,
  metadata: obj(r.metadata),
  isSystem: r.is_system === true,
  paused: r.paused === true,
  httpPath: r.http_path ?? null,
  event: r.event ?? null,
  recordSlug: r.record_slug ?? null,
  nextRunAt: isoOrNull(r.next_run_at),
  version: num(r.version),
  createdBy: str(r.created_by),
  createdByKind: r.created_by_kind === "user" || r.created_by_kind === "service" ? r.created_by_kind : null,
  updatedBy: str(r.updated_by),
  createdAt: iso(r.created_at),
  updatedAt: iso(r.updated_at)
})

/** The URL path of an HTTP trigger under the workspace base. */
export const httpTriggerUrl = (workspace: string, path: string) => `/workspace/${workspace}/api/v1/http-triggers/${path}`

export const toTrigger = (t: TriggerRow): Trigger => ({
  id: t.id,
  name: t.name,
  description: t.description,
  functionId: t.functionId,
  executionType: t.executionType,
  triggerMetadata: t.metadata as Trigger["triggerMetadata"],
  workspaceSlug: t.workspace,
  isSystem: t.isSystem,
  paused: t.paused,
  status: t.paused ? "paused" : t.metadata.completed === true ? "completed" : "active",
  version: t.version,
  ...(t.executionType === "scheduled" ? { nextRunAt: t.nextRunAt } : {}),
  ...(t.httpPath !== null ? { url: httpTriggerUrl(t.workspace, t.httpPath) } : {}),
  createdBy: t.createdBy,
  updatedBy: t.updatedBy,
  createdAt: t.createdAt,
  updatedAt: t.updatedAt
})

// ------------------------------------------------------------------------------------------------ drafts

export const toDraft = (r: any): Draft => ({
  id: String(r.id),
  resourceType: r.resource_type as DraftResourceType,
  data: obj(r.data) as Draft["data"],
  workspaceSlug: r.workspace,
  createdBy: str(r.created_by),
  createdAt: iso(r.created_at),
  updatedAt: iso(r.updated_at)
})

// ------------------------------------------------------------------------------------------------ runs

/** Who a run acts as (README "Who a run acts as"), resolved again when it runs. */
export interface ActingAs {
  readonly kind: "user" | "service"
  readonly id: string
}

export interface RunRow {
  readonly id: string
  readonly workspace: string
  readonly functionId: string | null
  readonly triggerId: string | null
  readonly status: RunStatus
  readonly executionSource: ExecutionSource
  readonly code: string | null
  readonly functionCodeHash: string | null
  readonly functionVersion: string | null
  /** executionParams, encrypted */
  readonly parameters: string | null
  readonly executionContext: Record<string, unknown>
  readonly actingAs: ActingAs | null
  readonly depth: number
  readonly result: unknown
  readonly error: string | null
  readonly logs: ReadonlyArray<{ level: "debug" | "info" | "warn" | "error"; message: string; at: string }>
  readonly startedAt: string | null
  readonly finishedAt: string | null
  readonly durationMs: number | null
  readonly memoryUsageBytes: number | null
  readonly cpuUsageSeconds: number | null
  readonly isRerun: boolean
  readonly originalRunId: string | null
  readonly rerunCount: number
  readonly rerunBy: string | null
  readonly rerunReason: string | null
  readonly scheduledFor: string | null
  readonly createdAt: string
}

const numOrNull = (v: unknown) => (v === null || v === undefined ? null : num(v))

export const runRow = (r: any): RunRow => {
  const acting = r.acting_as === null || r.acting_as === undefined ? null : json<ActingAs>(r.acting_as)
  const logs = r.logs === null || r.logs === undefined ? [] : json<RunRow["logs"]>(r.logs)
  return {
    id: String(r.id),
    workspace: r.workspace,
    functionId: str(r.function_id),
    triggerId: str(r.trigger_id),
    status: r.status,
    executionSource: r.execution_source,
    code: r.code ?? null,
    functionCodeHash: r.function_code_hash ?? null,
    functionVersion: r.function_version ?? null,
    parameters: r.parameters ?? null,
    executionContext: obj(r.execution_context),
    actingAs: acting,
    depth: num(r.depth ?? 0),
    result: typeof r.result === "string" ? JSON.parse(r.result) : null,
    error: r.error ?? null,
    logs: Array.isArray(logs) ? logs : [],
    startedAt: isoOrNull(r.started_at),
    finishedAt: isoOrNull(r.finished_at),
    durationMs: numOrNull(r.duration_ms),
    memoryUsageBytes: numOrNull(r.memory_usage_bytes),
    cpuUsageSeconds: numOrNull(r.cpu_usage_seconds),
    isRerun: r.is_rerun === true,
    originalRunId: str(r.original_run_id),
    rerunCount: num(r.rerun_count ?? 0),
    rerunBy: str(r.rerun_by),
    rerunReason: r.rerun_reason ?? null,
    scheduledFor: isoOrNull(r.scheduled_for),
    createdAt: iso(r.created_at)
  }
}

export const toRun = (r: RunRow): FunctionRun => ({
  id: r.id,
  jobId: r.id,
  functionId: r.functionId,
  triggerId: r.triggerId,
  workspaceSlug: r.workspace,
  status: r.status,
  executionSource: r.executionSource,
  result: r.result as FunctionRun["result"],
  error: r.error,
  logs: r.logs,
  startedAt: r.startedAt,
  finishedAt: r.finishedAt,
  durationMs: r.durationMs,
  memoryUsageBytes: r.memoryUsageBytes,
  cpuUsageSeconds: r.cpuUsageSeconds,
  functionCodeHash: r.functionCodeHash,
  functionVersion: r.functionVersion,
  executionContext: r.executionContext as FunctionRun["executionContext"],
  isRerun: r.isRerun,
  originalRunId: r.originalRunId,
  rerunCount: r.rerunCount,
  rerunBy: r.rerunBy,
  rerunReason: r.rerunReason,
  scheduledFor: r.scheduledFor,
  queuedAt: r.createdAt,
  createdAt: r.createdAt
})

// ------------------------------------------------------------------------------------------------ lists

export interface SortKey {
  readonly field: string
  readonly direction: "asc" | "desc"
}

/**
 * The `sort` of the function and trigger lists: a JSON array of `{field, direction}`, or `name` / `-name` /
 * `name:desc` (comma-separated). Only `fields` may be named.
 */
export const parseSortParam = (raw: string | undefined, fields: ReadonlySet<string>): Effect.Effect<ReadonlyArray<SortKey>, BadRequest> => {
  if (raw === undefined || raw.trim() === "") return Effect.succeed([])
  let keys: Array<{ field: unknown; direction?: unknown }>
  const text = raw.trim()
  if (text.startsWith("[") || text.startsWith("{")) {
    try {
      const parsed = JSON.parse(text)
      keys = Array.isArray(parsed) ? parsed : [parsed]
    } catch {
      return Effect.fail(invalid("sort", "sort must be a JSON array of {field, direction} or a field name"))
    }
  } else {
    keys = text.split(",").map((part) => {
      const p = part.trim()
      const m = /^([+-]?)([A-Za-z_]+)(?::(asc|desc))?$/i.exec(p)
      if (m === null) return { field: p }
      return { field: m[2], direction: m[3]?.toLowerCase() ?? (m[1] === "-" ? "desc" : "asc") }
    })
  }
  const out: Array<SortKey> = []
  for (const k of keys) {
    if (typeof k !== "object" || k === null || typeof k.field !== "string" || !fields.has(k.field)) {
      return Effect.fail(invalid("sort", `sort fields must be one of ${[...fields].join(", ")}`))
    }
    const d = k.direction === undefined ? "asc" : String(k.direction).toLowerCase()
    if (d !== "asc" && d !== "desc") return Effect.fail(invalid("sort", "sort direction must be asc or desc"))
    out.push({ field: k.field, direction: d })
  }
  return Effect.succeed(out)
}
