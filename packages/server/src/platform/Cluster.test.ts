import { describe, expect, it } from "@effect/vitest"
import { Effect, Fiber, Layer } from "effect"
import { ClusterError, Runner, RunnerAddress, RunnerHealth, RunnerStorage, ShardId } from "effect/cluster"
import { TestClock } from "effect/testing"
import { FewReleasesAtOnce, quickPing, RELEASES_AT_ONCE, watchForDeadRunners } from "./Cluster.ts"

const address = RunnerAddress.make("127.0.0.1", 34431)

describe("FewReleasesAtOnce", () => {
  it.effect("runs at most a few of the storage's shard releases at once, each in full", () =>
    Effect.gen(function* () {
      let running = 0
      let most = 0
      const released: Array<string> = []
      const storage = Layer.mock(RunnerStorage.RunnerStorage, {
        release: (_address, shardId) =>
          Effect.gen(function* () {
            running++
            most = Math.max(most, running)
            yield* Effect.sleep("10 millis")
            released.push(shardId.toString())
            running--
          })
      })
      const shards = Array.from({ length: 20 }, (_, i) => ShardId.make("default", i + 1))
      const fiber = yield* Effect.gen(function* () {
        const wrapped = yield* RunnerStorage.RunnerStorage
        // as Sharding does: one fiber per shard, all at once
        yield* Effect.forEach(shards, (shard) => wrapped.release(address, shard), {
          concurrency: "unbounded",
          discard: true
        })
      }).pipe(Effect.provide(FewReleasesAtOnce.pipe(Layer.provide(storage))), Effect.forkChild)
      yield* TestClock.adjust("1 second")
      yield* Fiber.join(fiber)
      expect(most).toBe(RELEASES_AT_ONCE)
      expect([...released].sort()).toStrictEqual(shards.map(String).sort())
    })
  )
})

describe("quickPing", () => {
  const unavailable = new ClusterError.RunnerUnavailable({ address })

  it.effect("calls a node whose pings are refused dead after two retries 250 ms apart", () =>
    Effect.gen(function* () {
      let pings = 0
      const health = quickPing({
        ping: () =>
          Effect.suspend(() => {
            pings++
            return Effect.fail(unavailable)
          })
      })
      const fiber = yield* Effect.forkChild(health.isAlive(address))
      yield* TestClock.adjust("499 millis")
      expect(fiber.pollUnsafe()).toBeUndefined()
      yield* TestClock.adjust("1 millis")
      expect(yield* Fiber.join(fiber)).toBe(false)
      expect(pings).toBe(3)
    })
  )

  it.effect("keeps a node alive when a retry answers", () =>
    Effect.gen(function* () {
      let pings = 0
      const health = quickPing({
        ping: () =>
          Effect.suspend(() => {
            pings++
            return pings === 1 ? Effect.fail(unavailable) : Effect.void
          })
      })
      const fiber = yield* Effect.forkChild(health.isAlive(address))
      yield* TestClock.adjust("250 millis")
      expect(yield* Fiber.join(fiber)).toBe(true)
      expect(pings).toBe(2)
    })
  )

  it.effect("waits for a ping that hangs instead of calling a slow node dead", () =>
    Effect.gen(function* () {
      const health = quickPing({ ping: () => Effect.never })
      const fiber = yield* Effect.forkChild(health.isAlive(address))
      yield* TestClock.adjust("9 seconds")
      expect(fiber.pollUnsafe()).toBeUndefined()
    })
  )
})

describe("watchForDeadRunners", () => {
  const self = RunnerAddress.make("127.0.0.1", 1)
  const runner = (port: number) => new Runner.Runner({ address: RunnerAddress.make("127.0.0.1", port), groups: ["default"], weight: 1 })

  /** Runs one check against `runners` (address port, healthy) with `alive` telling which ports answer. */
  const check = (runners: ReadonlyArray<readonly [number, boolean]>, alive: (port: number) => Effect.Effect<boolean>) =>
    Effect.gen(function* () {
      const marked: Array<string> = []
      const storage = Layer.mock(RunnerStorage.RunnerStorage, {
        getRunners: Effect.succeed(runners.map(([port, healthy]) => [runner(port), healthy] as const)),
        setRunnerHealth: (address, healthy) => Effect.sync(() => void marked.push(`${address.port}:${healthy}`))
      })
      const health = Layer.succeed(RunnerHealth.RunnerHealth, { isAlive: (address) => alive(address.port) })
      yield* Effect.scoped(
        Effect.gen(function* () {
          yield* watchForDeadRunners(self, "1 second")
          yield* TestClock.adjust("2500 millis")
        })
      ).pipe(Effect.provide(Layer.merge(storage, health)))
      return marked
    })

  it.effect("marks a runner that does not answer unhealthy, and no other", () =>
    Effect.gen(function* () {
      const marked = yield* check(
        [
          [1, true],
          [2, true],
          [3, true]
        ],
        (port) => Effect.succeed(port !== 2)
      )
      // checked every second: marked at each check while the storage still lists it as healthy
      expect([...new Set(marked)]).toStrictEqual(["2:false"])
    })
  )

  it.effect("never marks the last healthy runner, nor one already unhealthy, nor itself", () =>
    Effect.gen(function* () {
      expect(
        yield* check(
          [
            [1, false],
            [2, true],
            [3, false]
          ],
          () => Effect.succeed(false)
        )
      ).toStrictEqual([])
      expect(yield* check([[1, true]], () => Effect.succeed(false))).toStrictEqual([])
    })
  )

  it.effect("takes no verdict from a check that hangs", () =>
    Effect.gen(function* () {
      expect(
        yield* check(
          [
            [1, true],
            [2, true]
          ],
          () => Effect.never
        )
      ).toStrictEqual([])
    })
  )
})
