// The checks and transformations a write goes through before its rows are written: the structure accepts writes,
// expiry, validation (secrets seen in plaintext, stored encrypted), metadata, references, unique claims,
// auto-increment values, increments, upsert matches. SQL only where a check needs the database (references, claims,
// counters), through RecordRepo.
import { conflict, locked, errorDetail } from "@troupe/api/Errors"
import type { Structure } from "@troupe/api/structures/Structure"
import { Clock, Effect } from "effect"
import type { SqlError } from "effect/sql/SqlError"
import { uuidv7 } from "../lib/Uuid.ts"
import type { Secrets } from "../platform/Secrets.ts"
import { jsonEqual, parseDateTime } from "../structures/Formats.ts"
import type { StructureService } from "../structures/StructureService.ts"
import { validatorFor } from "../structures/Validator.ts"
import { autoIncrementFields, claimsOf, fileFields, referenceFields } from "../structures/StructureFacts.ts"
import { inspectJson } from "./DataGuard.ts"
import { getAt, isObject, setAt } from "../lib/JsonPath.ts"
import { isUuid, type RecordRow } from "../query/RecordRow.ts"
import { diff, type Writer } from "./model.ts"
import { MASK, secretPaths } from "../structures/SecretPaths.ts"
import {
  type CreateInput,
  type PendingCreate,
  MAX_TTL_SECONDS,
  type RecordError,
  type UpdateInput,
  type UpdatePlan,
  validationFailed
} from "./RecordInputs.ts"
import type { RecordRepo } from "./RecordRepo.ts"
import type { NewRecord } from "./RecordRows.ts"

/** A copy of `data` with `value` at `path`, creating objects along the way. */
const setDeep = (data: Record<string, unknown>, path: ReadonlyArray<string>, value: unknown): Record<string, unknown> => {
  const [head, ...rest] = path
  if (head === undefined) return data
  if (rest.length === 0) return { ...data, [head]: value }
  return { ...data, [head]: setDeep(isObject(data[head]) ? (data[head] as Record<string, unknown>) : {}, rest, value) }
}

/**
 * expiresAt wins over ttlSeconds; neither -> the structure's default TTL (on create). An explicit expiresAt must be
 * in the future and within MAX_TTL_SECONDS; ttlSeconds must be a positive number up to MAX_TTL_SECONDS.
 */
const expiryOf = (
  input: { ttlSeconds?: number | undefined; expiresAt?: string | undefined },
  fallbackSeconds: number | null | undefined,
  now: number
) => {
  if (input.expiresAt !== undefined) {
    const t = parseDateTime(input.expiresAt)
    if (t === undefined) return { error: validationFailed([errorDetail("expiresAt", "expiresAt must be an ISO 8601 date-time")]) }
    if (t <= now) return { error: validationFailed([errorDetail("expiresAt", "expiresAt must be in the future")]) }
    if (t > now + MAX_TTL_SECONDS * 1000)
      return { error: validationFailed([errorDetail("expiresAt", "expiresAt must be within 100 years")]) }
    return { value: new Date(t).toISOString() }
  }
  const seconds = input.ttlSeconds ?? fallbackSeconds ?? undefined
  if (seconds === undefined || seconds === null) return { value: undefined }
  if (!Number.isFinite(seconds) || seconds <= 0 || seconds > MAX_TTL_SECONDS) {
    return { error: validationFailed([errorDetail("ttlSeconds", `ttlSeconds must be a positive number of at most ${MAX_TTL_SECONDS}`)]) }
  }
  return { value: new Date(now + seconds * 1000).toISOString() }
}

/** The data of an upsert that updates: the match is not written again. */
export const withoutMatch = (data: Record<string, unknown>, match: Record<string, unknown>) => {
  const patch = { ...data }
  for (const key of Object.keys(match)) delete patch[key]
  return patch
}

