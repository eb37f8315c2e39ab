import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { TestClock } from "effect/testing"
import { addressRule, clientRule, makeLoginThrottle } from "./LoginThrottle.ts"

describe("LoginThrottle", () => {
  it.effect("locks a client after 5 failures, doubling the wait, and a success clears it", () =>
    Effect.gen(function*() {
      const t = makeLoginThrottle()
      for (let i = 0; i < 4; i++) yield* t.failure([["client:a", clientRule]])
      assert.strictEqual(yield* t.check(["client:a"]), 0)
      yield* t.failure([["client:a", clientRule]])
      assert.strictEqual(yield* t.check(["client:a"]), 1)
      assert.strictEqual(yield* t.check(["client:b"]), 0)
      yield* TestClock.adjust("1001 millis")
      assert.strictEqual(yield* t.check(["client:a"]), 0)
      yield* t.failure([["client:a", clientRule]])
      assert.strictEqual(yield* t.check(["client:a"]), 2)
      yield* t.failure([["client:a", clientRule]])
      assert.strictEqual(yield* t.check(["client:a"]), 4)
      yield* t.success("client:a")
      assert.strictEqual(yield* t.check(["client:a"]), 0)
    }))

  it.effect("the wait is capped at 60 s and failures are forgotten after 15 quiet minutes", () =>
    Effect.gen(function*() {
      const t = makeLoginThrottle()
      for (let i = 0; i < 30; i++) yield* t.failure([["client:x", clientRule]])
      assert.strictEqual(yield* t.check(["client:x"]), 60)
      yield* TestClock.adjust("16 minutes")
      assert.strictEqual(yield* t.check(["client:x"]), 0)
      yield* t.failure([["client:x", clientRule]])
      assert.strictEqual(yield* t.check(["client:x"]), 0)
    }))

  it.effect("an address is locked after 20 failures whatever the client ids", () =>
    Effect.gen(function*() {
      const t = makeLoginThrottle()
      for (let i = 0; i < 19; i++) yield* t.failure([[`client:${i}`, clientRule], ["addr:1.2.3.4", addressRule]])
      assert.strictEqual(yield* t.check(["client:new", "addr:1.2.3.4"]), 0)
      yield* t.failure([["client:19", clientRule], ["addr:1.2.3.4", addressRule]])
      assert.strictEqual(yield* t.check(["client:new", "addr:1.2.3.4"]), 1)
      assert.strictEqual(yield* t.check(["client:new", "addr:5.6.7.8"]), 0)
    }))
})
