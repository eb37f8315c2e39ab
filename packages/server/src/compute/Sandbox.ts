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
// The isolate side lives in SandboxBootstrap.ts; the promise-based driver below is a thin adapter over isolated-vm's
// promise API, wrapped into an Effect (semaphore, interruption) only at the service boundary.
// Size: over 500 lines, kept whole: the pool, the per-run driver and its watchdog share the isolate slots and their
// state; the isolate side is SandboxBootstrap.ts, the static check SandboxCheck.ts.
import { Context, Effect, Layer, Result, Semaphore } from "effect"
import ivm from "isolated-vm"
import { randomUUID } from "node:crypto"
import * as os from "node:os"
import { evaluate, parseExpression } from "../structures/Expression.ts"
import { BOOTSTRAP_SOURCE, suffixLine, USER_FILENAME, userScriptSuffix } from "./SandboxBootstrap.ts"
import { check } from "./SandboxCheck.ts"

export interface SandboxLimits {
  /** per run wall clock */
  readonly timeoutMs: number
  /** each isolate's memoryLimit */
  readonly memoryMb: number
  /** runs at once on this node */
  readonly concurrency: number
  /** cap on the sum of isolates' memory limits: max isolates = floor(nodeMemoryMb / memoryMb), at least concurrency */
  readonly nodeMemoryMb: number
  /** recycle an isolate after this many runs */
  readonly maxRunsPerIsolate: number
  /** recycle when the heap after a run exceeds this fraction of memoryMb */
  readonly recycleHeapRatio: number
  /** a warm context (see SandboxJob.contextKey) serves at most this many runs */
  readonly maxRunsPerContext: number
  /**
   * drop a warm context when the heap after a run exceeds this fraction of memoryMb; the heap then still holds the
   * isolate's uncollected garbage, so a bound below recycleHeapRatio drops warm contexts at random
   */
  readonly contextHeapRatio: number
  readonly maxResultBytes: number
  readonly maxLogBytes: number
  readonly maxCallBytes: number
}

export const defaultLimits = (overrides: Partial<SandboxLimits> = {}): SandboxLimits => ({
  timeoutMs: 30_000,
  memoryMb: 128,
  concurrency: os.availableParallelism(),
  nodeMemoryMb: 2048,
  maxRunsPerIsolate: 500,
  recycleHeapRatio: 0.5,
  maxRunsPerContext: 100,
  contextHeapRatio: 0.5,
  maxResultBytes: 1024 * 1024,
  maxLogBytes: 256 * 1024,
  maxCallBytes: 10 * 1024 * 1024,
  ...overrides
})

export type BridgeAnswer =
  | { readonly ok: true; readonly value: unknown }
  | {
      readonly ok: false
      readonly error: {
        readonly message: string
        readonly code?: string
        readonly statusCode?: number
        readonly details?: unknown
      }
    }

export interface HostBridge {
  readonly call: (method: string, args: ReadonlyArray<unknown>) => Promise<BridgeAnswer>
}

export interface SandboxJob {
  readonly workspace: string
  readonly code: string
  /** sha256 hex of code, the key of the compiled-script cache */
  readonly codeHash: string
  readonly triggerParams: unknown
  readonly executionParams: unknown
  readonly bridge: HostBridge
  /**
   * The function version the run belongs to. Runs with the same key (within the workspace) may share a warm context:
   * its top-level code ran once, module-level state persists, each run gets its own frozen `api` and parameters.
   * The context is dropped after a run that did not complete, past maxRunsPerContext runs or contextHeapRatio.
   * Without a key every run gets a fresh context.
   */
  readonly contextKey?: string
  readonly timeoutMs?: number
  /** started by api.invokeTrigger inside a run that already holds a slot: skips the semaphore */
  readonly nested?: boolean
}

export interface LogEntry {
  readonly level: "debug" | "info" | "warn" | "error"
  readonly message: string
  /** ISO 8601 */
  readonly at: string
}

