// The record engine: every write is one SQL transaction that writes the record row, a version row, a changelog row
// and the outbox event, and keeps uniqueness, references, auto-increments and TTL right. Updates arrive here from
// RecordWriter (the node's group commit, guarded by the row version read), deletes, restores and reverts through
// RecordEntity (one actor per record), upserts through RecordKeyEntity (one per business key); row locks
// (`FOR UPDATE`) keep writes that reach a row another way (cascades, bulk) correct as well.
//
// The parts, by role: RecordRepo (the SQL), RecordPrepare (validation, secrets, expiry, claims), RecordWrites
// (writes in one transaction), GroupWrites (the group commit of concurrent writes), RecordBulk (bulk writes). This
// file is the public service: its interface, the reads, and the assembly.
import { Conflict, type ErrorDetail, errorDetail, serviceUnavailable } from "@troupe/api/Errors"
import type { Structure } from "@troupe/api/structures/Structure"
import { Clock, Context, Effect, Exit, Layer, Result } from "effect"
import * as GroupCommit from "../lib/GroupCommit.ts"
import { Secrets } from "../platform/Secrets.ts"
import { spanMethods } from "../platform/Tracing.ts"
import { StructureService } from "../structures/StructureService.ts"
import { makeGroupWrites } from "./GroupWrites.ts"
import { isExpired } from "../query/Live.ts"
import { isUuid, type RecordRow } from "../query/RecordRow.ts"
import { changelogChanges, type Writer } from "./model.ts"
import { maskChanges, maskData } from "../structures/SecretPaths.ts"
import { makePlannerStats } from "./PlannerStats.ts"
import { makeAtomicBulk } from "./RecordBulk.ts"
import { RecordFailureHook } from "./RecordFailures.ts"
import {
  type BulkEventType,
  type BulkItemFailure,
  type CreateInput,
  type RecordError,
  recordNotFound,
  type UpdateInput,
  type UpsertItem,
  type UpsertResult,
  validationFailed,
  validVersion,
  versionNotFound,
  type WriteResult
} from "./RecordInputs.ts"
import { makePreparation } from "./RecordPrepare.ts"
import { RecordRepo } from "./RecordRepo.ts"
import { makeUpserts } from "./RecordUpserts.ts"
import { makeWrites } from "./RecordWrites.ts"

export {
  type BulkItemFailure,
  type CreateInput,
  MAX_TTL_SECONDS,
  type RecordError,
  recordNotFound,
  type UpdateInput,
  type UpsertItem,
  type UpsertResult,
  type WriteResult
} from "./RecordInputs.ts"

/** The most reads by id one statement carries. */
const READ_BATCH_MAX = 128

