// The isolate pool of Sandbox.ts: isolates keyed by workspace, each serving one run at a time, with the context its
// next run takes (made ahead on the isolate's thread, or left warm by the last run of a function version) and its
// compiled user scripts. Retired isolates are disposed off the run's path.
import { Result } from "effect"
import ivm from "isolated-vm"
import { randomUUID } from "node:crypto"
import { evaluate, parseExpression } from "../structures/Expression.ts"
import { BOOTSTRAP_SOURCE, suffixLine, USER_FILENAME, userScriptSuffix } from "./SandboxBootstrap.ts"
import type { SandboxJob, SandboxLimits, SandboxStats } from "./SandboxModel.ts"

/** compiled user scripts kept per isolate (least recently used dropped) */
export const SCRIPT_CACHE_SIZE = 16

/** A fresh context with the bootstrap run in it: its `control` still to be initialised with the run's own values. */
interface Prepared {
  readonly context: ivm.Context
  readonly control: ivm.Reference
}

/** A context kept after a completed run for the next run of the same version (SandboxJob.contextKey). */
export interface Warm extends Prepared {
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

export interface Slot {
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
export const prepare = (slot: Slot): Promise<Prepared> => {
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

export const makePool = (limits: SandboxLimits) => {
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

export type Pool = ReturnType<typeof makePool>

export const compiled = async (slot: Slot, job: SandboxJob): Promise<UserScript> => {
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
