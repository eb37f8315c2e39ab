// What the record engine's operations share: the row locks of a single-record write, the structure it writes under,
// the failure hook told of a failed write, the state an update leaves a record in, and the node's group commit
// queues (lib/GroupCommit.ts) with their counted, retried batches.
import { serviceUnavailable } from "@troupe/api/Errors"
import type { Structure } from "@troupe/api/structures/Structure"
import { Clock, Data, Effect, type Exit } from "effect"
import * as GroupCommit from "../../lib/GroupCommit.ts"
import type { StructureService } from "../../structures/StructureService.ts"
import { isLive } from "../../query/Live.ts"
import { isUuid, type RecordRow } from "../../query/RecordRow.ts"
import type { Writer } from "../model.ts"
import type { RecordFailure } from "../RecordFailures.ts"
import { recordNotFound, type RecordError, type UpdatePlan } from "../RecordInputs.ts"
import type { Preparation } from "../RecordPrepare.ts"
import type { RecordRepo, RecordUpdate } from "../RecordRepo.ts"
import { observeBatch, observeRetry, type WriteKind } from "../WriteMetrics.ts"

/** A batch claimed a unique value someone holds (or two of its items claimed the same one). */
export class ClaimTaken extends Data.TaggedError("ClaimTaken") {}

/** Now as the ISO timestamp events and deletes carry. */
export const timestamp = Effect.map(Clock.currentTimeMillis, (ms) => new Date(ms).toISOString())

/** The new state of a record an update plan makes. */
export const recordUpdate = (row: RecordRow, plan: UpdatePlan, writer: Writer): RecordUpdate => ({
  id: row.id,
  data: plan.data,
  metadata: plan.metadata,
  version: plan.version,
  updatedBy: writer.userId,
  expiresAt: plan.expiresAt
})

/** The record as an update planned on `row` leaves it (what the statement writes, but for its timestamps). */
export const afterUpdate = (row: RecordRow, plan: UpdatePlan, writer: Writer): RecordRow => ({ ...row, ...recordUpdate(row, plan, writer) })

export const reasonOf = (reason: string | undefined) => (reason ? { reason } : {})

/** The most writes one group commit carries. */
const WRITE_BATCH_MAX = 256

/**
 * The batch's transaction, counted; when it fails with an error (nothing was written), `oneByOne` writes every
 * item on its own. A defect (the database gone mid-commit) reaches every caller as it is: retrying could write twice.
 */
export const batched =
  <B>(kind: WriteKind, size: number, oneByOne: Effect.Effect<B>) =>
  <A, E>(batch: Effect.Effect<A, E>): Effect.Effect<A | B> =>
    Effect.andThen(
      observeBatch(kind, size),
      Effect.catch(batch, () => Effect.andThen(observeRetry(kind), oneByOne))
    )

/** A batch of one, or one naming a record twice, is written item by item. */
export const alone = (items: ReadonlyArray<{ readonly id: string }>) =>
  items.length === 1 || new Set(items.map((i) => i.id)).size < items.length

/** What every operation of the engine is built on. */
export interface EngineDeps {
  readonly repo: RecordRepo["Service"]
  readonly prep: Preparation
  readonly structures: StructureService["Service"]
  readonly common: Common
}

export const makeCommon = (deps: {
  readonly repo: RecordRepo["Service"]
  readonly structures: StructureService["Service"]
  readonly onFailure: (failure: RecordFailure) => Effect.Effect<void>
}) => {
  const { onFailure, repo, structures } = deps

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

  return { liveStructure, lock, lockLive, reported, groupCommit }
}

export type Common = ReturnType<typeof makeCommon>
