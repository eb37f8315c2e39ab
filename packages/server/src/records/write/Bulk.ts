// Bulk writes. A request holds at most MAX_BULK_ITEMS items (413 beyond); an empty list is a 400.
// - atomic: one transaction for the whole batch and its record.bulk.* event (RecordEngine.createAll, updateAll,
//   removeAll, built here by makeAtomicBulk); the first bad item fails the request with its own status and error,
//   details prefixed with the item's path, and nothing is written.
// - non-atomic (the default): every item is its own write (the valid creates of a request share one statement,
//   createSome; updates join the node's group commit, deletes go through their record's actor); the outcome lists
//   each item's result or error, in item order, and the record.bulk.* event of what was written follows in a
//   transaction of its own. When every item failed, the request fails with one error naming each item (the items'
//   common status, else 400).
// makeBulkRequests runs a whole request of either kind; RecordWriter exposes it, as it owns the actors.
import {
  badRequest,
  conflict,
  type ErrorDetail,
  forbidden,
  locked,
  notFound,
  payloadTooLarge,
  unprocessable,
  errorDetail
} from "@troupe/api/Errors"
import type { Structure } from "@troupe/api/structures/Structure"
import { Clock, Effect, Result } from "effect"
import { isSqlError, type SqlError } from "effect/sql/SqlError"
import type { StructureService } from "../../structures/StructureService.ts"
import { isLive } from "../../query/Live.ts"
import { isUuid, type RecordRow } from "../../query/RecordRow.ts"
import type { Writer } from "../model.ts"
import {
  type BulkArgs,
  type BulkError,
  type BulkEventType,
  type BulkFailure,
  type BulkItemFailure,
  type BulkOptions,
  type BulkOutcome,
  type ScopedBulkOptions,
  type CreateInput,
  MAX_BULK_ITEMS,
  type PendingCreate,
  recordNotFound,
  type RecordError,
  type RemoveArgs,
  type UpdateArgs,
  type UpdateInput,
  type WriteResult
} from "../RecordInputs.ts"
import { batchable } from "../RecordPrepare.ts"
import { type ClaimTaken, type EngineDeps, timestamp } from "./Common.ts"
import type { Creates } from "./Create.ts"
import type { Deletes } from "./Delete.ts"
import type { RecordService } from "../RecordService.ts"
import type { RecordEngine } from "./Engine.ts"
import type { Updates } from "./Update.ts"

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

/** Tags an item's failure with its index (SQL failures pass through to the transaction's own mapping). */
const at =
  (index: number) =>
  <A, E>(effect: Effect.Effect<A, E, never>): Effect.Effect<A, BulkItemFailure | SqlError> =>
    Effect.catch(effect, (e: any) => Effect.fail(isSqlError(e) ? e : { index, error: e as RecordError }))

/** Creates of one structure, in item order. */
export type BulkCreateArgs = BulkArgs<CreateInput> & { readonly structure: Structure }

/** Updates by id; `structureId` restricts the batch to the records of one structure. */
export type BulkUpdateArgs = BulkArgs<{ readonly id: string; readonly input: UpdateInput }> & {
  readonly workspace: string
  readonly structureId?: string | undefined
}

/** Deletes by id; `structureId` restricts the batch to the records of one structure. */
export interface BulkRemoveArgs {
  readonly workspace: string
  readonly ids: ReadonlyArray<string>
  readonly permanent: boolean
  readonly writer: Writer
  readonly structureId?: string | undefined
}

/** The `record.bulk.*` event of the records a batch wrote. */
export interface BulkEventArgs {
  readonly structure: Structure
  readonly type: BulkEventType
  readonly ids: ReadonlyArray<string>
  readonly writer: Writer
}

