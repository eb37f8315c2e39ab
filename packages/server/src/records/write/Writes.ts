// Writes of records: each writes the record row, a version row, a changelog row and the outbox event, and keeps
// uniqueness, references, auto-increments and TTL right. Creates, updates, deletes (with the onDelete of
// references), restores and reverts; the group commit (GroupWrites), upserts (RecordUpserts) and bulk requests
// (RecordBulk) are built from these pieces.
import { conflict, unprocessable, errorDetail } from "@troupe/api/Errors"
import type { Structure } from "@troupe/api/structures/Structure"
import { Clock, Data, Effect } from "effect"
import type { SqlError } from "effect/sql/SqlError"
import type { RecordFailure } from "../RecordFailures.ts"
import type { StructureService } from "../../structures/StructureService.ts"
import { claimsOf, fileFields, type ReferenceField, referenceFields } from "../../structures/StructureFacts.ts"
import { isLive, isExpired } from "../../query/Live.ts"
import { isUuid, type RecordRow } from "../../query/RecordRow.ts"
import { type Changes, diff, type Writer } from "../model.ts"
import {
  type CreateInput,
  type PendingCreate,
  type PlannedUpdate,
  recordNotFound,
  type RecordError,
  type Removed,
  type UpdateInput,
  type UpdatePlan,
  validationFailed,
  validVersion,
  versionNotFound,
  type WriteResult
} from "../RecordInputs.ts"
import type { Preparation } from "../RecordPrepare.ts"
import type { RecordRepo, RecordUpdate } from "../RecordRepo.ts"
import { changelogRow, eventOf, versionRow } from "../RecordRows.ts"

/** A batch claimed a unique value someone holds (or two of its items claimed the same one). */
export class ClaimTaken extends Data.TaggedError("ClaimTaken") {}

/** Now as the ISO timestamp events and deletes carry. */
export const timestamp = Effect.map(Clock.currentTimeMillis, (ms) => new Date(ms).toISOString())

/** The new state of a record an update plan makes. */
const recordUpdate = (row: RecordRow, plan: UpdatePlan, writer: Writer): RecordUpdate => ({
  id: row.id,
  data: plan.data,
  metadata: plan.metadata,
  version: plan.version,
  updatedBy: writer.userId,
  expiresAt: plan.expiresAt
})

/** The record as an update planned on `row` leaves it (what the statement writes, but for its timestamps). */
export const afterUpdate = (row: RecordRow, plan: UpdatePlan, writer: Writer): RecordRow => ({ ...row, ...recordUpdate(row, plan, writer) })

const reasonOf = (reason: string | undefined) => (reason ? { reason } : {})