export interface SandboxOutcome {
  readonly status: "completed" | "failed" | "timed_out"
  /** JSON value on completed, null otherwise */
  readonly result: unknown
  readonly error: string | null
  /** Collected inside the isolate and copied out with the result; a killed run keeps those streamed to the host. */
  readonly logs: ReadonlyArray<LogEntry>
  readonly logsTruncated: boolean
  /**
   * V8 `used_heap_size + externally_allocated_size` of the isolate when the run settled, read before its context
   * is released: the run's live data, garbage not yet collected and the ~1 MB bootstrap. 0 when the isolate died.
   */
  readonly memoryUsageBytes: number
  /** the isolate's cpuTime delta over this run only */
  readonly cpuUsageSeconds: number
  /** host wall clock, performance.now */
  readonly durationMs: number
}

export interface SandboxStats {
  readonly isolates: number
  readonly busy: number
  readonly idle: number
  /** isolates created since start: tells reuse from replacement */
  readonly created: number
  /** compiled user scripts cached, over all isolates (at most SCRIPT_CACHE_SIZE each) */
  readonly compiledScripts: number
  /** warm contexts kept for their function version's next run (at most one per isolate) */
  readonly warmContexts: number
}

const BRIDGE_METHODS = new Set([
  "queryRecords",
  "aggregateRecords",
  "fetchRecord",
  "fetchRecordByUniqueField",
  "createRecord",
  "updateRecord",
  "deleteRecord",
  "incrementField",
  "decrementField",
  "invokeTrigger",
  "http",
  // notifications (notification/FunctionCalls.ts)
  "sendEmail",
  "sendSms",
  // files (storage/FunctionCalls.ts)
  "storageList",
  "storageGet",
  "storageRead",
  "storageWrite",
  "storageRemove",
  // data intelligence (intelligence/FunctionCalls.ts)
  "intelligenceScan",
  "intelligenceTrigger",
  "intelligenceAnalyze",
  "intelligenceValidate",
  "intelligenceJob",
  "intelligenceSuggestions",
  "intelligenceAcceptSuggestion",
  "intelligenceRejectSuggestion",
  "intelligenceInsights",
  "intelligenceAcknowledgeInsight",
  "intelligenceDismissInsight",
  "intelligenceCorrections",
  "intelligenceAcceptCorrection",
  "intelligenceRejectCorrection",
  // search (search/SearchService.ts)
  "search"
])
/** compiled user scripts kept per isolate (least recently used dropped) */
export const SCRIPT_CACHE_SIZE = 16
const LOG_LEVELS = new Set(["debug", "info", "warn", "error"])

/** A fresh context with the bootstrap run in it: its `control` still to be initialised with the run's own values. */
interface Prepared {
  readonly context: ivm.Context
  readonly control: ivm.Reference
}

/** A context kept after a completed run for the next run of the same version (SandboxJob.contextKey). */
interface Warm extends Prepared {
  readonly key: string
  readonly suffixLine: number
  runs: number
}

/** A user script compiled with the suffix that starts its run (SandboxBootstrap.ts). */
interface UserScript {
  readonly script: ivm.Script
  /** the suffix's line, whose stack frame is not the user's */
  readonly suffixLine: number
}

interface Slot {
  readonly isolate: ivm.Isolate
  readonly workspace: string
  readonly bootstrap: ivm.Script
  readonly hostSync: ivm.Callback
  /** compiled user scripts by code hash, least recently used first */
  readonly scripts: Map<string, UserScript>
  runs: number
  /** the next run's context, being made on the isolate's thread since the isolate came back to the pool */
  next: Promise<Prepared> | undefined
  /** the context its last run left warm, if any (then `next` is made only when a run needs a fresh one) */
  warm: Warm | undefined
}

