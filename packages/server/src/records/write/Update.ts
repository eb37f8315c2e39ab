// Updates (PATCH, PUT, increments): a new version of the record with its changelog entry and event. Updates of
// concurrent requests ride the node's group commit, planned in memory on rows read without a lock (or remembered)
// and written by one statement guarded by each row's version and xmin; an update the batch cannot write goes on
// its own with its row locked (updateOne). updateInTx is the update inside another write's transaction (upserts,
// bulk, the set_null of a delete).
import { conflict } from "@troupe/api/Errors"
import type { Structure } from "@troupe/api/structures/Structure"
import { Clock, Effect, Exit, Result } from "effect"
import * as Recent from "../../lib/Recent.ts"
import { isLive } from "../../query/Live.ts"
import { isUuid, type RecordRow } from "../../query/RecordRow.ts"
import type { Writer } from "../model.ts"
import type { PlannedUpdate, RecordError, UpdateArgs, UpdateInput, WriteResult } from "../RecordInputs.ts"
import type { Versioned } from "../RecordRepo.ts"
import { changelogRow, eventOf } from "../RecordRows.ts"
import { observeBatch, observeRetry } from "../WriteMetrics.ts"
import { afterUpdate, type EngineDeps, reasonOf, recordUpdate, timestamp } from "./Common.ts"

/** Rows the update batches remember (the most recently written), to plan the next update without a read. */
const RECENT_ROWS_MAX = 10_000
/** ...and at most this much of their data, as JSON text (a record may be megabytes; so may 10,000 of them). */
const RECENT_BYTES_MAX = 32 * 1024 * 1024

/** An update waiting for its commit. */
interface PendingUpdate {
  readonly workspace: string
  readonly id: string
  readonly input: UpdateInput
  readonly writer: Writer
}

