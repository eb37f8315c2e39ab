// The record engine: every write is one SQL transaction that writes the record row, a version row, a changelog row
// and the outbox event, and keeps uniqueness, references, auto-increments and TTL right. Single-record writes
// arrive here through RecordEntity (one actor per record), upserts through RecordKeyEntity (one per business key);
// row locks (`FOR UPDATE`) keep writes that reach a row another way (cascades, bulk) correct as well.
import { badRequest, conflict, type ErrorDetail, locked, notFound, serviceUnavailable, unprocessable } from "@troupe/api/Errors"
import type { Structure } from "@troupe/api/structures/Structure"
import { Context, Data, Effect, Exit, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { isSqlError, type SqlError } from "effect/sql/SqlError"
import * as Crypto from "node:crypto"
import { appendEvent, appendEvents, type OutboxEvent } from "../events/Outbox.ts"
import * as GroupCommit from "../lib/GroupCommit.ts"
import { iso, json, num } from "../lib/rows.ts"
import { Secrets } from "../platform/Secrets.ts"
import { spanMethods } from "../platform/Tracing.ts"
import { canonicalJson, jsonEqual, parseDateTime } from "../structures/Formats.ts"
import { StructureService } from "../structures/StructureService.ts"
import { autoIncrementFields, claimsOf, referenceFields, validatorFor } from "../structures/Validator.ts"
import { inspectJson } from "./DataGuard.ts"
import { RecordFailureHook } from "./RecordFailures.ts"
import { observeBatch, observeRetry, type WriteKind } from "./WriteMetrics.ts"
import { changelogRow, eventOf, insertChangelog, insertRecords, insertVersions, type NewRecord, versionRow } from "./RecordRows.ts"
import {
  type Changes,
  changelogChanges,
  diff,
  fromRow,
  getAt,
  isUuid,
  MASK,
  maskChanges,
  maskData,
  type RecordRow,
  secretPaths,
  setAt,
  type Writer
} from "./model.ts"

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

/** The item of an atomic batch that failed it, and why. */
export interface BulkItemFailure {
  readonly index: number
  readonly error: RecordError
}

export const recordNotFound = (id: string) =>
  notFound({ message: `Record ${id.length > 64 ? `${id.slice(0, 64)}...` : id} not found`, code: "RECORD_NOT_FOUND" })
const validationFailed = (details: ReadonlyArray<ErrorDetail>, message = "Record failed validation") =>
  badRequest({ message, code: "VALIDATION_ERROR", details })
const detail = (field: string, message: string): ErrorDetail => ({ field, property: field, message })

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v)

/** A copy of `data` with `value` at `path`, creating objects along the way. */
const setDeep = (data: Record<string, unknown>, path: ReadonlyArray<string>, value: unknown): Record<string, unknown> => {
  const [head, ...rest] = path
  if (head === undefined) return data
  if (rest.length === 0) return { ...data, [head]: value }
  return { ...data, [head]: setDeep(isObject(data[head]) ? data[head] as Record<string, unknown> : {}, rest, value) }
}

const isLive = (row: RecordRow, now: number) =>
  row.deletedAt === null && (row.expiresAt === null || Date.parse(row.expiresAt) > now)

/** A create that passed its checks, waiting for its commit. */
interface PendingCreate {
  readonly structure: Structure
  readonly input: CreateInput
  readonly writer: Writer
  readonly record: NewRecord
}

/** An update waiting for its commit. */
interface PendingUpdate {
  readonly workspace: string
  readonly id: string
  readonly input: UpdateInput
  readonly writer: Writer
}

/** An update planned against its locked row (RecordService's planUpdate), ready to be written with others. */
interface PlannedUpdate {
  readonly row: RecordRow
  readonly structure: Structure
  readonly plan: {
    readonly data: Record<string, unknown>
    readonly metadata: Record<string, unknown>
    readonly expiresAt: string | null
    readonly version: number
    readonly changes: Changes
  }
  readonly writer: Writer
  readonly action: string
  readonly reason?: string | undefined
}

/** An upsert that may share a transaction with upserts of other keys. */
interface PendingUpsert {
  readonly structure: Structure
  readonly match: Record<string, unknown>
  readonly data: Record<string, unknown>
  readonly writer: Writer
  /** structure and canonical match: two items of one key never share a batch */
  readonly key: string
}

/** A delete waiting for its commit. */
interface PendingDelete {
  readonly workspace: string
  readonly id: string
  readonly permanent: boolean
  readonly writer: Writer
  readonly reason?: string
}

interface Removed {
  readonly id: string
  readonly deletedAt: string
  readonly structure: Structure
}

/** A batch claimed a unique value someone holds (or two of its items claimed the same one). */
class ClaimTaken extends Data.TaggedError("ClaimTaken") {}

/** The most writes one group commit carries. */
const WRITE_BATCH_MAX = 256

/** Versions are int4 in the database. */
const MAX_VERSION = 2_147_483_647

/** Longest TTL accepted: 100 years (beyond it a date is no longer a TTL, and far enough beyond it is not a date). */
export const MAX_TTL_SECONDS = 100 * 365 * 24 * 3600

/**
 * expiresAt wins over ttlSeconds; neither -> the structure's default TTL (on create). An explicit expiresAt must be
 * in the future and within MAX_TTL_SECONDS; ttlSeconds must be a positive number up to MAX_TTL_SECONDS.
 */
const expiryOf = (input: { ttlSeconds?: number | undefined; expiresAt?: string | undefined }, fallbackSeconds: number | null | undefined, now: number) => {
  if (input.expiresAt !== undefined) {
    const t = parseDateTime(input.expiresAt)
    if (t === undefined) return { error: validationFailed([detail("expiresAt", "expiresAt must be an ISO 8601 date-time")]) }
    if (t <= now) return { error: validationFailed([detail("expiresAt", "expiresAt must be in the future")]) }
    if (t > now + MAX_TTL_SECONDS * 1000) return { error: validationFailed([detail("expiresAt", "expiresAt must be within 100 years")]) }
    return { value: new Date(t).toISOString() }
  }
  const seconds = input.ttlSeconds ?? fallbackSeconds ?? undefined
  if (seconds === undefined || seconds === null) return { value: undefined }
  if (!Number.isFinite(seconds) || seconds <= 0 || seconds > MAX_TTL_SECONDS) {
    return { error: validationFailed([detail("ttlSeconds", `ttlSeconds must be a positive number of at most ${MAX_TTL_SECONDS}`)]) }
  }
  return { value: new Date(now + seconds * 1000).toISOString() }
}

