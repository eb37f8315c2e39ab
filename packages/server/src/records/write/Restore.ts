// Restores and reverts: the record rewound to a stored version (or a soft-deleted record brought back as it was),
// as a new version with its changelog entry and event, in one transaction with the row locked.
import { errorDetail, unprocessable } from "@troupe/api/Errors"
import type { Structure } from "@troupe/api/structures/Structure"
import { Clock, Effect } from "effect"
import { isExpired } from "../../query/Live.ts"
import type { RecordRow } from "../../query/RecordRow.ts"
import { type Changes, diff, type Writer } from "../model.ts"
import {
  recordNotFound,
  type RestoreArgs,
  type RevertArgs,
  validationFailed,
  validVersion,
  versionNotFound,
  type WriteResult
} from "../RecordInputs.ts"
import { changelogRow, eventOf, versionRow } from "../RecordRows.ts"
import { type EngineDeps, reasonOf, timestamp } from "./Common.ts"

export const makeRestores = (deps: EngineDeps) => {
  const { common, prep, repo } = deps
  const { transaction } = repo

  /** The locked `row` rewound to `data` (of version `restoredFrom`) by `action`, announced as `event`. */
  const rewind = ({
    action,
    data,
    event,
    reason,
    restoredFrom,
    row,
    structure,
    writer
  }: {
    readonly row: RecordRow
    readonly structure: Structure
    readonly data: Record<string, unknown>
    readonly restoredFrom: number
    readonly event: string
    readonly action: string
    readonly reason: string | undefined
    readonly writer: Writer
  }) =>
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

  const restore = ({ id, reason, version, workspace, writer }: RestoreArgs) =>
    transaction(
      Effect.gen(function* () {
        const row = yield* common.lock(workspace, id)
        if (row === undefined || isExpired(row, yield* Clock.currentTimeMillis)) return yield* recordNotFound(id)
        const structure = yield* common.liveStructure(workspace, row)
        if (version === undefined) {
          // restore of a soft-deleted record: it comes back as it was
          if (row.deletedAt === null) {
            return yield* validationFailed([errorDetail("version", "version is required to restore a live record")], "Nothing to restore")
          }
          return yield* rewind({
            row,
            structure,
            data: row.data,
            restoredFrom: row.version,
            event: "record.restored",
            action: "restore",
            reason,
            writer
          })
        }
        if (row.deletedAt !== null) return yield* recordNotFound(id)
        if (!validVersion(version)) return yield* validationFailed([errorDetail("version", "version must be a positive integer")])
        const stored = yield* repo.findVersion(row.id, version)
        if (stored === undefined) return yield* versionNotFound(id, version)
        return yield* rewind({
          row,
          structure,
          data: stored.data,
          restoredFrom: version,
          event: "record.restored",
          action: "restore",
          reason,
          writer
        })
      })
    )

  const revert = ({ id, reason, workspace, writer }: RevertArgs) =>
    transaction(
      Effect.gen(function* () {
        const row = yield* common.lockLive(workspace, id)
        const structure = yield* common.liveStructure(workspace, row)
        const previous = yield* repo.previousVersion(row.id, row.version)
        if (previous === undefined) {
          return yield* unprocessable({ message: "The record has no previous version to revert to", code: "NO_PREVIOUS_VERSION" })
        }
        return yield* rewind({
          row,
          structure,
          data: previous.data,
          restoredFrom: previous.version,
          event: "record.reverted",
          action: "revert",
          reason,
          writer
        })
      })
    )

  return { restore, revert }
}
