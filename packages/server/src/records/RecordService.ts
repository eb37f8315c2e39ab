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
import { appendEvent } from "../events/Outbox.ts"
import { iso, json, num } from "../lib/rows.ts"
import { Secrets } from "../platform/Secrets.ts"
import { canonicalJson, jsonEqual } from "../structures/Formats.ts"
import { StructureService } from "../structures/StructureService.ts"
import { autoIncrementFields, referenceFields, uniqueFields, validatorFor } from "../structures/Validator.ts"
import {
  type Changes,
  changelogChanges,
  diff,
  fromRow,
  isUuid,
  maskData,
  type RecordRow,
  secretFields,
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
}

export interface WriteResult {
  readonly row: RecordRow
  readonly structure: Structure
  readonly previousVersion?: number
  readonly restoredFrom?: number | null
}

export const recordNotFound = (id: string) => notFound({ message: `Record ${id} not found`, code: "RECORD_NOT_FOUND" })
const validationFailed = (details: ReadonlyArray<ErrorDetail>, message = "Record failed validation") =>
  badRequest({ message, code: "VALIDATION_ERROR", details })
const detail = (field: string, message: string): ErrorDetail => ({ field, property: field, message })

const isLive = (row: RecordRow, now: number) =>
  row.deletedAt === null && (row.expiresAt === null || Date.parse(row.expiresAt) > now)

/** expiresAt wins over ttlSeconds; neither -> the structure's default TTL (on create). */
const expiryOf = (input: { ttlSeconds?: number | undefined; expiresAt?: string | undefined }, fallbackSeconds: number | null | undefined, now: number) => {
  if (input.expiresAt !== undefined) {
    const t = Date.parse(input.expiresAt)
    if (!Number.isFinite(t) || !/^\d{4}-\d{2}-\d{2}T/.test(input.expiresAt)) {
      return { error: validationFailed([detail("expiresAt", "expiresAt must be an ISO 8601 datetime")]) }
    }
    return { value: new Date(t).toISOString() }
  }
  const seconds = input.ttlSeconds ?? fallbackSeconds ?? undefined
  if (seconds === undefined || seconds === null) return { value: undefined }
  if (!Number.isFinite(seconds) || seconds <= 0) {
    return { error: validationFailed([detail("ttlSeconds", "ttlSeconds must be a positive number")]) }
  }
  return { value: new Date(now + seconds * 1000).toISOString() }
}

export class RecordService extends Context.Service<RecordService, {
  readonly create: (structure: Structure, input: CreateInput, writer: Writer) => Effect.Effect<WriteResult, RecordError>
  readonly update: (workspace: string, id: string, input: UpdateInput, writer: Writer) => Effect.Effect<WriteResult, RecordError>
  readonly remove: (workspace: string, id: string, permanent: boolean, writer: Writer) => Effect.Effect<{ id: string; deletedAt: string; structure: Structure }, RecordError>
  readonly restore: (workspace: string, id: string, version: number | undefined, reason: string | undefined, writer: Writer) => Effect.Effect<WriteResult, RecordError>
  readonly revert: (workspace: string, id: string, reason: string | undefined, writer: Writer) => Effect.Effect<WriteResult, RecordError>
  readonly upsert: (structure: Structure, match: Record<string, unknown>, data: Record<string, unknown>, writer: Writer, idempotencyKey?: string) => Effect.Effect<{ status: number; body: unknown }, RecordError>
  /** A live record (or, with includeDeleted, a soft-deleted one). */
  readonly get: (workspace: string, id: string, options?: { includeDeleted?: boolean }) => Effect.Effect<{ row: RecordRow; structure: Structure }, RecordError>
  readonly getVersion: (workspace: string, id: string, version: number) => Effect.Effect<{ row: RecordRow; structure: Structure }, RecordError>
  readonly history: (workspace: string, id: string) => Effect.Effect<{ structure: Structure; versions: ReadonlyArray<any> }, RecordError>
  readonly changelog: (workspace: string, id: string, options: { limit?: number; startDate?: string; endDate?: string }) => Effect.Effect<{ structure: Structure; entries: ReadonlyArray<any> }, RecordError>
  /** Decrypts secret fields of stored data (callers with `secrets:reveal`). */
  readonly reveal: (structure: Structure, data: Record<string, unknown>) => Effect.Effect<Record<string, unknown>>
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

