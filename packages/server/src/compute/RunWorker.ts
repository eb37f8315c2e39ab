// Every node's run worker: executes function runs in the sandbox.
// - A run submitted through this node (test, execute, async HTTP trigger, re-run) is inserted already claimed by it
//   and started at once when it has a free slot (TROUPE_FUNCTION_CONCURRENCY); otherwise it is queued.
// - Queued runs (and those of triggers: events, schedules) are claimed with `FOR UPDATE SKIP LOCKED` and a lease, as
//   many as this node has free slots, woken by LISTEN troupe_runs (NOTIFY on commit); a 2 s poll is the fallback.
// - Runs that must answer now (sync HTTP triggers, `api.invokeTrigger`) are inserted already claimed and run here.
// - Finished runs are written in batches: whatever finished while the previous batch committed goes into one
//   transaction with its function.* events.
// - Leases of running runs are renewed; any node fails runs whose lease expired ("node lost"), never re-running them.
// Each run resolves who it acts as (README "Who a run acts as") when it starts: a principal revoked since it was
// queued fails it.
import type { Principal } from "@troupe/api/Authorization"
import { Context, Deferred, Duration, Effect, Exit, Fiber, Layer, Queue, Schedule } from "effect"
import { SqlClient } from "effect/sql"
import { listen } from "../events/Listen.ts"
import { AccessCache } from "../identity/AccessCache.ts"
import * as GroupCommit from "../lib/GroupCommit.ts"
import { AppConfig } from "../platform/AppConfig.ts"
import { nodeName } from "../platform/Cluster.ts"
import { scrapedGauge } from "../platform/Metrics.ts"
import { type BridgeContext, makeBridgeFactory } from "./ApiBridge.ts"
import { functionHttp, FunctionHttpError } from "./FunctionHttp.ts"
import { MAX_RUN_DEPTH, type RunRow, sha256 } from "./model.ts"
import { recordRun, runsRunning } from "./RunMetrics.ts"
import { type ClaimedRun, type Finished, type NewRun, RUNS_CHANNEL, RunRepo } from "./RunRepo.ts"
import { makeNewRun, parametersContext, type RunSpec } from "./RunSpec.ts"
import { Sandbox, type SandboxOutcome } from "./Sandbox.ts"
import { TriggerParams } from "./TriggerParams.ts"
import { TriggerRepo } from "./TriggerRepo.ts"
import { isObject } from "../lib/JsonPath.ts"

const POLL_INTERVAL = Duration.seconds(2)
const SWEEP_INTERVAL = Duration.seconds(2)

export class RunWorker extends Context.Service<
  RunWorker,
  {
    /**
     * Stores a new run: started here at once when this node has a free slot (no claim round trip, no other node
     * involved), else queued for whichever node frees a slot first.
     */
    readonly submit: (run: NewRun) => Effect.Effect<RunRow>
    /** Runs a new run on this node at once and answers its final state (committed). */
    readonly runNow: (spec: RunSpec, options?: { readonly nested?: boolean }) => Effect.Effect<RunRow>
  }