/** A fresh context of `slot`, bootstrapped, made on the isolate's thread (never used twice: one per run). */
const prepare = (slot: Slot): Promise<Prepared> => {
  const made = (async () => {
    const context = await slot.isolate.createContext()
    const control = (await slot.bootstrap.run(context, { reference: true })) as ivm.Reference
    return { context, control }
  })()
  // an isolate disposed before its next run rejects this; that run (if any) reports the isolate's own fate
  made.catch(() => {})
  return made
}

// Sync helpers the isolate calls without a promise: uuid (crypto, not Math.random) and the expression language.
const hostSync = (op: unknown, arg: unknown): string => {
  if (op === "uuid") return `1${JSON.stringify(randomUUID())}`
  if (op === "evaluate" && typeof arg === "string") {
    const parsed = parseExpression(arg)
    if (Result.isFailure(parsed)) return `0${parsed.failure.message} (at ${parsed.failure.position})`
    return `1${JSON.stringify(evaluate(parsed.success, {}, new Date()))}`
  }
  return "0unknown host function"
}

// V8's code cache for the bootstrap, produced by the first isolate of the process: later ones skip most compiling.
let bootstrapCache: ivm.ExternalCopy<ArrayBuffer> | undefined
const compileBootstrap = (isolate: ivm.Isolate): ivm.Script => {
  const origin = { filename: "bootstrap.js" }
  if (bootstrapCache !== undefined) {
    return isolate.compileScriptSync(BOOTSTRAP_SOURCE, { ...origin, cachedData: bootstrapCache })
  }
  const script = isolate.compileScriptSync(BOOTSTRAP_SOURCE, { ...origin, produceCachedData: true })
  bootstrapCache = (script as ivm.Script & ivm.CachedDataResult).cachedData
  return script
}

const makePool = (limits: SandboxLimits) => {
  const maxIsolates = Math.max(limits.concurrency, Math.floor(limits.nodeMemoryMb / limits.memoryMb))
  const all = new Set<Slot>()
  const idle = new Map<Slot, string>() // insertion order: least recently used first
  let created = 0
  let closed = false

  const dispose = (slot: Slot) => {
    all.delete(slot)
    idle.delete(slot)
    if (!slot.isolate.isDisposed) slot.isolate.dispose()
  }
  // An idle isolate leaves the pool at once and is disposed off the critical path of the run at hand.
  const retire = (slot: Slot) => {
    all.delete(slot)
    idle.delete(slot)
    setImmediate(() => slot.isolate.isDisposed || slot.isolate.dispose())
  }
  const create = (workspace: string): Slot => {
    const isolate = new ivm.Isolate({ memoryLimit: limits.memoryMb })
    const slot: Slot = {
      isolate,
      workspace,
      bootstrap: compileBootstrap(isolate),
      hostSync: new ivm.Callback(hostSync),
      scripts: new Map(),
      runs: 0,
      next: undefined,
      warm: undefined
    }
    created++
    all.add(slot)
    return slot
  }
  const checkout = (workspace: string, key: string | undefined): Slot => {
    let mine: Slot | undefined
    let warm: Slot | undefined
    for (const [slot, ws] of idle) {
      if (ws !== workspace) continue
      mine = slot // the most recently used one, unless one has this version's context warm
      if (key !== undefined && slot.warm?.key === key) warm = slot
    }
    if (warm !== undefined) mine = warm
    if (mine !== undefined) {
      idle.delete(mine)
      return mine
    }
    if (all.size >= maxIsolates) {
      const [oldest] = idle.keys()
      if (oldest !== undefined) retire(oldest)
      // With none idle every isolate runs (nested runs skip the semaphore): go over the cap rather than deadlock.
    }
    return create(workspace)
  }
  const checkin = (slot: Slot, reusable: boolean) => {
    if (reusable && !closed && !slot.isolate.isDisposed && all.size <= maxIsolates) {
      if (slot.warm === undefined) slot.next = prepare(slot)
      idle.set(slot, slot.workspace)
      return
    }
    retire(slot)
  }
  const close = () => {
    closed = true
    for (const slot of [...all]) dispose(slot)
  }
  const stats = (): SandboxStats => {
    let compiledScripts = 0
    let warmContexts = 0
    for (const slot of all) {
      compiledScripts += slot.scripts.size
      if (slot.warm !== undefined) warmContexts++
    }
    return { isolates: all.size, busy: all.size - idle.size, idle: idle.size, created, compiledScripts, warmContexts }
  }
  return { checkout, checkin, close, stats, isClosed: () => closed }
}

