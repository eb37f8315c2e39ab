// One run on an isolate of the pool (SandboxPool.ts): its context (warm or fresh), the isolate calls that start it,
// the host calls it makes through the bridge, its watchdog, and the outcome; then the isolate goes back to the pool.
import ivm from "isolated-vm"
import { USER_FILENAME } from "./SandboxBootstrap.ts"
import type { BridgeAnswer, LogEntry, SandboxJob, SandboxLimits, SandboxOutcome } from "./SandboxModel.ts"
import { compiled, type Pool, prepare, type Slot, type Warm } from "./SandboxPool.ts"

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
const LOG_LEVELS = new Set(["debug", "info", "warn", "error"])

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

export const startRun = (pool: Pool, limits: SandboxLimits, job: SandboxJob): RunHandle => {
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
        // Every async isolated-vm call captures the caller's stack (10 frames, for its errors); from here, under the
        // fiber's run loop, that walk through optimised Effect frames was ~2 % of the node's thread. One microtask
        // later the stack is this function alone.
        await undefined
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