export class RecordService extends Context.Service<
  RecordService,
  {
    readonly create: (structure: Structure, input: CreateInput, writer: Writer) => Effect.Effect<WriteResult, RecordError>
    readonly update: (workspace: string, id: string, input: UpdateInput, writer: Writer) => Effect.Effect<WriteResult, RecordError>
    readonly remove: (
      workspace: string,
      id: string,
      permanent: boolean,
      writer: Writer,
      reason?: string
    ) => Effect.Effect<{ id: string; deletedAt: string; structure: Structure }, RecordError>
    readonly restore: (
      workspace: string,
      id: string,
      version: number | undefined,
      reason: string | undefined,
      writer: Writer
    ) => Effect.Effect<WriteResult, RecordError>
    readonly revert: (workspace: string, id: string, reason: string | undefined, writer: Writer) => Effect.Effect<WriteResult, RecordError>
    readonly upsert: (
      structure: Structure,
      match: Record<string, unknown>,
      data: Record<string, unknown>,
      writer: Writer,
      idempotencyKey?: string
    ) => Effect.Effect<{ status: number; body: unknown; replayed: boolean }, RecordError>
    /**
     * An upsert (no Idempotency-Key) of a match on a unique property, committed with upserts of other keys; `undefined`
     * when it must go through its key's actor instead (no unique property in the match, or the shared batch failed).
     */
    readonly upsertGrouped: (
      structure: Structure,
      match: Record<string, unknown>,
      data: Record<string, unknown>,
      writer: Writer
    ) => Effect.Effect<UpsertResult | undefined, RecordError>
    /** Upserts of one match in one transaction, in order; fails as a whole (nothing written) when any item fails. */
    readonly upsertMany: (
      structure: Structure,
      match: Record<string, unknown>,
      items: ReadonlyArray<UpsertItem>
    ) => Effect.Effect<ReadonlyArray<UpsertResult>, RecordError>
    /** A live record (or, with includeDeleted, a soft-deleted one). */
    readonly get: (
      workspace: string,
      id: string,
      options?: { includeDeleted?: boolean }
    ) => Effect.Effect<{ row: RecordRow; structure: Structure; restoredFrom?: number }, RecordError>
    readonly getVersion: (
      workspace: string,
      id: string,
      version: number
    ) => Effect.Effect<{ row: RecordRow; structure: Structure }, RecordError>
    readonly history: (workspace: string, id: string) => Effect.Effect<{ structure: Structure; versions: ReadonlyArray<any> }, RecordError>
    readonly changelog: (
      workspace: string,
      id: string,
      options: { limit?: number; startDate?: string; endDate?: string }
    ) => Effect.Effect<{ structure: Structure; entries: ReadonlyArray<any> }, RecordError>
    /**
     * A file is being deleted (inside the storage's transaction): the onDelete of the `format: "file"` properties
     * naming it (restrict → 409, set_null, cascade).
     */
    readonly fileDeleted: (workspace: string, fileId: string, writer: Writer) => Effect.Effect<void, Conflict>
    /** Decrypts secret fields of stored data (callers with `secrets:reveal`). */
    readonly reveal: (structure: Structure, data: Record<string, unknown>) => Effect.Effect<Record<string, unknown>>
    /** Atomic bulk create: every item in one transaction with the `record.bulk.created` event, or nothing. */
    readonly createAll: (
      structure: Structure,
      items: ReadonlyArray<CreateInput>,
      writer: Writer
    ) => Effect.Effect<ReadonlyArray<WriteResult>, BulkItemFailure | RecordError>
    /** Non-atomic bulk create: each item's outcome, in item order (RecordBulk's createSome). */
    readonly createSome: (
      structure: Structure,
      items: ReadonlyArray<CreateInput>,
      writer: Writer
    ) => Effect.Effect<Array<Result.Result<WriteResult, RecordError>>>
    /** Atomic bulk update (rows locked in id order); `structureId` restricts the batch to one structure. */
    readonly updateAll: (
      workspace: string,
      items: ReadonlyArray<{ id: string; input: UpdateInput }>,
      writer: Writer,
      structureId?: string
    ) => Effect.Effect<ReadonlyArray<WriteResult>, BulkItemFailure | RecordError>
    /** Atomic bulk delete. */
    readonly removeAll: (
      workspace: string,
      ids: ReadonlyArray<string>,
      permanent: boolean,
      writer: Writer,
      structureId?: string
    ) => Effect.Effect<ReadonlyArray<{ id: string; deletedAt: string; structureId: string }>, BulkItemFailure | RecordError>
    /** The `record.bulk.*` event of a non-atomic batch, in a transaction of its own after the items. */
    readonly publishBulk: (structure: Structure, type: BulkEventType, ids: ReadonlyArray<string>, writer: Writer) => Effect.Effect<void>
  }
