// Deletes (soft or permanent) with the onDelete of the references that name the record (restrict, set_null,
// cascade), and the records' side of deleting a file. Deletes of concurrent requests of different records of
// structures no reference points at share one transaction through the node's group commit; the others go one by
// one (removeOne: the row locked, failures told to the failure hook).
import { conflict, errorDetail } from "@troupe/api/Errors"
import type { Structure } from "@troupe/api/structures/Structure"
import { Clock, Effect, Exit } from "effect"
import type { SqlError } from "effect/sql/SqlError"
import { fileFields, type ReferenceField, referenceFields } from "../../structures/StructureFacts.ts"
import { isLive } from "../../query/Live.ts"
import { isUuid, type RecordRow } from "../../query/RecordRow.ts"
import type { Writer } from "../model.ts"
import { type FileDeletedArgs, recordNotFound, type RecordError, type Removed, type RemoveArgs } from "../RecordInputs.ts"
import { changelogRow, eventOf } from "../RecordRows.ts"
import { observeBatch } from "../WriteMetrics.ts"
import { alone, batched, type EngineDeps, reasonOf, timestamp } from "./Common.ts"
import type { Updates } from "./Update.ts"

/** A delete waiting for its commit. */
interface PendingDelete {
  readonly workspace: string
  readonly id: string
  readonly permanent: boolean
  readonly writer: Writer
  readonly reason?: string | undefined
}