/** The atomic bulk writes of RecordEngine, and the record.bulk.* event of a non-atomic batch. */
export const makeAtomicBulk = (deps: EngineDeps & { readonly creates: Creates; readonly updates: Updates; readonly deletes: Deletes }) => {
  const { common, creates, deletes, prep, repo, updates } = deps
  const { transaction } = repo

  const bulkEventInTx = ({ ids, structure, type, writer }: BulkEventArgs) =>
    ids.length === 0
      ? Effect.void
      : Effect.flatMap(timestamp, (now) =>
          repo.appendEvent({
            workspace: structure.workspaceSlug,
            type,
            structureId: structure.id,
            recordSlug: structure.recordSlug,
            recordId: null,
            payload: {
              event: type,
              timestamp: now,
              workspace: structure.workspaceSlug,
              structure: structure.recordSlug,
              data: {
                structure: structure.recordSlug,
                count: ids.length,
                recordIds: ids,
                metadata: { userId: writer.userId, source: writer.source }
              }
            }
          })
        )

  const publishBulk = ({ ids, structure, type, writer }: BulkEventArgs) =>
    ids.length === 0 ? Effect.void : repo.sql.withTransaction(bulkEventInTx({ structure, type, ids, writer })).pipe(Effect.orDie)

  /** Locks the rows of a batch in id order first, so two batches touching the same records cannot deadlock. */
  const lockAll = (workspace: string, ids: ReadonlyArray<string>) => repo.lockIds(workspace, [...new Set(ids.filter(isUuid))])

  /** Item by item, in one transaction: the first item that fails names itself. */
  const createEach = (structure: Structure, items: ReadonlyArray<CreateInput>, writer: Writer) =>
    transaction(
      Effect.gen(function* () {
        const written: Array<WriteResult> = []
        for (let i = 0; i < items.length; i++) written.push(yield* at(i)(creates.createInTx({ structure, input: items[i]!, writer })))
        yield* bulkEventInTx({ structure, type: "record.bulk.created", ids: written.map((w) => w.row.id), writer })
        return written
      })
    )

  /** A bulk of plain creates is one batch: one statement for every item (creates.createMany), or item by item. */
  const createAll = ({ items, structure, writer }: BulkCreateArgs) =>
    !batchable(structure)
      ? createEach(structure, items, writer)
      : Effect.gen(function* () {
          const pending: Array<PendingCreate> = []
          for (let i = 0; i < items.length; i++) {
            pending.push(
              yield* Effect.mapError(prep.pendingCreate(structure, items[i]!, writer), (error): BulkItemFailure => ({ index: i, error }))
            )
          }
          return yield* transaction(
            Effect.gen(function* () {
              const written = yield* creates.createMany(pending)
              yield* bulkEventInTx({ structure, type: "record.bulk.created", ids: written.map((w) => w.row.id), writer })
              return written
            })
          ).pipe(Effect.catchTag("ClaimTaken", (_: ClaimTaken) => createEach(structure, items, writer)))
        })

  /**
   * The creates of a non-atomic request, each with its own outcome, in item order: every item that passes its
   * checks goes into one statement (creates.createMany: no transaction, no group commit queue); the others, and all
   * of them when that statement fails (a held or repeated unique value), go through `one` (the single-record create,
   * which tells failures to the failure hook). Structures with references or counters: `one` for each item.
   */
  const createSome = (
    { items, structure, writer }: BulkCreateArgs,
    one: (input: CreateInput) => Effect.Effect<WriteResult, RecordError>
  ): Effect.Effect<Array<Result.Result<WriteResult, RecordError>>> =>
    Effect.gen(function* () {
      const each = (indexes: ReadonlyArray<number>) => Effect.forEach(indexes, (i) => Effect.result(one(items[i]!)), { concurrency: 64 })
      if (!batchable(structure)) return yield* each(items.map((_, i) => i))
      const pending: Array<PendingCreate | undefined> = []
      for (const input of items) {
        const p = yield* Effect.result(prep.pendingCreate(structure, input, writer))
        pending.push(Result.isSuccess(p) ? p.success : undefined)
      }
      const valid = pending.filter((p) => p !== undefined)
      const written = valid.length === 0 ? [] : yield* repo.atomic(creates.createMany(valid)).pipe(Effect.orElseSucceed(() => undefined))
      if (written === undefined) return yield* each(items.map((_, i) => i))
      const rows = new Map(written.map((w) => [w.row.id, w]))
      const rest = yield* each(pending.flatMap((p, i) => (p === undefined ? [i] : [])))
      let k = 0
      return pending.map((p) => (p === undefined ? rest[k++]! : Result.succeed(rows.get(p.record.id)!)))
    })

  const updateAll = ({ items, structureId, workspace, writer }: BulkUpdateArgs) =>
    transaction(
      Effect.gen(function* () {
        yield* lockAll(
          workspace,
          items.map((u) => u.id)
        )
        const written: Array<WriteResult> = []
        for (let i = 0; i < items.length; i++) {
          const { id, input } = items[i]!
          written.push(
            yield* at(i)(
              Effect.gen(function* () {
                const row = yield* common.lockLive(workspace, id)
                if (structureId !== undefined && row.structureId !== structureId) return yield* recordNotFound(id)
                const structure = yield* common.liveStructure(workspace, row)
                return yield* updates.updateInTx({ row, structure, input, writer, action: input.replace ? "replace" : "update" })
              })
            )
          )
        }
        for (const g of byStructure(written))
          yield* bulkEventInTx({ structure: g.structure, type: "record.bulk.updated", ids: g.ids, writer })
        return written
      })
    )

  const removeAll = ({ ids, permanent, structureId, workspace, writer }: BulkRemoveArgs) =>
    transaction(
      Effect.gen(function* () {
        yield* lockAll(workspace, ids)
        const removed: Array<{ row: RecordRow; structure: Structure; deletedAt: string }> = []
        for (let i = 0; i < ids.length; i++) {
          const id = ids[i]!
          removed.push(
            yield* at(i)(
              Effect.gen(function* () {
                const row = yield* common.lock(workspace, id)
                if (row === undefined || (!permanent && !isLive(row, yield* Clock.currentTimeMillis))) return yield* recordNotFound(id)
                if (structureId !== undefined && row.structureId !== structureId) return yield* recordNotFound(id)
                const structure = yield* common.liveStructure(workspace, row)
                const deletedAt = yield* deletes.deleteInTx({ structure, row, permanent, writer })
                return { row, structure, deletedAt }
              })
            )
          )
        }
        for (const g of byStructure(removed))
          yield* bulkEventInTx({ structure: g.structure, type: "record.bulk.deleted", ids: g.ids, writer })
        return removed.map((r) => ({ id: r.row.id, deletedAt: r.deletedAt, structureId: r.structure.id }))
      })
    )

  return { createAll, createSome, updateAll, removeAll, publishBulk }
}