/** A match names at least one field, each a scalar, none a secret. */
export const checkMatch = (structure: Structure, match: Record<string, unknown>) => {
  const keys = Object.keys(match)
  if (keys.length === 0) return validationFailed([errorDetail("match", "match must name at least one field")])
  const problems = [...inspectJson(match, "match", structure.properties)]
  const secretRoots = new Set(secretPaths(structure).map((p) => p[0]!))
  for (const k of keys) {
    const v = match[k]
    if (v !== null && typeof v === "object") problems.push(errorDetail(`match.${k}`, "match values are strings, numbers, booleans or null"))
    if (secretRoots.has(k)) problems.push(errorDetail(`match.${k}`, "secret fields are stored encrypted and cannot be matched"))
  }
  return problems.length > 0 ? validationFailed(problems) : Effect.void
}

export const writable = (structure: Structure) =>
  structure.status === "inactive"
    ? Effect.fail(conflict({ message: `Structure "${structure.recordSlug}" is inactive and accepts no new records`, code: "CONFLICT" }))
    : structure.metadata?.recordWritesLocked
      ? Effect.fail(locked({ message: "Record writes are locked while a migration runs", code: "RECORD_WRITES_LOCKED" }))
      : Effect.void

/** Creates whose only SQL is their insert (no references to check, no counters to draw) can share a commit. */
export const batchable = (structure: Structure) =>
  referenceFields(structure).length === 0 && fileFields(structure).length === 0 && autoIncrementFields(structure).length === 0

/** Metadata is free-form, but stored JSON all the same. */
const checkMetadata = (metadata: unknown) =>
  Effect.gen(function* () {
    if (metadata === undefined) return
    if (!isObject(metadata)) return yield* validationFailed([errorDetail("metadata", "must be an object")])
    const problems = inspectJson(metadata, "metadata")
    if (problems.length > 0) return yield* validationFailed(problems)
  })

/** The patch plus each increment applied to the stored value (nested paths copy their parent objects). */
const incremented = (stored: Record<string, unknown>, patch: Record<string, unknown>, increments: Readonly<Record<string, number>>) =>
  Effect.gen(function* () {
    let out: Record<string, unknown> = { ...patch }
    for (const [field, by] of Object.entries(increments)) {
      const path = field.split(".")
      if (!Number.isFinite(by)) return yield* validationFailed([errorDetail(field, "the amount must be a finite number")])
      const current = getAt(stored, path)
      if (current !== undefined && current !== null && typeof current !== "number") {
        return yield* validationFailed([
          errorDetail(field, `${field} holds a ${Array.isArray(current) ? "array" : typeof current}, not a number`)
        ])
      }
      const next = ((current as number | null | undefined) ?? 0) + by
      const [head, ...rest] = path
      if (rest.length === 0) out[head!] = next
      else {
        const base = isObject(out[head!])
          ? (out[head!] as Record<string, unknown>)
          : isObject(stored[head!])
            ? (stored[head!] as Record<string, unknown>)
            : {}
        out = { ...out, [head!]: setDeep(base, rest, next) }
      }
    }
    return out
  })

/** Whether two states of a record hold the same unique values. */
const sameClaims = (structure: Structure, before: Record<string, unknown>, after: Record<string, unknown>) => {
  const a = claimsOf(structure, before).map(([f, v]) => `${f}\u0000${v}`)
  const b = new Set(claimsOf(structure, after).map(([f, v]) => `${f}\u0000${v}`))
  return a.length === b.size && a.every((c) => b.has(c))
}