export const makeDeletes = (deps: EngineDeps & { readonly updates: Updates }) =>
  Effect.gen(function* () {
    const { common, repo, structures, updates } = deps
    const { transaction } = repo

    /**
     * onDelete of every property of the workspace's structures that names what is deleted (`rulesOf` picks a
     * structure's properties and the key they would hold), in the caller's transaction: restrict refuses (409),
     * cascade deletes the referring records (transitively), set_null clears the property (one new version per record,
     * whatever number of its fields named it; many-to-many arrays lose the key). `what`: "record" or "file".
     */
    const applyOnDelete = ({
      depth,
      permanent,
      rulesOf,
      what,
      workspace,
      writer
    }: {
      readonly workspace: string
      readonly what: { kind: "record" | "file"; id: string }
      readonly rulesOf: (other: Structure) => ReadonlyArray<{ field: string; onDelete: ReferenceField["onDelete"]; key: unknown }>
      readonly permanent: boolean
      readonly writer: Writer
      readonly depth: number
    }): Effect.Effect<void, RecordError | SqlError> =>
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
                yield* deleteInTx({ structure: other, row: r, permanent, writer: { ...writer, source: "cascade" }, depth: depth + 1 })
              } else if (!cascaded.has(r.id)) {
                const entry = cleared.get(r.id) ?? { row: r, data: { ...r.data } }
                const value = entry.data[rule.field]
                entry.data[rule.field] = Array.isArray(value) ? value.filter((x) => x !== key) : null
                cleared.set(r.id, entry)
              }
            }
          }
          for (const { row: r, data } of cleared.values()) {
            yield* updates.updateInTx({
              row: r,
              structure: other,
              input: { data, replace: true, skipValidation: true },
              writer: { ...writer, source: "set_null", canSkipValidation: true }
            })
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
    const fileDeleted = ({ fileId, workspace, writer }: FileDeletedArgs) =>
      applyOnDelete({
        workspace,
        what: { kind: "file", id: fileId },
        rulesOf: (other) => fileFields(other).map((f) => ({ field: f.field, onDelete: f.onDelete, key: fileId })),
        permanent: false,
        writer,
        depth: 0
      })

    /** A record deleted in the caller's transaction (its row locked): `depth` counts the cascade that reached it. */
    const deleteInTx = ({
      depth = 0,
      permanent,
      reason,
      row,
      structure,
      writer
    }: {
      readonly structure: Structure
      readonly row: RecordRow
      readonly permanent: boolean
      readonly writer: Writer
      readonly depth?: number | undefined
      readonly reason?: string | undefined
    }): Effect.Effect<string, RecordError | SqlError> =>
      Effect.gen(function* () {
        yield* applyOnDelete({
          workspace: structure.workspaceSlug,
          what: { kind: "record", id: row.id },
          rulesOf: referencesTo(structure, row),
          permanent,
          writer,
          depth
        })
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
    const removeOne = ({ id, permanent, reason, workspace, writer }: RemoveArgs) => {
      let found: Structure | undefined
      return transaction(
        Effect.gen(function* () {
          const row = yield* common.lock(workspace, id)
          if (row === undefined || (!permanent && !isLive(row, yield* Clock.currentTimeMillis))) return yield* recordNotFound(id)
          const structure = (found = yield* common.liveStructure(workspace, row))
          const deletedAt = yield* deleteInTx({ structure, row, permanent, writer, reason })
          return { id: row.id, deletedAt, structure } satisfies Removed
        })
      ).pipe(common.reported("delete", id, { permanent }, writer, () => found))
    }

    // ---------------------------------------------------------------- the group commit

    /** A structure no reference points at: deleting its records touches no other record. */
    const unreferenced = (workspace: string, structure: Structure) =>
      Effect.map(
        structures.all(workspace),
        (all) => !all.some((other) => referenceFields(other).some((ref) => ref.target === structure.recordSlug))
      )

    /**
     * Deletes of different records, as writeUpdates does updates. Records of a structure that references point at
     * (onDelete work on other records) fail the batch, and so go one by one.
     */
    const writeDeletes = (items: ReadonlyArray<PendingDelete>) => {
      const oneByOne = Effect.forEach(items, (item) => Effect.exit(removeOne(item)))
      if (alone(items)) return Effect.andThen(observeBatch("delete", 1), oneByOne)
      return transaction(
        Effect.gen(function* () {
          const rows = yield* repo.lockMany(items.map((i) => i.id))
          const deletedAt = yield* timestamp
          const now = yield* Clock.currentTimeMillis
          const planned: Array<{ item: PendingDelete; row: RecordRow; structure: Structure }> = []
          for (const item of items) {
            const row = rows.get(item.id)
            if (row === undefined || row.workspace !== item.workspace || (!item.permanent && !isLive(row, now)))
              return yield* recordNotFound(item.id)
            const structure = yield* common.liveStructure(item.workspace, row)
            if (!(yield* unreferenced(item.workspace, structure))) return yield* conflict({ message: "referenced", code: "CONFLICT" })
            planned.push({ item, row, structure })
          }
          const soft = planned.filter((p) => !p.item.permanent)
          yield* repo.deleteRecords(planned.filter((p) => p.item.permanent).map((p) => p.row.id))
          if (soft.length > 0) {
            yield* repo.softDeleteRecords(
              soft.map((p) => ({ id: p.row.id, updatedBy: p.item.writer.userId })),
              deletedAt
            )
            yield* repo.insertChangelog(
              soft.map((p) => changelogRow(p.row, "delete", {}, p.item.writer, p.item.reason ? { reason: p.item.reason } : {}))
            )
          }
          yield* repo.appendEvents(
            planned.map((p) => eventOf("record.deleted", p.structure, p.row, p.row.data, {}, p.item.writer, deletedAt))
          )
          return planned.map((p): Exit.Exit<Removed, RecordError> => Exit.succeed({ id: p.row.id, deletedAt, structure: p.structure }))
        })
      ).pipe(batched("delete", items.length, oneByOne))
    }

    const deletes = yield* common.groupCommit(writeDeletes)

    const remove = (args: RemoveArgs) => {
      const { id, permanent, reason, workspace, writer } = args
      return isUuid(id)
        ? deletes.submit({ workspace, id, permanent, writer, ...(reason !== undefined ? { reason } : {}) })
        : removeOne(args)
    }

    return { deleteInTx, removeOne, fileDeleted, remove }
  })

export type Deletes = Effect.Success<ReturnType<typeof makeDeletes>>