// ------------------------------------------------------------------ whole bulk requests

/** The error constructor of each status a record error can have. */
const errorOf: Record<number, (i: { message: string; code?: string; details?: ReadonlyArray<ErrorDetail> }) => RecordError> = {
  400: badRequest,
  403: forbidden as any,
  404: notFound,
  409: conflict,
  413: payloadTooLarge as any,
  422: unprocessable,
  423: locked
}

/** An item's error as details of the whole request: paths prefixed with the item (`records[3].data.name`). */
const itemDetails = (list: string, index: number, e: { message: string; details?: ReadonlyArray<ErrorDetail> }): Array<ErrorDetail> => {
  const path = `${list}[${index}]`
  return e.details !== undefined && e.details.length > 0
    ? e.details.map((d) => errorDetail(`${path}.${d.field}`, d.message))
    : [errorDetail(path, e.message)]
}

/** The failure of an atomic batch: the failing item's status and code, nothing written. */
const atomicFailure =
  (list: string) =>
  (failure: BulkItemFailure | RecordError): RecordError => {
    if (!("index" in failure)) return failure
    const e = failure.error
    return (errorOf[e.statusCode] ?? badRequest)({
      message: `${list}[${failure.index}]: ${e.message} (atomic batch: nothing was written)`,
      code: e.code,
      details: itemDetails(list, failure.index, e)
    })
  }