export const makeUpdates = (deps: EngineDeps) =>
  Effect.gen(function* () {
    const { common, prep, repo } = deps
    const { transaction } = repo

    /** An update of a row the caller's transaction locked; `action` names it in the changelog. */
    const updateInTx = ({
      action = "update",
      input,
      row,
      structure,
      writer
    }: {
      readonly row: RecordRow
      readonly structure: Structure
      readonly input: UpdateInput
      readonly writer: Writer
      readonly action?: string | undefined
    }) =>
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
    const updateOne = ({ id, input, workspace, writer }: UpdateArgs) => {
      let structure: Structure | undefined
      return transaction(
        Effect.gen(function* () {
          const row = yield* common.lockLive(workspace, id)
          structure = yield* common.liveStructure(workspace, row)
          return yield* updateInTx({ row, structure, input, writer, action: input.replace ? "replace" : "update" })
        })
      ).pipe(common.reported("update", id, input.data, writer, () => structure))
    }

    /**
     * Planned updates and their history rows, written in one statement; the new rows in order, undefined for a record
     * the statement's guard skipped (written or deleted since it was read; `xmins`: the row versions read, for updates
     * planned without a lock). A record's updates in a row are each planned on the one before (RecordRepo.
     * updateRecordsWithHistory): each answers the record as its own update left it. `written`: each record's last
     * row as stored, with its new xmin.
     */
    const writePlanned = (planned: ReadonlyArray<PlannedUpdate>, xmins?: ReadonlyArray<string>) =>
      Effect.gen(function* () {
        const at = yield* timestamp
        const written = yield* repo.updateRecordsWithHistory(
          planned.map(({ action, plan, reason, row, structure, writer }, k) => {
            const next = { id: row.id, workspace: row.workspace, data: plan.data, version: plan.version }
            return {
              update: recordUpdate(row, plan, writer),
              before: row,
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
      Effect.flatMap(writePlanned(planned), ({ rows }) =>
        rows.every((r) => r !== undefined)
          ? Effect.succeed(rows)
          : Effect.fail(conflict({ message: "The write collided with a concurrent write; retry it", code: "CONFLICT" }))
      )

    // ---------------------------------------------------------------- the group commit

    /**
     * The rows this node's update batches last wrote, each with the xmin its statement returned, oldest first (a
     * record's data over 512 KiB is not kept). A record updated again is planned on its remembered row without
     * reading it: the statement's guard (same xmin) refuses the write if anyone wrote the record since (another node,
     * a delete, any write outside the batches), and the batch reads that record and writes it again (writeUpdates).
     * So a stale row costs a re-read, never a lost write.
     */
    const recent = Recent.make<Versioned>({
      maxEntries: RECENT_ROWS_MAX,
      maxBytes: RECENT_BYTES_MAX,
      maxEntryBytes: RECENT_BYTES_MAX / 64,
      sizeOf: (v) => JSON.stringify(v.row.data).length
    })

    /**
     * Updates, without a transaction: the rows (remembered, or read with their xmin), each update planned in memory
     * (a record's updates in arrival order, each on the one before), then one guarded statement (RecordRepo.
     * updateRecordsWithHistory) writes every record nobody wrote since it was read, with a version, changelog entry
     * and event per update. A record planned on a remembered row that was written since is read and planned again,
     * in a second statement. Every other item (not found, invalid, a version conflict, a unique value that changes,
     * the record's updates after such an item, written meanwhile, or the statement failed) is written on its own
     * after it, in arrival order (updateOne: its row locked, its exact outcome, failures told to the hook).
     */
    const writeUpdates = (items: ReadonlyArray<PendingUpdate>) => {
      const oneByOne = (item: PendingUpdate) => Effect.exit(updateOne(item))
      const results: Array<Exit.Exit<WriteResult, RecordError> | undefined> = items.map(() => undefined)

      /** Plans each record's items on its row and writes them in one statement: the records the guard skipped. */
      const pass = (chains: ReadonlyMap<string, ReadonlyArray<number>>, rowOf: (id: string) => Versioned | undefined) =>
        Effect.gen(function* () {
          const now = yield* Clock.currentTimeMillis
          const planned: Array<{ readonly k: number; readonly update: PlannedUpdate; readonly xmin: string }> = []
          for (const [id, chain] of chains) {
            const found = rowOf(id)
            if (found === undefined || !isLive(found.row, now)) continue
            let row = found.row
            for (const k of chain) {
              const item = items[k]!
              if (row.workspace !== item.workspace) break
              const before = row
              const update = yield* Effect.result(
                Effect.gen(function* () {
                  const structure = yield* common.liveStructure(item.workspace, before)
                  const plan = yield* prep.planUpdate(before, structure, item.input, item.writer, "unchanged")
                  const action = item.input.replace ? "replace" : "update"
                  return { row: before, structure, plan, writer: item.writer, action, reason: item.input.reason } satisfies PlannedUpdate
                })
              )
              // the record's later updates wait for this one, written on its own
              if (Result.isFailure(update)) break
              planned.push({ k, update: update.success, xmin: found.xmin })
              row = afterUpdate(before, update.success.plan, item.writer)
            }
          }
          if (planned.length === 0) return new Set<string>()
          const written = yield* repo
            .atomic(
              writePlanned(
                planned.map((p) => p.update),
                planned.map((p) => p.xmin)
              )
            )
            .pipe(Effect.orElseSucceed(() => undefined))
          // the statement failed as a whole: nothing written, every item goes on its own
          if (written === undefined) return new Set<string>()
          for (const [id, last] of written.written) recent.set(id, last)
          planned.forEach(({ k, update }, j) => {
            const row = written.rows[j]
            if (row !== undefined) results[k] = Exit.succeed({ row, structure: update.structure, previousVersion: update.row.version })
          })
          return new Set(planned.flatMap(({ update }) => (written.written.has(update.row.id) ? [] : [update.row.id])))
        })

      return Effect.gen(function* () {
        const byRecord = new Map<string, Array<number>>()
        items.forEach((item, k) => {
          const chain = byRecord.get(item.id)
          if (chain === undefined) byRecord.set(item.id, [k])
          else chain.push(k)
        })
        yield* observeBatch("update", items.length)
        const unknown = [...byRecord.keys()].filter((id) => !recent.has(id))
        const read = unknown.length === 0 ? new Map<string, Versioned>() : yield* repo.findMany(unknown).pipe(Effect.orDie)
        const remembered = new Map([...byRecord.keys()].flatMap((id) => (recent.has(id) ? [[id, recent.get(id)!] as const] : [])))
        const skipped = yield* pass(byRecord, (id) => remembered.get(id) ?? read.get(id))
        // remembered rows written since (by another node, or outside the batches): read, planned and written again
        const stale = new Map([...skipped].flatMap((id) => (remembered.has(id) ? [[id, byRecord.get(id)!] as const] : [])))
        if (stale.size > 0) {
          for (const id of stale.keys()) recent.delete(id)
          const fresh = yield* repo.findMany([...stale.keys()]).pipe(Effect.orDie)
          yield* pass(stale, (id) => fresh.get(id))
        }
        if (results.includes(undefined)) yield* observeRetry("update")
        // a record with an update to write on its own is forgotten: that write (or the one the guard met) is not known
        items.forEach((item, k) => results[k] === undefined && recent.delete(item.id))
        for (let k = 0; k < items.length; k++) if (results[k] === undefined) results[k] = yield* oneByOne(items[k]!)
        return results as Array<Exit.Exit<WriteResult, RecordError>>
      })
    }

    // One batch of updates at a time: the next reads its rows after the last committed, so a record's updates that
    // arrive while one is written ride the next batch together, in order, instead of colliding with it.
    const updates = yield* common.groupCommit(writeUpdates, 1)

    /** Updates that keep the version (createVersion: false) rewrite their version row: they go on their own. */
    const update = (args: UpdateArgs) => {
      const { id, input, workspace, writer } = args
      return input.createVersion === false || !isUuid(id)
        ? updateOne(args)
        : updates.submit({ workspace, id: id.toLowerCase(), input, writer })
    }

    return { updateInTx, updateOne, applyUpdates, update }
  })

export type Updates = Effect.Success<ReturnType<typeof makeUpdates>>
