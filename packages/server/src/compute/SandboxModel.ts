// The sandbox's vocabulary: its limits, a job, its outcome, the host bridge a run calls through, the pool's stats.
import * as os from "node:os"

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