export class RecordService extends Context.Service<RecordService, {
  readonly create: (structure: Structure, input: CreateInput, writer: Writer) => Effect.Effect<WriteResult, RecordError>
  readonly update: (workspace: string, id: string, input: UpdateInput, writer: Writer) => Effect.Effect<WriteResult, RecordError>
  readonly remove: (workspace: string, id: string, permanent: boolean, writer: Writer, reason?: string) => Effect.Effect<{ id: string; deletedAt: string; structure: Structure }, RecordError>
  readonly restore: (workspace: string, id: string, version: number | undefined, reason: string | undefined, writer: Writer) => Effect.Effect<WriteResult, RecordError>
  readonly revert: (workspace: string, id: string, reason: string | undefined, writer: Writer) => Effect.Effect<WriteResult, RecordError>
  readonly upsert: (structure: Structure, match: Record<string, unknown>, data: Record<string, unknown>, writer: Writer, idempotencyKey?: string) => Effect.Effect<{ status: number; body: unknown; replayed: boolean }, RecordError>
  /**
   * An upsert (no Idempotency-Key) of a match on a unique property, committed with upserts of other keys; `undefined`
   * when it must go through its key's actor instead (no unique property in the match, or the shared batch failed).
   */
  readonly upsertGrouped: (structure: Structure, match: Record<string, unknown>, data: Record<string, unknown>, writer: Writer) => Effect.Effect<UpsertResult | undefined, RecordError>
  /** Upserts of one match in one transaction, in order; fails as a whole (nothing written) when any item fails. */
  readonly upsertMany: (structure: Structure, match: Record<string, unknown>, items: ReadonlyArray<UpsertItem>) => Effect.Effect<ReadonlyArray<UpsertResult>, RecordError>
  /** A live record (or, with includeDeleted, a soft-deleted one). */
  readonly get: (workspace: string, id: string, options?: { includeDeleted?: boolean }) => Effect.Effect<{ row: RecordRow; structure: Structure }, RecordError>
  readonly getVersion: (workspace: string, id: string, version: number) => Effect.Effect<{ row: RecordRow; structure: Structure }, RecordError>
  readonly history: (workspace: string, id: string) => Effect.Effect<{ structure: Structure; versions: ReadonlyArray<any> }, RecordError>
  readonly changelog: (workspace: string, id: string, options: { limit?: number; startDate?: string; endDate?: string }) => Effect.Effect<{ structure: Structure; entries: ReadonlyArray<any> }, RecordError>
  /** Decrypts secret fields of stored data (callers with `secrets:reveal`). */
  readonly reveal: (structure: Structure, data: Record<string, unknown>) => Effect.Effect<Record<string, unknown>>
  /** Atomic bulk create: every item in one transaction with the `record.bulk.created` event, or nothing. */
  readonly createAll: (structure: Structure, items: ReadonlyArray<CreateInput>, writer: Writer) => Effect.Effect<ReadonlyArray<WriteResult>, BulkItemFailure | RecordError>
  /** Atomic bulk update (rows locked in id order); `structureId` restricts the batch to one structure. */
  readonly updateAll: (workspace: string, items: ReadonlyArray<{ id: string; input: UpdateInput }>, writer: Writer, structureId?: string) => Effect.Effect<ReadonlyArray<WriteResult>, BulkItemFailure | RecordError>
  /** Atomic bulk delete. */
  readonly removeAll: (workspace: string, ids: ReadonlyArray<string>, permanent: boolean, writer: Writer, structureId?: string) => Effect.Effect<ReadonlyArray<{ id: string; deletedAt: string; structureId: string }>, BulkItemFailure | RecordError>
  /** The `record.bulk.*` event of a non-atomic batch, in a transaction of its own after the items. */
  readonly publishBulk: (structure: Structure, type: "record.bulk.created" | "record.bulk.updated" | "record.bulk.deleted", ids: ReadonlyArray<string>, writer: Writer) => Effect.Effect<void>
}>()("@troupe/server/records/RecordService") {
  static readonly layer = Layer.effect(RecordService, Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const structures = yield* StructureService
    const secrets = yield* Secrets
    const onFailure = yield* RecordFailureHook
    // Batches of one kind written at once. PostgreSQL: two, so one is being prepared while the other commits (one
    // or four measured no better). PGlite runs one transaction at a time: a second batch would only wait, holding
    // items the running one could have taken.
    const writeBatchesInFlight = sql.driver === "pglite" ? 1 : 2

    // ---------------------------------------------------------------- shared pieces of a write transaction

    const writable = (structure: Structure) =>
      structure.status === "inactive"
        ? Effect.fail(conflict({ message: `Structure "${structure.recordSlug}" is inactive and accepts no new records`, code: "STRUCTURE_INACTIVE" }))
        : structure.metadata?.recordWritesLocked
        ? Effect.fail(locked({ message: "Record writes are locked while a migration runs", code: "RECORD_WRITES_LOCKED" }))
        : Effect.void

    /** Encrypts every secret that is not the stored ciphertext already (new plaintext, whatever it looks like). */
    const encryptSecrets = (structure: Structure, data: Record<string, unknown>, previous?: Record<string, unknown>) => {
      let out = data
      for (const path of secretPaths(structure)) {
        const v = getAt(out, path)
        if (typeof v !== "string" || (previous !== undefined && v === getAt(previous, path))) continue
        out = setAt(out, path, secrets.encrypt(v, `${structure.id}:${path.join(".")}`))
      }
      return out
    }

    const reveal = (structure: Structure, data: Record<string, unknown>) =>
      Effect.gen(function*() {
        let out = data
        for (const path of secretPaths(structure)) {
          const v = getAt(out, path)
          if (typeof v === "string" && secrets.isEncrypted(v)) {
            out = setAt(out, path, yield* secrets.decrypt(v, `${structure.id}:${path.join(".")}`).pipe(Effect.orElseSucceed(() => null)))
          }
        }
        return out
      })

    /**
     * Validation sees plaintext: stored secrets are decrypted for the merge base, and a client that writes back what
     * it read (the mask) gets the stored value in its place. Afterwards every secret equal to the stored plaintext
     * is put back as the stored ciphertext, so an unchanged secret is no change (and is not re-encrypted).
     */
    const withPlainSecrets = (structure: Structure, input: Record<string, unknown>, previous: Record<string, unknown> | undefined) =>
      Effect.gen(function*() {
        if (previous === undefined || secretPaths(structure).length === 0) {
          return { input, previous, restore: (out: Record<string, unknown>) => out }
        }
        const plain = yield* reveal(structure, previous)
        let patched = input
        for (const path of secretPaths(structure)) {
          const stored = getAt(plain, path)
          if (getAt(patched, path) === MASK && typeof stored === "string") patched = setAt(patched, path, stored)
        }
        const restore = (out: Record<string, unknown>) => {
          let result = out
          for (const path of secretPaths(structure)) {
            const v = getAt(result, path)
            if (typeof v === "string" && v === getAt(plain, path)) result = setAt(result, path, getAt(previous, path))
          }
          return result
        }
        return { input: patched, previous: plain, restore }
      })

    /** Client data -> the data to store (new secrets still plaintext), or a 400 naming every problem. */
    const validate = (structure: Structure, data: unknown, mode: "create" | "update" | "replace", stored: Record<string, unknown> | undefined, skip: boolean) =>
      Effect.gen(function*() {
        if (!isObject(data)) return yield* validationFailed([detail("data", "must be an object")])
        const problems = inspectJson(data, "data", structure.properties)
        if (problems.length > 0) return yield* validationFailed(problems)
        const { input, previous, restore } = yield* withPlainSecrets(structure, data, stored)
        let out: Record<string, unknown>
        if (skip) {
          // skipValidation: only the checks above; update keeps the shallow-patch semantics (null unsets)
          out = mode === "update" ? { ...previous } : {}
          for (const [k, v] of Object.entries(input)) {
            if (v === null && mode === "update") delete out[k]
            else out[k] = v
          }
        } else {
          const result = validatorFor(structure).validate(input, { mode, previous, now: new Date() })
          if (!result.ok) return yield* validationFailed(result.errors)
          out = result.data
        }
        return restore(out)
      })

    /** Metadata is free-form, but stored JSON all the same. */
    const checkMetadata = (metadata: unknown) =>
      Effect.gen(function*() {
        if (metadata === undefined) return
        if (!isObject(metadata)) return yield* validationFailed([detail("metadata", "must be an object")])
        const problems = inspectJson(metadata, "metadata")
        if (problems.length > 0) return yield* validationFailed(problems)
      })

    /** Referenced records must exist (live) in the target structure. */
    const checkReferences = (structure: Structure, data: Record<string, unknown>, previous: Record<string, unknown> | undefined) =>
      Effect.gen(function*() {
        for (const ref of referenceFields(structure)) {
          const value = data[ref.field]
          if (value === undefined || value === null) continue
          if (previous !== undefined && jsonEqual(previous[ref.field], value)) continue
          const ids = Array.isArray(value) ? value : [value]
          if (ids.some((x) => typeof x !== "string")) {
            return yield* validationFailed([detail(`data.${ref.field}`, "references are record ids (strings)")])
          }
          const target = yield* structures.getBySlug(structure.workspaceSlug, ref.target).pipe(
            Effect.mapError(() => validationFailed([detail(`data.${ref.field}`, `target structure "${ref.target}" does not exist`)]))
          )
          const wanted = [...new Set(ids as Array<string>)]
          if (ref.targetField === "id" && wanted.some((x) => !isUuid(x))) {
            return yield* validationFailed([detail(`data.${ref.field}`, "referenced record does not exist")])
          }
          const found = ref.targetField === "id"
            ? yield* sql`SELECT id AS v FROM records WHERE structure_id = ${target.id} AND deleted_at IS NULL
                AND (expires_at IS NULL OR expires_at > now()) AND id IN ${sql.in(wanted)}`.pipe(Effect.orDie)
            : yield* sql`SELECT data->>${ref.targetField} AS v FROM records WHERE structure_id = ${target.id} AND deleted_at IS NULL
                AND (expires_at IS NULL OR expires_at > now()) AND data->>${ref.targetField} IN ${sql.in(wanted)}`.pipe(Effect.orDie)
          const have = new Set(found.map((r: any) => String(r.v)))
          const missing = wanted.filter((x) => !have.has(x))
          if (missing.length > 0) {
            return yield* validationFailed([detail(`data.${ref.field}`, `referenced record ${missing.join(", ")} does not exist in "${ref.target}"`)])
          }
        }
      })

    const claimUnique = (structure: Structure, recordId: string, data: Record<string, unknown>, previous: Record<string, unknown> | undefined) =>
      Effect.gen(function*() {
        const before = new Map(previous ? claimsOf(structure, previous) : [])
        const after = claimsOf(structure, data)
        for (const [field, value] of before) {
          if (!after.some(([f, v]) => f === field && v === value)) {
            yield* sql`DELETE FROM record_unique_values WHERE structure_id = ${structure.id} AND field = ${field} AND record_id = ${recordId}`
          }
        }
        for (const [field, value] of after) {
          if (before.get(field) === value) continue
          const insert = sql`INSERT INTO record_unique_values (structure_id, field, value, record_id)
            VALUES (${structure.id}, ${field}, ${value}, ${recordId}) ON CONFLICT DO NOTHING RETURNING record_id`
          let rows = yield* insert
          if (rows.length === 0) {
            // an expired record is gone for every reader at once, so its value is free before the sweeper runs
            const freed = yield* sql`DELETE FROM record_unique_values u USING records r
              WHERE u.structure_id = ${structure.id} AND u.field = ${field} AND u.value = ${value} AND r.id = u.record_id
                AND (r.expires_at <= now() OR r.deleted_at IS NOT NULL) RETURNING u.record_id`
            if (freed.length > 0) rows = yield* insert
          }
          if (rows.length === 0) {
            const name = field.startsWith("ref:") ? field.slice(4) : field
            return yield* Effect.fail(conflict({
              message: field.startsWith("ref:")
                ? `Another record already references this target through one-to-one "${name}"`
                : `A record with this ${name} already exists`,
              code: "DUPLICATE_KEY",
              details: [detail(`data.${name}`, "must be unique")]
            }))
          }
        }
      })

    const assignAutoIncrements = (structure: Structure, data: Record<string, unknown>) =>
      Effect.gen(function*() {
        const fields = autoIncrementFields(structure)
        if (fields.length === 0) return data
        const out = { ...data }
        for (const f of fields) {
          if (out[f.field] !== undefined && out[f.field] !== null) continue
          const rows = yield* sql`INSERT INTO auto_increments (structure_id, field, next_value)
            VALUES (${structure.id}, ${f.field}, ${f.startAt + f.incrementBy})
            ON CONFLICT (structure_id, field) DO UPDATE SET next_value = auto_increments.next_value + ${f.incrementBy}
            RETURNING next_value - ${f.incrementBy} AS value`
          out[f.field] = Number(rows[0]!.value)
        }
        return out
      })

    const recordEvent = (...event: Parameters<typeof eventOf>) => appendEvent(sql, eventOf(...event))

    const writeChangelog = (row: RecordRow, action: string, changes: Changes, writer: Writer, meta: Record<string, unknown> = {}) =>
      insertChangelog(sql, [changelogRow(row, action, changes, writer, meta)])

    const writeVersion = (row: RecordRow, changes: Changes, writer: Writer, restoredFrom: number | null = null) =>
      insertVersions(sql, [versionRow(row, changes, writer, restoredFrom)])

    const lock = (workspace: string, id: string) =>
      isUuid(id)
        ? sql`SELECT * FROM records WHERE id = ${id} AND workspace = ${workspace} FOR UPDATE`.pipe(
          Effect.map((rows) => (rows[0] ? fromRow(rows[0]) : undefined))
        )
        : Effect.succeed(undefined)

    /** The structure of a record being written; a soft-deleted structure hides its records. */
    const liveStructure = (workspace: string, row: RecordRow) =>
      Effect.flatMap(structures.get(workspace, row.structureId).pipe(Effect.mapError(() => recordNotFound(row.id))), (s) =>
        s.isDeleted ? Effect.fail(recordNotFound(row.id)) : Effect.succeed(s))

    const lockLive = (workspace: string, id: string) =>
      Effect.flatMap(lock(workspace, id), (row) =>
        row !== undefined && isLive(row, Date.now()) ? Effect.succeed(row) : Effect.fail(recordNotFound(id)))

    /** Unique violations the checks above did not foresee are 409s; other SQL failures are defects. */
    const transaction = <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, Exclude<E, SqlError> | ReturnType<typeof conflict>, R> =>
      sql.withTransaction(effect).pipe(
        Effect.catch((e: any) =>
          isSqlError(e)
            ? e.reason._tag === "UniqueViolation"
              ? Effect.fail(conflict({ message: "A unique constraint was violated", code: "DUPLICATE_KEY" }))
              : e.reason._tag === "DeadlockError" || e.reason._tag === "SerializationError" || e.reason._tag === "LockTimeoutError"
              ? Effect.fail(conflict({ message: "The write collided with a concurrent write; retry it", code: "CONFLICT" }))
              : Effect.die(e)
            : Effect.fail(e))
      ) as any

    // ---------------------------------------------------------------- create

    /** The checks of a create that need no SQL: writable, expiry, validation, metadata. */
    const prepareCreate = (structure: Structure, input: CreateInput, writer: Writer) =>
      Effect.gen(function*() {
        yield* writable(structure)
        const expiry = expiryOf(input, structure.defaultTtlSeconds, Date.now())
        if (expiry.error) return yield* expiry.error
        const data = yield* validate(structure, input.data, "create", undefined, input.skipValidation === true && writer.canSkipValidation)
        yield* checkMetadata(input.metadata)
        return { data, expiresAt: expiry.value ?? null }
      })

    const newRecord = (structure: Structure, input: CreateInput, writer: Writer, data: Record<string, unknown>, expiresAt: string | null): NewRecord => ({
      id: Crypto.randomUUID(),
      workspace: structure.workspaceSlug,
      structure_id: structure.id,
      data: encryptSecrets(structure, data),
      metadata: (input.metadata ?? {}) as Record<string, unknown>,
      created_by: writer.userId,
      expires_at: expiresAt
    })

    const createInTx = (structure: Structure, input: CreateInput, writer: Writer) =>
      Effect.gen(function*() {
        const prepared = yield* prepareCreate(structure, input, writer)
        yield* checkReferences(structure, prepared.data, undefined)
        const data = yield* assignAutoIncrements(structure, prepared.data)
        const [written] = yield* insertCreated([{ structure, input, writer, record: newRecord(structure, input, writer, data, prepared.expiresAt) }], claimOne)
        return written!
      })

    /**
     * Inserts new records with their unique claims, versions, changelog entries and events: one statement per table
     * for the whole batch. `claim` takes their unique values: claimOne for one record, claimAll for a batch.
     */
    const insertCreated = <E>(items: ReadonlyArray<PendingCreate>, claim: (items: ReadonlyArray<PendingCreate>) => Effect.Effect<void, E | SqlError>) =>
      Effect.gen(function*() {
        const rows = yield* insertRecords(sql, items.map((i) => i.record))
        yield* claim(items)
        const changes = items.map((item) => diff(item.structure, {}, item.record.data))
        const reason = (item: PendingCreate) => (item.input.reason ? { reason: item.input.reason } : {})
        yield* insertVersions(sql, rows.map((row, k) => versionRow(row, changes[k]!, items[k]!.writer)))
        yield* insertChangelog(sql, rows.map((row, k) => changelogRow(row, "create", changes[k]!, items[k]!.writer, reason(items[k]!))))
        yield* appendEvents(sql, rows.map((row, k) => eventOf("record.created", items[k]!.structure, row, null, changes[k]!, items[k]!.writer)))
        return rows.map((row, k) => ({ row, structure: items[k]!.structure }))
      })

    const claimOne = (items: ReadonlyArray<PendingCreate>) => claimUnique(items[0]!.structure, items[0]!.record.id, items[0]!.record.data, undefined)

    /**
     * Every claim of a batch in one statement; ClaimTaken when any value is held or claimed twice (the batch is then
     * written one by one, where claimUnique frees the values of expired holders and names the field).
     */
    const claimAll = (items: ReadonlyArray<PendingCreate>) =>
      Effect.gen(function*() {
        const claims = items.flatMap((item) =>
          claimsOf(item.structure, item.record.data).map(([field, value]) => ({ structure_id: item.structure.id, field, value, record_id: item.record.id })))
        if (claims.length === 0) return
        const claimed = yield* sql`INSERT INTO record_unique_values (structure_id, field, value, record_id)
          SELECT structure_id, field, value, record_id FROM jsonb_to_recordset(${JSON.stringify(claims)}::jsonb)
            AS v(structure_id uuid, field text, value text, record_id uuid)
          ON CONFLICT DO NOTHING RETURNING record_id`
        if (claimed.length < claims.length) return yield* Effect.fail(new ClaimTaken())
      })

    /**
     * The batch's transaction, counted; when it fails with an error (nothing was written), `oneByOne` writes every
     * item on its own. A defect (the database gone mid-commit) reaches every caller as it is: retrying could write twice.
     */
    const batched = <B>(kind: WriteKind, size: number, oneByOne: Effect.Effect<B>) => <A, E>(batch: Effect.Effect<A, E>): Effect.Effect<A | B> =>
      Effect.andThen(observeBatch(kind, size), Effect.catch(batch, () => Effect.andThen(observeRetry(kind), oneByOne)))

    /** Creates whose only SQL is their insert (no references to check, no counters to draw) can share a commit. */
    const batchable = (structure: Structure) => referenceFields(structure).length === 0 && autoIncrementFields(structure).length === 0

    /**
     * A batch of creates from concurrent requests: one transaction. When it fails as a whole (a claimed value, a
     * collision), nothing of it was written and each item is written on its own, so each caller gets its own outcome.
     */
    const writeCreates = (items: ReadonlyArray<PendingCreate>) => {
      // the items are validated and encrypted already: alone, each is the single-record write
      const oneByOne = Effect.forEach(items, (item) =>
        Effect.exit(Effect.map(transaction(insertCreated([item], claimOne)), (written): WriteResult => written[0]!)))
      if (items.length === 1) return Effect.andThen(observeBatch("create", 1), oneByOne)
      return transaction(insertCreated(items, claimAll)).pipe(
        Effect.map((written) => written.map((w): Exit.Exit<WriteResult, RecordError> => Exit.succeed(w))),
        batched("create", items.length, oneByOne)
      )
    }

    /** One queue of the node's group commit (lib/GroupCommit.ts), writing its batches with `run`. */
    const groupCommit = <I, A>(run: (items: ReadonlyArray<I>) => Effect.Effect<ReadonlyArray<Exit.Exit<A, RecordError>>>) =>
      GroupCommit.make({
        maxBatch: WRITE_BATCH_MAX,
        concurrency: writeBatchesInFlight,
        run,
        onShutdown: (): RecordError => serviceUnavailable({ message: "The node is shutting down; retry the write", code: "UNAVAILABLE" }) as RecordError
      })

    const creates = yield* groupCommit(writeCreates)

    /**
     * After a failed single-record write rolled back: tells the failure hook (record_*_failed triggers). `structure`
     * is what the write had resolved by then; without one (an unknown record) there is nothing to tell.
     */
    const reported = <A>(
      kind: "create" | "update" | "delete",
      recordId: string | undefined,
      input: unknown,
      writer: Writer,
      structureOf: () => Structure | undefined
    ) => (effect: Effect.Effect<A, RecordError>) =>
      Effect.tapError(effect, (error) => {
        const structure = structureOf()
        return structure === undefined
          ? Effect.void
          : onFailure({ kind, structure, recordId, error, input, writer }).pipe(Effect.catchCause(() => Effect.void))
      })

    const create = (structure: Structure, input: CreateInput, writer: Writer) =>
      (batchable(structure)
        ? Effect.flatMap(prepareCreate(structure, input, writer), (p) =>
          creates.submit({ structure, input, writer, record: newRecord(structure, input, writer, p.data, p.expiresAt) }))
        : transaction(createInTx(structure, input, writer))
      ).pipe(reported("create", undefined, input.data, writer, () => structure))

    // ---------------------------------------------------------------- update / replace

    /**
     * What an update makes of `row`: every check (version, validation, metadata, references, unique claims, expiry)
     * and the new data, metadata, expiry and version. SQL only for references and unique values that change.
     */
    const planUpdate = (row: RecordRow, structure: Structure, input: UpdateInput, writer: Writer) =>
      Effect.gen(function*() {
        if (input.expectedVersion !== undefined && input.expectedVersion !== row.version) {
          return yield* Effect.fail(conflict({
            message: `Version conflict: expected ${input.expectedVersion}, the record is at version ${row.version}`,
            code: "VERSION_CONFLICT",
            details: [detail("version", `current version is ${row.version}`)]
          }))
        }
        const skip = input.skipValidation === true && writer.canSkipValidation
        const patch = input.increments === undefined ? input.data : yield* incremented(row.data, input.data, input.increments)
        let data = yield* validate(structure, patch, input.replace ? "replace" : "update", row.data, skip)
        yield* checkMetadata(input.metadata)
        yield* checkReferences(structure, data, row.data)
        data = encryptSecrets(structure, data, row.data)
        yield* claimUnique(structure, row.id, data, row.data)
        let expiresAt = row.expiresAt
        if (input.clearTtl === true) expiresAt = null
        else if (input.expiresAt !== undefined || input.ttlSeconds !== undefined) {
          const expiry = expiryOf(input, undefined, Date.now())
          if (expiry.error) return yield* expiry.error
          expiresAt = expiry.value ?? null
        }
        const metadata = input.metadata === undefined ? row.metadata : input.replace ? input.metadata : { ...row.metadata, ...input.metadata }
        const version = input.createVersion === false ? row.version : row.version + 1
        return { data, metadata, expiresAt, version, changes: diff(structure, row.data, data) }
      })

    /** The patch plus each increment applied to the stored value (nested paths copy their parent objects). */
    const incremented = (stored: Record<string, unknown>, patch: Record<string, unknown>, increments: Readonly<Record<string, number>>) =>
      Effect.gen(function*() {
        let out: Record<string, unknown> = { ...patch }
        for (const [field, by] of Object.entries(increments)) {
          const path = field.split(".")
          if (!Number.isFinite(by)) return yield* validationFailed([detail(field, "the amount must be a finite number")])
          const current = getAt(stored, path)
          if (current !== undefined && current !== null && typeof current !== "number") {
            return yield* validationFailed([detail(field, `${field} holds a ${Array.isArray(current) ? "array" : typeof current}, not a number`)])
          }
          const next = ((current as number | null | undefined) ?? 0) + by
          const [head, ...rest] = path
          if (rest.length === 0) out[head!] = next
          else {
            const base = isObject(out[head!]) ? out[head!] as Record<string, unknown> : isObject(stored[head!]) ? stored[head!] as Record<string, unknown> : {}
            out = { ...out, [head!]: setDeep(base, rest, next) }
          }
        }
        return out
      })

    const updateInTx = (row: RecordRow, structure: Structure, input: UpdateInput, writer: Writer, action = "update") =>
      Effect.gen(function*() {
        const plan = yield* planUpdate(row, structure, input, writer)
        const rows = yield* sql`UPDATE records SET data = ${JSON.stringify(plan.data)}::jsonb,
            metadata = ${JSON.stringify(plan.metadata)}::jsonb, version = ${plan.version}, updated_by = ${writer.userId},
            updated_at = now(), expires_at = ${plan.expiresAt}
          WHERE id = ${row.id} RETURNING *`
        const next = fromRow(rows[0])
        if (plan.version === row.version) {
          yield* sql`UPDATE record_versions SET data = ${JSON.stringify(plan.data)}::jsonb WHERE record_id = ${row.id} AND version = ${row.version}`
        } else {
          yield* writeVersion(next, plan.changes, writer)
        }
        yield* writeChangelog(next, action, plan.changes, writer, input.reason ? { reason: input.reason } : {})
        yield* recordEvent("record.updated", structure, next, row.data, plan.changes, writer)
        return { row: next, structure, previousVersion: row.version }
      })

    /** One update in its own transaction, its failure told to the failure hook. */
    const updateOne = ({ workspace, id, input, writer }: PendingUpdate) => {
      let structure: Structure | undefined
      return transaction(Effect.gen(function*() {
        const row = yield* lockLive(workspace, id)
        structure = yield* liveStructure(workspace, row)
        return yield* updateInTx(row, structure, input, writer, input.replace ? "replace" : "update")
      })).pipe(reported("update", id, input.data, writer, () => structure))
    }

    /** Planned updates of different records written together: one statement per table; the new rows, in order. */
    const applyUpdates = (planned: ReadonlyArray<PlannedUpdate>) =>
      Effect.gen(function*() {
        const updated = yield* sql`UPDATE records r SET data = v.data, metadata = v.metadata, version = v.version,
            updated_by = v.updated_by, updated_at = now(), expires_at = v.expires_at
          FROM jsonb_to_recordset(${JSON.stringify(planned.map(({ row, plan, writer }) => ({
            id: row.id, data: plan.data, metadata: plan.metadata, version: plan.version, updated_by: writer.userId, expires_at: plan.expiresAt
          })))}::jsonb) AS v(id uuid, data jsonb, metadata jsonb, version int, updated_by text, expires_at timestamptz)
          WHERE r.id = v.id RETURNING r.*`
        const byId = new Map(updated.map((r: any) => [String(r.id), fromRow(r)]))
        const next = planned.map((p) => byId.get(p.row.id)!)
        yield* insertVersions(sql, planned.map((p, k) => versionRow(next[k]!, p.plan.changes, p.writer)))
        yield* insertChangelog(sql, planned.map((p, k) => changelogRow(next[k]!, p.action, p.plan.changes, p.writer, p.reason ? { reason: p.reason } : {})))
        yield* appendEvents(sql, planned.map((p, k) => eventOf("record.updated", p.structure, next[k]!, p.row.data, p.plan.changes, p.writer)))
        return next
      })

    /**
     * Updates of different records from concurrent requests (each record's actor sends one at a time): the rows
     * locked in id order, each planned as on its own, then one statement per table. Any failure (a conflict, a
     * validation error, a record gone) rolls the batch back and writes each item on its own for its exact outcome.
     */
    const writeUpdates = (items: ReadonlyArray<PendingUpdate>) => {
      const oneByOne = Effect.forEach(items, (item) => Effect.exit(updateOne(item)))
      if (items.length === 1 || new Set(items.map((i) => i.id)).size < items.length) return Effect.andThen(observeBatch("update", 1), oneByOne)
      return transaction(Effect.gen(function*() {
        const locked = yield* sql`SELECT * FROM records WHERE id IN ${sql.in(items.map((i) => i.id).sort())} ORDER BY id FOR UPDATE`
        const rows = new Map(locked.map((r: any) => [String(r.id), fromRow(r)]))
        const planned: Array<{ item: PendingUpdate; row: RecordRow; structure: Structure; plan: Effect.Success<ReturnType<typeof planUpdate>> }> = []
        for (const item of items) {
          const row = rows.get(item.id)
          if (row === undefined || row.workspace !== item.workspace || !isLive(row, Date.now())) return yield* recordNotFound(item.id)
          const structure = yield* liveStructure(item.workspace, row)
          const plan = yield* planUpdate(row, structure, item.input, item.writer)
          planned.push({ item, row, structure, plan })
        }
        const written = yield* applyUpdates(planned.map((p) => ({
          row: p.row, structure: p.structure, plan: p.plan, writer: p.item.writer, action: p.item.input.replace ? "replace" : "update",
          reason: p.item.input.reason
        })))
        return written.map((next, k): Exit.Exit<WriteResult, RecordError> =>
          Exit.succeed({ row: next, structure: planned[k]!.structure, previousVersion: planned[k]!.row.version }))
      })).pipe(batched("update", items.length, oneByOne))
    }

    const updates = yield* groupCommit(writeUpdates)

    /** Updates that keep the version (createVersion: false) rewrite their version row: they go on their own. */
    const update = (workspace: string, id: string, input: UpdateInput, writer: Writer) =>
      input.createVersion === false || !isUuid(id) ? updateOne({ workspace, id, input, writer }) : updates.submit({ workspace, id, input, writer })

    // ---------------------------------------------------------------- delete (with onDelete of references)

    /**
     * onDelete of every reference to `row`, in the same transaction: restrict refuses (409), cascade deletes the
     * referencing records (transitively), set_null clears the reference (one new version per referencing record,
     * whatever number of its fields pointed here; many-to-many arrays lose the id).
     */
    const applyOnDelete = (structure: Structure, row: RecordRow, permanent: boolean, writer: Writer, depth: number): Effect.Effect<void, RecordError | SqlError> =>
      Effect.gen(function*() {
        if (depth > 32) return yield* conflict({ message: "Cascade too deep", code: "CONFLICT" })
        const all = yield* structures.all(structure.workspaceSlug)
        for (const other of all) {
          const refs = referenceFields(other).filter((ref) => ref.target === structure.recordSlug)
          if (refs.length === 0) continue
          const cleared = new Map<string, { row: RecordRow; data: Record<string, unknown> }>()
          const cascaded = new Set<string>()
          for (const ref of refs) {
            const key = ref.targetField === "id" ? row.id : row.data[ref.targetField]
            if (key === undefined || key === null) continue
            const single = JSON.stringify({ [ref.field]: key })
            const many = JSON.stringify({ [ref.field]: [key] })
            const referencing = (yield* sql`SELECT * FROM records WHERE structure_id = ${other.id} AND deleted_at IS NULL
                AND (expires_at IS NULL OR expires_at > now()) AND id <> ${row.id}
                AND (data @> ${single}::jsonb OR data @> ${many}::jsonb) ORDER BY id FOR UPDATE`).map(fromRow)
            if (referencing.length === 0) continue
            if (ref.onDelete === "restrict") {
              return yield* conflict({
                message: `Record ${row.id} is referenced by ${referencing.length} record(s) of "${other.recordSlug}" (${ref.field}, onDelete restrict)`,
                code: "REFERENCE_RESTRICT",
                details: referencing.slice(0, 20).map((r) => detail(`${other.recordSlug}.${r.id}.${ref.field}`, "references this record"))
              })
            }
            for (const r of referencing) {
              if (ref.onDelete === "cascade") {
                if (cascaded.has(r.id)) continue
                cascaded.add(r.id)
                cleared.delete(r.id)
                yield* deleteInTx(other, r, permanent, { ...writer, source: "cascade" }, depth + 1)
              } else if (!cascaded.has(r.id)) {
                const entry = cleared.get(r.id) ?? { row: r, data: { ...r.data } }
                const value = entry.data[ref.field]
                entry.data[ref.field] = Array.isArray(value) ? value.filter((x) => x !== key) : null
                cleared.set(r.id, entry)
              }
            }
          }
          for (const { row: r, data } of cleared.values()) {
            yield* updateInTx(r, other, { data, replace: true, skipValidation: true }, { ...writer, source: "set_null", canSkipValidation: true })
          }
        }
      })

    const deleteInTx = (structure: Structure, row: RecordRow, permanent: boolean, writer: Writer, depth = 0, reason?: string): Effect.Effect<string, RecordError | SqlError> =>
      Effect.gen(function*() {
        yield* applyOnDelete(structure, row, permanent, writer, depth)
        const deletedAt = new Date().toISOString()
        if (permanent) {
          yield* sql`DELETE FROM records WHERE id = ${row.id}`
        } else {
          yield* sql`UPDATE records SET deleted_at = ${deletedAt}, updated_by = ${writer.userId}, updated_at = now() WHERE id = ${row.id}`
          yield* sql`DELETE FROM record_unique_values WHERE record_id = ${row.id}`
          yield* writeChangelog(row, "delete", {}, writer, reason ? { reason } : {})
        }
        yield* recordEvent("record.deleted", structure, row, row.data, {}, writer)
        return deletedAt
      })

    const removeOne = ({ workspace, id, permanent, writer, reason }: PendingDelete) => {
      let found: Structure | undefined
      return transaction(Effect.gen(function*() {
        const row = yield* lock(workspace, id)
        if (row === undefined || (!permanent && !isLive(row, Date.now()))) return yield* recordNotFound(id)
        const structure = found = yield* liveStructure(workspace, row)
        const deletedAt = yield* deleteInTx(structure, row, permanent, writer, 0, reason)
        return { id: row.id, deletedAt, structure }
      })).pipe(reported("delete", id, { permanent }, writer, () => found))
    }

    /** A structure no reference points at: deleting its records touches no other record. */
    const unreferenced = (workspace: string, structure: Structure) =>
      Effect.map(structures.all(workspace), (all) =>
        !all.some((other) => referenceFields(other).some((ref) => ref.target === structure.recordSlug)))

    /**
     * Deletes of different records from concurrent requests, as writeUpdates does updates. Records of a structure
     * that references point at (onDelete work on other records) fail the batch, and so go one by one.
     */
    const writeDeletes = (items: ReadonlyArray<PendingDelete>) => {
      const oneByOne = Effect.forEach(items, (item) => Effect.exit(removeOne(item)))
      if (items.length === 1 || new Set(items.map((i) => i.id)).size < items.length) return Effect.andThen(observeBatch("delete", 1), oneByOne)
      return transaction(Effect.gen(function*() {
        const locked = yield* sql`SELECT * FROM records WHERE id IN ${sql.in(items.map((i) => i.id).sort())} ORDER BY id FOR UPDATE`
        const rows = new Map(locked.map((r: any) => [String(r.id), fromRow(r)]))
        const deletedAt = new Date().toISOString()
        const planned: Array<{ item: PendingDelete; row: RecordRow; structure: Structure }> = []
        for (const item of items) {
          const row = rows.get(item.id)
          if (row === undefined || row.workspace !== item.workspace || (!item.permanent && !isLive(row, Date.now()))) return yield* recordNotFound(item.id)
          const structure = yield* liveStructure(item.workspace, row)
          if (!(yield* unreferenced(item.workspace, structure))) return yield* conflict({ message: "referenced", code: "CONFLICT" })
          planned.push({ item, row, structure })
        }
        const gone = planned.filter((p) => p.item.permanent).map((p) => p.row.id)
        const soft = planned.filter((p) => !p.item.permanent)
        if (gone.length > 0) yield* sql`DELETE FROM records WHERE id IN ${sql.in(gone)}`
        if (soft.length > 0) {
          yield* sql`UPDATE records r SET deleted_at = ${deletedAt}, updated_by = v.updated_by, updated_at = now()
            FROM jsonb_to_recordset(${JSON.stringify(soft.map((p) => ({ id: p.row.id, updated_by: p.item.writer.userId })))}::jsonb)
              AS v(id uuid, updated_by text)
            WHERE r.id = v.id`
          yield* sql`DELETE FROM record_unique_values WHERE record_id IN ${sql.in(soft.map((p) => p.row.id))}`
          yield* insertChangelog(sql, soft.map((p) => changelogRow(p.row, "delete", {}, p.item.writer, p.item.reason ? { reason: p.item.reason } : {})))
        }
        yield* appendEvents(sql, planned.map((p) => eventOf("record.deleted", p.structure, p.row, p.row.data, {}, p.item.writer)))
        return planned.map((p): Exit.Exit<Removed, RecordError> => Exit.succeed({ id: p.row.id, deletedAt, structure: p.structure }))
      })).pipe(batched("delete", items.length, oneByOne))
    }

    const deletes = yield* groupCommit(writeDeletes)

    const remove = (workspace: string, id: string, permanent: boolean, writer: Writer, reason?: string) =>
      isUuid(id)
        ? deletes.submit({ workspace, id, permanent, writer, ...(reason !== undefined ? { reason } : {}) })
        : removeOne({ workspace, id, permanent, writer, ...(reason !== undefined ? { reason } : {}) })

    // ---------------------------------------------------------------- restore / revert

    const snapshot = (id: string, version: number) =>
      sql`SELECT * FROM record_versions WHERE record_id = ${id} AND version = ${version}`.pipe(
        Effect.map((rows) => (rows[0] ? json<Record<string, unknown>>(rows[0].data) : undefined))
      )

    const rewind = (row: RecordRow, structure: Structure, data: Record<string, unknown>, restoredFrom: number, event: string, action: string, reason: string | undefined, writer: Writer) =>
      Effect.gen(function*() {
        // a soft-deleted record gave its unique values up: it claims them (and checks its references) afresh
        const before = row.deletedAt === null ? row.data : undefined
        yield* checkReferences(structure, data, before)
        yield* claimUnique(structure, row.id, data, before)
        const rows = yield* sql`UPDATE records SET data = ${JSON.stringify(data)}::jsonb, version = version + 1,
            updated_by = ${writer.userId}, updated_at = now(), deleted_at = NULL
          WHERE id = ${row.id} RETURNING *`
        const next = fromRow(rows[0])
        const changes = diff(structure, row.data, data)
        yield* writeVersion(next, changes, writer, restoredFrom)
        yield* writeChangelog(next, action, changes, writer, { ...(reason ? { reason } : {}), restoredFrom })
        yield* recordEvent(event, structure, next, row.data, changes, writer)
        return { row: next, structure, previousVersion: row.version, restoredFrom }
      })

    const restore = (workspace: string, id: string, version: number | undefined, reason: string | undefined, writer: Writer) =>
      transaction(Effect.gen(function*() {
        const row = yield* lock(workspace, id)
        if (row === undefined || (row.expiresAt !== null && Date.parse(row.expiresAt) <= Date.now())) return yield* recordNotFound(id)
        const structure = yield* liveStructure(workspace, row)
        if (version === undefined) {
          // restore of a soft-deleted record: it comes back as it was
          if (row.deletedAt === null) {
            return yield* validationFailed([detail("version", "version is required to restore a live record")], "Nothing to restore")
          }
          return yield* rewind(row, structure, row.data, row.version, "record.restored", "restore", reason, writer)
        }
        if (row.deletedAt !== null) return yield* recordNotFound(id)
        if (!Number.isInteger(version) || version < 1 || version > MAX_VERSION) return yield* validationFailed([detail("version", "version must be a positive integer")])
        const data = yield* snapshot(row.id, version)
        if (data === undefined) return yield* notFound({ message: `Version ${version} of record ${id} does not exist`, code: "VERSION_NOT_FOUND" })
        return yield* rewind(row, structure, data, version, "record.restored", "restore", reason, writer)
      }))

    const revert = (workspace: string, id: string, reason: string | undefined, writer: Writer) =>
      transaction(Effect.gen(function*() {
        const row = yield* lockLive(workspace, id)
        const structure = yield* liveStructure(workspace, row)
        const previous = yield* sql`SELECT * FROM record_versions WHERE record_id = ${row.id} AND version < ${row.version}
          ORDER BY version DESC LIMIT 1`.pipe(Effect.map((rows) => rows[0]))
        if (previous === undefined) {
          return yield* unprocessable({ message: "The record has no previous version to revert to", code: "NO_PREVIOUS_VERSION" })
        }
        return yield* rewind(row, structure, json(previous.data), num(previous.version), "record.reverted", "revert", reason, writer)
      }))

    // ---------------------------------------------------------------- upsert

    /**
     * Upserts of different keys from concurrent requests in one transaction: each looks its record up (locked) and
     * is planned as an update or a create, then all are written together. Only matches on a unique property come
     * here: its claim settles a race with another writer creating the same key. When anything fails (that claim
     * taken meanwhile, an invalid item, two items of one key), nothing was written and every item answers
     * `undefined`, to be written through its key's actor (RecordWriter), which gives each its exact outcome.
     */
    const writeUpserts = (all: ReadonlyArray<PendingUpsert>): Effect.Effect<ReadonlyArray<Exit.Exit<UpsertResult | undefined, RecordError>>> => {
      // a key's second item waits for the first: it is answered `undefined` (its actor) once this batch committed
      const keys = new Set<string>()
      const first = all.map((item) => !keys.has(item.key) && keys.add(item.key) !== undefined)
      if (first.includes(false)) {
        return Effect.map(writeUpserts(all.filter((_, i) => first[i])), (exits) => {
          let k = 0
          return all.map((_, i) => (first[i] ? exits[k++]! : Exit.succeed(undefined)))
        })
      }
      const items = all
      const deferAll = Effect.succeed(items.map((): Exit.Exit<UpsertResult | undefined, RecordError> => Exit.succeed(undefined)))
      return transaction(Effect.gen(function*() {
        const creates: Array<readonly [number, PendingCreate]> = []
        const updates: Array<readonly [number, PlannedUpdate]> = []
        for (let k = 0; k < items.length; k++) {
          const { structure, match, data, writer } = items[k]!
          yield* writable(structure)
          const found = yield* findMatch(structure, match)
          if (found === undefined) {
            const input = { data: { ...data, ...match } }
            const p = yield* prepareCreate(structure, input, writer)
            creates.push([k, { structure, input, writer, record: newRecord(structure, input, writer, p.data, p.expiresAt) }])
          } else {
            const plan = yield* planUpdate(found.row, structure, { data: withoutMatch(data, match) }, writer)
            updates.push([k, { row: found.row, structure, plan, writer, action: "update" }])
          }
        }
        if (new Set(updates.map(([, u]) => u.row.id)).size < updates.length) return yield* conflict({ message: "one record, two keys", code: "CONFLICT" })
        const results: Array<UpsertResult> = []
        if (creates.length > 0) {
          const written = yield* insertCreated(creates.map(([, c]) => c), claimAll)
          written.forEach((w, j) => (results[creates[j]![0]] = upsertCreated(w.structure, w.row)))
        }
        if (updates.length > 0) {
          const next = yield* applyUpdates(updates.map(([, u]) => u))
          next.forEach((row, j) => (results[updates[j]![0]] = upsertUpdated(updates[j]![1].structure, row)))
        }
        return results.map((r): Exit.Exit<UpsertResult | undefined, RecordError> => Exit.succeed(r))
      })).pipe(batched("upsert", items.length, deferAll))
    }

    const upserts = yield* groupCommit(writeUpserts)

    /** An upsert through the group commit, or `undefined`: it goes through its key's actor (see writeUpserts). */
    const upsertGrouped = (structure: Structure, match: Record<string, unknown>, data: Record<string, unknown>, writer: Writer) =>
      Effect.flatMap(checkMatch(structure, match), () =>
        claimsOf(structure, match).length === 0
          ? Effect.succeed(undefined)
          : upserts.submit({ structure, match, data, writer, key: `${structure.id}/${canonicalJson(match)}` }))

    /**
     * Upsert of one business key. Callers serialise per key (RecordKeyEntity); the row lock keeps it right against
     * writes that reach the matched record another way. With an Idempotency-Key, the key is claimed in the same
     * transaction as the write (a concurrent request with the same key waits on that claim), so a key maps to
     * exactly one committed outcome, replayed for 24 hours; failures store nothing and may be retried.
     */
    /** A match names at least one field, each a scalar, none a secret. */
    const checkMatch = (structure: Structure, match: Record<string, unknown>) => {
      const keys = Object.keys(match)
      if (keys.length === 0) return validationFailed([detail("match", "match must name at least one field")])
      const problems = [...inspectJson(match, "match", structure.properties)]
      const secretRoots = new Set(secretPaths(structure).map((p) => p[0]!))
      for (const k of keys) {
        const v = match[k]
        if (v !== null && typeof v === "object") problems.push(detail(`match.${k}`, "match values are strings, numbers, booleans or null"))
        if (secretRoots.has(k)) problems.push(detail(`match.${k}`, "secret fields are stored encrypted and cannot be matched"))
      }
      return problems.length > 0 ? validationFailed(problems) : Effect.void
    }

    /**
     * The live record the match finds, locked, with the transaction's now() (the updatedAt of what it writes). A
     * match on a unique property goes through its claim (one index lookup, whatever the table's statistics say);
     * any other match through the containment index.
     */
    const findMatch = (structure: Structure, match: Record<string, unknown>) => {
      const claim = claimsOf(structure, match)[0]
      const contains = JSON.stringify(match)
      const rows = claim !== undefined
        ? sql`SELECT r.*, now() AS tx_now FROM record_unique_values u JOIN records r ON r.id = u.record_id
            WHERE u.structure_id = ${structure.id} AND u.field = ${claim[0]} AND u.value = ${claim[1]}
              AND r.deleted_at IS NULL AND (r.expires_at IS NULL OR r.expires_at > now()) AND r.data @> ${contains}::jsonb
            FOR UPDATE OF r`
        : sql`SELECT *, now() AS tx_now FROM records WHERE structure_id = ${structure.id} AND deleted_at IS NULL
            AND (expires_at IS NULL OR expires_at > now()) AND data @> ${contains}::jsonb
          ORDER BY created_at, id LIMIT 1 FOR UPDATE`
      return Effect.map(rows, (found) => (found[0] ? { row: fromRow(found[0]), now: iso(found[0].tx_now) } : undefined))
    }

    /** The data of an upsert that updates: the match is not written again. */
    const withoutMatch = (data: Record<string, unknown>, match: Record<string, unknown>) => {
      const patch = { ...data }
      for (const key of Object.keys(match)) delete patch[key]
      return patch
    }

    const upsertCreated = (structure: Structure, row: RecordRow): UpsertResult => ({
      status: 201,
      body: { data: { id: row.id, data: maskData(structure, row.data), version: row.version, createdAt: row.createdAt }, operation: "created" }
    })

    const upsertUpdated = (structure: Structure, row: RecordRow): UpsertResult => ({
      status: 200,
      body: { data: { id: row.id, data: maskData(structure, row.data), version: row.version, updatedAt: row.updatedAt }, operation: "updated" }
    })

    /**
     * Upsert of one business key. Callers serialise per key (RecordKeyEntity); the row lock keeps it right against
     * writes that reach the matched record another way. With an Idempotency-Key, the key is claimed in the same
     * transaction as the write (a concurrent request with the same key waits on that claim), so a key maps to
     * exactly one committed outcome, replayed for 24 hours; failures store nothing and may be retried.
     */
    const upsert = (structure: Structure, match: Record<string, unknown>, data: Record<string, unknown>, writer: Writer, idempotencyKey?: string) =>
      Effect.gen(function*() {
        yield* checkMatch(structure, match)
        const workspace = structure.workspaceSlug
        const requestHash = Crypto.createHash("sha256").update(canonicalJson({ s: structure.id, match, data })).digest("hex")
        const once = transaction(Effect.gen(function*() {
          if (idempotencyKey !== undefined) {
            const claimed = yield* sql`INSERT INTO idempotency_keys (workspace, key, request_hash, status, body)
              VALUES (${workspace}, ${idempotencyKey}, ${requestHash}, 0, 'null'::jsonb)
              ON CONFLICT (workspace, key) DO UPDATE SET request_hash = EXCLUDED.request_hash, status = 0, body = 'null'::jsonb, created_at = now()
                WHERE idempotency_keys.created_at <= now() - interval '24 hours'
              RETURNING key`
            if (claimed.length === 0) {
              const stored = (yield* sql`SELECT * FROM idempotency_keys WHERE workspace = ${workspace} AND key = ${idempotencyKey}`)[0]
              if (stored === undefined || stored.request_hash !== requestHash) {
                return yield* unprocessable({ message: "This Idempotency-Key was used with a different request", code: "IDEMPOTENCY_KEY_REUSED" })
              }
              return { status: num(stored.status), body: json(stored.body), replayed: true }
            }
          }
          yield* writable(structure)
          const found = yield* findMatch(structure, match)
          const result = found !== undefined
            ? upsertUpdated(structure, (yield* updateInTx(found.row, structure, { data: withoutMatch(data, match) }, writer)).row)
            : upsertCreated(structure, (yield* createInTx(structure, { data: { ...data, ...match } }, writer)).row)
          if (idempotencyKey !== undefined) {
            yield* sql`UPDATE idempotency_keys SET status = ${result.status}, body = ${JSON.stringify(result.body)}::jsonb
              WHERE workspace = ${workspace} AND key = ${idempotencyKey}`
          }
          return { ...result, replayed: false }
        }))
        // a writer outside this key's actor (the group commit of upserts) may have created the match between the
        // lookup and the claim: the retry finds it and updates it, as an upsert should (nothing of the first try
        // was written)
        return yield* Effect.catchIf(once, (e) => e.code === "DUPLICATE_KEY", () => once)
      })

    /**
     * Several upserts of one match in one transaction, in order (group commit: what queued up at the key's actor
     * while the previous transaction ran). The first creates the record when none matches; each update is planned
     * in memory against the one before it, then the record row is written once and the versions, changelog entries
     * and events of all of them in one statement each. Any failure fails the whole batch (nothing is written); the
     * actor then runs the items one by one, so each gets its own outcome.
     */
    const upsertMany = (structure: Structure, match: Record<string, unknown>, items: ReadonlyArray<UpsertItem>) =>
      Effect.gen(function*() {
        yield* checkMatch(structure, match)
        return yield* transaction(Effect.gen(function*() {
          yield* writable(structure)
          const results: Array<UpsertResult> = []
          let found = yield* findMatch(structure, match)
          let rest = items
          if (found === undefined) {
            const { row } = yield* createInTx(structure, { data: { ...items[0]!.data, ...match } }, items[0]!.writer)
            results.push(upsertCreated(structure, row))
            found = { row, now: row.updatedAt }
            rest = items.slice(1)
          }
          const first = found.row
          let current = first
          const versions: Array<ReturnType<typeof versionRow>> = []
          const changelog: Array<ReturnType<typeof changelogRow>> = []
          const events: Array<OutboxEvent> = []
          for (const item of rest) {
            const plan = yield* planUpdate(current, structure, { data: withoutMatch(item.data, match) }, item.writer)
            const next: RecordRow = {
              ...current,
              data: plan.data,
              metadata: plan.metadata,
              expiresAt: plan.expiresAt,
              version: plan.version,
              updatedBy: item.writer.userId,
              updatedAt: found.now
            }
            versions.push(versionRow(next, plan.changes, item.writer))
            changelog.push(changelogRow(next, "update", plan.changes, item.writer))
            events.push(eventOf("record.updated", structure, next, current.data, plan.changes, item.writer))
            results.push(upsertUpdated(structure, next))
            current = next
          }
          if (current !== first) {
            yield* sql`UPDATE records SET data = ${JSON.stringify(current.data)}::jsonb, version = ${current.version},
                updated_by = ${current.updatedBy}, updated_at = now(), expires_at = ${current.expiresAt}
              WHERE id = ${current.id}`
            yield* insertVersions(sql, versions)
            yield* insertChangelog(sql, changelog)
            yield* appendEvents(sql, events)
          }
          return results
        }))
      })

    // ---------------------------------------------------------------- reads

    const get = (workspace: string, id: string, options: { includeDeleted?: boolean } = {}) =>
      Effect.gen(function*() {
        if (!isUuid(id)) return yield* recordNotFound(id)
        const rows = yield* sql`SELECT * FROM records WHERE id = ${id} AND workspace = ${workspace}`.pipe(Effect.orDie)
        const row = rows[0] ? fromRow(rows[0]) : undefined
        if (row === undefined) return yield* recordNotFound(id)
        const expired = row.expiresAt !== null && Date.parse(row.expiresAt) <= Date.now()
        if (expired || (row.deletedAt !== null && options.includeDeleted !== true)) return yield* recordNotFound(id)
        const structure = yield* structures.get(workspace, row.structureId).pipe(Effect.mapError(() => recordNotFound(id)))
        if (structure.isDeleted) return yield* recordNotFound(id)
        return { row, structure }
      })

    const getVersion = (workspace: string, id: string, version: number) =>
      Effect.gen(function*() {
        const { row, structure } = yield* get(workspace, id)
        if (!Number.isInteger(version) || version < 1 || version > MAX_VERSION) return yield* validationFailed([detail("version", "version must be a positive integer")])
        const rows = yield* sql`SELECT * FROM record_versions WHERE record_id = ${row.id} AND version = ${version}`.pipe(Effect.orDie)
        if (!rows[0]) return yield* notFound({ message: `Version ${version} of record ${id} does not exist`, code: "VERSION_NOT_FOUND" })
        const v = rows[0]
        return {
          structure,
          row: { ...row, data: json<Record<string, unknown>>(v.data), version: num(v.version), updatedAt: iso(v.created_at), updatedBy: (v.created_by as string | null) ?? null }
        }
      })

    const history = (workspace: string, id: string) =>
      Effect.gen(function*() {
        const { row, structure } = yield* get(workspace, id, { includeDeleted: true })
        const rows = yield* sql`SELECT * FROM record_versions WHERE record_id = ${row.id} ORDER BY version DESC`.pipe(Effect.orDie)
        return {
          structure,
          versions: rows.map((v: any) => ({
            version: num(v.version),
            data: maskData(structure, json(v.data)),
            updatedAt: iso(v.created_at),
            updatedBy: v.created_by ?? null,
            changes: maskChanges(structure, json(v.changes)),
            ...(num(v.version) === 1 ? { createdAt: iso(v.created_at) } : {}),
            ...(v.restored_from !== null && v.restored_from !== undefined ? { restoredFrom: num(v.restored_from) } : {})
          }))
        }
      })

    const changelog = (workspace: string, id: string, options: { limit?: number; startDate?: string; endDate?: string }) =>
      Effect.gen(function*() {
        const { row, structure } = yield* get(workspace, id, { includeDeleted: true })
        const limit = Math.min(Math.max(1, Math.floor(options.limit ?? 100)), 1000)
        const bad: Array<ErrorDetail> = []
        for (const key of ["startDate", "endDate"] as const) {
          const v = options[key]
          if (v !== undefined && !Number.isFinite(Date.parse(v))) bad.push(detail(key, `${key} must be an ISO 8601 date`))
        }
        if (bad.length > 0) return yield* validationFailed(bad, "Invalid changelog query")
        const conditions = [sql`record_id = ${row.id}`]
        if (options.startDate !== undefined) conditions.push(sql`created_at >= ${new Date(options.startDate).toISOString()}`)
        if (options.endDate !== undefined) conditions.push(sql`created_at <= ${new Date(options.endDate).toISOString()}`)
        const rows = yield* sql`SELECT * FROM record_changelog WHERE ${sql.and(conditions)} ORDER BY created_at DESC, id LIMIT ${limit}`.pipe(Effect.orDie)
        return {
          structure,
          entries: rows.map((e: any) => ({
            id: e.id,
            recordId: e.record_id,
            action: e.action,
            userId: e.user_id ?? null,
            userName: e.user_name ?? null,
            timestamp: iso(e.created_at),
            changes: maskChanges(structure, json(e.changes)),
            metadata: json(e.metadata)
          }))
        }
      })

    // ---------------------------------------------------------------- bulk

    const bulkEventInTx = (structure: Structure, type: "record.bulk.created" | "record.bulk.updated" | "record.bulk.deleted", ids: ReadonlyArray<string>, writer: Writer) =>
      ids.length === 0 ? Effect.void : appendEvent(sql, {
        workspace: structure.workspaceSlug,
        type,
        structureId: structure.id,
        recordSlug: structure.recordSlug,
        recordId: null,
        payload: {
          event: type,
          timestamp: new Date().toISOString(),
          workspace: structure.workspaceSlug,
          structure: structure.recordSlug,
          data: { structure: structure.recordSlug, count: ids.length, recordIds: ids, metadata: { userId: writer.userId, source: writer.source } }
        }
      })

    const publishBulk = (structure: Structure, type: "record.bulk.created" | "record.bulk.updated" | "record.bulk.deleted", ids: ReadonlyArray<string>, writer: Writer) =>
      ids.length === 0 ? Effect.void : sql.withTransaction(bulkEventInTx(structure, type, ids, writer)).pipe(Effect.orDie)

    /** Tags an item's failure with its index (SQL failures pass through to the transaction's own mapping). */
    const at = (index: number) => <A, E>(effect: Effect.Effect<A, E, never>): Effect.Effect<A, BulkItemFailure | SqlError> =>
      Effect.catch(effect, (e: any) => Effect.fail(isSqlError(e) ? e : { index, error: e as RecordError }))

    /** Locks the rows of a batch in id order first, so two batches touching the same records cannot deadlock. */
    const lockAll = (workspace: string, ids: ReadonlyArray<string>) => {
      const wanted = [...new Set(ids.filter(isUuid))].sort()
      return wanted.length === 0 ? Effect.void : sql`SELECT id FROM records WHERE workspace = ${workspace} AND id IN ${sql.in(wanted)} ORDER BY id FOR UPDATE`.pipe(Effect.asVoid)
    }

    /** Groups written rows by structure, for one bulk event per structure. */
    const byStructure = (written: ReadonlyArray<{ row: RecordRow; structure: Structure }>) => {
      const groups = new Map<string, { structure: Structure; ids: Array<string> }>()
      for (const w of written) {
        const g = groups.get(w.structure.id) ?? { structure: w.structure, ids: [] }
        g.ids.push(w.row.id)
        groups.set(w.structure.id, g)
      }
      return [...groups.values()]
    }

    /** A bulk of plain creates is one batch: each statement once for every item (claims taken: item by item). */
    const createAll = (structure: Structure, items: ReadonlyArray<CreateInput>, writer: Writer) =>
      !batchable(structure) ? createEach(structure, items, writer) : Effect.gen(function*() {
        const pending: Array<PendingCreate> = []
        for (let i = 0; i < items.length; i++) {
          const input = items[i]!
          const p = yield* Effect.mapError(prepareCreate(structure, input, writer), (error): BulkItemFailure => ({ index: i, error }))
          pending.push({ structure, input, writer, record: newRecord(structure, input, writer, p.data, p.expiresAt) })
        }
        return yield* transaction(Effect.gen(function*() {
          const written: ReadonlyArray<WriteResult> = yield* insertCreated(pending, claimAll)
          yield* bulkEventInTx(structure, "record.bulk.created", written.map((w) => w.row.id), writer)
          return written
        })).pipe(Effect.catchTag("ClaimTaken", () => createEach(structure, items, writer)))
      })

    /** Item by item, in one transaction: the first item that fails names itself. */
    const createEach = (structure: Structure, items: ReadonlyArray<CreateInput>, writer: Writer) =>
      transaction(Effect.gen(function*() {
        const written: Array<WriteResult> = []
        for (let i = 0; i < items.length; i++) written.push(yield* at(i)(createInTx(structure, items[i]!, writer)))
        yield* bulkEventInTx(structure, "record.bulk.created", written.map((w) => w.row.id), writer)
        return written
      }))

    const updateAll = (workspace: string, items: ReadonlyArray<{ id: string; input: UpdateInput }>, writer: Writer, structureId?: string) =>
      transaction(Effect.gen(function*() {
        yield* lockAll(workspace, items.map((u) => u.id))
        const written: Array<WriteResult> = []
        for (let i = 0; i < items.length; i++) {
          const { id, input } = items[i]!
          written.push(yield* at(i)(Effect.gen(function*() {
            const row = yield* lockLive(workspace, id)
            if (structureId !== undefined && row.structureId !== structureId) return yield* recordNotFound(id)
            const structure = yield* liveStructure(workspace, row)
            return yield* updateInTx(row, structure, input, writer, input.replace ? "replace" : "update")
          })))
        }
        for (const g of byStructure(written)) yield* bulkEventInTx(g.structure, "record.bulk.updated", g.ids, writer)
        return written
      }))

    const removeAll = (workspace: string, ids: ReadonlyArray<string>, permanent: boolean, writer: Writer, structureId?: string) =>
      transaction(Effect.gen(function*() {
        yield* lockAll(workspace, ids)
        const removed: Array<{ row: RecordRow; structure: Structure; deletedAt: string }> = []
        for (let i = 0; i < ids.length; i++) {
          const id = ids[i]!
          removed.push(yield* at(i)(Effect.gen(function*() {
            const row = yield* lock(workspace, id)
            if (row === undefined || (!permanent && !isLive(row, Date.now()))) return yield* recordNotFound(id)
            if (structureId !== undefined && row.structureId !== structureId) return yield* recordNotFound(id)
            const structure = yield* liveStructure(workspace, row)
            const deletedAt = yield* deleteInTx(structure, row, permanent, writer)
            return { row, structure, deletedAt }
          })))
        }
        for (const g of byStructure(removed)) yield* bulkEventInTx(g.structure, "record.bulk.deleted", g.ids, writer)
        return removed.map((r) => ({ id: r.row.id, deletedAt: r.deletedAt, structureId: r.structure.id }))
      }))

    // spans only when exported: `get` is the fast lane's read
    const spans = yield* spanMethods
    return RecordService.of(spans("RecordService", {
      create,
      update,
      remove,
      restore,
      revert,
      upsert: (structure, match, data, writer, key) => upsert(structure, match, data, writer, key),
      upsertMany,
      upsertGrouped,
      get,
      getVersion,
      history,
      changelog,
      reveal,
      createAll,
      updateAll,
      removeAll,
      publishBulk
    }))
  }))
}
