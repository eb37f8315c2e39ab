// Function runs seen from the API (README "Runs"): queue a run (test executions, on-demand executes,
// `POST /functions/{id}/execute`), read one or a page, re-run one and its lineage.
// New runs go through this node's RunWorker: started here at once when it has a free slot, else queued for any node.
import type { Principal } from "@troupe/api/Authorization"
import type { FunctionRun, JobQueued, RerunRequest } from "@troupe/api/compute/Compute"
import { badRequest, type BadRequest, type NotFound } from "@troupe/api/Errors"
import { Clock, Context, Effect, Layer, Predicate } from "effect"
import { spanMethods } from "../platform/Tracing.ts"
import { FunctionRepo } from "./FunctionRepo.ts"
import { checkId, functionNotFound, isUuid, runNotFound, type RunRow, toRun } from "./model.ts"
import { type NewRun, RunRepo } from "./RunRepo.ts"
import { RunWorker } from "./RunWorker.ts"
import { makeNewRun, parametersContext, type RunSpec } from "./RunSpec.ts"
import { TriggerParams } from "./TriggerParams.ts"
import { TriggerRepo } from "./TriggerRepo.ts"

export interface RunListQuery {
  readonly page?: number | undefined
  readonly limit?: number | undefined
  readonly jobId?: string | undefined
  readonly functionId?: string | undefined
  readonly triggerId?: string | undefined
  readonly status?: string | undefined
  readonly executionSource?: string | undefined
}

const rerunError = (message: string) => badRequest({ message })

export class RunService extends Context.Service<
  RunService,
  {
    readonly enqueue: (spec: RunSpec) => Effect.Effect<JobQueued>
    /** The stored form of a new run (RunWorker runs it at once; triggers queue many). */
    readonly newRun: (spec: RunSpec) => NewRun
    readonly test: (workspace: string, code: string, params: Record<string, unknown>, by: Principal) => Effect.Effect<JobQueued>
    readonly executeFunction: (
      workspace: string,
      functionId: string,
      params: Record<string, unknown>,
      by: Principal
    ) => Effect.Effect<JobQueued, BadRequest | NotFound>
    readonly get: (workspace: string, id: string) => Effect.Effect<FunctionRun, BadRequest | NotFound>
    readonly list: (
      workspace: string,
      query: RunListQuery
    ) => Effect.Effect<
      { data: ReadonlyArray<FunctionRun>; total: number; page: number; limit: number } | FunctionRun,
      BadRequest | NotFound
    >
    readonly rerun: (
      workspace: string,
      id: string,
      input: RerunRequest | null,
      by: Principal
    ) => Effect.Effect<{ jobId: string; message: string; status: "queued"; queuedAt: string }, BadRequest>
    readonly history: (
      workspace: string,
      id: string
    ) => Effect.Effect<{ originalRunId: string; rerunCount: number; reruns: ReadonlyArray<FunctionRun> }, BadRequest | NotFound>
  }
