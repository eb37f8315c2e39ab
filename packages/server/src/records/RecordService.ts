// The records' reads: a record by id (reads that arrive together share one statement), a version of it, its history
// and its changelog, and secret fields revealed. Writes go through RecordWriter (RecordEntity.ts), the one entry
// point to the record engine (write/: Engine assembles it).
import { type ErrorDetail, errorDetail, serviceUnavailable } from "@troupe/api/Errors"
import type { Structure } from "@troupe/api/structures/Structure"
import { Clock, Context, Effect, Exit, Layer } from "effect"
import * as GroupCommit from "../lib/GroupCommit.ts"
import { Secrets } from "../platform/Secrets.ts"
import { spanMethods } from "../platform/Tracing.ts"
import { StructureService } from "../structures/StructureService.ts"
import { isExpired } from "../query/Live.ts"
import { isUuid, type RecordRow } from "../query/RecordRow.ts"
import { changelogChanges } from "./model.ts"
import { maskChanges, maskData } from "../structures/SecretPaths.ts"
import { type RecordError, recordNotFound, validationFailed, validVersion, versionNotFound } from "./RecordInputs.ts"
import { makePreparation } from "./RecordPrepare.ts"
import { RecordRepo } from "./RecordRepo.ts"

/** The most reads by id one statement carries. */
const READ_BATCH_MAX = 128

export class RecordService extends Context.Service<
  RecordService,
  {
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
    /** Decrypts secret fields of stored data (callers with `secrets:reveal`). */
    readonly reveal: (structure: Structure, data: Record<string, unknown>) => Effect.Effect<Record<string, unknown>>
  }
>()("@troupe/server/records/RecordService") {
  static readonly layerNoDeps = Layer.effect(
    RecordService,
    Effect.gen(function* () {
      const repo = yield* RecordRepo
      const structures = yield* StructureService
      const secrets = yield* Secrets
      const prep = makePreparation({ repo, structures, secrets })

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
        get: hot.get,
        getVersion,
        history,
        changelog,
        reveal: hot.reveal
      })
    })
  )

  static readonly layer = RecordService.layerNoDeps.pipe(Layer.provide(RecordRepo.layer))
}
