// The record engine: every write is one SQL transaction that writes the record row, a version row, a changelog row
// and the outbox event, and keeps uniqueness, references, auto-increments and TTL right. Single-record writes
// arrive here through RecordEntity (one actor per record), upserts through RecordKeyEntity (one per business key);
// row locks (`FOR UPDATE`) keep writes that reach a row another way (cascades, bulk) correct as well.
import { badRequest, conflict, type ErrorDetail, locked, notFound, unprocessable } from "@troupe/api/Errors"
import type { Structure } from "@troupe/api/structures/Structure"
import { Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { isSqlError, type SqlError } from "effect/sql/SqlError"
import * as Crypto from "node:crypto"
import { appendEvent, appendEvents, type OutboxEvent } from "../events/Outbox.ts"
import { iso, json, num } from "../lib/rows.ts"
import { Secrets } from "../platform/Secrets.ts"
import { canonicalJson, jsonEqual, parseDateTime } from "../structures/Formats.ts"
import { StructureService } from "../structures/StructureService.ts"
import { autoIncrementFields, claimsOf, referenceFields, validatorFor } from "../structures/Validator.ts"
import { inspectJson } from "./DataGuard.ts"
import {
  type Changes,
  changelogChanges,
  diff,
  fromRow,
  getAt,
  isUuid,
  MASK,
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

const isLive = (row: RecordRow, now: number) =>
  row.deletedAt === null && (row.expiresAt === null || Date.parse(row.expiresAt) > now)

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

    /** The §6 event of one record write (secrets masked). */
    const eventOf = (
      type: string,
      structure: Structure,
      row: RecordRow,
      previous: Record<string, unknown> | null,
      changes: Changes,
      writer: Writer
    ): OutboxEvent => ({
      workspace: structure.workspaceSlug,
      type,
      structureId: structure.id,
      recordSlug: structure.recordSlug,
      recordId: row.id,
      payload: {
        event: type,
        timestamp: new Date().toISOString(),
        workspace: structure.workspaceSlug,
        structure: structure.recordSlug,
        data: {
          record: { id: row.id, structureId: structure.id, data: maskData(structure, row.data), version: row.version },
          previous: previous === null ? null : { data: maskData(structure, previous) },
          changes,
          metadata: { userId: writer.userId, source: writer.source }
        }
      }
    })

    const recordEvent = (...event: Parameters<typeof eventOf>) => appendEvent(sql, eventOf(...event))

    const changelogMeta = (writer: Writer, extra: Record<string, unknown> = {}) => ({
      ...(writer.clientAddress ? { clientAddress: writer.clientAddress } : {}),
      ...(writer.userAgent ? { userAgent: writer.userAgent } : {}),
      source: writer.source,
      ...extra
    })

    const changelogRow = (row: RecordRow, action: string, changes: Changes, writer: Writer, meta: Record<string, unknown> = {}) => ({
      id: Crypto.randomUUID(),
      record_id: row.id,
      workspace: row.workspace,
      action,
      user_id: writer.userId,
      user_name: writer.userName,
      changes: changelogChanges(changes),
      metadata: changelogMeta(writer, meta)
    })

    const versionRow = (row: RecordRow, changes: Changes, writer: Writer, restoredFrom: number | null = null) => ({
      record_id: row.id,
      version: row.version,
      data: row.data,
      changes,
      restored_from: restoredFrom,
      created_by: writer.userId
    })

    /** Changelog rows in one statement (a batch of upserts writes many). */
    const insertChangelog = (rows: ReadonlyArray<ReturnType<typeof changelogRow>>) =>
      rows.length === 1
        ? sql`INSERT INTO record_changelog (id, record_id, workspace, action, user_id, user_name, changes, metadata)
          VALUES (${rows[0]!.id}, ${rows[0]!.record_id}, ${rows[0]!.workspace}, ${rows[0]!.action}, ${rows[0]!.user_id},
            ${rows[0]!.user_name}, ${JSON.stringify(rows[0]!.changes)}::jsonb, ${JSON.stringify(rows[0]!.metadata)}::jsonb)`
        // a transaction's entries share now(): a microsecond apart (after any single entry of the same transaction),
        // they keep their order in the changelog
        : sql`INSERT INTO record_changelog (id, record_id, workspace, action, user_id, user_name, changes, metadata, created_at)
          SELECT id, record_id, workspace, action, user_id, user_name, changes, metadata, now() + i * interval '1 microsecond'
          FROM jsonb_to_recordset(${JSON.stringify(rows.map((r, i) => ({ ...r, i: i + 1 })))}::jsonb) AS v(i int, id uuid,
            record_id uuid, workspace text, action text, user_id text, user_name text, changes jsonb, metadata jsonb)`

    /** Version rows in one statement. */
    const insertVersions = (rows: ReadonlyArray<ReturnType<typeof versionRow>>) =>
      rows.length === 1
        ? sql`INSERT INTO record_versions (record_id, version, data, changes, restored_from, created_by)
          VALUES (${rows[0]!.record_id}, ${rows[0]!.version}, ${JSON.stringify(rows[0]!.data)}::jsonb,
            ${JSON.stringify(rows[0]!.changes)}::jsonb, ${rows[0]!.restored_from}, ${rows[0]!.created_by})`
        : sql`INSERT INTO record_versions (record_id, version, data, changes, restored_from, created_by)
          SELECT record_id, version, data, changes, restored_from, created_by
          FROM jsonb_to_recordset(${JSON.stringify(rows)}::jsonb) AS v(record_id uuid, version int, data jsonb,
            changes jsonb, restored_from int, created_by text)`

    const writeChangelog = (row: RecordRow, action: string, changes: Changes, writer: Writer, meta: Record<string, unknown> = {}) =>
      insertChangelog([changelogRow(row, action, changes, writer, meta)])

    const writeVersion = (row: RecordRow, changes: Changes, writer: Writer, restoredFrom: number | null = null) =>
      insertVersions([versionRow(row, changes, writer, restoredFrom)])

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

    const createInTx = (structure: Structure, input: CreateInput, writer: Writer) =>
      Effect.gen(function*() {
        yield* writable(structure)
        const nowMs = Date.now()
        const expiry = expiryOf(input, structure.defaultTtlSeconds, nowMs)
        if (expiry.error) return yield* expiry.error
        let data = yield* validate(structure, input.data, "create", undefined, input.skipValidation === true && writer.canSkipValidation)
        yield* checkMetadata(input.metadata)
        yield* checkReferences(structure, data, undefined)
        data = yield* assignAutoIncrements(structure, data)
        data = encryptSecrets(structure, data)
        const id = Crypto.randomUUID()
        const rows = yield* sql`INSERT INTO records (id, workspace, structure_id, data, metadata, created_by, updated_by, expires_at)
          VALUES (${id}, ${structure.workspaceSlug}, ${structure.id}, ${JSON.stringify(data)}::jsonb,
            ${JSON.stringify(input.metadata ?? {})}::jsonb, ${writer.userId}, ${writer.userId}, ${expiry.value ?? null})
          RETURNING *`
        const row = fromRow(rows[0])
        yield* claimUnique(structure, id, data, undefined)
        const changes = diff(structure, {}, data)
        yield* writeVersion(row, changes, writer)
        yield* writeChangelog(row, "create", changes, writer, input.reason ? { reason: input.reason } : {})
        yield* recordEvent("record.created", structure, row, null, changes, writer)
        return { row, structure }
      })

    const create = (structure: Structure, input: CreateInput, writer: Writer) =>
      transaction(createInTx(structure, input, writer))

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
        let data = yield* validate(structure, input.data, input.replace ? "replace" : "update", row.data, skip)
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

    const update = (workspace: string, id: string, input: UpdateInput, writer: Writer) =>
      transaction(Effect.gen(function*() {
        const row = yield* lockLive(workspace, id)
        const structure = yield* liveStructure(workspace, row)
        return yield* updateInTx(row, structure, input, writer, input.replace ? "replace" : "update")
      }))

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

    const remove = (workspace: string, id: string, permanent: boolean, writer: Writer, reason?: string) =>
      transaction(Effect.gen(function*() {
        const row = yield* lock(workspace, id)
        if (row === undefined || (!permanent && !isLive(row, Date.now()))) return yield* recordNotFound(id)
        const structure = yield* liveStructure(workspace, row)
        const deletedAt = yield* deleteInTx(structure, row, permanent, writer, 0, reason)
        return { id: row.id, deletedAt, structure }
      }))

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
        return yield* transaction(Effect.gen(function*() {
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
            yield* insertVersions(versions)
            yield* insertChangelog(changelog)
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
            changes: json(v.changes),
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
            changes: json(e.changes),
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

    const createAll = (structure: Structure, items: ReadonlyArray<CreateInput>, writer: Writer) =>
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

    return RecordService.of({
      create,
      update,
      remove,
      restore,
      revert,
      upsert: (structure, match, data, writer, key) => upsert(structure, match, data, writer, key),
      upsertMany,
      get,
      getVersion,
      history,
      changelog,
      reveal,
      createAll,
      updateAll,
      removeAll,
      publishBulk
    })
  }))
}