/** A non-atomic batch in which every item failed: one contract error naming each item. */
const allFailed = (list: string, errors: ReadonlyArray<BulkFailure>): RecordError => {
  const statuses = new Set(errors.map((e) => e.error.statusCode))
  const codes = new Set(errors.map((e) => e.error.code))
  const status = statuses.size === 1 ? [...statuses][0]! : 400
  return (errorOf[status] ?? badRequest)({
    message: `All ${errors.length} items failed; nothing was written`,
    code: codes.size === 1 ? [...codes][0]! : status === 404 ? "NOT_FOUND" : status === 409 ? "CONFLICT" : "BAD_REQUEST",
    details: errors.flatMap((e) => itemDetails(list, e.index, e.error)).slice(0, 1000)
  })
}

const bulkSize = (n: number, list: string) =>
  n > MAX_BULK_ITEMS
    ? Effect.fail(payloadTooLarge({ message: `At most ${MAX_BULK_ITEMS} items per bulk request, got ${n}`, code: "PAYLOAD_TOO_LARGE" }))
    : n === 0
      ? Effect.fail(
          badRequest({
            message: `${list} must not be empty`,
            code: "VALIDATION_ERROR",
            details: [errorDetail(list, `${list} must not be empty`)]
          })
        )
      : Effect.void

/** skipValidation is for writers who may change structures (they could relax the rules anyway). */
const maySkip = (writer: Writer, requested: boolean | undefined) =>
  requested === true && !writer.canSkipValidation
    ? Effect.fail(forbidden({ message: "skipValidation needs the write:structures permission", code: "PERMISSION_DENIED" }))
    : Effect.void

/** Runs each item, in order; the successes and the failures. */
const eachItem = <I, A>(items: ReadonlyArray<I>, run: (item: I) => Effect.Effect<A, RecordError>, idOf: (item: I) => string | undefined) =>
  Effect.map(
    Effect.forEach(items, (item) => Effect.result(run(item))),
    (outcomes) => {
      const done: Array<A> = []
      const failures: Array<BulkFailure> = []
      outcomes.forEach((outcome, index) => {
        if (Result.isSuccess(outcome)) done.push(outcome.success)
        else failures.push({ index, id: idOf(items[index]!), error: outcome.failure })
      })
      return { done, failures }
    }
  )

