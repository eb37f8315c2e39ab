// Group commit: writes that arrive while a transaction is in flight ride the next one together. Each caller waits for
// the batch its item went into and gets that item's own outcome; `run` decides how a batch is written (one
// transaction, and one by one again when the batch as a whole fails). `concurrency` batches are written at once, so
// a node keeps preparing the next batch while PostgreSQL commits the last; a batch holds at most `maxBatch` items.
// Reads by id use it too (RecordService.get): one statement for the reads that queued while the last one ran.
import { Deferred, Effect, Exit, Queue, type Scope } from "effect"

export interface GroupCommit<I, A, E> {
  /** Queues `item` for the next batch and waits for its outcome. */
  readonly submit: (item: I) => Effect.Effect<A, E>
}

export const make = <I, A, E>(options: {
  readonly maxBatch: number
  readonly concurrency: number
  /** Writes a batch; answers one exit per item, in order. */
  readonly run: (items: ReadonlyArray<I>) => Effect.Effect<ReadonlyArray<Exit.Exit<A, E>>>
  /** Answers callers still queued when the node shuts down. */
  readonly onShutdown: () => E
}): Effect.Effect<GroupCommit<I, A, E>, never, Scope.Scope> =>
  Effect.gen(function* () {
    const queue = yield* Queue.unbounded<readonly [I, Deferred.Deferred<A, E>]>()

    const worker = Effect.forever(
      Effect.gen(function* () {
        const batch = yield* Queue.takeBetween(queue, 1, options.maxBatch)
        // a batch that dies answers each of its callers with that defect rather than leaving them waiting
        const exits = yield* options
          .run(batch.map(([item]) => item))
          .pipe(Effect.catchCause((cause) => Effect.succeed(batch.map(() => Exit.failCause(cause)))))
        for (let i = 0; i < batch.length; i++) yield* Deferred.done(batch[i]![1], exits[i]!)
      })
    )
    for (let i = 0; i < options.concurrency; i++) yield* Effect.forkScoped(worker)

    yield* Effect.addFinalizer(() =>
      Effect.flatMap(Queue.clear(queue), (left) =>
        Effect.forEach(left, ([, done]) => Deferred.fail(done, options.onShutdown()), { discard: true })
      )
    )

    return {
      submit: (item: I) =>
        Effect.flatMap(Deferred.make<A, E>(), (done) => Effect.andThen(Queue.offer(queue, [item, done] as const), Deferred.await(done)))
    }
  })