type Pool = ReturnType<typeof makePool>

const compiled = async (slot: Slot, job: SandboxJob): Promise<UserScript> => {
  const hit = slot.scripts.get(job.codeHash)
  if (hit !== undefined) {
    slot.scripts.delete(job.codeHash)
    slot.scripts.set(job.codeHash, hit)
    return hit
  }
  const script = await slot.isolate.compileScript(job.code + userScriptSuffix, { filename: USER_FILENAME })
  const user = { script, suffixLine: suffixLine(job.code) }
  slot.scripts.set(job.codeHash, user)
  if (slot.scripts.size > SCRIPT_CACHE_SIZE) {
    const [oldest] = slot.scripts
    slot.scripts.delete(oldest![0])
    oldest![1].script.release()
  }
  return user
}

const errorText = (e: unknown): string => {
  if (typeof e !== "object" || e === null) return String(e)
  const { message, name, stack } = e as { message?: unknown; name?: unknown; stack?: unknown }
  const frame =
    typeof stack === "string" ? stack.split("\n").find((l) => l.includes(`${USER_FILENAME}:`) && l.trim().startsWith("at")) : undefined
  return `${typeof name === "string" ? name : "Error"}: ${String(message)}${frame ? `\n    ${frame.trim()}` : ""}`
}

const readLogs = (raw: unknown): Array<LogEntry> => {
  if (!Array.isArray(raw)) return []
  const logs: Array<LogEntry> = []
  for (const item of raw.slice(0, 1001)) {
    if (!Array.isArray(item) || typeof item[1] !== "string" || typeof item[2] !== "string") continue
    const level = LOG_LEVELS.has(item[0]) ? (item[0] as LogEntry["level"]) : "info"
    logs.push({ level, message: item[1].slice(0, 8192), at: item[2] })
  }
  return logs
}

interface RunHandle {
  readonly promise: Promise<SandboxOutcome>
  readonly abort: () => void
}

