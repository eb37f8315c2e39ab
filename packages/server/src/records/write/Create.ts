// Creates: a new record with its version 1, changelog entry and event. Plain creates of concurrent requests share
// one statement through the node's group commit (RecordRepo.createRecords, atomic without a transaction); a
// structure with references to check or counters to draw creates in a transaction of its own.
import { Effect, Exit } from "effect"
import type { RecordRow } from "../../query/RecordRow.ts"
import { claimsOf } from "../../structures/StructureFacts.ts"
import { diff } from "../model.ts"
import type { CreateArgs, PendingCreate, RecordError, WriteResult } from "../RecordInputs.ts"
import { batchable } from "../RecordPrepare.ts"
import { changelogRow, eventOf } from "../RecordRows.ts"
import { batched, ClaimTaken, type EngineDeps, reasonOf, timestamp } from "./Common.ts"

export const makeCreates = (deps: EngineDeps) =>
  Effect.gen(function* () {
    const { common, prep, repo } = deps
    const { transaction } = repo

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

    /** A create in the caller's transaction, its references checked and its counters drawn. */
    const createInTx = ({ input, structure, writer }: CreateArgs) =>
      Effect.gen(function* () {
        const prepared = yield* prep.prepareCreate(structure, input, writer)
        yield* prep.checkReferences(structure, prepared.data, undefined)
        const data = yield* prep.assignAutoIncrements(structure, prepared.data)
        return yield* insertOne({ structure, input, writer, record: prep.newRecord(structure, input, writer, data, prepared.expiresAt) })
      })

    // ---------------------------------------------------------------- the group commit

    const writeCreates = (items: ReadonlyArray<PendingCreate>) => {
      // the items are validated and encrypted already: alone, each is the single-record write
      const oneByOne = Effect.forEach(items, (item) => Effect.exit(transaction(insertOne(item))))
      // one statement, atomic without a transaction around it (RecordRepo.createRecords), for a batch of one too
      return repo.atomic(createMany(items)).pipe(
        Effect.map((written) => written.map((w): Exit.Exit<WriteResult, RecordError> => Exit.succeed(w))),
        batched("create", items.length, oneByOne)
      )
    }

    const creates = yield* common.groupCommit(writeCreates)

    /** Creates with no references to check and no counters to draw share a commit; the others go on their own. */
    const create = (args: CreateArgs) => {
      const { input, structure, writer } = args
      return (
        batchable(structure) ? Effect.flatMap(prep.pendingCreate(structure, input, writer), creates.submit) : transaction(createInTx(args))
      ).pipe(common.reported("create", undefined, input.data, writer, () => structure))
    }

    return { createMany, insertOne, createInTx, create }
  })

export type Creates = Effect.Success<ReturnType<typeof makeCreates>>