export const makePreparation = (deps: {
  readonly repo: RecordRepo["Service"]
  readonly structures: StructureService["Service"]
  readonly secrets: Secrets["Service"]
}) => {
  const { repo, secrets, structures } = deps

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

  /** Decrypts secret fields of stored data (an undecryptable value reads as null). */
  const reveal = (structure: Structure, data: Record<string, unknown>) =>
    Effect.gen(function* () {
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
    Effect.gen(function* () {
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
  const validate = (
    structure: Structure,
    data: unknown,
    mode: "create" | "update" | "replace",
    stored: Record<string, unknown> | undefined,
    skip: boolean
  ) =>
    Effect.gen(function* () {
      if (!isObject(data)) return yield* validationFailed([errorDetail("data", "must be an object")])
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
        const now = new Date(yield* Clock.currentTimeMillis)
        const result = validatorFor(structure).validate(input, { mode, previous, now })
        if (!result.ok) return yield* validationFailed(result.errors)
        out = result.data
      }
      return restore(out)
    })

  /**
   * Referenced records must exist (live) in the target structure, and `format: "file"` values must name files of the
   * workspace (their rows key-share locked, so the file's delete waits for this write and then sees it).
   */
  const checkReferences = (structure: Structure, data: Record<string, unknown>, previous: Record<string, unknown> | undefined) =>
    Effect.gen(function* () {
      const files = fileFields(structure).filter(({ field }) => {
        const value = data[field]
        return typeof value === "string" && (previous === undefined || previous[field] !== value)
      })
      if (files.length > 0) {
        const ids = files.map(({ field }) => data[field] as string)
        const have = yield* repo.existingFiles(structure.workspaceSlug, ids).pipe(Effect.orDie)
        const missing = files.filter(({ field }) => !have.has((data[field] as string).toLowerCase()))
        if (missing.length > 0) {
          return yield* validationFailed(
            missing.map(({ field }) => errorDetail(`data.${field}`, `file ${String(data[field])} does not exist in this workspace`))
          )
        }
      }
      for (const ref of referenceFields(structure)) {
        const value = data[ref.field]
        if (value === undefined || value === null) continue
        if (previous !== undefined && jsonEqual(previous[ref.field], value)) continue
        const ids = Array.isArray(value) ? value : [value]
        if (ids.some((x) => typeof x !== "string")) {
          return yield* validationFailed([errorDetail(`data.${ref.field}`, "references are record ids (strings)")])
        }
        const target = yield* structures
          .getBySlug(structure.workspaceSlug, ref.target)
          .pipe(
            Effect.mapError(() => validationFailed([errorDetail(`data.${ref.field}`, `target structure "${ref.target}" does not exist`)]))
          )
        const wanted = [...new Set(ids as Array<string>)]
        if (ref.targetField === "id" && wanted.some((x) => !isUuid(x))) {
          return yield* validationFailed([errorDetail(`data.${ref.field}`, "referenced record does not exist")])
        }
        const have = yield* repo.existingKeys(target.id, ref.targetField, wanted).pipe(Effect.orDie)
        const missing = wanted.filter((x) => !have.has(x))
        if (missing.length > 0) {
          return yield* validationFailed([
            errorDetail(`data.${ref.field}`, `referenced record ${missing.join(", ")} does not exist in "${ref.target}"`)
          ])
        }
      }
    })

  /** The unique values `data` holds claimed, those `previous` held and `data` no longer does given up. */
  const claimUnique = (
    structure: Structure,
    recordId: string,
    data: Record<string, unknown>,
    previous: Record<string, unknown> | undefined
  ) =>
    Effect.gen(function* () {
      const before = new Map(previous ? claimsOf(structure, previous) : [])
      const after = claimsOf(structure, data)
      for (const [field, value] of before) {
        if (!after.some(([f, v]) => f === field && v === value)) yield* repo.releaseClaim(structure.id, field, recordId)
      }
      for (const [field, value] of after) {
        if (before.get(field) === value) continue
        const claim = { structure_id: structure.id, field, value, record_id: recordId }
        // an expired record is gone for every reader at once, so its value is free before the sweeper runs
        const taken = (yield* repo.claim(claim)) || ((yield* repo.freeStaleClaim(structure.id, field, value)) && (yield* repo.claim(claim)))
        if (!taken) {
          const name = field.startsWith("ref:") ? field.slice(4) : field
          return yield* Effect.fail(
            conflict({
              message: field.startsWith("ref:")
                ? `Another record already references this target through one-to-one "${name}"`
                : `A record with this ${name} already exists`,
              code: "DUPLICATE_KEY",
              details: [errorDetail(`data.${name}`, "must be unique")]
            })
          )
        }
      }
    })

  const assignAutoIncrements = (structure: Structure, data: Record<string, unknown>) =>
    Effect.gen(function* () {
      const fields = autoIncrementFields(structure)
      if (fields.length === 0) return data
      const out = { ...data }
      for (const f of fields) {
        if (out[f.field] !== undefined && out[f.field] !== null) continue
        out[f.field] = yield* repo.nextCounter(structure.id, f.field, f.startAt, f.incrementBy)
      }
      return out
    })

  /** The checks of a create that need no SQL: writable, expiry, validation, metadata. */
  const prepareCreate = (structure: Structure, input: CreateInput, writer: Writer) =>
    Effect.gen(function* () {
      yield* writable(structure)
      const expiry = expiryOf(input, structure.defaultTtlSeconds, yield* Clock.currentTimeMillis)
      if (expiry.error) return yield* expiry.error
      const data = yield* validate(structure, input.data, "create", undefined, input.skipValidation === true && writer.canSkipValidation)
      yield* checkMetadata(input.metadata)
      return { data, expiresAt: expiry.value ?? null }
    })

  /** The row of a create: a new id, secrets encrypted. */
  const newRecord = (
    structure: Structure,
    input: CreateInput,
    writer: Writer,
    data: Record<string, unknown>,
    expiresAt: string | null
  ): NewRecord => ({
    id: uuidv7(),
    workspace: structure.workspaceSlug,
    structure_id: structure.id,
    data: encryptSecrets(structure, data),
    metadata: (input.metadata ?? {}) as Record<string, unknown>,
    created_by: writer.userId,
    expires_at: expiresAt
  })

  /**
   * What an update makes of `row`: every check (version, validation, metadata, references, unique claims, expiry)
   * and the new data, metadata, expiry and version. SQL only for references and unique values that change.
   */
  const planUpdate = (
    row: RecordRow,
    structure: Structure,
    input: UpdateInput,
    writer: Writer,
    /** "unchanged": planned without a lock, so no claim may be taken or given up (a 409 CLAIMS_CHANGE if one would) */
    claims: "take" | "unchanged" = "take"
  ): Effect.Effect<UpdatePlan, RecordError | SqlError> =>
    Effect.gen(function* () {
      if (input.expectedVersion !== undefined && input.expectedVersion !== row.version) {
        return yield* Effect.fail(
          conflict({
            message: `Version conflict: expected ${input.expectedVersion}, the record is at version ${row.version}`,
            code: "VERSION_CONFLICT",
            details: [errorDetail("version", `current version is ${row.version}`)]
          })
        )
      }
      const skip = input.skipValidation === true && writer.canSkipValidation
      const patch = input.increments === undefined ? input.data : yield* incremented(row.data, input.data, input.increments)
      let data = yield* validate(structure, patch, input.replace ? "replace" : "update", row.data, skip)
      yield* checkMetadata(input.metadata)
      yield* checkReferences(structure, data, row.data)
      data = encryptSecrets(structure, data, row.data)
      if (claims === "take") yield* claimUnique(structure, row.id, data, row.data)
      else if (!sameClaims(structure, row.data, data)) {
        return yield* conflict({ message: "The update changes unique values", code: "CLAIMS_CHANGE" })
      }
      let expiresAt = row.expiresAt
      if (input.clearTtl === true) expiresAt = null
      else if (input.expiresAt !== undefined || input.ttlSeconds !== undefined) {
        const expiry = expiryOf(input, undefined, yield* Clock.currentTimeMillis)
        if (expiry.error) return yield* expiry.error
        expiresAt = expiry.value ?? null
      }
      const metadata = input.metadata === undefined ? row.metadata : input.replace ? input.metadata : { ...row.metadata, ...input.metadata }
      const version = input.createVersion === false ? row.version : row.version + 1
      return { data, metadata, expiresAt, version, changes: diff(structure, row.data, data) }
    })

  /** A create checked and ready for a batch (no references or counters to resolve): prepareCreate, then newRecord. */
  const pendingCreate = (structure: Structure, input: CreateInput, writer: Writer): Effect.Effect<PendingCreate, RecordError> =>
    Effect.map(prepareCreate(structure, input, writer), (p) => ({
      structure,
      input,
      writer,
      record: newRecord(structure, input, writer, p.data, p.expiresAt)
    }))

  return { reveal, checkReferences, claimUnique, assignAutoIncrements, prepareCreate, newRecord, pendingCreate, planUpdate }
}

export type Preparation = ReturnType<typeof makePreparation>