    const encryptSecrets = (structure: Structure, data: Record<string, unknown>, previous?: Record<string, unknown>) => {
      const fields = secretFields(structure)
      if (fields.length === 0) return data
      const out = { ...data }
      for (const f of fields) {
        const v = out[f]
        if (typeof v !== "string" || secrets.isEncrypted(v)) continue
        // unchanged plaintext cannot be told apart from a new value, so every plaintext is (re-)encrypted
        out[f] = previous !== undefined && previous[f] === v ? v : secrets.encrypt(v, `${structure.id}:${f}`)
      }
      return out
    }

    const reveal = (structure: Structure, data: Record<string, unknown>) =>
      Effect.gen(function*() {
        const fields = secretFields(structure)
        if (fields.length === 0) return data
        const out = { ...data }
        for (const f of fields) {
          const v = out[f]
          if (typeof v === "string" && secrets.isEncrypted(v)) {
            out[f] = yield* secrets.decrypt(v, `${structure.id}:${f}`).pipe(Effect.orElseSucceed(() => null))
          }
        }
        return out
      })

    const validate = (structure: Structure, data: unknown, mode: "create" | "update" | "replace", previous: Record<string, unknown> | undefined, skip: boolean) => {
      if (skip && typeof data === "object" && data !== null && !Array.isArray(data)) {
        const merged: Record<string, unknown> = mode === "update" ? { ...previous } : {}
        for (const [k, v] of Object.entries(data)) {
          if (k === "__proto__" || k === "constructor" || k === "prototype") {
            return Effect.fail(validationFailed([detail(`data.${k}`, "reserved key")]))
          }
          if (v === null && mode === "update") delete merged[k]
          else merged[k] = v
        }
        return Effect.succeed(merged)
      }
      const result = validatorFor(structure).validate(data, { mode, previous, now: new Date() })
      return result.ok ? Effect.succeed(result.data) : Effect.fail(validationFailed(result.errors))
    }

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

    /** Values that must be unique: isUnique properties and one-to-one references. */
    const uniqueValues = (structure: Structure, data: Record<string, unknown>) => {
      const out: Array<[string, string]> = []
      for (const field of uniqueFields(structure)) {
        const v = data[field]
        if (v !== undefined && v !== null) out.push([field, canonicalJson(v)])
      }
      for (const ref of referenceFields(structure)) {
        if (ref.relationship !== "one-to-one") continue
        const v = data[ref.field]
        if (typeof v === "string") out.push([`ref:${ref.field}`, v])
      }
      return out
    }