>()("@troupe/server/records/RecordService") {
  static readonly layerNoDeps = Layer.effect(
    RecordService,
    Effect.gen(function* () {
      const repo = yield* RecordRepo
      const structures = yield* StructureService
      const secrets = yield* Secrets
      const onFailure = yield* RecordFailureHook
      const prep = makePreparation({ repo, structures, secrets })
      const writes = makeWrites({ repo, prep, structures, onFailure })
      const upserts = makeUpserts({ repo, prep, writes })
      const grouped = yield* makeGroupWrites({ repo, prep, writes, structures })
      const bulk = makeAtomicBulk({ repo, prep, writes })
      const planner = yield* makePlannerStats(repo.sql)

      // ---------------------------------------------------------------- reads

      // Reads by id that arrive while one is in flight share the next statement (`WHERE id IN (…)`): each one starts
      // after its request arrived, so it sees every write acknowledged before. One statement instead of many is
      // what PGlite's single thread needs most (and PostgreSQL, sharing the cores, spends less per read too).
      const reads = yield* GroupCommit.make({
        maxBatch: READ_BATCH_MAX,
        concurrency: repo.sql.driver === "pglite" ? 1 : 4,
        run: (ids: ReadonlyArray<string>) =>
          Effect.map(repo.findShown([...new Set(ids)]).pipe(Effect.orDie), (found) => ids.map((id) => Exit.succeed(found.get(id)))),
        onShutdown: () => serviceUnavailable({ message: "The node is shutting down; retry the read", code: "UNAVAILABLE" })
      })

      const get = (workspace: string, id: string, options: { includeDeleted?: boolean } = {}) =>
        Effect.gen(function* () {
          if (!isUuid(id)) return yield* recordNotFound(id)
          const found = yield* Effect.orDie(reads.submit(id.toLowerCase()))
          const row = found?.row
          if (row === undefined || row.workspace !== workspace) return yield* recordNotFound(id)
          if (isExpired(row, yield* Clock.currentTimeMillis) || (row.deletedAt !== null && options.includeDeleted !== true))
            return yield* recordNotFound(id)
          const structure = yield* structures.get(workspace, row.structureId).pipe(Effect.mapError(() => recordNotFound(id)))
          if (structure.isDeleted) return yield* recordNotFound(id)
          return { row, structure, ...(found!.restoredFrom !== null ? { restoredFrom: found!.restoredFrom } : {}) }
        })

      const getVersion = Effect.fn("RecordService.getVersion")(function* (workspace: string, id: string, version: number) {
        const { row, structure } = yield* get(workspace, id)
        if (!validVersion(version)) return yield* validationFailed([errorDetail("version", "version must be a positive integer")])
        const v = yield* repo.findVersion(row.id, version).pipe(Effect.orDie)
        if (v === undefined) return yield* versionNotFound(id, version)
        return { structure, row: { ...row, data: v.data, version: v.version, updatedAt: v.created_at, updatedBy: v.created_by } }
      })

      const history = Effect.fn("RecordService.history")(function* (workspace: string, id: string) {
        const { row, structure } = yield* get(workspace, id, { includeDeleted: true })
        const versions = yield* repo.versions(row.id).pipe(Effect.orDie)
        return {
          structure,
          versions: versions.map((v) => ({
            version: v.version,
            data: maskData(structure, v.data),
            updatedAt: v.created_at,
            updatedBy: v.created_by,
            changes: maskChanges(structure, v.changes),
            ...(v.version === 1 ? { createdAt: v.created_at } : {}),
            ...(v.restored_from !== null ? { restoredFrom: v.restored_from } : {})
          }))
        }
      })

      const changelog = Effect.fn("RecordService.changelog")(function* (
        workspace: string,
        id: string,
        options: { limit?: number; startDate?: string; endDate?: string }
      ) {
        const { row, structure } = yield* get(workspace, id, { includeDeleted: true })
        const limit = Math.min(Math.max(1, Math.floor(options.limit ?? 100)), 1000)
        const bad: Array<ErrorDetail> = []
        for (const key of ["startDate", "endDate"] as const) {
          const v = options[key]
          if (v !== undefined && !Number.isFinite(Date.parse(v))) bad.push(errorDetail(key, `${key} must be an ISO 8601 date`))
        }
        if (bad.length > 0) return yield* validationFailed(bad, "Invalid changelog query")
        const entries = yield* repo
          .changelog(row.id, {
            limit,
            from: options.startDate === undefined ? undefined : new Date(Date.parse(options.startDate)).toISOString(),
            to: options.endDate === undefined ? undefined : new Date(Date.parse(options.endDate)).toISOString()
          })
          .pipe(Effect.orDie)
        return {
          structure,
          entries: entries.map((e) => ({
            id: e.id,
            recordId: e.record_id,
            action: e.action,
            userId: e.user_id,
            userName: e.user_name,
            timestamp: e.created_at,
            changes: maskChanges(structure, changelogChanges(e.changes)),
            metadata: e.metadata
          }))
        }
      })

      // `get` (the fast lane's read) and `reveal` (once per record shown revealed) are spanned only when spans are
      // exported (platform/Tracing.ts, spanMethods): an Effect.fn span costs a few µs per call even unexported
      const hot = (yield* spanMethods)("RecordService", { get, reveal: prep.reveal })

      return RecordService.of({
        create: Effect.fn("RecordService.create")((structure: Structure, input: CreateInput, writer: Writer) =>
          Effect.tap(grouped.create(structure, input, writer), () => planner.wrote(structure.id, 1, true))
        ),
        update: Effect.fn("RecordService.update")((workspace: string, id: string, input: UpdateInput, writer: Writer) =>
          grouped.update(workspace, id, input, writer)
        ),
        remove: Effect.fn("RecordService.remove")((workspace: string, id: string, permanent: boolean, writer: Writer, reason?: string) =>
          grouped.remove(workspace, id, permanent, writer, reason)
        ),
        restore: Effect.fn("RecordService.restore")(writes.restore),
        revert: Effect.fn("RecordService.revert")(writes.revert),
        upsert: Effect.fn("RecordService.upsert")(
          (structure: Structure, match: Record<string, unknown>, data: Record<string, unknown>, writer: Writer, key?: string) =>
            upserts.upsert(structure, match, data, writer, key)
        ),
        upsertMany: Effect.fn("RecordService.upsertMany")(upserts.upsertMany),
        upsertGrouped: Effect.fn("RecordService.upsertGrouped")(grouped.upsertGrouped),
        fileDeleted: Effect.fn("RecordService.fileDeleted")((workspace: string, fileId: string, writer: Writer) =>
          repo
            .atomic(writes.fileDeleted(workspace, fileId, writer))
            .pipe(Effect.catch((e) => (e instanceof Conflict ? Effect.fail(e) : Effect.die(e))))
        ),
        get: hot.get,
        getVersion,
        history,
        changelog,
        reveal: hot.reveal,
        createAll: Effect.fn("RecordService.createAll")((structure: Structure, items: ReadonlyArray<CreateInput>, writer: Writer) =>
          Effect.tap(bulk.createAll(structure, items, writer), (done) => planner.wrote(structure.id, done.length))
        ),
        createSome: Effect.fn("RecordService.createSome")((structure: Structure, items: ReadonlyArray<CreateInput>, writer: Writer) =>
          Effect.tap(
            bulk.createSome(structure, items, writer, (input) => grouped.create(structure, input, writer)),
            (outcomes) => planner.wrote(structure.id, outcomes.filter(Result.isSuccess).length)
          )
        ),
        updateAll: Effect.fn("RecordService.updateAll")(bulk.updateAll),
        removeAll: Effect.fn("RecordService.removeAll")(bulk.removeAll),
        publishBulk: Effect.fn("RecordService.publishBulk")(bulk.publishBulk)
      })
    })
  )

  static readonly layer = RecordService.layerNoDeps.pipe(Layer.provide(RecordRepo.layer))
}