export const makeWrites = (deps: {
  readonly repo: RecordRepo["Service"]
  readonly prep: Preparation
  readonly structures: StructureService["Service"]
  readonly onFailure: (failure: RecordFailure) => Effect.Effect<void>
}) => {
  const { onFailure, prep, repo, structures } = deps
  const { transaction } = repo

  /** The structure of a record being written; a soft-deleted structure hides its records. */
  const liveStructure = (workspace: string, row: RecordRow) =>
    Effect.flatMap(structures.get(workspace, row.structureId).pipe(Effect.mapError(() => recordNotFound(row.id))), (s) =>
      s.isDeleted ? Effect.fail(recordNotFound(row.id)) : Effect.succeed(s)
    )

  const lock = (workspace: string, id: string) => (isUuid(id) ? repo.lock(workspace, id) : Effect.succeed(undefined))

  const lockLive = (workspace: string, id: string) =>
    Effect.gen(function* () {
      const row = yield* lock(workspace, id)
      return row !== undefined && isLive(row, yield* Clock.currentTimeMillis) ? row : yield* recordNotFound(id)
    })

  /**
   * After a failed single-record write rolled back: tells the failure hook (record_*_failed triggers). `structure`
   * is what the write had resolved by then; without one (an unknown record) there is nothing to tell.
   */
  const reported =
    <A>(
      kind: "create" | "update" | "delete",
      recordId: string | undefined,
      input: unknown,
      writer: Writer,
      structureOf: () => Structure | undefined
    ) =>
    (effect: Effect.Effect<A, RecordError>) =>
      Effect.tapError(effect, (error) => {
        const structure = structureOf()
        return structure === undefined
          ? Effect.void
          : onFailure({ kind, structure, recordId, error, input, writer }).pipe(Effect.catchCause(() => Effect.void))
      })

  // ---------------------------------------------------------------- create

  /** New records with their history rows: version 1, a changelog entry and an event each (RecordRepo.createRecords). */
  const withHistory = (items: ReadonlyArray<PendingCreate>) =>
    Effect.map(timestamp, (at) =>
      items.map(({ input, record, structure, writer }) => {
        const changes = diff(structure, {}, record.data)
        const row = { id: record.id, workspace: record.workspace, data: record.data, version: 1 }
        return {
          record,
          changes,
          log: changelogRow(row, "create", changes, writer, reasonOf(input.reason)),
          event: eventOf("record.created", structure, row, null, changes, writer, at)
        }
      })
    )

  const written = (items: ReadonlyArray<PendingCreate>) => (rows: ReadonlyArray<RecordRow>) =>
    rows.map((row, k): WriteResult => ({ row, structure: items[k]!.structure }))

  /**
   * New records, their unique claims and history in one statement, in a transaction or on its own (atomic either
   * way). ClaimTaken when a value is held or claimed twice: nothing was written, and the caller writes the items
   * one by one (insertOne), where stale claims are freed and the field is named.
   */
  const createMany = (items: ReadonlyArray<PendingCreate>) =>
    Effect.gen(function* () {
      const claims = items.flatMap((item) =>
        claimsOf(item.structure, item.record.data).map(([field, value]) => ({
          structure_id: item.structure.id,
          field,
          value,
          record_id: item.record.id
        }))
      )
      const rows = yield* repo.createRecords(yield* withHistory(items), claims).pipe(
        Effect.catchIf(
          (e) => e.reason._tag === "UniqueViolation",
          () => Effect.fail(new ClaimTaken())
        )
      )
      return written(items)(rows)
    })

  /** One new record in the caller's transaction: the record and its history, then its unique values (claimUnique). */
  const insertOne = (item: PendingCreate) =>
    Effect.gen(function* () {
      const rows = yield* repo.createRecords(yield* withHistory([item]), [])
      yield* prep.claimUnique(item.structure, item.record.id, item.record.data, undefined)
      return written([item])(rows)[0]!
    })

  const createInTx = (structure: Structure, input: CreateInput, writer: Writer) =>
    Effect.gen(function* () {
      const prepared = yield* prep.prepareCreate(structure, input, writer)
      yield* prep.checkReferences(structure, prepared.data, undefined)
      const data = yield* prep.assignAutoIncrements(structure, prepared.data)
      return yield* insertOne({ structure, input, writer, record: prep.newRecord(structure, input, writer, data, prepared.expiresAt) })
    })

  // ---------------------------------------------------------------- update

  const updateInTx = (row: RecordRow, structure: Structure, input: UpdateInput, writer: Writer, action = "update") =>
    Effect.gen(function* () {
      const plan = yield* prep.planUpdate(row, structure, input, writer)
      if (plan.version !== row.version) {
        const [next] = yield* applyUpdates([{ row, structure, plan, writer, action, reason: input.reason }])
        return { row: next!, structure, previousVersion: row.version }
      }
      // createVersion: false rewrites the version it keeps
      const next = yield* repo.updateRecord(recordUpdate(row, plan, writer))
      yield* repo.rewriteVersion(row.id, row.version, plan.data, plan.changes, writer.userId)
      yield* repo.insertChangelog([changelogRow(next, action, plan.changes, writer, reasonOf(input.reason))])
      yield* repo.appendEvent(eventOf("record.updated", structure, next, row.data, plan.changes, writer, yield* timestamp))
      return { row: next, structure, previousVersion: row.version }
    })

  /** One update in its own transaction, its failure told to the failure hook. */
  const updateOne = (workspace: string, id: string, input: UpdateInput, writer: Writer) => {
    let structure: Structure | undefined
    return transaction(
      Effect.gen(function* () {
        const row = yield* lockLive(workspace, id)
        structure = yield* liveStructure(workspace, row)
        return yield* updateInTx(row, structure, input, writer, input.replace ? "replace" : "update")
      })
    ).pipe(reported("update", id, input.data, writer, () => structure))
  }

  /**
   * Planned updates and their history rows, written in one statement; the new rows in order, undefined for a record
   * the statement's guard skipped (written or deleted since it was read; `xmins`: the row versions read, for updates
   * planned without a lock). A record's updates in a row are each planned on the one before (RecordRepo.
   * updateRecordsWithHistory): each answers the record as its own update left it. `written`: each record's last
   * row as stored, with its new xmin.
   */
  const writeUpdates = (planned: ReadonlyArray<PlannedUpdate>, xmins?: ReadonlyArray<string>) =>
    Effect.gen(function* () {
      const at = yield* timestamp
      const written = yield* repo.updateRecordsWithHistory(
        planned.map(({ action, plan, reason, row, structure, writer }, k) => {
          const next = { id: row.id, workspace: row.workspace, data: plan.data, version: plan.version }
          return {
            update: recordUpdate(row, plan, writer),
            workspace: row.workspace,
            structureId: structure.id,
            prevVersion: row.version,
            prevXmin: xmins?.[k],
            changes: plan.changes,
            log: changelogRow(next, action, plan.changes, writer, reasonOf(reason)),
            event: eventOf("record.updated", structure, next, row.data, plan.changes, writer, at)
          }
        })
      )
      const rows = planned.map((p): RecordRow | undefined => {
        const last = written.get(p.row.id)?.row
        return last === undefined || last.version === p.plan.version ? last : afterUpdate(last, p.plan, p.writer)
      })
      return { rows, written }
    })

  /** Planned updates of rows the caller's transaction locked: each is written (the new rows, in order). */
  const applyUpdates = (planned: ReadonlyArray<PlannedUpdate>) =>
    Effect.flatMap(writeUpdates(planned), ({ rows }) =>
      rows.every((r) => r !== undefined)
        ? Effect.succeed(rows)
        : Effect.fail(conflict({ message: "The write collided with a concurrent write; retry it", code: "CONFLICT" }))
    )

  // ---------------------------------------------------------------- delete (with onDelete of references)

  /**
   * onDelete of every property of the workspace's structures that names what is deleted (`rulesOf` picks a
   * structure's properties and the key they would hold), in the caller's transaction: restrict refuses (409),
   * cascade deletes the referring records (transitively), set_null clears the property (one new version per record,
   * whatever number of its fields named it; many-to-many arrays lose the key). `what`: "record" or "file".
   */
  const applyOnDelete = (
    workspace: string,
    what: { kind: "record" | "file"; id: string },
    rulesOf: (other: Structure) => ReadonlyArray<{ field: string; onDelete: ReferenceField["onDelete"]; key: unknown }>,
    permanent: boolean,
    writer: Writer,
    depth: number
  ): Effect.Effect<void, RecordError | SqlError> =>
    Effect.gen(function* () {
      if (depth > 32) return yield* conflict({ message: "Cascade too deep", code: "CONFLICT" })
      const all = yield* structures.all(workspace)
      for (const other of all) {
        const rules = rulesOf(other)
        if (rules.length === 0) continue
        const cleared = new Map<string, { row: RecordRow; data: Record<string, unknown> }>()
        const cascaded = new Set<string>()
        for (const rule of rules) {
          const key = rule.key
          if (key === undefined || key === null) continue
          const referencing = yield* repo.lockReferencing(
            other.id,
            what.id,
            JSON.stringify({ [rule.field]: key }),
            JSON.stringify({ [rule.field]: [key] })
          )
          if (referencing.length === 0) continue
          if (rule.onDelete === "restrict") {
            const name = `${what.kind === "file" ? "File" : "Record"} ${what.id}`
            return yield* conflict({
              message: `${name} is referenced by ${referencing.length} record(s) of "${other.recordSlug}" (${rule.field}, onDelete restrict)`,
              code: "CONFLICT",
              details: referencing
                .slice(0, 20)
                .map((r) => errorDetail(`${other.recordSlug}.${r.id}.${rule.field}`, `references this ${what.kind}`))
            })
          }
          for (const r of referencing) {
            if (rule.onDelete === "cascade") {
              if (cascaded.has(r.id)) continue
              cascaded.add(r.id)
              cleared.delete(r.id)
              yield* deleteInTx(other, r, permanent, { ...writer, source: "cascade" }, depth + 1)
            } else if (!cascaded.has(r.id)) {
              const entry = cleared.get(r.id) ?? { row: r, data: { ...r.data } }
              const value = entry.data[rule.field]
              entry.data[rule.field] = Array.isArray(value) ? value.filter((x) => x !== key) : null
              cleared.set(r.id, entry)
            }
          }
        }
        for (const { row: r, data } of cleared.values()) {
          yield* updateInTx(
            r,
            other,
            { data, replace: true, skipValidation: true },
            { ...writer, source: "set_null", canSkipValidation: true }
          )
        }
      }
    })

  /** The onDelete of the reference properties that point at `row`'s structure. */
  const referencesTo = (structure: Structure, row: RecordRow) => (other: Structure) =>
    referenceFields(other)
      .filter((ref) => ref.target === structure.recordSlug)
      .map((ref) => ({ field: ref.field, onDelete: ref.onDelete, key: ref.targetField === "id" ? row.id : row.data[ref.targetField] }))

  /**
   * A file is being deleted (in the storage's transaction, its row locked): the onDelete of every `format: "file"`
   * property naming it. Records deleted by cascade are soft-deleted, as a record's cascade deletes them.
   */
  const fileDeleted = (workspace: string, fileId: string, writer: Writer) =>
    applyOnDelete(
      workspace,
      { kind: "file", id: fileId },
      (other) => fileFields(other).map((f) => ({ field: f.field, onDelete: f.onDelete, key: fileId })),
      false,
      writer,
      0
    )

  const deleteInTx = (
    structure: Structure,
    row: RecordRow,
    permanent: boolean,
    writer: Writer,
    depth = 0,
    reason?: string
  ): Effect.Effect<string, RecordError | SqlError> =>
    Effect.gen(function* () {
      yield* applyOnDelete(structure.workspaceSlug, { kind: "record", id: row.id }, referencesTo(structure, row), permanent, writer, depth)
      const deletedAt = yield* timestamp
      if (permanent) {
        yield* repo.deleteRecords([row.id])
      } else {
        yield* repo.softDeleteRecords([{ id: row.id, updatedBy: writer.userId }], deletedAt)
        yield* repo.insertChangelog([changelogRow(row, "delete", {}, writer, reasonOf(reason))])
      }
      yield* repo.appendEvent(eventOf("record.deleted", structure, row, row.data, {}, writer, deletedAt))
      return deletedAt
    })

  /** A delete in its own transaction, its failure told to the failure hook. */
  const removeOne = (workspace: string, id: string, permanent: boolean, writer: Writer, reason?: string) => {
    let found: Structure | undefined
    return transaction(
      Effect.gen(function* () {
        const row = yield* lock(workspace, id)
        if (row === undefined || (!permanent && !isLive(row, yield* Clock.currentTimeMillis))) return yield* recordNotFound(id)
        const structure = (found = yield* liveStructure(workspace, row))
        const deletedAt = yield* deleteInTx(structure, row, permanent, writer, 0, reason)
        return { id: row.id, deletedAt, structure } satisfies Removed
      })
    ).pipe(reported("delete", id, { permanent }, writer, () => found))
  }

  // ---------------------------------------------------------------- restore / revert

  const rewind = (
    row: RecordRow,
    structure: Structure,
    data: Record<string, unknown>,
    restoredFrom: number,
    event: string,
    action: string,
    reason: string | undefined,
    writer: Writer
  ) =>
    Effect.gen(function* () {
      // a soft-deleted record gave its unique values up: it claims them (and checks its references) afresh
      const before = row.deletedAt === null ? row.data : undefined
      yield* prep.checkReferences(structure, data, before)
      yield* prep.claimUnique(structure, row.id, data, before)
      const next = yield* repo.rewindRecord(row.id, data, writer.userId)
      const changes: Changes = diff(structure, row.data, data)
      yield* repo.insertVersions([versionRow(next, changes, writer, restoredFrom)])
      yield* repo.insertChangelog([changelogRow(next, action, changes, writer, { ...reasonOf(reason), restoredFrom })])
      yield* repo.appendEvent(eventOf(event, structure, next, row.data, changes, writer, yield* timestamp))
      return { row: next, structure, previousVersion: row.version, restoredFrom } satisfies WriteResult
    })

  const restore = (workspace: string, id: string, version: number | undefined, reason: string | undefined, writer: Writer) =>
    transaction(
      Effect.gen(function* () {
        const row = yield* lock(workspace, id)
        if (row === undefined || isExpired(row, yield* Clock.currentTimeMillis)) return yield* recordNotFound(id)
        const structure = yield* liveStructure(workspace, row)
        if (version === undefined) {
          // restore of a soft-deleted record: it comes back as it was
          if (row.deletedAt === null) {
            return yield* validationFailed([errorDetail("version", "version is required to restore a live record")], "Nothing to restore")
          }
          return yield* rewind(row, structure, row.data, row.version, "record.restored", "restore", reason, writer)
        }
        if (row.deletedAt !== null) return yield* recordNotFound(id)
        if (!validVersion(version)) return yield* validationFailed([errorDetail("version", "version must be a positive integer")])
        const stored = yield* repo.findVersion(row.id, version)
        if (stored === undefined) return yield* versionNotFound(id, version)
        return yield* rewind(row, structure, stored.data, version, "record.restored", "restore", reason, writer)
      })
    )

  const revert = (workspace: string, id: string, reason: string | undefined, writer: Writer) =>
    transaction(
      Effect.gen(function* () {
        const row = yield* lockLive(workspace, id)
        const structure = yield* liveStructure(workspace, row)
        const previous = yield* repo.previousVersion(row.id, row.version)
        if (previous === undefined) {
          return yield* unprocessable({ message: "The record has no previous version to revert to", code: "NO_PREVIOUS_VERSION" })
        }
        return yield* rewind(row, structure, previous.data, previous.version, "record.reverted", "revert", reason, writer)
      })
    )

  return {
    liveStructure,
    lock,
    lockLive,
    reported,
    createMany,
    insertOne,
    createInTx,
    updateInTx,
    updateOne,
    applyUpdates,
    writeUpdates,
    deleteInTx,
    removeOne,
    fileDeleted,
    restore,
    revert
  }
}

export type Writes = ReturnType<typeof makeWrites>
