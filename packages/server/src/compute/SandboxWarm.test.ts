// The warm-context contract (SandboxJob.contextKey): runs of one function version may share a context, each with
// its own frozen api and parameters; a previous run's api never acts again; the context is dropped after a run that
// did not complete, past its heap bound and after maxRunsPerContext runs; it never crosses workspaces or versions.
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { createHash } from "node:crypto"
import { type BridgeAnswer, defaultLimits, type HostBridge, Sandbox, type SandboxJob } from "./Sandbox.ts"

const MEMORY_MB = 24
// a context bound below the isolate's own, so that dropping a context is seen apart from recycling the isolate
const limits = defaultLimits({
  timeoutMs: 2_000,
  memoryMb: MEMORY_MB,
  concurrency: 1,
  nodeMemoryMb: MEMORY_MB * 4,
  contextHeapRatio: 0.25
})
const FINISHED = "This api belongs to a run that has finished: each run gets its own api (do not keep it in globals)"

/** A bridge that records the calls it gets, tagged with its run's name. */
const calls: Array<string> = []
const bridgeOf = (run: string): HostBridge => ({
  call: (method, args) => {
    calls.push(`${run}:${method}:${JSON.stringify(args)}`)
    return Promise.resolve<BridgeAnswer>({ ok: true, value: run })
  }
})

const exec = (code: string, extra: Partial<SandboxJob> = {}) =>
  Effect.gen(function* () {
    const sandbox = yield* Sandbox
    return yield* sandbox.execute({
      workspace: "ws",
      code,
      codeHash: createHash("sha256").update(code).digest("hex"),
      contextKey: "fn@1",
      triggerParams: { source: "test" },
      executionParams: { user: { id: "u1" } },
      bridge: bridgeOf("run"),
      ...extra
    })
  })

/** Counts its context's loads (top-level runs) and runs; `run` does what the execution parameters say. */
const COUNTER = `var loads = (typeof loads === "number" ? loads : 0) + 1
  var runs = 0
  async function run(p) {
    runs++
    if (p.throw) throw new Error("boom")
    if (p.spin) while (true) {}
    if (p.grow) globalThis.big = new Array(p.grow).fill(1)
    return { loads, runs }
  }`
const counted = (params: Record<string, unknown> = {}, extra: Partial<SandboxJob> = {}) =>
  exec(COUNTER, { executionParams: params, ...extra }).pipe(Effect.map((o) => o.result))

