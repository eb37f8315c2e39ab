// The group commit of single-record writes (lib/GroupCommit.ts): creates, updates, deletes and upserts that arrive
// from concurrent requests while a batch is in flight ride the next one together. Creates are one statement and
// updates one guarded statement, neither in a transaction (RecordRepo.createRecords, updateRecordsWithHistory);
// deletes and upserts that find records lock them in one transaction. When a batch fails as a whole (a claimed
// value, a conflict, an invalid item), nothing of it was written and each item is written on its own
// (RecordWrites), so every caller gets its own outcome.
import { conflict, serviceUnavailable } from "@troupe/api/Errors"
import type { Structure } from "@troupe/api/structures/Structure"
import { Clock, Effect, Exit, Result } from "effect"
import * as GroupCommit from "../../lib/GroupCommit.ts"
import * as Recent from "../../lib/Recent.ts"
import { canonicalJson } from "../../structures/Formats.ts"
import type { StructureService } from "../../structures/StructureService.ts"
import { claimsOf, referenceFields } from "../../structures/StructureFacts.ts"
import { isLive } from "../../query/Live.ts"
import { isUuid, type RecordRow } from "../../query/RecordRow.ts"
import type { Writer } from "../model.ts"
import {
  type CreateInput,
  type PendingCreate,
  type PlannedUpdate,
  recordNotFound,
  type RecordError,
  type Removed,
  type UpdateInput,
  type UpsertResult,
  type WriteResult
} from "../RecordInputs.ts"
import { batchable, checkMatch, type Preparation, withoutMatch, writable } from "../RecordPrepare.ts"
import type { RecordRepo, Versioned } from "../RecordRepo.ts"
import { changelogRow, eventOf } from "../RecordRows.ts"
import { upsertCreated, upsertUpdated } from "./Upsert.ts"
import { afterUpdate, ClaimTaken, timestamp, type Writes } from "./Writes.ts"
import { observeBatch, observeRetry, type WriteKind } from "../WriteMetrics.ts"

/** The most writes one group commit carries. */
const WRITE_BATCH_MAX = 256

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

/** A delete waiting for its commit. */
interface PendingDelete {
  readonly workspace: string
  readonly id: string
  readonly permanent: boolean
  readonly writer: Writer
  readonly reason?: string | undefined
}

/** An upsert that may share a transaction with upserts of other keys. */
interface PendingUpsert {
  readonly structure: Structure
  readonly match: Record<string, unknown>
  readonly data: Record<string, unknown>
  readonly writer: Writer
  /** structure and canonical match: two items of one key never share a batch */
  readonly key: string
}

/**
 * The batch's transaction, counted; when it fails with an error (nothing was written), `oneByOne` writes every
 * item on its own. A defect (the database gone mid-commit) reaches every caller as it is: retrying could write twice.
 */
const batched =
  <B>(kind: WriteKind, size: number, oneByOne: Effect.Effect<B>) =>
  <A, E>(batch: Effect.Effect<A, E>): Effect.Effect<A | B> =>
    Effect.andThen(
      observeBatch(kind, size),
      Effect.catch(batch, () => Effect.andThen(observeRetry(kind), oneByOne))
    )

/** A batch of one, or one naming a record twice, is written item by item. */
const alone = (items: ReadonlyArray<{ readonly id: string }>) => items.length === 1 || new Set(items.map((i) => i.id)).size < items.length