const startRun = (pool: Pool, limits: SandboxLimits, job: SandboxJob): RunHandle => {
  const startedAt = performance.now()
  const timeoutMs = job.timeoutMs ?? limits.timeoutMs
  const elapsed = () => performance.now() - startedAt
  const remaining = () => Math.max(1, Math.ceil(timeoutMs - elapsed()))
  const outcome = (status: SandboxOutcome["status"], fields: Partial<SandboxOutcome> = {}): SandboxOutcome => ({
    status,
    result: null,
    error: null,
    logs: [],
    logsTruncated: false,
    memoryUsageBytes: 0,
    cpuUsageSeconds: 0,
    durationMs: elapsed(),
    ...fields
  })

  const refused = (error: string): RunHandle => ({ promise: Promise.resolve(outcome("failed", { error })), abort() {} })
  if (pool.isClosed()) return refused("Sandbox is shut down")
  let slot: Slot
  let execJson: string
  let trigJson: string
  try {
    execJson = JSON.stringify(job.executionParams ?? null) ?? "null"
    trigJson = JSON.stringify(job.triggerParams ?? null) ?? "null"
    slot = pool.checkout(job.workspace, job.contextKey)
  } catch (e) {
    return refused(errorText(e))
  }
  const isolate = slot.isolate
  const state = { finished: false, timedOut: false, aborted: false }
  const cpuBefore = isolate.cpuTime
  let cpuAtKill: bigint | undefined
  const kill = () => {
    if (isolate.isDisposed) return
    cpuAtKill = isolate.cpuTime // readable while the isolate runs; gone once disposed
    isolate.dispose()
  }
  const cpu = () => Number((isolate.isDisposed ? (cpuAtKill ?? cpuBefore) : isolate.cpuTime) - cpuBefore) / 1e9
  // isolated-vm's own timeout stops applying after the first await: this host timer is what enforces the limit.
  const watchdog = setTimeout(() => {
    state.timedOut = true
    kill()
  }, timeoutMs)
  // Async on purpose: it queues behind anything the run left running, so the isolate is idle once it answers.
  const heapBytes = async () => {
    const heap = await isolate.getHeapStatistics()
    return heap.used_heap_size + heap.externally_allocated_size
  }

  const drive = async (): Promise<SandboxOutcome> => {
    let context: ivm.Context | undefined
    let control: ivm.Reference | undefined
    let reusable = false
    // this version's warm context, else a fresh one (a warm context of another version is released)
    const warm = job.contextKey !== undefined && slot.warm?.key === job.contextKey ? slot.warm : undefined
    if (warm === undefined && slot.warm !== undefined) {
      slot.warm.control.release()
      slot.warm.context.release()
    }
    slot.warm = undefined
    /** set only when this run completed within the context's bounds: what the slot keeps warm */
    let kept: Warm | undefined
    const deliver = (id: number, answer: BridgeAnswer) => {
      if (state.finished || isolate.isDisposed || control === undefined) return
      let json: string
      try {
        json = JSON.stringify(answer)
      } catch (e) {
        json = JSON.stringify({ ok: false, error: { message: `Host answer is not JSON: ${String(e)}` } })
      }
      try {
        control.applyIgnored(undefined, [1, id, json], { timeout: remaining() })
      } catch {
        // the isolate died in the meantime: the run's own outcome says why
      }
    }
    /** Log entries as the run wrote them (each already capped by the isolate): what a killed run leaves. */
    const streamed: Array<unknown> = []
    const hostCall = (id: unknown, method: unknown, argsJson: unknown) => {
      if (state.finished || typeof id !== "number") return
      if (id === 0 && method === "log") {
        if (typeof argsJson === "string" && argsJson.length <= 3 * 8192 + 64 && streamed.length < 1000) {
          try {
            streamed.push(JSON.parse(argsJson))
          } catch {
            // not an entry of ours
          }
        }
        return
      }
      const fail = (message: string) => deliver(id, { ok: false, error: { message } })
      if (typeof method !== "string" || !BRIDGE_METHODS.has(method)) return fail(`Unknown api method ${method}`)
      if (typeof argsJson !== "string" || Buffer.byteLength(argsJson) > limits.maxCallBytes) {
        return fail(`api.${method}: arguments exceed ${limits.maxCallBytes} bytes`)
      }
      Promise.resolve()
        .then(() => job.bridge.call(method, JSON.parse(argsJson) as ReadonlyArray<unknown>))
        .then(
          (answer) => deliver(id, answer),
          (e) => fail(e instanceof Error ? e.message : String(e))
        )
    }
    const initArgs = (op: 2 | 3, suffixAt: number) => [
      op,
      new ivm.Callback(hostCall, { ignored: true }),
      slot.hostSync,
      execJson,
      trigJson,
      limits.maxResultBytes,
      limits.maxLogBytes,
      limits.maxCallBytes,
      suffixAt
    ]
    try {
      let out: unknown
      let suffixAt: number
      if (warm !== undefined) {
        // A warm context: two isolate calls, init with the run's start (op 3) and the heap statistics.
        context = warm.context
        control = warm.control
        suffixAt = warm.suffixLine
        out = await control.apply(undefined, initArgs(3, suffixAt), { result: { promise: true, copy: true }, timeout: remaining() })
      } else {
        const next = slot.next ?? prepare(slot)
        slot.next = undefined
        const prepared = await next
        context = prepared.context
        control = prepared.control
        // Beside the prepared context, three isolate calls: init (ignored: no promise, no answer to wait for, and the
        // script is queued behind it), the script whose last statement starts the run, and the heap statistics.
        const user = await compiled(slot, job)
        suffixAt = user.suffixLine
        control.applyIgnored(undefined, initArgs(2, suffixAt))
        out = await user.script.run(context, { timeout: remaining(), promise: true, copy: true })
        // The suffix did not start the run (user code replaced its binding): start it as its own call.
        if (!Array.isArray(out)) {
          out = await control.apply(undefined, [0], { result: { promise: true, copy: true }, timeout: remaining() })
        }
      }
      state.finished = true
      const memoryUsageBytes = await heapBytes()
      slot.runs++
      reusable = slot.runs < limits.maxRunsPerIsolate && memoryUsageBytes <= limits.recycleHeapRatio * limits.memoryMb * 1024 * 1024
      const [ok, payload, rawLogs, dropped, cut] = out as [boolean, string, unknown, number, boolean]
      const common = {
        logs: readLogs(rawLogs),
        logsTruncated: dropped > 0 || cut,
        memoryUsageBytes,
        cpuUsageSeconds: cpu()
      }
      if (!ok) return outcome("failed", { ...common, error: String(payload) })
      if (Buffer.byteLength(payload) > limits.maxResultBytes) {
        return outcome("failed", { ...common, error: `Result exceeds the limit of ${limits.maxResultBytes} bytes` })
      }
      const result: unknown = JSON.parse(payload)
      // Only a completed run leaves its context warm, within its bounds of runs and heap.
      const runs = (warm?.runs ?? 0) + 1
      if (
        job.contextKey !== undefined &&
        runs < limits.maxRunsPerContext &&
        memoryUsageBytes <= limits.contextHeapRatio * limits.memoryMb * 1024 * 1024
      ) {
        kept = { context, control, key: job.contextKey, suffixLine: suffixAt, runs }
      }
      return outcome("completed", { ...common, result })
    } catch (e) {
      state.finished = true
      const message = e instanceof Error ? e.message : String(e)
      if (state.aborted) return outcome("failed", { error: "Run was interrupted", cpuUsageSeconds: cpu() })
      const kept = { logs: readLogs(streamed), logsTruncated: streamed.length >= 1000 }
      if (state.timedOut || message === "Script execution timed out.") {
        return outcome("timed_out", { ...kept, error: `Function timed out after ${timeoutMs} ms`, cpuUsageSeconds: cpu() })
      }
      if (isolate.isDisposed) {
        const error = pool.isClosed() ? "Sandbox is shut down" : `Function exceeded its memory limit (${limits.memoryMb} MB)`
        return outcome("failed", { ...kept, error, cpuUsageSeconds: cpu() })
      }
      // A throw at the top level of the user's script or a syntax error: the isolate itself is fine.
      const memoryUsageBytes = await heapBytes().catch(() => 0)
      slot.runs++
      reusable = !isolate.isDisposed && slot.runs < limits.maxRunsPerIsolate
      return outcome("failed", { error: errorText(e), memoryUsageBytes, cpuUsageSeconds: cpu() })
    } finally {
      clearTimeout(watchdog)
      if (kept !== undefined && reusable && !isolate.isDisposed) slot.warm = kept
      else if (!isolate.isDisposed) {
        control?.release()
        context?.release()
      }
      pool.checkin(slot, reusable)
    }
  }

  return {
    promise: drive().catch((e) => outcome("failed", { error: `Sandbox error: ${errorText(e)}` })),
    abort: () => {
      state.aborted = true
      kill()
    }
  }
}

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
        const execute = Effect.fn("Sandbox.execute")((job: SandboxJob) => (job.nested ? run(job) : semaphore.withPermit(run(job))))
        return Sandbox.of({ execute, check, stats: Effect.sync(pool.stats) })
      })
    )
}
