// What record writes take and answer, the errors they fail with, and the limits they enforce: the types shared by
// RecordWriter (RecordEntity.ts), the engine (write/), RecordPrepare, RecordService and the routes.
import {
  badRequest,
  type conflict,
  type ErrorDetail,
  type Forbidden,
  type locked,
  notFound,
  type PayloadTooLarge,
  type unprocessable
} from "@troupe/api/Errors"
import type { Structure } from "@troupe/api/structures/Structure"
import type { RecordRow } from "../query/RecordRow.ts"
import type { Changes, Writer } from "./model.ts"
import type { NewRecord } from "./RecordRows.ts"

export type RecordError =
  | ReturnType<typeof badRequest>
  | ReturnType<typeof notFound>
  | ReturnType<typeof conflict>
  | ReturnType<typeof locked>
  | ReturnType<typeof unprocessable>

export interface CreateInput {
  readonly data: Record<string, unknown>
  readonly metadata?: Record<string, unknown> | undefined
  readonly ttlSeconds?: number | undefined
  readonly expiresAt?: string | undefined
  readonly skipValidation?: boolean | undefined
  /** kept in the changelog entry's metadata */
  readonly reason?: string | undefined
}

export interface UpsertItem {
  readonly data: Record<string, unknown>
  readonly writer: Writer
}

export interface UpsertResult {
  readonly status: number
  readonly body: unknown
}

export interface UpdateInput {
  readonly data: Record<string, unknown>
  readonly metadata?: Record<string, unknown> | undefined
  readonly expectedVersion?: number | undefined
  readonly createVersion?: boolean | undefined
  readonly skipValidation?: boolean | undefined
  readonly ttlSeconds?: number | undefined
  readonly expiresAt?: string | undefined
  readonly clearTtl?: boolean | undefined
  /** PUT: unspecified fields are removed */
  readonly replace?: boolean | undefined
  /** kept in the changelog entry's metadata */
  readonly reason?: string | undefined
  /**
   * Numbers added to fields (top-level names or dotted paths) of the stored data, read under the row lock: an
   * atomic increment (a missing field counts as 0; a field holding anything but a number is a 400).
   */
  readonly increments?: Readonly<Record<string, number>> | undefined
}

export interface WriteResult {
  readonly row: RecordRow
  readonly structure: Structure
  readonly previousVersion?: number
  readonly restoredFrom?: number | null
}

/** A write of one record by id. */
export interface RecordTarget {
  readonly workspace: string
  readonly id: string
  readonly writer: Writer
}

export interface CreateArgs {
  readonly structure: Structure
  readonly input: CreateInput
  readonly writer: Writer
}

export interface UpdateArgs extends RecordTarget {
  readonly input: UpdateInput
}

export interface RemoveArgs extends RecordTarget {
  readonly permanent: boolean
  readonly reason?: string | undefined
}

export interface RestoreArgs extends RecordTarget {
  readonly version?: number | undefined
  readonly reason?: string | undefined
}

export interface RevertArgs extends RecordTarget {
  readonly reason?: string | undefined
}

/** An upsert of one business key. */
export interface UpsertArgs {
  readonly structure: Structure
  readonly match: Record<string, unknown>
  readonly data: Record<string, unknown>
  readonly writer: Writer
  readonly idempotencyKey?: string | undefined
}

/** Items of a bulk write. */
export interface BulkArgs<I> {
  readonly items: ReadonlyArray<I>
  readonly writer: Writer
}

/** A file being deleted (the onDelete of the `format: "file"` properties naming it). */
export interface FileDeletedArgs {
  readonly workspace: string
  readonly fileId: string
  readonly writer: Writer
}

/** The answer of a delete. */
export interface Removed {
  readonly id: string
  readonly deletedAt: string
  readonly structure: Structure
}

/** The item of an atomic batch that failed it, and why. */
export interface BulkItemFailure {
  readonly index: number
  readonly error: RecordError
}

// ------------------------------------------------------------------ bulk requests (RecordWriter)

/** What a bulk request fails with: an item's error (atomic), every item's (non-atomic), or the request's own. */
export type BulkError = RecordError | Forbidden | PayloadTooLarge

/** An item of a non-atomic batch that failed; `id` for updates and deletes. */
export interface BulkFailure {
  readonly index: number
  readonly id?: string | undefined
  readonly error: RecordError
}

/** What a bulk request wrote, in item order, and the items that failed (none when atomic). */
export interface BulkOutcome<A> {
  readonly done: ReadonlyArray<A>
  readonly failures: ReadonlyArray<BulkFailure>
}

export interface BulkOptions {
  readonly atomic: boolean
  /** the name of the item list in the request, for error paths (`records[3].data.name`) */
  readonly list: string
  readonly skipValidation?: boolean | undefined
}

/** Options of a bulk request that may be limited to the records of one structure (generation A). */
export type ScopedBulkOptions = BulkOptions & { readonly structure?: Structure | undefined }

export type BulkEventType = "record.bulk.created" | "record.bulk.updated" | "record.bulk.deleted"

/** A create that passed its checks, waiting for its commit. */
export interface PendingCreate {
  readonly structure: Structure
  readonly input: CreateInput
  readonly writer: Writer
  readonly record: NewRecord
}

/** What an update makes of a record (RecordPrepare's planUpdate). */
export interface UpdatePlan {
  readonly data: Record<string, unknown>
  readonly metadata: Record<string, unknown>
  readonly expiresAt: string | null
  readonly version: number
  readonly changes: Changes
}

/** An update planned against its locked row, ready to be written with others. */
export interface PlannedUpdate {
  readonly row: RecordRow
  readonly structure: Structure
  readonly plan: UpdatePlan
  readonly writer: Writer
  readonly action: string
  readonly reason?: string | undefined
}

export const recordNotFound = (id: string) =>
  notFound({ message: `Record ${id.length > 64 ? `${id.slice(0, 64)}...` : id} not found`, code: "RECORD_NOT_FOUND" })

export const validationFailed = (details: ReadonlyArray<ErrorDetail>, message = "Record failed validation") =>
  badRequest({ message, code: "VALIDATION_ERROR", details })

export const versionNotFound = (id: string, version: number) =>
  notFound({ message: `Version ${version} of record ${id} does not exist`, code: "NOT_FOUND" })

/** Versions are int4 in the database. */
export const MAX_VERSION = 2_147_483_647

export const validVersion = (version: number) => Number.isInteger(version) && version >= 1 && version <= MAX_VERSION

/** Longest TTL accepted: 100 years (beyond it a date is no longer a TTL, and far enough beyond it is not a date). */
export const MAX_TTL_SECONDS = 100 * 365 * 24 * 3600

/** Most items of one bulk request (413 beyond). */
export const MAX_BULK_ITEMS = 1000
