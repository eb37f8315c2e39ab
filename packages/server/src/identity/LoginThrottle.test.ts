import { describe, expect, it } from "@effect/vitest"
import { Deferred, Effect, Fiber } from "effect"
import { TestClock } from "effect/testing"
import { addressKey, addressRule, clientKey, clientRule, makeLoginThrottle } from "./LoginThrottle.ts"

type Throttle = ReturnType<typeof makeLoginThrottle>

const keys = (name: string, address = "1.2.3.4") =>
  [
    [clientKey("user", name, address), clientRule],
    [addressKey(address), addressRule]
  ] as const

/** Seconds the attempt was told to wait, or 0 when it ran. */
const waitOf = <A, E>(attempt: Effect.Effect<A, E>) =>
  Effect.match(attempt, {
    onFailure: (e) => (typeof e === "object" && e !== null && "retryAfter" in e ? Number(e.retryAfter) : 0),
    onSuccess: () => 0
  })

/** One attempt with right (true) or wrong (false) credentials: the seconds it was told to wait, or 0. */
const guess = (t: Throttle, keyed: ReturnType<typeof keys>, right: boolean) => waitOf(t.attempt(keyed, Effect.succeed(right), (ok) => ok))

/** Would an attempt run now? Its check fails without an answer, which counts as neither right nor wrong. */
const peek = (t: Throttle, keyed: ReturnType<typeof keys>) => waitOf(t.attempt(keyed, Effect.fail("no answer" as const), () => false))

describe("LoginThrottle", () => {
  it.effect("locks a name from an address after 5 failures, doubling the wait, and a success clears it", () =>
    Effect.gen(function* () {
      const t = makeLoginThrottle()
      const a = keys("a")
      for (let i = 0; i < 4; i++) expect(yield* guess(t, a, false)).toBe(0)
      expect(yield* peek(t, a)).toBe(0)
      yield* guess(t, a, false)
      expect(yield* peek(t, a)).toBe(1)
      expect(yield* guess(t, a, true), "locked even for the right password").toBe(1)
      expect(yield* peek(t, keys("b"))).toBe(0)
      yield* TestClock.adjust("1001 millis")
      expect(yield* guess(t, a, false)).toBe(0)
      expect(yield* peek(t, a)).toBe(2)
      yield* TestClock.adjust("2001 millis")
      expect(yield* guess(t, a, false)).toBe(0)
      expect(yield* peek(t, a)).toBe(4)
      yield* TestClock.adjust("4001 millis")
      expect(yield* guess(t, a, true)).toBe(0)
      expect(yield* peek(t, a)).toBe(0)
      for (let i = 0; i < 4; i++) expect(yield* guess(t, a, false), "the count starts over").toBe(0)
    })
  )

  it.effect("the wait is capped at 60 s and failures are forgotten after 15 quiet minutes", () =>
    Effect.gen(function* () {
      const t = makeLoginThrottle()
      const x = keys("x")
      for (let i = 0; i < 12; i++) {
        expect(yield* guess(t, x, false)).toBe(0)
        yield* TestClock.adjust("61 seconds")
      }
      yield* guess(t, x, false)
      expect(yield* peek(t, x)).toBe(60)
      yield* TestClock.adjust("16 minutes")
      expect(yield* peek(t, x)).toBe(0)
      yield* guess(t, x, false)
      expect(yield* peek(t, x)).toBe(0)
    })
  )

  it.effect("an address is locked after 20 failures whatever the names", () =>
    Effect.gen(function* () {
      const t = makeLoginThrottle()
      for (let i = 0; i < 19; i++) yield* guess(t, keys(`user${i}`), false)
      expect(yield* peek(t, keys("new"))).toBe(0)
      yield* guess(t, keys("user19"), false)
      expect(yield* peek(t, keys("new"))).toBe(1)
      expect(yield* peek(t, keys("new", "5.6.7.8"))).toBe(0)
    })
  )

  it.effect("a name locked from one address is not locked from another: nobody locks a victim out", () =>
    Effect.gen(function* () {
      const t = makeLoginThrottle()
      for (let i = 0; i < 5; i++) yield* guess(t, keys("victim", "6.6.6.6"), false)
      expect(yield* peek(t, keys("victim", "6.6.6.6"))).toBe(1)
      expect(yield* peek(t, keys("Victim", "6.6.6.6")), "names are compared without case").toBe(1)
      expect(yield* guess(t, keys("victim", "10.0.0.1"), true)).toBe(0)
    })
  )

  it.effect("concurrent guesses are counted as they start: no more than the allowance runs", () =>
    Effect.gen(function* () {
      const t = makeLoginThrottle()
      const a = keys("a")
      const gate = yield* Deferred.make<boolean>()
      let ran = 0
      const slowCheck = Effect.andThen(
        Effect.sync(() => void ran++),
        Deferred.await(gate)
      )
      const fibers = yield* Effect.forEach(
        Array.from({ length: 30 }, (_, i) => i),
        () => Effect.forkChild(waitOf(t.attempt(a, slowCheck, (ok) => ok)))
      )
      yield* Effect.yieldNow
      expect(ran, "only the allowance got past the throttle").toBe(5)
      yield* Deferred.succeed(gate, false)
      const waits = yield* Fiber.joinAll(fibers)
      expect(waits.filter((w) => w === 0).length).toBe(5)
      expect(waits.filter((w) => w > 0).length).toBe(25)
      expect(yield* peek(t, a), "locked once the five failed").toBe(1)
    })
  )

  it.effect("a check that ends without an answer releases its reservation and counts as no failure", () =>
    Effect.gen(function* () {
      const t = makeLoginThrottle()
      const a = keys("a")
      for (let i = 0; i < 10; i++) expect(yield* peek(t, a)).toBe(0)
      const stuck = yield* Effect.forkChild(t.attempt(a, Effect.never, () => false))
      yield* Effect.yieldNow
      yield* Fiber.interrupt(stuck)
      for (let i = 0; i < 4; i++) expect(yield* guess(t, a, false)).toBe(0)
      expect(yield* peek(t, a)).toBe(0)
    })
  )
})
