import { assert, describe, it } from "@effect/vitest"
import { Duration, Effect, Option } from "effect"
import { retryDelay } from "./RetryPlan.ts"

describe("retryDelay", () => {
  it.effect("steps the webhook schedule once per failed attempt, then stops", () =>
    Effect.gen(function* () {
      const delays = [1, 5, 15]
      const seen = []
      for (let attempts = 1; attempts <= 4; attempts++) {
        const d = yield* retryDelay(delays, attempts)
        seen.push(Option.map(d, Duration.toMillis))
      }
      assert.deepStrictEqual(seen, [Option.some(1000), Option.some(5000), Option.some(15000), Option.none()])
    })
  )

  it.effect("no delays: no retry", () =>
    Effect.gen(function* () {
      assert.isTrue(Option.isNone(yield* retryDelay([], 1)))
    })
  )
})
