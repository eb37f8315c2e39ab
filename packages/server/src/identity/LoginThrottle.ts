// Slows down credential guessing at the token endpoint. Failures are counted per client id / username *from one
// remote address* and per remote address; past a threshold every further attempt for that key (right or wrong)
// waits out a lock that doubles with each failure: 1 s, 2 s, 4 s ... capped at 60 s. A success clears the
// client's count. Counts forget after 15 quiet minutes. Kept in each node's memory: a guesser spread over N nodes
// gets N times the tries.
// Locking a name from one address only is deliberate: nobody can lock a victim out from elsewhere. The price: a
// guesser with many addresses gets `threshold` tries per address before each lock (a password costs a scrypt each).
// An attempt is reserved before the credentials are checked (the check takes a good part of a second): concurrent
// guesses count as they start, so they cannot overtake the lock.
import { Clock, Data, Effect, Exit } from "effect"

export interface ThrottleRule {
  readonly threshold: number
  /** a right guess forgets this key's failures (the client's own key, not its address's) */
  readonly clearedBySuccess: boolean
}

interface Entry {
  failures: number
  /** attempts reserved and not settled yet */
  pending: number
  lockedUntil: number
  last: number
}

const forgetAfterMs = 15 * 60 * 1000
const maxLockMs = 60 * 1000

export const clientRule: ThrottleRule = { threshold: 5, clearedBySuccess: true }
export const addressRule: ThrottleRule = { threshold: 20, clearedBySuccess: false }

/** The key of a client id or username tried from an address. */
export const clientKey = (kind: "client" | "user", name: string, address: string | undefined) =>
  `${kind}:${kind === "user" ? name.toLowerCase() : name}\u0000${address ?? "unknown"}`

/** The key of an address. */
export const addressKey = (address: string | undefined) => `addr:${address ?? "unknown"}`

/** Too many failures (or attempts in flight) for one of the keys: retry after `retryAfter` seconds. */
export class Throttled extends Data.TaggedError("Throttled")<{ readonly retryAfter: number }> {}

export const makeLoginThrottle = () => {
  const entries = new Map<string, Entry>()

  const live = (key: string, now: number) => {
    const e = entries.get(key)
    if (e !== undefined && e.pending === 0 && now - e.last > forgetAfterMs && e.lockedUntil <= now) {
      entries.delete(key)
      return undefined
    }
    return e
  }

  /** Seconds to wait (nothing reserved), or 0 with one attempt reserved on every key. Synchronous: no interleaving. */
  const reserve = (keyed: ReadonlyArray<readonly [string, ThrottleRule]>, now: number) => {
    let until = 0
    for (const [k, rule] of keyed) {
      const e = live(k, now)
      if (e === undefined) continue
      if (e.lockedUntil > now) until = Math.max(until, e.lockedUntil)
      // below the threshold, as many in flight as failures are left; past it, one at a time
      else if (e.pending >= Math.max(1, rule.threshold - e.failures)) until = Math.max(until, now + 1000)
    }
    if (until > now) return Math.max(1, Math.ceil((until - now) / 1000))
    if (entries.size > 100_000) {
      for (const [k, e] of entries) {
        if (e.pending === 0 && now - e.last > forgetAfterMs && e.lockedUntil <= now) entries.delete(k)
      }
    }
    for (const [k] of keyed) {
      const e = entries.get(k) ?? { failures: 0, pending: 0, lockedUntil: 0, last: now }
      e.pending++
      e.last = now
      entries.set(k, e)
    }
    return 0
  }

  /** `right`: the credentials were right (true), wrong (false), or the check did not finish (undefined). */
  const settle = (keyed: ReadonlyArray<readonly [string, ThrottleRule]>, right: boolean | undefined, now: number) => {
    for (const [k, rule] of keyed) {
      const e = entries.get(k)
      if (e === undefined) continue
      e.pending = Math.max(0, e.pending - 1)
      e.last = now
      if (right === false) {
        e.failures++
        if (e.failures >= rule.threshold) {
          e.lockedUntil = now + Math.min(maxLockMs, 1000 * 2 ** Math.min(16, e.failures - rule.threshold))
        }
      } else if (right === true && rule.clearedBySuccess) {
        e.failures = 0
        e.lockedUntil = 0
      }
    }
  }

  /**
   * Runs `check` as one attempt on every key, reserved before it starts; `isRight` tells whether its result means
   * the credentials were right. Fails with `Throttled` (and runs nothing) while a key is locked or has as many
   * attempts in flight as it has failures left.
   */
  const attempt = <A, E, R>(
    keyed: ReadonlyArray<readonly [string, ThrottleRule]>,
    check: Effect.Effect<A, E, R>,
    isRight: (a: A) => boolean
  ): Effect.Effect<A, E | Throttled, R> =>
    Effect.uninterruptibleMask((restore) =>
      Effect.gen(function* () {
        const wait = reserve(keyed, yield* Clock.currentTimeMillis)
        if (wait > 0) return yield* Effect.fail(new Throttled({ retryAfter: wait }))
        const exit = yield* Effect.exit(restore(check))
        settle(keyed, Exit.isSuccess(exit) ? isRight(exit.value) : undefined, yield* Clock.currentTimeMillis)
        return yield* exit
      })
    )

  return { attempt }
}

export type LoginThrottle = ReturnType<typeof makeLoginThrottle>
