// The record engine's assembly: one instance per node (its group commit queues, its remembered rows), used only by
// the write front (RecordEntity.ts: RecordWriter and the actors). Every write is one SQL transaction that writes the
// record row, a version row, a changelog row and the outbox event, and keeps uniqueness, references,
// auto-increments and TTL right.
import { Conflict } from "@troupe/api/Errors"
import type { Structure } from "@troupe/api/structures/Structure"
import { Context, Effect, Layer, Result } from "effect"
import { Secrets } from "../../platform/Secrets.ts"
import { StructureService } from "../../structures/StructureService.ts"
import { makePlannerStats } from "../PlannerStats.ts"
import { RecordFailureHook } from "../RecordFailures.ts"
import type {
  BulkItemFailure,
  CreateArgs,
  FileDeletedArgs,
  RecordError,
  Removed,
  RemoveArgs,
  RestoreArgs,
  RevertArgs,
  UpdateArgs,
  UpsertArgs,
  UpsertItem,
  UpsertResult,
  WriteResult
} from "../RecordInputs.ts"
import { makePreparation } from "../RecordPrepare.ts"
import { RecordRepo } from "../RecordRepo.ts"
import { type BulkCreateArgs, type BulkEventArgs, type BulkRemoveArgs, type BulkUpdateArgs, makeAtomicBulk } from "./Bulk.ts"
import { makeCommon } from "./Common.ts"
import { makeCreates } from "./Create.ts"
import { makeDeletes } from "./Delete.ts"
import { makeRestores } from "./Restore.ts"
import { makeUpdates } from "./Update.ts"
import { makeUpserts } from "./Upsert.ts"

export class RecordEngine extends Context.Service<
  RecordEngine,
  {
    readonly create: (args: CreateArgs) => Effect.Effect<WriteResult, RecordError>
    readonly update: (args: UpdateArgs) => Effect.Effect<WriteResult, RecordError>
    readonly remove: (args: RemoveArgs) => Effect.Effect<Removed, RecordError>
    readonly restore: (args: RestoreArgs) => Effect.Effect<WriteResult, RecordError>
    readonly revert: (args: RevertArgs) => Effect.Effect<WriteResult, RecordError>
    readonly upsert: (args: UpsertArgs) => Effect.Effect<{ status: number; body: unknown; replayed: boolean }, RecordError>
    /**
     * An upsert (no Idempotency-Key) of a match on a unique property, committed with upserts of other keys; `undefined`
     * when it must go through its key's actor instead (no unique property in the match, or the shared batch failed).
     */
    readonly upsertGrouped: (args: Omit<UpsertArgs, "idempotencyKey">) => Effect.Effect<UpsertResult | undefined, RecordError>
    /** Upserts of one match in one transaction, in order; fails as a whole (nothing written) when any item fails. */
    readonly upsertMany: (args: {
      readonly structure: Structure
      readonly match: Record<string, unknown>
      readonly items: ReadonlyArray<UpsertItem>
    }) => Effect.Effect<ReadonlyArray<UpsertResult>, RecordError>
    /**
     * A file is being deleted (inside the storage's transaction): the onDelete of the `format: "file"` properties
     * naming it (restrict → 409, set_null, cascade).
     */
    readonly fileDeleted: (args: FileDeletedArgs) => Effect.Effect<void, Conflict>
    /** Atomic bulk create: every item in one transaction with the `record.bulk.created` event, or nothing. */
    readonly createAll: (args: BulkCreateArgs) => Effect.Effect<ReadonlyArray<WriteResult>, BulkItemFailure | RecordError>
    /** Non-atomic bulk create: each item's outcome, in item order (Bulk's createSome). */
    readonly createSome: (args: BulkCreateArgs) => Effect.Effect<Array<Result.Result<WriteResult, RecordError>>>
    /** Atomic bulk update (rows locked in id order); `structureId` restricts the batch to one structure. */
    readonly updateAll: (args: BulkUpdateArgs) => Effect.Effect<ReadonlyArray<WriteResult>, BulkItemFailure | RecordError>
    /** Atomic bulk delete. */
    readonly removeAll: (
      args: BulkRemoveArgs
    ) => Effect.Effect<ReadonlyArray<{ id: string; deletedAt: string; structureId: string }>, BulkItemFailure | RecordError>
    /** The `record.bulk.*` event of a non-atomic batch, in a transaction of its own after the items. */
    readonly publishBulk: (args: BulkEventArgs) => Effect.Effect<void>
  }
