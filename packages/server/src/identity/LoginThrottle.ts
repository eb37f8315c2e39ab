// Slows down credential guessing at the token endpoint. Failures are counted per client id / username and per
// remote address; past a threshold every further attempt for that key (right or wrong) waits out a lock that
// doubles with each failure: 1 s, 2 s, 4 s ... capped at 60 s. A success clears the client's count. Counts
// forget after 15 quiet minutes. Kept in each node's memory: a guesser spread over N nodes gets N times the tries.
import { Clock, Effect } from "effect"

export interface ThrottleRule {
  readonly threshold: number
}

interface Entry {
  failures: number
  lockedUntil: number
  last: number
}

const forgetAfterMs = 15 * 60 * 1000
const maxLockMs = 60 * 1000

export const clientRule: ThrottleRule = { threshold: 5 }
export const addressRule: ThrottleRule = { threshold: 20 }

export const makeLoginThrottle = () => {
  const entries = new Map<string, Entry>()

  const live = (key: string, now: number) => {
    const e = entries.get(key)
    if (e !== undefined && now - e.last > forgetAfterMs && e.lockedUntil <= now) {
      entries.delete(key)
      return undefined
    }
    return e
  }

  /** Seconds to wait when any of the keys is locked, else 0. */
  const check = (keys: ReadonlyArray<string>) =>
    Effect.map(Clock.currentTimeMillis, (now) => {
      let until = 0
      for (const k of keys) until = Math.max(until, live(k, now)?.lockedUntil ?? 0)
      return until > now ? Math.max(1, Math.ceil((until - now) / 1000)) : 0
    })

  const failure = (keyed: ReadonlyArray<readonly [string, ThrottleRule]>) =>
    Effect.map(Clock.currentTimeMillis, (now) => {
      if (entries.size > 100_000) {
        for (const [k, e] of entries) if (now - e.last > forgetAfterMs && e.lockedUntil <= now) entries.delete(k)
      }
      for (const [k, rule] of keyed) {
        const e = live(k, now) ?? { failures: 0, lockedUntil: 0, last: now }
        e.failures++
        e.last = now
        if (e.failures >= rule.threshold) {
          e.lockedUntil = now + Math.min(maxLockMs, 1000 * 2 ** Math.min(16, e.failures - rule.threshold))
        }
        entries.set(k, e)
      }
    })

  const success = (key: string) => Effect.sync(() => void entries.delete(key))

  return { check, failure, success }
}

export type LoginThrottle = ReturnType<typeof makeLoginThrottle>