    const claimUnique = (structure: Structure, recordId: string, data: Record<string, unknown>, previous: Record<string, unknown> | undefined) =>
      Effect.gen(function*() {
        const before = new Map(previous ? uniqueValues(structure, previous) : [])
        const after = uniqueValues(structure, data)
        for (const [field, value] of before) {
          if (!after.some(([f, v]) => f === field && v === value)) {
            yield* sql`DELETE FROM record_unique_values WHERE structure_id = ${structure.id} AND field = ${field} AND record_id = ${recordId}`
          }
        }
        for (const [field, value] of after) {
          if (before.get(field) === value) continue
          const rows = yield* sql`INSERT INTO record_unique_values (structure_id, field, value, record_id)
            VALUES (${structure.id}, ${field}, ${value}, ${recordId}) ON CONFLICT DO NOTHING RETURNING record_id`
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

    const recordEvent = (
      type: string,
      structure: Structure,
      row: RecordRow,
      previous: Record<string, unknown> | null,
      changes: Changes,
      writer: Writer
    ) =>
      appendEvent(sql, {
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

    const changelogMeta = (writer: Writer, extra: Record<string, unknown> = {}) => ({
      ...(writer.clientAddress ? { clientAddress: writer.clientAddress } : {}),
      ...(writer.userAgent ? { userAgent: writer.userAgent } : {}),
      source: writer.source,
      ...extra
    })

    const writeChangelog = (row: RecordRow, action: string, changes: Changes, writer: Writer, meta: Record<string, unknown> = {}) =>
      sql`INSERT INTO record_changelog (id, record_id, workspace, action, user_id, user_name, changes, metadata)
        VALUES (${Crypto.randomUUID()}, ${row.id}, ${row.workspace}, ${action}, ${writer.userId}, ${writer.userName},
          ${JSON.stringify(changelogChanges(changes))}::jsonb, ${JSON.stringify(changelogMeta(writer, meta))}::jsonb)`

    const writeVersion = (row: RecordRow, changes: Changes, writer: Writer, restoredFrom: number | null = null) =>
      sql`INSERT INTO record_versions (record_id, version, data, changes, restored_from, created_by)
        VALUES (${row.id}, ${row.version}, ${JSON.stringify(row.data)}::jsonb, ${JSON.stringify(changes)}::jsonb, ${restoredFrom}, ${writer.userId})`

    const lock = (workspace: string, id: string) =>
      isUuid(id)
        ? sql`SELECT * FROM records WHERE id = ${id} AND workspace = ${workspace} FOR UPDATE`.pipe(
          Effect.map((rows) => (rows[0] ? fromRow(rows[0]) : undefined))
        )
        : Effect.succeed(undefined)

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
        yield* writeChangelog(row, "create", changes, writer)
        yield* recordEvent("record.created", structure, row, null, changes, writer)
        return { row, structure }
      })

    const create = (structure: Structure, input: CreateInput, writer: Writer) =>
      transaction(createInTx(structure, input, writer))

    // ---------------------------------------------------------------- update / replace

    const updateInTx = (row: RecordRow, structure: Structure, input: UpdateInput, writer: Writer, action = "update") =>
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
        yield* checkReferences(structure, data, row.data)
        data = encryptSecrets(structure, data, row.data)
        yield* claimUnique(structure, row.id, data, row.data)
        const nowMs = Date.now()
        let expiresAt = row.expiresAt
        if (input.clearTtl === true) expiresAt = null
        else if (input.expiresAt !== undefined || input.ttlSeconds !== undefined) {
          const expiry = expiryOf(input, undefined, nowMs)
          if (expiry.error) return yield* expiry.error
          expiresAt = expiry.value ?? null
        }
        const metadata = input.metadata === undefined ? row.metadata : input.replace ? input.metadata : { ...row.metadata, ...input.metadata }
        const newVersion = input.createVersion === false ? row.version : row.version + 1
        const rows = yield* sql`UPDATE records SET data = ${JSON.stringify(data)}::jsonb, metadata = ${JSON.stringify(metadata)}::jsonb,
            version = ${newVersion}, updated_by = ${writer.userId}, updated_at = now(), expires_at = ${expiresAt}
          WHERE id = ${row.id} RETURNING *`
        const next = fromRow(rows[0])
        const changes = diff(structure, row.data, data)
        if (newVersion === row.version) {
          yield* sql`UPDATE record_versions SET data = ${JSON.stringify(data)}::jsonb WHERE record_id = ${row.id} AND version = ${row.version}`
        } else {
          yield* writeVersion(next, changes, writer)
        }
        yield* writeChangelog(next, action, changes, writer)
        yield* recordEvent("record.updated", structure, next, row.data, changes, writer)
        return { row: next, structure, previousVersion: row.version }
      })

    const update = (workspace: string, id: string, input: UpdateInput, writer: Writer) =>
      transaction(Effect.gen(function*() {
        const row = yield* lockLive(workspace, id)
        const structure = yield* structures.get(workspace, row.structureId)
        return yield* updateInTx(row, structure, input, writer, input.replace ? "replace" : "update")
      }))

    // ---------------------------------------------------------------- delete (with onDelete of references)

    /** Records of other structures that reference `row` through a reference property targeting its structure. */
    const applyOnDelete = (structure: Structure, row: RecordRow, permanent: boolean, writer: Writer, depth: number): Effect.Effect<void, RecordError, never> =>
      Effect.gen(function*() {
        if (depth > 32) return yield* conflict({ message: "Cascade too deep", code: "CONFLICT" })
        const all = yield* structures.all(structure.workspaceSlug)
        for (const other of all) {
          for (const ref of referenceFields(other)) {
            if (ref.target !== structure.recordSlug) continue
            const key = ref.targetField === "id" ? row.id : row.data[ref.targetField]
            if (key === undefined || key === null) continue
            const single = JSON.stringify({ [ref.field]: key })
            const many = JSON.stringify({ [ref.field]: [key] })
            const referencing = yield* sql`SELECT * FROM records WHERE structure_id = ${other.id} AND deleted_at IS NULL
                AND id <> ${row.id} AND (data @> ${single}::jsonb OR data @> ${many}::jsonb) FOR UPDATE`.pipe(
              Effect.orDie,
              Effect.map((rows) => rows.map(fromRow))
            )
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
                yield* deleteInTx(other, r, permanent, { ...writer, source: "cascade" }, depth + 1)
              } else {
                const value = r.data[ref.field]
                const nextValue = Array.isArray(value) ? value.filter((x) => x !== key) : null
                yield* updateInTx(r, other, { data: { ...r.data, [ref.field]: nextValue }, replace: true, skipValidation: true }, { ...writer, source: "set_null", canSkipValidation: true }).pipe(
                  Effect.asVoid
                )
              }
            }
          }
        }
      }).pipe(Effect.catchTag("SqlError" as any, Effect.die)) as Effect.Effect<void, RecordError, never>

    const deleteInTx = (structure: Structure, row: RecordRow, permanent: boolean, writer: Writer, depth = 0): Effect.Effect<string, RecordError, never> =>
      Effect.gen(function*() {
        yield* applyOnDelete(structure, row, permanent, writer, depth)
        const deletedAt = new Date().toISOString()
        if (permanent) {
          yield* sql`DELETE FROM records WHERE id = ${row.id}`
        } else {
          yield* sql`UPDATE records SET deleted_at = ${deletedAt}, updated_by = ${writer.userId}, updated_at = now() WHERE id = ${row.id}`
          yield* sql`DELETE FROM record_unique_values WHERE record_id = ${row.id}`
          yield* writeChangelog(row, "delete", {}, writer)
        }
        yield* recordEvent("record.deleted", structure, row, row.data, {}, writer)
        return deletedAt
      }).pipe(Effect.catchTag("SqlError" as any, Effect.die)) as Effect.Effect<string, RecordError, never>

    const remove = (workspace: string, id: string, permanent: boolean, writer: Writer) =>
      transaction(Effect.gen(function*() {
        const row = yield* lock(workspace, id)
        if (row === undefined || (!permanent && !isLive(row, Date.now()))) return yield* recordNotFound(id)
        const structure = yield* structures.get(workspace, row.structureId)
        const deletedAt = yield* deleteInTx(structure, row, permanent, writer)
        return { id: row.id, deletedAt, structure }
      }))

    // ---------------------------------------------------------------- restore / revert

    const snapshot = (id: string, version: number) =>
      sql`SELECT * FROM record_versions WHERE record_id = ${id} AND version = ${version}`.pipe(
        Effect.map((rows) => (rows[0] ? json<Record<string, unknown>>(rows[0].data) : undefined))
      )

    const rewind = (row: RecordRow, structure: Structure, data: Record<string, unknown>, restoredFrom: number, event: string, action: string, reason: string | undefined, writer: Writer) =>
      Effect.gen(function*() {
        yield* claimUnique(structure, row.id, data, row.data)
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
        const structure = yield* structures.get(workspace, row.structureId)
        if (version === undefined) {
          // restore of a soft-deleted record: it comes back as it was
          if (row.deletedAt === null) {
            return yield* validationFailed([detail("version", "version is required to restore a live record")], "Nothing to restore")
          }
          return yield* rewind(row, structure, row.data, row.version, "record.restored", "restore", reason, writer)
        }
        if (row.deletedAt !== null) return yield* recordNotFound(id)
        if (!Number.isInteger(version) || version < 1) return yield* validationFailed([detail("version", "version must be a positive integer")])
        const data = yield* snapshot(row.id, version)
        if (data === undefined) return yield* notFound({ message: `Version ${version} of record ${id} does not exist`, code: "VERSION_NOT_FOUND" })
        return yield* rewind(row, structure, data, version, "record.restored", "restore", reason, writer)
      }))

    const revert = (workspace: string, id: string, reason: string | undefined, writer: Writer) =>
      transaction(Effect.gen(function*() {
        const row = yield* lockLive(workspace, id)
        const structure = yield* structures.get(workspace, row.structureId)
        const previous = yield* sql`SELECT * FROM record_versions WHERE record_id = ${row.id} AND version < ${row.version}
          ORDER BY version DESC LIMIT 1`.pipe(Effect.map((rows) => rows[0]))
        if (previous === undefined) {
          return yield* unprocessable({ message: "The record has no previous version to revert to", code: "NO_PREVIOUS_VERSION" })
        }
        return yield* rewind(row, structure, json(previous.data), num(previous.version), "record.reverted", "revert", reason, writer)
      }))

    // ---------------------------------------------------------------- upsert

    const upsert = (structure: Structure, match: Record<string, unknown>, data: Record<string, unknown>, writer: Writer, idempotencyKey?: string) =>
      Effect.gen(function*() {
        const requestHash = Crypto.createHash("sha256").update(canonicalJson({ s: structure.id, match, data })).digest("hex")
        if (idempotencyKey !== undefined) {
          const stored = yield* sql`SELECT * FROM idempotency_keys WHERE workspace = ${structure.workspaceSlug} AND key = ${idempotencyKey}
            AND created_at > now() - interval '24 hours'`.pipe(Effect.orDie)
          if (stored[0]) {
            if (stored[0].request_hash !== requestHash) {
              return yield* unprocessable({ message: "This Idempotency-Key was used with a different request", code: "IDEMPOTENCY_KEY_REUSED" })
            }
            return { status: num(stored[0].status), body: json(stored[0].body) }
          }
        }
        if (Object.keys(match).length === 0) {
          return yield* validationFailed([detail("match", "match must name at least one field")])
        }
        const result = yield* transaction(Effect.gen(function*() {
          yield* writable(structure)
          const found = yield* sql`SELECT * FROM records WHERE structure_id = ${structure.id} AND deleted_at IS NULL
              AND (expires_at IS NULL OR expires_at > now()) AND data @> ${JSON.stringify(match)}::jsonb
            ORDER BY created_at, id LIMIT 1 FOR UPDATE`.pipe(Effect.map((rows) => rows.map(fromRow)))
          const existing = found[0]
          if (existing !== undefined) {
            const patch = { ...data }
            for (const key of Object.keys(match)) delete patch[key]
            const done = yield* updateInTx(existing, structure, { data: patch }, writer)
            const shown = maskData(structure, done.row.data)
            return { status: 200, body: { data: { id: done.row.id, data: shown, version: done.row.version, updatedAt: done.row.updatedAt }, operation: "updated" } }
          }
          const done = yield* createInTx(structure, { data: { ...data, ...match } }, writer)
          const shown = maskData(structure, done.row.data)
          return { status: 201, body: { data: { id: done.row.id, data: shown, version: done.row.version, createdAt: done.row.createdAt }, operation: "created" } }
        }))
        if (idempotencyKey !== undefined) {
          yield* sql`INSERT INTO idempotency_keys (workspace, key, request_hash, status, body)
            VALUES (${structure.workspaceSlug}, ${idempotencyKey}, ${requestHash}, ${result.status}, ${JSON.stringify(result.body)}::jsonb)
            ON CONFLICT (workspace, key) DO UPDATE SET request_hash = EXCLUDED.request_hash, status = EXCLUDED.status,
              body = EXCLUDED.body, created_at = now()`.pipe(Effect.orDie)
        }
        return result
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
        if (!Number.isInteger(version) || version < 1) return yield* validationFailed([detail("version", "version must be a positive integer")])
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

    return RecordService.of({
      create,
      update,
      remove,
      restore,
      revert,
      upsert: (structure, match, data, writer, key) => upsert(structure, match, data, writer, key),
      get,
      getVersion,
      history,
      changelog,
      reveal
    })
  }))
}