describe("Sandbox warm contexts", () => {
  it.live("(a) api, executionParams and triggerParams are the run's own, fresh and deep-frozen", () =>
    Effect.gen(function* () {
      const code = `"use strict"
        async function run(p, t) {
          const prev = globalThis.prev
          globalThis.prev = { api, p, t }
          const frozen = Object.isFrozen(api) && Object.isFrozen(api.storage) && Object.isFrozen(p.user) && Object.isFrozen(t)
          let replaced
          try { api = {}; replaced = "no" } catch (e) { replaced = e.name }
          return {
            id: p.user.id, source: t.source, frozen, replaced, sameArgs: p === executionParams && t === triggerParams,
            newApi: prev === undefined ? null : prev.api !== api && prev.p !== p && prev.api.storage !== api.storage,
            prevId: prev === undefined ? null : prev.p.user.id
          }
        }`
      const first = yield* exec(code, { executionParams: { user: { id: "u1" } }, triggerParams: { source: "a" } })
      expect(first.result).toStrictEqual({
        id: "u1",
        source: "a",
        frozen: true,
        replaced: "TypeError",
        sameArgs: true,
        newApi: null,
        prevId: null
      })
      const second = yield* exec(code, { executionParams: { user: { id: "u2" } }, triggerParams: { source: "b" } })
      expect(second.result).toStrictEqual({
        id: "u2",
        source: "b",
        frozen: true,
        replaced: "TypeError",
        sameArgs: true,
        newApi: true,
        prevId: "u1"
      })
      expect((yield* (yield* Sandbox).stats).warmContexts).toBe(1)
    }).pipe(Effect.provide(Sandbox.layer(limits)))
  )

  it.live("(b) a previous run's api, kept in a global or by a leftover closure, fails and never reaches the host", () =>
    Effect.gen(function* () {
      calls.length = 0
      const code = `async function run(p) {
          if (p.first) {
            globalThis.saved = api
            globalThis.savedFetch = api.fetchRecord
            const mine = api
            globalThis.leftover = () => mine.createRecord("post", { from: "leftover" })
            return await api.fetchRecord("own")
          }
          const tries = {
            saved: () => saved.fetchRecord("x"),
            method: () => savedFetch("x"),
            nested: () => saved.storage.get("f"),
            leftover: () => leftover(),
            log: async () => saved.log.info("x")
          }
          const out = {}
          for (const [k, f] of Object.entries(tries)) {
            try { await f(); out[k] = "acted" } catch (e) { out[k] = e.message }
          }
          out.own = await api.fetchRecord("own")
          return out
        }`
      const first = yield* exec(code, { executionParams: { first: true }, bridge: bridgeOf("first") })
      expect(first.result).toBe("first")
      const second = yield* exec(code, { executionParams: {}, bridge: bridgeOf("second") })
      expect(second.status, second.error ?? "").toBe("completed")
      expect(second.result).toStrictEqual({
        saved: FINISHED,
        method: FINISHED,
        nested: FINISHED,
        leftover: FINISHED,
        log: FINISHED,
        own: "second"
      })
      expect(calls).toStrictEqual(['first:fetchRecord:["own"]', 'second:fetchRecord:["own"]'])
    }).pipe(Effect.provide(Sandbox.layer(limits)))
  )

  it.live("(c) the context is dropped after a failed or timed-out run, past its heap bound and after maxRunsPerContext", () =>
    Effect.gen(function* () {
      expect(yield* counted()).toStrictEqual({ loads: 1, runs: 1 })
      expect(yield* counted()).toStrictEqual({ loads: 1, runs: 2 })
      const failed = yield* exec(COUNTER, { executionParams: { throw: true } })
      expect(failed.error).toContain("boom")
      expect(yield* counted(), "a fresh context after a failed run").toStrictEqual({ loads: 1, runs: 1 })
      expect(yield* counted()).toStrictEqual({ loads: 1, runs: 2 })
      const spun = yield* exec(COUNTER, { executionParams: { spin: true }, timeoutMs: 200 })
      expect(spun.status).toBe("timed_out")
      expect(yield* counted(), "a fresh context after a timed-out run").toStrictEqual({ loads: 1, runs: 1 })
      // 1M small integers, ~8 MB: past the context bound (a quarter of 24 MB), below the isolate's own (a half)
      const grown = yield* counted({ grow: 1_000_000 })
      expect(grown).toStrictEqual({ loads: 1, runs: 2 })
      expect(yield* counted(), "a fresh context once the heap passed contextHeapRatio").toStrictEqual({ loads: 1, runs: 1 })
    }).pipe(Effect.provide(Sandbox.layer(limits)))
  )

  it.live("(c) after maxRunsPerContext runs the next run gets a fresh context", () =>
    Effect.gen(function* () {
      const seen = []
      for (let i = 0; i < 5; i++) seen.push(yield* counted())
      expect(seen).toStrictEqual([
        { loads: 1, runs: 1 },
        { loads: 1, runs: 2 },
        { loads: 1, runs: 1 },
        { loads: 1, runs: 2 },
        { loads: 1, runs: 1 }
      ])
    }).pipe(Effect.provide(Sandbox.layer(defaultLimits({ ...limits, maxRunsPerContext: 2 }))))
  )

  it.live("(d) contexts never cross workspaces or function versions", () =>
    Effect.gen(function* () {
      expect(yield* counted({}, { workspace: "a", contextKey: "fn@1" })).toStrictEqual({ loads: 1, runs: 1 })
      expect(yield* counted({}, { workspace: "b", contextKey: "fn@1" })).toStrictEqual({ loads: 1, runs: 1 })
      expect(yield* counted({}, { workspace: "a", contextKey: "fn@2" })).toStrictEqual({ loads: 1, runs: 1 })
      expect(yield* counted({}, { workspace: "a", contextKey: "other@1" })).toStrictEqual({ loads: 1, runs: 1 })
      expect(yield* counted({}, { workspace: "a", contextKey: "other@1" })).toStrictEqual({ loads: 1, runs: 2 })
      // b's isolate kept its own warm context
      expect(yield* counted({}, { workspace: "b", contextKey: "fn@1" })).toStrictEqual({ loads: 1, runs: 2 })
    }).pipe(Effect.provide(Sandbox.layer(limits)))
  )
})