>()("@troupe/server/records/RecordEngine") {
  static readonly layerNoDeps = Layer.effect(
    RecordEngine,
    Effect.gen(function* () {
      const repo = yield* RecordRepo
      const structures = yield* StructureService
      const secrets = yield* Secrets
      const onFailure = yield* RecordFailureHook
      const prep = makePreparation({ repo, structures, secrets })
      const base = { repo, prep, structures, common: makeCommon({ repo, structures, onFailure }) }
      // the group commit queues, in this order: creates, updates, deletes, upserts
      const creates = yield* makeCreates(base)
      const updates = yield* makeUpdates(base)
      const deletes = yield* makeDeletes({ ...base, updates })
      const restores = makeRestores(base)
      const upserts = yield* makeUpserts({ ...base, creates, updates })
      const bulk = makeAtomicBulk({ ...base, creates, updates, deletes })
      const planner = yield* makePlannerStats(repo.sql)

      return RecordEngine.of({
        create: Effect.fn("RecordEngine.create")((args: CreateArgs) =>
          Effect.tap(creates.create(args), () => planner.wrote(args.structure.id, 1, true))
        ),
        update: Effect.fn("RecordEngine.update")((args: UpdateArgs) => updates.update(args)),
        remove: Effect.fn("RecordEngine.remove")((args: RemoveArgs) => deletes.remove(args)),
        restore: Effect.fn("RecordEngine.restore")((args: RestoreArgs) => restores.restore(args)),
        revert: Effect.fn("RecordEngine.revert")((args: RevertArgs) => restores.revert(args)),
        upsert: Effect.fn("RecordEngine.upsert")((args: UpsertArgs) => upserts.upsert(args)),
        upsertMany: Effect.fn("RecordEngine.upsertMany")(
          (args: { structure: Structure; match: Record<string, unknown>; items: ReadonlyArray<UpsertItem> }) => upserts.upsertMany(args)
        ),
        upsertGrouped: Effect.fn("RecordEngine.upsertGrouped")((args: Omit<UpsertArgs, "idempotencyKey">) => upserts.upsertGrouped(args)),
        fileDeleted: Effect.fn("RecordEngine.fileDeleted")((args: FileDeletedArgs) =>
          repo.atomic(deletes.fileDeleted(args)).pipe(Effect.catch((e) => (e instanceof Conflict ? Effect.fail(e) : Effect.die(e))))
        ),
        createAll: Effect.fn("RecordEngine.createAll")((args: BulkCreateArgs) =>
          Effect.tap(bulk.createAll(args), (done) => planner.wrote(args.structure.id, done.length))
        ),
        createSome: Effect.fn("RecordEngine.createSome")((args: BulkCreateArgs) =>
          Effect.tap(
            bulk.createSome(args, (input) => creates.create({ structure: args.structure, input, writer: args.writer })),
            (outcomes) => planner.wrote(args.structure.id, outcomes.filter(Result.isSuccess).length)
          )
        ),
        updateAll: Effect.fn("RecordEngine.updateAll")((args: BulkUpdateArgs) => bulk.updateAll(args)),
        removeAll: Effect.fn("RecordEngine.removeAll")((args: BulkRemoveArgs) => bulk.removeAll(args)),
        publishBulk: Effect.fn("RecordEngine.publishBulk")((args: BulkEventArgs) => bulk.publishBulk(args))
      })
    })
  )

  static readonly layer = RecordEngine.layerNoDeps.pipe(Layer.provide(RecordRepo.layer))
}