export const makeGroupWrites = (deps: {
  readonly repo: RecordRepo["Service"]
  readonly prep: Preparation
  readonly writes: Writes
  readonly structures: StructureService["Service"]
}) =>
  Effect.gen(function* () {
    const { prep, repo, structures, writes } = deps
    const { transaction } = repo
    // Batches of one kind written at once. PostgreSQL: two, so one is being prepared while the other commits (one
    // or four measured no better). PGlite runs one transaction at a time: a second batch would only wait, holding
    // items the running one could have taken.
    const writeBatchesInFlight = repo.sql.driver === "pglite" ? 1 : 2

    /** One queue of the node's group commit, writing its batches with `run`. */
    const groupCommit = <I, A>(
      run: (items: ReadonlyArray<I>) => Effect.Effect<ReadonlyArray<Exit.Exit<A, RecordError>>>,
      concurrency = writeBatchesInFlight
    ) =>
      GroupCommit.make({
        maxBatch: WRITE_BATCH_MAX,
        concurrency,
        run,
        onShutdown: (): RecordError =>
          serviceUnavailable({ message: "The node is shutting down; retry the write", code: "UNAVAILABLE" }) as RecordError
      })

    // ---------------------------------------------------------------- creates

    const writeCreates = (items: ReadonlyArray<PendingCreate>) => {
      // the items are validated and encrypted already: alone, each is the single-record write
      const oneByOne = Effect.forEach(items, (item) => Effect.exit(transaction(writes.insertOne(item))))
      // one statement, atomic without a transaction around it (RecordRepo.createRecords), for a batch of one too
      return repo.atomic(writes.createMany(items)).pipe(
        Effect.map((written) => written.map((w): Exit.Exit<WriteResult, RecordError> => Exit.succeed(w))),
        batched("create", items.length, oneByOne)
      )
    }

    const creates = yield* groupCommit(writeCreates)

    /** Creates with no references to check and no counters to draw share a commit; the others go on their own. */
    const create = (structure: Structure, input: CreateInput, writer: Writer) =>
      (batchable(structure)
        ? Effect.flatMap(prep.pendingCreate(structure, input, writer), creates.submit)
        : transaction(writes.createInTx(structure, input, writer))
      ).pipe(writes.reported("create", undefined, input.data, writer, () => structure))

    // ---------------------------------------------------------------- updates

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
      const oneByOne = (item: PendingUpdate) => Effect.exit(writes.updateOne(item.workspace, item.id, item.input, item.writer))
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
                  const structure = yield* writes.liveStructure(item.workspace, before)
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
              writes.writeUpdates(
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
    const updates = yield* groupCommit(writeUpdates, 1)

    /** Updates that keep the version (createVersion: false) rewrite their version row: they go on their own. */
    const update = (workspace: string, id: string, input: UpdateInput, writer: Writer) =>
      input.createVersion === false || !isUuid(id)
        ? writes.updateOne(workspace, id, input, writer)
        : updates.submit({ workspace, id: id.toLowerCase(), input, writer })

    // ---------------------------------------------------------------- deletes

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
      const oneByOne = Effect.forEach(items, (item) =>
        Effect.exit(writes.removeOne(item.workspace, item.id, item.permanent, item.writer, item.reason))
      )
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
            const structure = yield* writes.liveStructure(item.workspace, row)
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

    const deletes = yield* groupCommit(writeDeletes)

    const remove = (workspace: string, id: string, permanent: boolean, writer: Writer, reason?: string) =>
      isUuid(id)
        ? deletes.submit({ workspace, id, permanent, writer, ...(reason !== undefined ? { reason } : {}) })
        : writes.removeOne(workspace, id, permanent, writer, reason)

    // ---------------------------------------------------------------- upserts of different keys

    /**
     * Upserts of different keys written together: their records looked up in one statement; when none exists, the
     * batch is one create statement; otherwise one transaction locks the found records, plans each item as an
     * update or a create, and writes them all. Only matches on a unique property come here: its claim settles a
     * race with another writer creating the same key. When anything fails (that claim taken meanwhile, an invalid
     * item, two items of one key), nothing was written and every item answers `undefined`, to be written through
     * its key's actor (RecordWriter), which gives each its exact outcome.
     */
    const writeUpserts = (
      all: ReadonlyArray<PendingUpsert>
    ): Effect.Effect<ReadonlyArray<Exit.Exit<UpsertResult | undefined, RecordError>>> => {
      // a key's second item waits for the first: it is answered `undefined` (its actor) once this batch committed
      const keys = new Set<string>()
      const first = all.map((item) => !keys.has(item.key) && keys.add(item.key) !== undefined)
      if (first.includes(false)) {
        return Effect.map(writeUpserts(all.filter((_, i) => first[i])), (exits) => {
          let k = 0
          return all.map((_, i) => (first[i] ? exits[k++]! : Exit.succeed(undefined)))
        })
      }
      const items = all
      const deferAll = Effect.succeed(items.map((): Exit.Exit<UpsertResult | undefined, RecordError> => Exit.succeed(undefined)))
      const lookups = items.map(({ match, structure }) => ({
        structureId: structure.id,
        claim: claimsOf(structure, match)[0]!,
        contains: match
      }))
      const newRecord = ({ data, match, structure, writer }: PendingUpsert) =>
        prep.pendingCreate(structure, { data: { ...data, ...match } }, writer)
      /** Every key new: one statement, no transaction (a key created meanwhile fails it on its claim). */
      const allNew = Effect.gen(function* () {
        const creates: Array<PendingCreate> = []
        for (const item of items) creates.push(yield* newRecord(item))
        const written = yield* repo.atomic(writes.createMany(creates))
        return written.map((w): Exit.Exit<UpsertResult | undefined, RecordError> => Exit.succeed(upsertCreated(w.structure, w.row)))
      })
      /** Some keys exist: their records locked, then every item planned as an update or a create, written together. */
      const mixed = transaction(
        Effect.gen(function* () {
          const found = yield* repo.findMatches(lookups, true)
          const creates: Array<readonly [number, PendingCreate]> = []
          const updates: Array<readonly [number, PlannedUpdate]> = []
          for (let k = 0; k < items.length; k++) {
            const { data, match, structure, writer } = items[k]!
            const row = found.get(k)
            if (row === undefined) creates.push([k, yield* newRecord(items[k]!)])
            else {
              const plan = yield* prep.planUpdate(row, structure, { data: withoutMatch(data, match) }, writer)
              updates.push([k, { row, structure, plan, writer, action: "update" }])
            }
          }
          if (new Set(updates.map(([, u]) => u.row.id)).size < updates.length)
            return yield* conflict({ message: "one record, two keys", code: "CONFLICT" })
          const results: Array<UpsertResult> = []
          if (creates.length > 0) {
            const written = yield* writes.createMany(creates.map(([, c]) => c))
            written.forEach((w, j) => (results[creates[j]![0]] = upsertCreated(w.structure, w.row)))
          }
          if (updates.length > 0) {
            const next = yield* writes.applyUpdates(updates.map(([, u]) => u))
            next.forEach((row, j) => (results[updates[j]![0]] = upsertUpdated(updates[j]![1].structure, row)))
          }
          return results.map((r): Exit.Exit<UpsertResult | undefined, RecordError> => Exit.succeed(r))
        })
      )
      return Effect.gen(function* () {
        for (const item of items) yield* writable(item.structure)
        // After a batch of new keys, the next is written as new at once: a key that exists fails the statement on
        // its claim (nothing written), and then the keys are looked up as below.
        if (keysWereNew) {
          const created = yield* Effect.result(allNew)
          if (Result.isSuccess(created)) return created.success
          if (!(created.failure instanceof ClaimTaken)) return yield* Effect.fail(created.failure)
        }
        // the keys looked up first without a lock: an all-new batch needs no transaction
        const existing = yield* repo.findMatches(lookups, false).pipe(Effect.orDie)
        keysWereNew = existing.size === 0
        return yield* keysWereNew ? allNew : mixed
      }).pipe(batched("upsert", items.length, deferAll))
    }

    /** The last upsert batch's keys were all new (the next skips the lookup, see writeUpserts). */
    let keysWereNew = true
    const upserts = yield* groupCommit(writeUpserts)

    /** An upsert through the group commit, or `undefined`: it goes through its key's actor (see writeUpserts). */
    const upsertGrouped = (structure: Structure, match: Record<string, unknown>, data: Record<string, unknown>, writer: Writer) =>
      Effect.flatMap(checkMatch(structure, match), () =>
        // creates here skip the reference and file checks (pendingCreate): such structures go through the actor
        claimsOf(structure, match).length === 0 || !batchable(structure)
          ? Effect.succeed(undefined)
          : upserts.submit({ structure, match, data, writer, key: `${structure.id}/${canonicalJson(match)}` })
      )

    return { create, update, remove, upsertGrouped }
  })
