import { describe, expect, it } from "@effect/vitest"
import { Deferred, Effect, Fiber } from "effect"
import * as InOrder from "./InOrder.ts"

describe("InOrder", () => {
  it.effect("runs the effects of one key one at a time, in call order; other keys do not wait", () =>
    Effect.gen(function* () {
      const inOrder = InOrder.make()
      const log: Array<string> = []
      const gate = yield* Deferred.make<void>()
      const step = (name: string, wait?: Deferred.Deferred<void>) =>
        Effect.gen(function* () {
          log.push(`${name} start`)
          if (wait) yield* Deferred.await(wait)
          log.push(`${name} end`)
        })
      const first = yield* Effect.forkChild(inOrder.run("a", step("a1", gate)))
      const second = yield* Effect.forkChild(inOrder.run("a", step("a2")))
      yield* Effect.yieldNow
      // b runs while a1 holds key a; a2 has not started
      yield* inOrder.run("b", step("b1"))
      expect(log).toEqual(["a1 start", "b1 start", "b1 end"])
      expect(inOrder.size()).toBe(1)
      yield* Deferred.succeed(gate, undefined)
      yield* Fiber.join(first)
      yield* Fiber.join(second)
      expect(log).toEqual(["a1 start", "b1 start", "b1 end", "a1 end", "a2 start", "a2 end"])
      expect(inOrder.size()).toBe(0)
    })
  )

  it.effect("a failure lets the next run; an interrupted waiter does not let the one after it overtake", () =>
    Effect.gen(function* () {
      const inOrder = InOrder.make()
      const log: Array<string> = []
      const gate = yield* Deferred.make<void>()
      const holder = yield* Effect.forkChild(inOrder.run("k", Effect.andThen(Deferred.await(gate), Effect.fail("boom" as const))))
      yield* Effect.yieldNow
      const waiter = yield* Effect.forkChild(
        inOrder.run(
          "k",
          Effect.sync(() => log.push("waiter"))
        )
      )
      const third = yield* Effect.forkChild(
        inOrder.run(
          "k",
          Effect.sync(() => log.push("third"))
        )
      )
      yield* Effect.yieldNow
      // the interrupted waiter ends only once the one before it has (its release waits), so interrupt it on the side
      const interrupted = yield* Effect.forkChild(Fiber.interrupt(waiter))
      yield* Effect.yieldNow
      expect(log).toEqual([])
      yield* Deferred.succeed(gate, undefined)
      const failed = yield* Effect.flip(Fiber.join(holder))
      expect(failed).toBe("boom")
      yield* Fiber.join(third)
      yield* Fiber.join(interrupted)
      expect(log).toEqual(["third"])
      expect(inOrder.size()).toBe(0)
    })
  )
})