>()("@troupe/server/compute/RunWorker") {
  static readonly layer = Layer.effect(
    RunWorker,
    Effect.gen(function* () {
      const config = yield* AppConfig
      const repo = yield* RunRepo
      const sandbox = yield* Sandbox
      const params = yield* TriggerParams
      const access = yield* AccessCache
      const triggers = yield* TriggerRepo
      const bridgeFor = yield* makeBridgeFactory
      const newRun = makeNewRun(params.encryptValue)
      const owner = nodeName(config)
      const layerScope = yield* Effect.scope
      const leaseMs = config.functionLeaseMs
      const concurrency = config.functionConcurrency
      const http = functionHttp({
        allowlist: config.functionHttpAllowlist,
        production: config.production,
        maxTimeoutMs: config.functionTimeoutMs
      })

      /** Runs executing on this node (their leases are renewed). */
      const running = new Set<string>()
      yield* scrapedGauge(runsRunning, () => running.size)
      /** Queued runs claimed by the worker loop and not yet finished. */
      let claimedCount = 0
      const signal = yield* Queue.sliding<void>(1)
      const poke = () => void Queue.offerUnsafe(signal, undefined)
      /** False once a claim came back short, until a NOTIFY or the poll says runs may be queued again. */
      let maybeQueued = true
      let notices = 0
      const queuedSomewhere = () => {
        maybeQueued = true
        notices++
        poke()
      }

      // ---------------------------------------------------------------- storing new runs, in batches

      // Runs submitted while the last insert ran go into the next one together (lib/GroupCommit.ts): one statement
      // for all of them, queued or claimed by this node, instead of one each (2 in flight on PostgreSQL, 1 on PGlite).
      const stores = yield* GroupCommit.make<{ readonly run: NewRun; readonly owner: string | null }, ClaimedRun, string>({
        maxBatch: 256,
        concurrency: (yield* SqlClient.SqlClient).driver === "pglite" ? 1 : 2,
        run: (items) =>
          // a failed statement dies: GroupCommit hands that defect to each caller (as the single insert did)
          repo.store(items, leaseMs).pipe(
            Effect.orDie,
            Effect.map((stored) =>
              stored.map(
                (c, i): Exit.Exit<ClaimedRun, string> =>
                  c === undefined ? Exit.die(new Error(`run ${items[i]!.run.id} was not stored`)) : Exit.succeed(c)
              )
            )
          ),
        onShutdown: () => "the node is stopping"
      })
      /** A new run stored: claimed by this node (`owner`) or queued (null). */
      const store = (run: NewRun, owner: string | null) => Effect.orDie(stores.submit({ run, owner }))

      // ---------------------------------------------------------------- finishing, in batches

      interface Pending {
        readonly finished: Finished
        readonly done: Deferred.Deferred<RunRow | undefined>
      }
      const finishing = yield* Queue.unbounded<Pending>()
      // SQL failures are retried (a finished run must not be lost); anything else fails the waiting callers, whose
      // runs are then failed as lost when their lease expires.
      const writeBatch = (batch: ReadonlyArray<Pending>) =>
        repo.finish(batch.map((p) => p.finished)).pipe(
          Effect.tapError((e) => Effect.logWarning("function runs: writing finished runs failed; retrying", e)),
          Effect.retry(Schedule.spaced("500 millis")),
          Effect.flatMap((rows) => {
            const byId = new Map(rows.map((r) => [r.id, r]))
            return Effect.forEach(batch, (p) => Deferred.succeed(p.done, byId.get(p.finished.id)), { discard: true })
          }),
          Effect.catchCause((cause) =>
            Effect.andThen(
              Effect.logError("function runs: finishing runs failed", cause),
              Effect.forEach(batch, (p) => Deferred.failCause(p.done, cause as any), { discard: true })
            )
          )
        )
      yield* Effect.forkScoped(Effect.forever(Effect.flatMap(Queue.takeAll(finishing), writeBatch)))

      const finish = (finished: Finished) =>
        Effect.gen(function* () {
          const done = yield* Deferred.make<RunRow | undefined>()
          yield* Queue.offer(finishing, { finished, done })
          const row = yield* Deferred.await(done)
          return row ?? (yield* Effect.orDie(repo.get(finished.id)))!
        })

      // ---------------------------------------------------------------- one run

      const failed = (run: RunRow, error: string, status: "failed" | "timed_out" = "failed"): Finished => ({
        id: run.id,
        status,
        result: null,
        error,
        logs: [],
        durationMs: 0,
        memoryUsageBytes: 0,
        cpuUsageSeconds: 0,
        functionCodeHash: null,
        functionVersion: null
      })

      const actorOf = (run: RunRow) =>
        run.actingAs === null ? Effect.succeed(undefined) : access.actor(run.actingAs.kind, run.actingAs.id, run.workspace)

      /** `api.invokeTrigger(name, params)`: another on-demand trigger, run here and awaited, one level deeper. */
      const invokeTrigger = (parent: BridgeContext, run: RunRow) => (name: string, executionParams: unknown) =>
        Effect.gen(function* () {
          if (parent.depth + 1 > MAX_RUN_DEPTH) {
            return yield* Effect.fail({ message: `invokeTrigger: call depth limit (${MAX_RUN_DEPTH}) reached`, code: "DEPTH_LIMIT" })
          }
          const trigger = yield* Effect.orDie(triggers.byName(parent.workspace, name))
          if (trigger === undefined || trigger.isSystem) {
            return yield* Effect.fail({ message: `invokeTrigger: no trigger named "${name}"`, code: "TRIGGER_NOT_FOUND" })
          }
          if (trigger.executionType !== "on-demand") {
            return yield* Effect.fail({
              message: `invokeTrigger: "${name}" is ${trigger.executionType}; only on-demand triggers can be invoked`,
              code: "NOT_ON_DEMAND"
            })
          }
          if (trigger.functionId === null) {
            return yield* Effect.fail({ message: `Function not found for trigger: ${trigger.id}`, code: "FUNCTION_NOT_FOUND" })
          }
          const child = yield* runNow(
            {
              workspace: parent.workspace,
              functionId: trigger.functionId,
              triggerId: trigger.id,
              source: "manual",
              executionParams: executionParams ?? {},
              actingAs: run.actingAs ?? { kind: parent.principal.kind, id: parent.principal.id },
              executionContext: { triggerName: trigger.name, executionType: trigger.executionType, invokedBy: run.id },
              depth: parent.depth + 1,
              fired: { name: trigger.name, executionType: trigger.executionType }
            },
            { nested: true }
          )
          if (child.status !== "completed") {
            return yield* Effect.fail({
              message: `invokeTrigger: "${name}" ${child.status === "timed_out" ? "timed out" : "failed"}: ${child.error ?? "unknown error"}`,
              code: child.status === "timed_out" ? "TRIGGER_TIMED_OUT" : "TRIGGER_FAILED"
            })
          }
          return outcomeBody(child)
        })

      const execute = (claimed: ClaimedRun, nested: boolean): Effect.Effect<Finished> =>
        Effect.gen(function* () {
          const run = claimed.run
          if (claimed.code === null) {
            return failed(run, run.functionId === null ? "No code to run" : `Function not found: ${run.functionId} (it was deleted)`)
          }
          const principal: Principal | undefined = yield* actorOf(run)
          if (principal === undefined) {
            const who =
              run.actingAs === null ? "nobody" : `${run.actingAs.kind === "service" ? "service account" : "user"} ${run.actingAs.id}`
            return failed(run, `This run acts as ${who}, who no longer exists, was revoked or is no longer a member of the workspace`)
          }
          const triggerParams = yield* Effect.result(params.open(run.workspace, claimed.triggerParams))
          if (triggerParams._tag === "Failure") return failed(run, triggerParams.failure)
          let input: unknown = {}
          if (run.parameters !== null) {
            const decrypted = yield* Effect.result(params.decryptValue(run.parameters, parametersContext(run.id)))
            if (decrypted._tag === "Failure") return failed(run, "The run's parameters cannot be decrypted")
            input = decrypted.success
          }
          const context: BridgeContext = { workspace: run.workspace, principal, runId: run.id, depth: run.depth }
          // a test execution's own code, hashed when it was stored (RunSpec)
          const testHash = run.code === null ? undefined : (run.functionCodeHash ?? sha256(run.code))
          const bridge = bridgeFor(context, {
            http: (request) =>
              typeof request.url !== "string" || typeof (request.method ?? "GET") !== "string"
                ? Effect.fail(new FunctionHttpError({ code: "INVALID_URL", message: "url must be a string" }))
                : http({ ...request, method: request.method ?? "GET" }),
            invokeTrigger: invokeTrigger(context, run)
          })
          const codeHash = testHash ?? claimed.functionCodeHash ?? sha256(claimed.code)
          const outcome: SandboxOutcome = yield* sandbox.execute({
            workspace: run.workspace,
            code: claimed.code,
            codeHash,
            // a warm context is shared by the runs of one function version, or by test executions of the same code
            contextKey: testHash !== undefined ? `test#${codeHash}` : `${run.functionId}@${claimed.functionVersion}#${codeHash}`,
            triggerParams: triggerParams.success ?? {},
            executionParams: input ?? {},
            bridge,
            nested
          })
          const isTest = testHash !== undefined
          return {
            id: run.id,
            status: outcome.status,
            result: outcome.result,
            error: outcome.error,
            logs: outcome.logs,
            durationMs: outcome.durationMs,
            memoryUsageBytes: outcome.memoryUsageBytes,
            cpuUsageSeconds: outcome.cpuUsageSeconds,
            functionCodeHash: isTest ? testHash : claimed.functionCodeHash,
            functionVersion: isTest ? "test" : claimed.functionVersion === null ? null : String(claimed.functionVersion)
          }
        })

      /** Executes and finishes; a node stopping mid-run fails it at once rather than leaving it to the lease. */
      const executeAndFinish = (claimed: ClaimedRun, nested: boolean, executed: Effect.Effect<void> = Effect.void) =>
        Effect.gen(function* () {
          running.add(claimed.run.id)
          const finished = yield* execute(claimed, nested).pipe(
            Effect.catchDefect((defect) =>
              Effect.as(
                Effect.logError("function runs: a run failed unexpectedly", defect),
                failed(claimed.run, "internal error while running the function")
              )
            ),
            Effect.onInterrupt(() => repo.finish([failed(claimed.run, "node stopped while the function ran")]).pipe(Effect.ignore))
          )
          yield* executed
          yield* recordRun(finished.status, claimed.run.executionSource, finished.durationMs)
          return yield* finish(finished)
        }).pipe(Effect.ensuring(Effect.sync(() => running.delete(claimed.run.id))))

      const runNow = (spec: RunSpec, options?: { readonly nested?: boolean }) =>
        Effect.gen(function* () {
          const claimed = yield* store(newRun(spec), owner)
          return yield* executeAndFinish(claimed, options?.nested === true)
        })

      // ---------------------------------------------------------------- the worker loop

      /**
       * Runs a claimed run in the background, holding one of the worker's slots while it executes: the slot frees as
       * soon as the sandbox answers, and the result is written with the next batch (its lease renewed until then).
       */
      const start = (claimed: ClaimedRun) => {
        let held = true
        const release = Effect.sync(() => {
          if (!held) return
          held = false
          claimedCount--
          poke()
        })
        // in the layer's scope: a node shutting down interrupts its runs, which fails them at once (not as lost)
        return Effect.forkIn(executeAndFinish(claimed, false, release).pipe(Effect.ensuring(release)), layerScope)
      }

      const claimAndRun = Effect.gen(function* () {
        const free = concurrency - claimedCount
        if (free <= 0 || !maybeQueued) return false
        const seen = notices
        claimedCount += free
        const claimed = yield* repo.claim(owner, free, leaseMs).pipe(
          Effect.ensuring(
            Effect.sync(() => {
              claimedCount -= free
            })
          )
        )
        for (const c of claimed) {
          claimedCount++
          yield* start(c)
        }
        // nothing more queued, unless a NOTIFY came in meanwhile
        if (claimed.length < free && notices === seen) maybeQueued = false
        return claimed.length === free
      })

      // Uninterruptible: a caller gone mid-request must neither leak the slot nor leave a stored run unstarted.
      const submit = (run: NewRun) =>
        Effect.uninterruptible(
          Effect.gen(function* () {
            if (claimedCount >= concurrency) return (yield* store(run, null)).run
            claimedCount++
            const claimed = yield* store(run, owner).pipe(Effect.tapCause(() => Effect.sync(() => void claimedCount--)))
            yield* start(claimed)
            return claimed.run
          })
        )

      const loop = Effect.gen(function* () {
        const more = yield* claimAndRun.pipe(
          Effect.catchCause((cause) => Effect.as(Effect.logWarning("function runs: claim failed", cause), false))
        )
        if (!more) {
          const signalled = yield* Queue.take(signal).pipe(
            Effect.timeout(POLL_INTERVAL),
            Effect.as(true),
            Effect.catch(() => Effect.succeed(false))
          )
          // the fallback poll: a NOTIFY may have been missed
          if (!signalled) maybeQueued = true
        }
      }).pipe(Effect.forever)

      yield* listen(RUNS_CHANNEL, queuedSomewhere)
      const worker = yield* Effect.forkScoped(loop)

      const renew = Effect.suspend(() => repo.renew(owner, [...running], leaseMs)).pipe(
        Effect.catchCause((cause) => Effect.logWarning("function runs: lease renewal failed", cause)),
        Effect.repeat(Schedule.spaced(Duration.millis(Math.max(100, Math.floor(leaseMs / 3)))))
      )
      yield* Effect.forkScoped(renew)

      const sweep = repo.failLost(100).pipe(
        Effect.tap((lost) =>
          lost.length > 0
            ? Effect.andThen(
                Effect.logWarning(`function runs: ${lost.length} run(s) failed as node lost`),
                Effect.forEach(lost, (run) => recordRun("failed", run.executionSource, undefined), { discard: true })
              )
            : Effect.void
        ),
        Effect.catchCause((cause) => Effect.logWarning("function runs: lost-run sweep failed", cause)),
        Effect.repeat(Schedule.spaced(SWEEP_INTERVAL))
      )
      yield* Effect.forkScoped(sweep)
      yield* Effect.addFinalizer(() => Fiber.interrupt(worker))

      return RunWorker.of({ submit, runNow })
    })
  )
}

/** What a finished run answers to whoever waited for it: `{success, data | error, runId}`. */
export const outcomeBody = (run: RunRow): Record<string, unknown> => {
  if (run.status !== "completed") return { success: false, error: run.error ?? run.status, runId: run.id }
  const result = run.result
  if (isObject(result) && typeof result.success === "boolean") {
    const r = result
    return r.success === true
      ? { success: true, data: r.data ?? null, runId: run.id }
      : { success: false, error: r.error ?? null, runId: run.id }
  }
  return { success: true, data: result ?? null, runId: run.id }
}
