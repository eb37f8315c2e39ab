// Effects of one key run one after another, in the order they were called, on this node; effects of different keys
// run side by side. A small per-key queue kept only while something of the key waits or runs (the map holds each
// key's last caller), so idle keys cost nothing.
import { Deferred, Effect, Exit } from "effect"

export interface InOrder {
  /** Runs `effect` once every earlier effect of `key` has ended (succeeded, failed or been interrupted). */
  readonly run: <A, E, R>(key: string, effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
  /** Keys with an effect waiting or running (for tests and metrics). */
  readonly size: () => number
}

export const make = (): InOrder => {
  const last = new Map<string, Deferred.Deferred<void>>()
  return {
    run: (key, effect) =>
      Effect.suspend(() => {
        const before = last.get(key)
        const mine = Deferred.makeUnsafe<void>()
        last.set(key, mine)
        const done = Effect.sync(() => {
          if (last.get(key) === mine) last.delete(key)
          Deferred.doneUnsafe(mine, Exit.void)
        })
        // interrupted while waiting: the next in line still waits for the one before
        const release = before === undefined ? done : Effect.andThen(Deferred.await(before), done)
        return Effect.ensuring(before === undefined ? effect : Effect.andThen(Deferred.await(before), effect), release)
      }),
    size: () => last.size
  }
}
