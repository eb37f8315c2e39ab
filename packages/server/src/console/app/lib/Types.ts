// The API's answers as the console reads them (the subset of /openapi.json it uses): the generated client-fetch
// schema's types where they fit; hand-written ones where the generated type is wider than what the console reads
// (numbers the schema allows as "Infinity"/"NaN", secrets shown once) or has no name of its own.
import type { components, operations } from "../../../../../client-fetch/src/schema.ts"

type Schemas = components["schemas"]

export type PropertyType = "string" | "number" | "boolean" | "datetime" | "array" | "object" | "reference"

export interface Property {
  readonly id?: string
  readonly name: string
  readonly type: PropertyType
  readonly [rule: string]: unknown
}

export interface RetentionPolicy {
  readonly maxVersions?: number
  readonly maxAgeDays?: number
  readonly cleanupIntervalHours?: number
  readonly pinnedVersionsRetained?: boolean
}

export interface Structure {
  readonly id: string
  readonly recordSlug: string
  readonly name: string
  readonly description?: string | null
  readonly properties: ReadonlyArray<Property>
  readonly status: "active" | "inactive"
  readonly schemaDiscoveryMode: "strict" | "auto-evolving" | "schemaless"
  readonly isStrict: boolean
  readonly enableVersioning: boolean
  readonly retentionPolicy?: RetentionPolicy | null
  readonly defaultSearchField?: string | null
  readonly defaultTtlSeconds?: number | null
  readonly schemaDiscoveryConfig?: Record<string, number>
  readonly tags: ReadonlyArray<string>
  readonly version: number
  readonly isDeleted: boolean
  readonly createdAt: string
  readonly updatedAt: string
  readonly metadata?: Record<string, unknown>
}

export interface StructureList {
  readonly data: ReadonlyArray<Structure>
  readonly meta: { readonly total: number; readonly page: number; readonly pageSize: number }
}

export type StructureVersion = Schemas["StructureVersion"]

export interface DataRecord {
  readonly id: string
  readonly structureId: string
  readonly data: Record<string, unknown>
  readonly metadata?: Record<string, unknown>
  readonly version: number
  readonly status?: string
  readonly createdAt: string
  readonly updatedAt: string
  readonly createdBy?: string | null
  readonly updatedBy?: string | null
  readonly expiresAt?: string | null
  readonly deletedAt?: string | null
}

export interface RecordList {
  readonly results: ReadonlyArray<DataRecord>
  readonly pagination: {
    readonly limit: number
    readonly offset: number
    readonly total?: number
    readonly hasMore: boolean
    readonly nextCursor: string | null
  }
}

export interface RecordHistoryEntry {
  readonly version: number
  readonly data: Record<string, unknown>
  readonly updatedAt: string
  readonly updatedBy: string | null
  readonly changes: Record<string, { readonly old: unknown; readonly new: unknown }>
  readonly restoredFrom?: number | null
}

export interface ChangelogEntry {
  readonly id: string
  readonly action: string
  readonly userId: string | null
  readonly userName: string | null
  readonly timestamp: string
  readonly changes: Record<string, { readonly field: string; readonly oldValue: unknown; readonly newValue: unknown }>
  readonly metadata: Record<string, unknown>
}

export interface BulkResult {
  readonly success: boolean
  readonly created?: number
  readonly failed?: number
  readonly errors?: ReadonlyArray<{
    readonly index: number
    readonly code: string
    readonly message: string
    readonly details?: ReadonlyArray<{ readonly field: string; readonly message: string }>
  }>
}

export type ComputeFunction = Schemas["ComputeFunction"]

export type FunctionVersion = Schemas["FunctionVersion"]

export type Draft = Schemas["Draft"]

export type ExecutionType = "on-demand" | "event-driven" | "scheduled" | "http-trigger"

export type Trigger = Schemas["Trigger"]

export interface RunLog {
  readonly level: "debug" | "info" | "warn" | "error"
  readonly message: string
  readonly at: string
}

export type RunStatus = "queued" | "running" | "completed" | "failed" | "timed_out"

export interface FunctionRun {
  readonly id: string
  readonly jobId: string
  readonly functionId: string | null
  readonly triggerId: string | null
  readonly status: RunStatus
  readonly executionSource: string
  readonly result: unknown
  readonly error: string | null
  readonly logs: ReadonlyArray<RunLog>
  readonly startedAt: string | null
  readonly finishedAt: string | null
  readonly durationMs: number | null
  readonly memoryUsageBytes: number | null
  readonly cpuUsageSeconds: number | null
  readonly functionVersion: string | null
  readonly functionCodeHash: string | null
  readonly isRerun: boolean
  readonly originalRunId: string | null
  readonly rerunCount: number
  readonly rerunBy: string | null
  readonly rerunReason: string | null
  readonly scheduledFor: string | null
  readonly executionContext: Record<string, unknown>
  readonly queuedAt: string
  readonly createdAt: string
}

export type JobQueued = Schemas["JobQueued"]

export const finished = (status: RunStatus) => status === "completed" || status === "failed" || status === "timed_out"

export interface Webhook {
  readonly id: string
  readonly name: string
  readonly url: string
  readonly events: ReadonlyArray<string>
  readonly filters: {
    readonly structure?: string
    readonly structureId?: string
    readonly data?: Record<string, unknown>
    readonly query?: string
  }
  readonly enabled: boolean
  readonly status: "active" | "failed" | "disabled"
  readonly secret?: string
  readonly createdAt: string
}

export interface Delivery {
  readonly id: string
  readonly event: string
  readonly status: "pending" | "retrying" | "delivered" | "failed" | "skipped"
  readonly attempts: number
  readonly lastStatus: number | null
  readonly lastError: string | null
  readonly durationMs: number | null
  readonly nextAttemptAt: string | null
  readonly deliveredAt: string | null
  readonly failedAt: string | null
  readonly redeliveryOf: string | null
  readonly createdAt: string
  readonly payload?: unknown
}

export type Role = "viewer" | "developer" | "admin" | "owner"
export const roles: ReadonlyArray<Role> = ["viewer", "developer", "admin", "owner"]

export interface ServiceAccount {
  readonly id: number
  readonly clientId: string
  readonly name: string
  readonly description: string | null
  readonly role: Role | null
  readonly permissions: ReadonlyArray<string>
  readonly status: "active" | "revoked"
  readonly createdAt: string
  readonly clientSecret?: string
}

export type Member = Schemas["Member"]

export type Group = Schemas["Group"]

export interface Page<T> {
  readonly data: ReadonlyArray<T>
  readonly total: number
  readonly page: number
  readonly limit: number
}

/** The permissions a service account may be given: the API's own list (the generated schema's), checked below. */
export type Permission = NonNullable<
  operations["serviceAccounts.create"]["requestBody"]["content"]["application/json"]["permissions"]
>[number]

export const allPermissions = [
  "read:structures",
  "write:structures",
  "read:records",
  "write:records",
  "read:functions",
  "write:functions",
  "execute:functions",
  "read:storage",
  "write:storage",
  "read:webhooks",
  "write:webhooks",
  "read:triggers",
  "write:triggers",
  "read:service-accounts",
  "write:service-accounts",
  "secrets:reveal",
  "read:cors",
  "write:cors",
  "read:notifications",
  "write:notifications",
  "manage:notifications"
] as const satisfies ReadonlyArray<Permission>

// the typecheck fails when the API grows a permission this list lacks
const everyPermission: [Exclude<Permission, (typeof allPermissions)[number]>] extends [never] ? true : never = true
void everyPermission