export const makeBulkRequests = (deps: {
  readonly engine: Pick<RecordEngine["Service"], "createAll" | "createSome" | "updateAll" | "removeAll" | "publishBulk">
  readonly get: RecordService["Service"]["get"]
  /** one update (the node's group commit) and one delete (its record's actor) */
  readonly update: (args: UpdateArgs) => Effect.Effect<{ readonly row: RecordRow }, RecordError>
  readonly remove: (args: RemoveArgs) => Effect.Effect<{ id: string; deletedAt: string; structureId: string }, RecordError>
  readonly structures: StructureService["Service"]
}) => {
  const { engine, structures } = deps

  /** A record of `structure` (generation A batches may only touch records of the structure in the path). */
  const ofStructure = (workspace: string, id: string, structure: Structure | undefined) =>
    structure === undefined
      ? Effect.void
      : Effect.flatMap(deps.get(workspace, id), ({ row }) =>
          row.structureId === structure.id ? Effect.void : Effect.fail(recordNotFound(id))
        )

  const bulkCreate = ({
    items,
    options,
    structure,
    writer
  }: BulkCreateArgs & { readonly options: BulkOptions }): Effect.Effect<BulkOutcome<WriteResult>, BulkError> =>
    Effect.gen(function* () {
      yield* bulkSize(items.length, options.list)
      yield* maySkip(writer, options.skipValidation)
      const bulkWriter: Writer = { ...writer, source: "bulk" }
      if (options.atomic) {
        return {
          done: yield* engine.createAll({ structure, items, writer: bulkWriter }).pipe(Effect.mapError(atomicFailure(options.list))),
          failures: []
        }
      }
      // each item keeps its own outcome, in item order
      const outcomes = yield* engine.createSome({ structure, items, writer: bulkWriter })
      const done: Array<WriteResult> = []
      const failures: Array<BulkFailure> = []
      outcomes.forEach((outcome, index) => {
        if (Result.isSuccess(outcome)) done.push(outcome.success)
        else failures.push({ index, error: outcome.failure })
      })
      if (done.length === 0) return yield* allFailed(options.list, failures)
      yield* engine.publishBulk({ structure, type: "record.bulk.created", ids: done.map((w) => w.row.id), writer })
      return { done, failures }
    })

  /** `structure`: only records of this structure (generation A); its batches may be empty. */
  const bulkUpdate = ({
    items,
    options,
    workspace,
    writer
  }: Omit<BulkUpdateArgs, "structureId"> & { readonly options: ScopedBulkOptions }): Effect.Effect<
    BulkOutcome<{ readonly row: RecordRow }>,
    BulkError
  > =>
    Effect.gen(function* () {
      if (options.structure === undefined || items.length > 0) yield* bulkSize(items.length, options.list)
      yield* maySkip(writer, options.skipValidation)
      const bulkWriter: Writer = { ...writer, source: "bulk" }
      if (items.length === 0) return { done: [], failures: [] }
      if (options.atomic) {
        const written = yield* engine
          .updateAll({ workspace, items, writer: bulkWriter, structureId: options.structure?.id })
          .pipe(Effect.mapError(atomicFailure(options.list)))
        return { done: written, failures: [] }
      }
      const outcome = yield* eachItem(
        items,
        (u) =>
          Effect.andThen(
            ofStructure(workspace, u.id, options.structure),
            deps.update({ workspace, id: u.id, input: u.input, writer: bulkWriter })
          ),
        (u) => u.id
      )
      if (outcome.done.length === 0) return yield* allFailed(options.list, outcome.failures)
      const groups = new Map<string, Array<string>>()
      for (const { row } of outcome.done) groups.set(row.structureId, [...(groups.get(row.structureId) ?? []), row.id])
      for (const [structureId, ids] of groups) {
        const structure = yield* structures.get(workspace, structureId)
        yield* engine.publishBulk({ structure, type: "record.bulk.updated", ids, writer })
      }
      return outcome
    })

  const bulkRemove = ({
    ids,
    options,
    permanent,
    workspace,
    writer
  }: Omit<BulkRemoveArgs, "structureId"> & { readonly options: ScopedBulkOptions }): Effect.Effect<
    BulkOutcome<{ readonly id: string; readonly deletedAt: string; readonly structureId: string }>,
    BulkError
  > =>
    Effect.gen(function* () {
      if (options.structure === undefined || ids.length > 0) yield* bulkSize(ids.length, options.list)
      if (ids.length === 0) return { done: [], failures: [] }
      const bulkWriter: Writer = { ...writer, source: "bulk" }
      if (options.atomic) {
        return {
          done: yield* engine
            .removeAll({ workspace, ids, permanent, writer: bulkWriter, structureId: options.structure?.id })
            .pipe(Effect.mapError(atomicFailure(options.list))),
          failures: []
        }
      }
      const outcome = yield* eachItem(
        ids,
        (id) =>
          Effect.andThen(ofStructure(workspace, id, options.structure), deps.remove({ workspace, id, permanent, writer: bulkWriter })),
        (id) => id
      )
      if (outcome.done.length === 0) return yield* allFailed(options.list, outcome.failures)
      const groups = new Map<string, Array<string>>()
      for (const r of outcome.done) groups.set(r.structureId, [...(groups.get(r.structureId) ?? []), r.id])
      for (const [structureId, done] of groups) {
        const structure = yield* structures.get(workspace, structureId).pipe(Effect.orElseSucceed(() => undefined))
        if (structure) yield* engine.publishBulk({ structure, type: "record.bulk.deleted", ids: done, writer })
      }
      return outcome
    })

  return { bulkCreate, bulkUpdate, bulkRemove }
}