>()("@troupe/server/compute/RunService") {
  static readonly layerNoDeps = Layer.effect(
    RunService,
    Effect.gen(function* () {
      const repo = yield* RunRepo
      const functions = yield* FunctionRepo
      const triggers = yield* TriggerRepo
      const params = yield* TriggerParams
      const worker = yield* RunWorker

      const newRun = makeNewRun(params.encryptValue)

      const queued = (row: RunRow): JobQueued => ({ jobId: row.id, status: "queued", queuedAt: row.createdAt })

      // The run-starting methods are on every run's path: spanned only when spans are exported (platform/Tracing.ts,
      // spanMethods), since an Effect.fn span and its stack capture cost a few µs per call even unexported.
      const enqueue = Effect.fnUntraced(function* (spec: RunSpec) {
        return queued(yield* worker.submit(newRun(spec)))
      })

      // The system trigger's id per workspace, looked up once a minute at most (test executions ask for it every time).
      const systemIds = new Map<string, { readonly id: string | undefined; readonly until: number }>()
      const defaultTrigger = (workspace: string) =>
        Effect.flatMap(Clock.currentTimeMillis, (now) => {
          const cached = systemIds.get(workspace)
          if (cached !== undefined && cached.until > now) return Effect.succeed(cached.id === undefined ? undefined : { id: cached.id })
          return Effect.map(Effect.orDie(triggers.byName(workspace, "default-trigger")), (t) => {
            const id = t?.isSystem ? t.id : undefined
            if (systemIds.size > 10_000) systemIds.clear()
            systemIds.set(workspace, { id, until: now + 60_000 })
            return id === undefined ? undefined : { id }
          })
        })

      const test = Effect.fnUntraced(function* (workspace: string, code: string, executionParams: Record<string, unknown>, by: Principal) {
        const system = yield* defaultTrigger(workspace)
        return yield* enqueue({
          workspace,
          functionId: null,
          triggerId: system?.id ?? null,
          source: "manual",
          code,
          executionParams,
          actingAs: { kind: by.kind, id: by.id },
          executionContext: { triggerName: "default-trigger", test: true }
        })
      })

      const executeFunction = Effect.fnUntraced(function* (
        workspace: string,
        functionId: string,
        executionParams: Record<string, unknown>,
        by: Principal
      ) {
        yield* checkId("function", functionId)
        const fn = yield* Effect.orDie(functions.get(workspace, functionId))
        if (fn === undefined) return yield* functionNotFound(functionId)
        const system = yield* defaultTrigger(workspace)
        return yield* enqueue({
          workspace,
          functionId: fn.id,
          triggerId: system?.id ?? null,
          source: "manual",
          executionParams,
          actingAs: { kind: by.kind, id: by.id },
          executionContext: { triggerName: "default-trigger", functionName: fn.name }
        })
      })

      const findRun = (workspace: string, id: string) =>
        Effect.gen(function* () {
          yield* checkId("run", id)
          const row = yield* Effect.orDie(repo.get(id))
          if (row === undefined || row.workspace !== workspace) return yield* runNotFound(id)
          return row
        })

      const get = Effect.fn("RunService.get")(function* (workspace: string, id: string) {
        return toRun(yield* findRun(workspace, id))
      })

      const list = Effect.fn("RunService.list")(function* (workspace: string, query: RunListQuery) {
        if (query.jobId !== undefined) return toRun(yield* findRun(workspace, query.jobId))
        for (const [name, value] of [
          ["functionId", query.functionId],
          ["triggerId", query.triggerId]
        ] as const) {
          if (value !== undefined && !isUuid(value)) {
            return yield* badRequest({ message: `Invalid ${name}: ${value.slice(0, 64)}` })
          }
        }
        const page = query.page ?? 1
        const limit = query.limit ?? 50
        const { rows, total } = yield* Effect.orDie(
          repo.list(workspace, {
            functionId: query.functionId,
            triggerId: query.triggerId,
            status: query.status,
            executionSource: query.executionSource,
            limit,
            offset: (page - 1) * limit
          })
        )
        return { data: rows.map(toRun), total, page, limit }
      })

      // Every re-run failure is a 400 with one of the fixed messages listed in README "Runs".
      const rerun = Effect.fn("RunService.rerun")(function* (workspace: string, id: string, input: RerunRequest | null, by: Principal) {
        if (!isUuid(id)) return yield* rerunError("Invalid run ID.")
        const original = yield* Effect.orDie(repo.get(id))
        if (original === undefined) return yield* rerunError("Original run not found.")
        if (original.workspace !== workspace) return yield* rerunError("Run does not belong to this workspace.")
        if (original.parameters === null) return yield* rerunError("Original run has no parameters stored.")
        const stored = yield* params
          .decryptValue(original.parameters, parametersContext(original.id))
          .pipe(Effect.mapError(() => rerunError("Failed to decrypt original run parameters.")))
        const overrides = input?.overrideParams ?? {}
        const executionParams = Predicate.isObject(stored) ? { ...stored, ...overrides } : { ...overrides }
        if (original.triggerId === null) return yield* rerunError("Original trigger not found; it may have been deleted.")
        const trigger = yield* Effect.orDie(triggers.get(workspace, original.triggerId))
        if (trigger === undefined) return yield* rerunError("Original trigger not found; it may have been deleted.")
        // a test execution carries its own code; every other run uses the function's latest code
        const isTest = original.code !== null && original.functionId === null
        const functionId = isTest ? null : trigger.isSystem ? original.functionId : trigger.functionId
        if (!isTest) {
          const fn = functionId === null ? undefined : yield* Effect.orDie(functions.get(workspace, functionId))
          if (fn === undefined) return yield* rerunError(`Function not found for trigger: ${trigger.id}`)
        }
        const reason = input?.reason ?? null
        const job = yield* worker.submit(
          newRun({
            workspace,
            functionId,
            triggerId: trigger.id,
            source: "rerun",
            ...(isTest ? { code: original.code! } : {}),
            executionParams,
            actingAs: { kind: by.kind, id: by.id },
            executionContext: { ...original.executionContext, rerunOf: original.id },
            depth: original.depth,
            rerun: { originalRunId: original.id, by: by.id, reason }
          })
        )
        // counted once the re-run exists (its insert commits first: it may start running at once)
        yield* Effect.orDie(repo.incrementRerunCount(original.id))
        return {
          jobId: job.id,
          message: `Re-run of ${original.id} queued${input?.useLatestCode === false ? " (the latest code is always used)" : ""}`,
          status: "queued" as const,
          queuedAt: job.createdAt
        }
      })

      const history = Effect.fn("RunService.history")(function* (workspace: string, id: string) {
        const original = yield* findRun(workspace, id)
        const reruns = yield* Effect.orDie(repo.reruns(original.id))
        return { originalRunId: original.id, rerunCount: original.rerunCount, reruns: reruns.map(toRun) }
      })

      const hot = (yield* spanMethods)("RunService", { enqueue, test, executeFunction })

      return RunService.of({ ...hot, newRun, get, list, rerun, history })
    })
  )

  static readonly layer = this.layerNoDeps.pipe(Layer.provide([RunRepo.layer, FunctionRepo.layer, TriggerRepo.layer]))
}
