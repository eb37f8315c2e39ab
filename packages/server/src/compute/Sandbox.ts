// Runs user functions in isolated-vm. Each node keeps a pool of isolates keyed by workspace: an isolate serves one
// run at a time (the watchdog disposes the whole isolate, which must kill only that run) and is reused only within
// its workspace. A completed run leaves its context warm for the next run of the same function version
// (SandboxJob.contextKey): a new context with its bootstrap and the user's top-level code were ~1 ms of the
// isolate's thread per run, a warm run ~0.2 ms. Otherwise a run gets a fresh context, made and bootstrapped as soon
// as the isolate came back to the pool, on the isolate's own thread (isolated-vm's async calls). The bootstrap
// script and compiled user scripts are cached per isolate.
// Every isolate call that answers costs the node's thread a promise, a wake-up and a callback (40-100 us under
// load), so a run in a fresh context makes three: init is an ignored call (nothing to wait for; the script is queued
// right behind it on the isolate), the user's script starts the run from its own last statement and completes with
// the run's result, and the heap statistics. A warm run makes two: init with the run's start, the heap statistics.
// User code only ever runs in async calls: the node's thread never waits for it.
// The parts, by role: SandboxModel.ts (limits, job, outcome), SandboxPool.ts (the isolates, their next or warm
// context, compiled scripts), SandboxRun.ts (one run's driver: a thin adapter over isolated-vm's promise API, with
// its watchdog), SandboxBootstrap.ts with SandboxLibrary.ts (the isolate side), SandboxCheck.ts (the static check).
// This file wraps the driver into an Effect (semaphore, interruption) at the service boundary.
import { Context, Effect, Layer, Semaphore } from "effect"
import { spanMethods } from "../platform/Tracing.ts"
import { check } from "./SandboxCheck.ts"
import type { SandboxJob, SandboxLimits, SandboxOutcome, SandboxStats } from "./SandboxModel.ts"
import { makePool } from "./SandboxPool.ts"
import { startRun } from "./SandboxRun.ts"

export {
  type BridgeAnswer,
  defaultLimits,
  type HostBridge,
  type LogEntry,
  type SandboxJob,
  type SandboxLimits,
  type SandboxOutcome,
  type SandboxStats
} from "./SandboxModel.ts"
export { SCRIPT_CACHE_SIZE } from "./SandboxPool.ts"

export class Sandbox extends Context.Service<
  Sandbox,
  {
    /** Never fails: every outcome, timeouts and crashes included, is a value. */
    readonly execute: (job: SandboxJob) => Effect.Effect<SandboxOutcome>
    /** Static validation for saving and testing code; undefined when acceptable. */
    readonly check: (code: string) => string | undefined
    readonly stats: Effect.Effect<SandboxStats>
  }
>()("@troupe/server/compute/Sandbox") {
  /** Scoped: every isolate is disposed when the layer closes. */
  static readonly layer = (limits: SandboxLimits): Layer.Layer<Sandbox> =>
    Layer.effect(
      Sandbox,
      Effect.gen(function* () {
        const pool = makePool(limits)
        yield* Effect.addFinalizer(() => Effect.sync(pool.close))
        const semaphore = yield* Semaphore.make(Math.max(1, limits.concurrency))
        // Interrupting the fiber disposes the run's isolate, which ends the run at once.
        const run = (job: SandboxJob) =>
          Effect.callback<SandboxOutcome>((resume) => {
            const handle = startRun(pool, limits, job)
            handle.promise.then((o) => resume(Effect.succeed(o)))
            return Effect.sync(handle.abort)
          })
        const execute = (job: SandboxJob) => (job.nested ? run(job) : semaphore.withPermit(run(job)))
        // spanned only when spans are exported (platform/Tracing.ts): every run comes through here
        const hot = (yield* spanMethods)("Sandbox", { execute })
        return Sandbox.of({ execute: hot.execute, check, stats: Effect.sync(pool.stats) })
      })
    )
}
