import { describe, expect, it, layer } from "@effect/vitest"
import { Context, Effect, Exit, Fiber, Layer, Scope } from "effect"
import { createHash } from "node:crypto"
import { type BridgeAnswer, defaultLimits, type HostBridge, SCRIPT_CACHE_SIZE, Sandbox, type SandboxJob } from "./Sandbox.ts"

const MEMORY_MB = 24
const TIMEOUT_MS = 400
const limits = defaultLimits({
  timeoutMs: TIMEOUT_MS,
  memoryMb: MEMORY_MB,
  concurrency: 4,
  nodeMemoryMb: MEMORY_MB * 8,
  maxCallBytes: 64 * 1024
})

interface Call {
  readonly method: string
  readonly args: ReadonlyArray<unknown>
}

// Answers by method; records every call it gets.
const recordingBridge = (answers: Record<string, (args: ReadonlyArray<unknown>) => BridgeAnswer> = {}) => {
  const calls: Array<Call> = []
  const bridge: HostBridge = {
    call: (method, args) => {
      calls.push({ method, args })
      const answer = answers[method]
      return Promise.resolve(answer ? answer(args) : { ok: true, value: { method, args } })
    }
  }
  return { calls, bridge }
}

const job = (code: string, extra: Partial<SandboxJob> = {}): SandboxJob => ({
  workspace: "ws",
  code,
  codeHash: createHash("sha256").update(code).digest("hex"),
  triggerParams: { source: "test" },
  executionParams: { user: { id: "u1", roles: ["admin"] } },
  bridge: recordingBridge().bridge,
  ...extra
})

const exec = (code: string, extra: Partial<SandboxJob> = {}) =>
  Effect.gen(function* () {
    const sandbox = yield* Sandbox
    return yield* sandbox.execute(job(code, extra))
  })

const wait = (ms: number) => Effect.promise(() => new Promise<void>((r) => setTimeout(r, ms)))

const ECMASCRIPT_GLOBALS = new Set(
  (
    "Object Function Array Number parseFloat parseInt Infinity NaN undefined Boolean String Symbol Date Promise " +
    "RegExp Error AggregateError EvalError RangeError ReferenceError SyntaxError TypeError URIError globalThis JSON " +
    "Math Intl " +
    "ArrayBuffer Uint8Array Int8Array Uint16Array Int16Array Uint32Array Int32Array BigUint64Array BigInt64Array " +
    "Uint8ClampedArray Float32Array Float64Array Float16Array DataView Map BigInt Set Iterator WeakMap WeakSet Proxy " +
    "Reflect WeakRef decodeURI decodeURIComponent encodeURI encodeURIComponent escape unescape eval isFinite isNaN " +
    "SuppressedError DisposableStack AsyncDisposableStack"
  ).split(" ")
)

const timedOut = `Function timed out after ${TIMEOUT_MS} ms`
const outOfMemory = `Function exceeded its memory limit (${MEMORY_MB} MB)`

layer(Sandbox.layer(limits), { excludeTestServices: true, timeout: 30_000 })("Sandbox", (it) => {
  describe("results", () => {
    it.effect("returns JSON results; undefined becomes null; run gets (executionParams, triggerParams)", () =>
      Effect.gen(function* () {
        const a = yield* exec("async function run(exec, trig) { return { exec, trig, same: exec === executionParams } }")
        expect(a.status).toBe("completed")
        expect(a.result).toStrictEqual({
          exec: { user: { id: "u1", roles: ["admin"] } },
          trig: { source: "test" },
          same: true
        })
        expect(a.error).toBeNull()
        const b = yield* exec("async function run() {}")
        expect(b.status).toBe("completed")
        expect(b.result).toBeNull()
        const c = yield* exec("const run = async () => [1, 'two', null]")
        expect(c.result).toStrictEqual([1, "two", null])
        const d = yield* exec("function run() { return 42 }")
        expect(d.result).toBe(42)
      })
    )

    it.effect("a thrown error fails the run with name, message and the user frame; {success:false} completes", () =>
      Effect.gen(function* () {
        const thrown = yield* exec("async function run() {\n  await null\n  throw new TypeError('boom')\n}")
        expect(thrown.status).toBe("failed")
        expect(thrown.error!.startsWith("TypeError: boom"), thrown.error!).toBe(true)
        expect(thrown.error!).toContain("function.js:3")
        expect(thrown.result).toBeNull()
        const soft = yield* exec("async function run() { return { success: false, error: 'nope' } }")
        expect(soft.status).toBe("completed")
        expect(soft.result).toStrictEqual({ success: false, error: "nope" })
        const top = yield* exec("throw new Error('at load')\nasync function run() {}")
        expect(top.status).toBe("failed")
        expect(top.error!).toContain("at load")
        const syntax = yield* exec("async function run() {\n  return 1 +\n}")
        expect(syntax.status).toBe("failed")
        expect(syntax.error!.startsWith("SyntaxError: Unexpected token '}'"), syntax.error!).toBe(true)
        const none = yield* exec("async function handler() {\r\n  return 1\u2028}\r\u2029")
        expect(none.status).toBe("failed")
        // no frame: the line the script starts its run from (SandboxBootstrap's suffix) is not the user's
        expect(none.error).toBe("TypeError: Functions must define async function run()")
        const early = yield* exec("const at = 1\r\n\u2028async function run() { return undefined.x }")
        expect(early.error).toBe("TypeError: Cannot read properties of undefined (reading 'x')\n    at run (function.js:3:41)")
      })
    )

    it.effect("top-level code runs with the globals in place, and run starts in the same turn right after it", () =>
      Effect.gen(function* () {
        const out = yield* exec(`const atLoad = [typeof api, executionParams.user.id, triggerParams.source]
          let settled = "no"
          Promise.resolve().then(() => { settled = "yes" })
          async function run() {
            const atStart = settled
            await null
            return { atLoad, atStart, afterAwait: settled }
          }`)
        expect(out.result).toStrictEqual({ atLoad: ["object", "u1", "test"], atStart: "no", afterAwait: "yes" })
      })
    )

    it.effect("huge and unserialisable results fail with a clear message", () =>
      Effect.gen(function* () {
        const huge = yield* exec("async function run() { return 'x'.repeat(2 * 1024 * 1024) }")
        expect(huge.status).toBe("failed")
        expect(huge.error!).toContain("Result exceeds the limit of 1048576 bytes")
        const cycle = yield* exec("async function run() { const a = {}; a.a = a; return a }")
        expect(cycle.status).toBe("failed")
        expect(cycle.error!).toContain("Result is not serialisable to JSON")
        const big = yield* exec("async function run() { return { n: 1n } }")
        expect(big.status).toBe("failed")
        expect(big.error!).toContain("BigInt")
      })
    )
  })

  describe("containment", () => {
    it.effect("constructor chains reach only the isolate's own global", () =>
      Effect.gen(function* () {
        const out = yield* exec(
          `async function run() {
          const viaGlobal = globalThis.constructor.constructor("return typeof process")()
          const viaThis = (function () { return this })().constructor.constructor("return typeof require")()
          const viaLog = api.log.constructor.constructor("return this")() === globalThis
          const viaApi = api.fetchRecord.constructor.constructor(
            "return [typeof process, typeof module, typeof Buffer]")()
          let viaError
          try { await api.fetchRecord("missing") } catch (e) {
            viaError = [e instanceof Error, Object.getPrototypeOf(e) === Error.prototype,
              e.constructor.constructor("return typeof process")(),
              e.constructor.constructor("return this")() === globalThis]
          }
          let escaped = false
          try { this.constructor.constructor("return process")().exit(1); escaped = true } catch (e) {}
          return { viaGlobal, viaThis, viaLog, viaApi, viaError, escaped }
        }`,
          {
            bridge: recordingBridge({
              fetchRecord: () => ({ ok: false, error: { message: "not found", code: "NOT_FOUND" } })
            }).bridge
          }
        )
        expect(out.status, out.error ?? "").toBe("completed")
        expect(out.result).toStrictEqual({
          viaGlobal: "undefined",
          viaThis: "undefined",
          viaLog: true,
          viaApi: ["undefined", "undefined", "undefined"],
          viaError: [true, true, "undefined", true],
          escaped: false
        })
      })
    )

    it.effect("stack trace call sites and .caller never hand user code a bootstrap function", () =>
      Effect.gen(function* () {
        const out = yield* exec(`async function run() {
          const found = []
          Error.prepareStackTrace = (e, sites) => sites.map((s) => [s.getFunctionName(), typeof s.getFunction()])
          function probe() {
            found.push({ caller: probe.caller === null ? null : probe.caller.name, sites: new Error().stack })
            return 1
          }
          await api.createRecord("x", { toJSON: probe })
          api.log({ toJSON: probe })
          api.lodash.merge({}, { get a() { return probe() } })
          return found
        }`)
        expect(out.status, out.error ?? "").toBe("completed")
        const found = out.result as Array<{ caller: string | null; sites: Array<[string, string]> }>
        expect(found.length).toBe(3)
        expect(found.map((f) => f.caller)).toStrictEqual([null, null, "get a"]) // a native or strict caller is hidden
        const exposed = found.flatMap((f) => f.sites.filter(([, type]) => type === "function").map(([name]) => name))
        expect([...new Set(exposed)].sort()).toStrictEqual(["get a", "probe"])
        expect(
          found[0]!.sites.map(([name]) => name),
          "the bootstrap frames were on the stack"
        ).toContain("callHost")
      })
    )

    it.effect("globals expose nothing of isolated-vm, timers or console; api has exactly its methods", () =>
      Effect.gen(function* () {
        const out = yield* exec(`async function run() {
          return {
            globals: Object.getOwnPropertyNames(globalThis),
            api: Object.getOwnPropertyNames(api).sort(),
            missing: ["console", "setTimeout", "setInterval", "setImmediate", "require", "process", "fetch", "module",
              "WebAssembly", "SharedArrayBuffer", "Atomics", "FinalizationRegistry"].filter((n) => n in globalThis)
          }
        }`)
        const result = out.result as { globals: Array<string>; api: Array<string>; missing: Array<string> }
        expect(result.missing).toStrictEqual([])
        // Plain ECMAScript (a new global here deserves a look) plus the contract's own names.
        expect(result.globals.filter((name) => !ECMASCRIPT_GLOBALS.has(name)).sort()).toStrictEqual([
          "api",
          "executionParams",
          "run",
          "triggerParams"
        ])
        expect(result.api).toStrictEqual([
          "aggregateRecords",
          "createRecord",
          "decrementField",
          "deleteRecord",
          "fetch",
          "fetchRecord",
          "fetchRecordByUniqueField",
          "formatDate",
          "httpDelete",
          "httpGet",
          "httpPost",
          "httpPut",
          "incrementField",
          "intelligence",
          "invokeTrigger",
          "lodash",
          "log",
          "math",
          "queryRecords",
          "search",
          "sendEmail",
          "sendSms",
          "storage",
          "updateRecord",
          "uuid"
        ])
      })
    )

    it.effect("injected objects are deep-frozen and cannot be replaced", () =>
      Effect.gen(function* () {
        const out = yield* exec(`"use strict"
        async function run() {
          const attempts = {
            apiMethod: () => { api.fetchRecord = () => 1 },
            apiNested: () => { api.log.info = () => 1 },
            apiDeep: () => { api.math.add = null },
            params: () => { executionParams.user.id = "evil" },
            paramsArray: () => { executionParams.user.roles.push("root") },
            trigger: () => { triggerParams.source = "x" },
            replaceApi: () => { api = {} },
            replaceParams: () => { globalThis.executionParams = {} },
            deleteApi: () => { delete globalThis.api }
          }
          const threw = {}
          for (const [k, f] of Object.entries(attempts)) {
            try { f(); threw[k] = false } catch (e) { threw[k] = e.name }
          }
          const { id, roles } = executionParams.user
          return { threw, id, roles, frozen: Object.isFrozen(api.lodash) }
        }`)
        expect(out.status, out.error ?? "").toBe("completed")
        const r = out.result as { threw: Record<string, unknown>; id: string; roles: Array<string>; frozen: boolean }
        for (const [k, v] of Object.entries(r.threw)) expect(v, k).toBe("TypeError")
        expect(r.id).toBe("u1")
        expect(r.roles).toStrictEqual(["admin"])
        expect(r.frozen).toBe(true)
      })
    )

    it.effect("prototype pollution in one run does not reach the next run on the same isolate", () =>
      Effect.gen(function* () {
        const sandbox = yield* Sandbox
        const ws = { workspace: "pollution" }
        const first = yield* exec(
          `async function run() {
          Object.prototype.polluted = "yes"; Array.prototype.push = null; JSON.stringify = () => "hijacked"
          globalThis.leftover = 1
          return 1
        }`,
          ws
        )
        expect(first.status, first.error ?? "").toBe("completed")
        const created = (yield* sandbox.stats).created
        const second = yield* exec(
          `async function run() {
          const a = []; a.push(1)
          return { polluted: ({}).polluted ?? null, leftover: typeof leftover, json: JSON.stringify({ a }) }
        }`,
          ws
        )
        expect(second.result).toStrictEqual({ polluted: null, leftover: "undefined", json: '{"a":[1]}' })
        expect((yield* sandbox.stats).created, "the same isolate ran both").toBe(created)
      })
    )
  })

  describe("time limit", () => {
    const spins = {
      "infinite loop before any await": "async function run() { for (;;) {} }",
      "infinite loop after await null": "async function run() { await null; for (;;) {} }",
      "infinite loop after a host call": "async function run() { await api.fetchRecord('r'); for (;;) {} }",
      "never-settling promise": "async function run() { return new Promise(() => {}) }",
      "never-settling host call": "async function run() { return api.fetchRecord('r') }",
      "await microtask flood": "async function run() { for (;;) await null }",
      "recursive then chain": "function run() { const f = () => { Promise.resolve().then(f) }; f(); return new Promise(() => {}) }"
    }
    const stuck: HostBridge = { call: () => new Promise<BridgeAnswer>(() => {}) }
    for (const [name, code] of Object.entries(spins)) {
      it.effect(`${name} ends as timed_out`, () =>
        Effect.gen(function* () {
          const bridge = name === "never-settling host call" ? stuck : recordingBridge().bridge
          const out = yield* exec(code, { bridge, workspace: "spin" })
          expect(out.status, out.error ?? "").toBe("timed_out")
          expect(out.error).toBe(timedOut)
          expect(out.result).toBeNull()
        })
      )
    }

    it.effect("the host event loop stays responsive while a run spins, and the pool keeps working", () =>
      Effect.gen(function* () {
        let firedAt = 0
        let endedAt = 0
        setTimeout(() => (firedAt = performance.now()), 10)
        const out = yield* exec("async function run() { await null; for (;;) {} }").pipe(
          Effect.tap(() => Effect.sync(() => (endedAt = performance.now())))
        )
        expect(out.status).toBe("timed_out")
        expect(firedAt).toBeGreaterThan(0)
        expect(firedAt, "the host timer fired while the isolate was spinning").toBeLessThan(endedAt)
        const next = yield* exec("async function run() { return 'alive' }")
        expect(next.result).toBe("alive")
      })
    )

    it.effect("a job's timeoutMs overrides the limit", () =>
      Effect.gen(function* () {
        const out = yield* exec("async function run() { for (;;) await null }", { timeoutMs: 100 })
        expect(out.error).toBe("Function timed out after 100 ms")
      })
    )

    it.effect("interrupting execute disposes the run's isolate", () =>
      Effect.gen(function* () {
        const sandbox = yield* Sandbox
        const fiber = yield* Effect.forkChild(
          exec("async function run() { await null; for (;;) {} }", {
            workspace: "interrupt",
            timeoutMs: 20_000
          })
        )
        yield* wait(50)
        const during = yield* sandbox.stats
        yield* Fiber.interrupt(fiber)
        yield* wait(20)
        const after = yield* sandbox.stats
        expect(after.isolates).toBe(during.isolates - 1)
        expect(after.busy).toBe(0)
      })
    )
  })

  describe("memory limit", () => {
    const bombs = {
      "before any await": "async function run() { const a = []; for (;;) a.push(new Array(1e6).fill(1)) }",
      "after an await": "async function run() { await null; const a = []; for (;;) a.push(new Array(1e6).fill(1)) }",
      "after a host call": "async function run() { await api.fetchRecord('r'); const a = []; for (;;) a.push(new Array(1e6).fill(1)) }",
      "one huge string": "async function run() { let s = 'x'; for (;;) s = s + s }"
    }
    for (const [name, code] of Object.entries(bombs)) {
      it.effect(`a memory bomb ${name} fails the run, and the next run gets a new isolate`, () =>
        Effect.gen(function* () {
          const sandbox = yield* Sandbox
          const created = (yield* sandbox.stats).created
          // a generous clock: on a loaded machine filling the heap may take longer than the default limit
          const out = yield* exec(code, { workspace: "bomb", timeoutMs: 20_000 })
          expect(out.status).toBe("failed")
          if (name === "one huge string") expect(out.error!).toContain("RangeError: Invalid string length")
          else expect(out.error).toBe(outOfMemory)
          const next = yield* exec("async function run() { return 'fine' }", { workspace: "bomb" })
          expect(next.result).toBe("fine")
          if (name !== "one huge string") expect((yield* sandbox.stats).created).toBeGreaterThan(created)
        })
      )
    }
  })

  describe("logs", () => {
    it.effect("levels, JSON for non-strings, timestamps", () =>
      Effect.gen(function* () {
        const out = yield* exec(`async function run() {
          api.log("hello", { a: 1 }, [2], 3)
          api.log.info("i"); api.log.warn("w"); api.log.error(new Error("e")); api.log.debug(null)
        }`)
        expect(out.logs.map((l) => [l.level, l.message])).toStrictEqual([
          ["info", 'hello {"a":1} [2] 3'],
          ["info", "i"],
          ["warn", "w"],
          ["error", "Error: e"],
          ["debug", "null"]
        ])
        expect(out.logsTruncated).toBe(false)
        expect(Number.isNaN(Date.parse(out.logs[0]!.at))).toBe(false)
      })
    )

    it.effect("a huge entry is cut, many entries are dropped and counted", () =>
      Effect.gen(function* () {
        const huge = yield* exec("async function run() { api.log('é'.repeat(100000)) }")
        expect(huge.logs.length).toBe(1)
        expect(huge.logs[0]!.message.endsWith("…[truncated]")).toBe(true)
        expect(Buffer.byteLength(huge.logs[0]!.message)).toBeLessThanOrEqual(8192)
        expect(huge.logsTruncated).toBe(true)
        const many = yield* exec("async function run() { for (let i = 0; i < 1500; i++) api.log.info('line ' + i) }")
        expect(many.logs.length).toBe(1001)
        expect(many.logs[1000]!.message).toBe("500 log entries dropped")
        expect(many.logsTruncated).toBe(true)
        const bytes = yield* exec("async function run() { for (let i = 0; i < 100; i++) api.log('x'.repeat(8000)) }")
        const kept = bytes.logs.length - 1
        expect(kept).toBe(Math.floor(limits.maxLogBytes / 8000))
        expect(bytes.logs[kept]!.message).toBe(`${100 - kept} log entries dropped`)
        const failing = yield* exec("async function run() { api.log('before'); throw new Error('x') }")
        expect(failing.logs[0]!.message).toBe("before")
      })
    )
  })

  describe("host bridge", () => {
    it.effect("record methods send JSON arguments through one bridge call and resolve to its value", () =>
      Effect.gen(function* () {
        const { bridge, calls } = recordingBridge({
          createRecord: (args) => ({ ok: true, value: { id: "r1", data: args[1] } }),
          queryRecords: () => ({ ok: true, value: [{ id: "a" }, { id: "b" }] })
        })
        const out = yield* exec(
          `async function run() {
          const created = await api.createRecord("post", { title: "t", at: new Date(0), skip: undefined })
          const [list, one] = await Promise.all([api.queryRecords("post", { limit: 2 }), api.fetchRecord("r1")])
          await api.deleteRecord("r1", true)
          await api.incrementField("r1", "n", 2)
          await api.invokeTrigger("other", { x: 1 })
          return { created, n: list.length, one }
        }`,
          { bridge }
        )
        expect(out.status, out.error ?? "").toBe("completed")
        expect(out.result).toStrictEqual({
          created: { id: "r1", data: { title: "t", at: "1970-01-01T00:00:00.000Z" } },
          n: 2,
          one: { method: "fetchRecord", args: ["r1"] }
        })
        expect(calls.map((c) => c.method)).toStrictEqual([
          "createRecord",
          "queryRecords",
          "fetchRecord",
          "deleteRecord",
          "incrementField",
          "invokeTrigger"
        ])
        expect(calls[3]!.args).toStrictEqual(["r1", true])
        expect(calls[5]!.args).toStrictEqual(["other", { x: 1 }])
      })
    )

    it.effect("a bridge error surfaces as an Error with message, code, statusCode and details", () =>
      Effect.gen(function* () {
        const { bridge } = recordingBridge({
          updateRecord: () => ({
            ok: false,
            error: { message: "version conflict", code: "CONFLICT", statusCode: 409, details: { expected: 2 } }
          })
        })
        const out = yield* exec(
          `async function run() {
          try { await api.updateRecord("r1", { a: 1 }) } catch (e) {
            const { message, code, statusCode, details } = e
            return { isError: e instanceof Error, message, code, statusCode, details }
          }
        }`,
          { bridge }
        )
        expect(out.result).toStrictEqual({
          isError: true,
          message: "version conflict",
          code: "CONFLICT",
          statusCode: 409,
          details: { expected: 2 }
        })
        const rejecting: HostBridge = { call: () => Promise.reject(new Error("database down")) }
        const down = yield* exec("async function run() { await api.fetchRecord('x') }", { bridge: rejecting })
        expect(down.status).toBe("failed")
        expect(down.error!.startsWith("Error: database down")).toBe(true)
      })
    )

    it.effect("arguments over maxCallBytes or not JSON are refused inside the isolate", () =>
      Effect.gen(function* () {
        const { bridge, calls } = recordingBridge()
        const out = yield* exec(
          `async function run() {
          const errors = []
          try { await api.createRecord("post", { blob: "x".repeat(70 * 1024) }) } catch (e) { errors.push(e.message) }
          try { await api.createRecord("post", { n: 1n }) } catch (e) { errors.push(e.message) }
          return errors
        }`,
          { bridge }
        )
        const errors = out.result as Array<string>
        expect(errors[0]).toContain("arguments exceed 65536 bytes")
        expect(errors[1]).toContain("arguments are not JSON")
        expect(calls.length).toBe(0)
      })
    )

    it.effect("http helpers and fetch go through method http with one request object", () =>
      Effect.gen(function* () {
        const { bridge, calls } = recordingBridge({
          http: (args) => {
            const req = args[0] as { method: string; url: string }
            return {
              ok: true,
              value: {
                status: req.method === "DELETE" ? 404 : 200,
                statusText: "OK",
                headers: { "Content-Type": "application/json" },
                url: req.url,
                body: req.url.endsWith("/text") ? "plain text" : `{"echo":"${req.method}"}`
              }
            }
          }
        })
        const out = yield* exec(
          `async function run() {
          const get = await api.httpGet("https://x.test/a", { headers: { "X-A": "1" }, timeout: 500 })
          const text = await api.httpGet("https://x.test/text")
          const post = await api.httpPost("https://x.test/b", { a: 1 })
          const put = await api.httpPut("https://x.test/c", "raw", { headers: { "content-type": "text/plain" } })
          const del = await api.httpDelete("https://x.test/d")
          const res = await api.fetch("https://x.test/e", { method: "PATCH", body: "z" })
          return { get, text: text.data, post: post.data, put: put.data, del: [del.status, del.ok],
            fetch: [res.ok, res.status, res.url, res.headers.get("content-type"), res.headers.get("nope"),
              await res.text(), (await res.json()).echo, Object.isFrozen(res)] }
        }`,
          { bridge }
        )
        expect(out.status, out.error ?? "").toBe("completed")
        const r = out.result as Record<string, unknown>
        expect(r.get).toStrictEqual({
          status: 200,
          statusText: "OK",
          ok: true,
          headers: { "Content-Type": "application/json" },
          data: { echo: "GET" }
        })
        expect(r.text).toBe("plain text")
        expect(r.post).toStrictEqual({ echo: "POST" })
        expect(r.del).toStrictEqual([404, false])
        expect(r.fetch).toStrictEqual([true, 200, "https://x.test/e", "application/json", null, '{"echo":"PATCH"}', "PATCH", true])
        expect(calls.every((c) => c.method === "http" && c.args.length === 1)).toBe(true)
        expect(calls[0]!.args[0]).toStrictEqual({
          method: "GET",
          url: "https://x.test/a",
          headers: { "X-A": "1" },
          timeoutMs: 500
        })
        expect(calls[2]!.args[0]).toStrictEqual({
          method: "POST",
          url: "https://x.test/b",
          headers: { "content-type": "application/json" },
          body: '{"a":1}'
        })
        expect(calls[3]!.args[0]).toStrictEqual({
          method: "PUT",
          url: "https://x.test/c",
          headers: { "content-type": "text/plain" },
          body: "raw"
        })
      })
    )
  })

  describe("helpers", () => {
    it.effect("formatDate: tokens, literals, time zones, default ISO, invalid dates", () =>
      Effect.gen(function* () {
        const out = yield* exec(`async function run() {
          const d = Date.UTC(2024, 0, 5, 15, 4, 9, 7) // Friday
          const f = api.formatDate
          let invalid = null
          try { f("not a date") } catch (e) { invalid = e.message }
          return [
            f(d, "YYYY YY MMMM MMM MM M DD D dddd ddd"),
            f(new Date(d), "HH H hh h mm m ss s SSS A a Z ZZ"),
            f("2024-01-05T15:04:09.007Z", "[YYYY is] YYYY"),
            f(d),
            f(d, "YYYY-MM-DD HH:mm Z dddd", "America/New_York"),
            f(d, "HH:mm ZZ", "Asia/Kolkata"),
            f(Date.UTC(2024, 6, 1, 0, 0), "YYYY-MM-DD hh:mm A Z", "Europe/Paris"),
            f(d, undefined, "Asia/Tokyo"),
            invalid
          ]
        }`)
        expect(out.result).toStrictEqual([
          "2024 24 January Jan 01 1 05 5 Friday Fri",
          "15 15 03 3 04 4 09 9 007 PM pm +00:00 +0000",
          "YYYY is 2024",
          "2024-01-05T15:04:09.007Z",
          "2024-01-05 10:04 -05:00 Friday",
          "20:34 +0530",
          "2024-07-01 02:00 AM +02:00",
          "2024-01-06T00:04:09.007+09:00",
          "formatDate: invalid date"
        ])
      })
    )

    it.effect("uuid is v4 and fresh; lodash chunk/flatten/uniq/merge; merge copies frozen targets", () =>
      Effect.gen(function* () {
        const out = yield* exec(`async function run() {
          const _ = api.lodash
          const target = { a: { x: 1, keep: true }, list: [1, 2] }
          const merged = _.merge(target, { a: { x: 2, y: 3 }, list: [9], skip: undefined }, { b: 1 })
          const fromParams = _.merge(executionParams, { user: { id: "u2" }, extra: 1 })
          return {
            uuids: [api.uuid(), api.uuid()],
            chunk: [_.chunk([1, 2, 3, 4, 5], 2), _.chunk([1, 2], 0), _.chunk([1, 2, 3])],
            flatten: _.flatten([1, [2, [3, [4]]], 5]),
            uniq: _.uniq([2, 1, 2, NaN, NaN, "2"]),
            merged, same: merged === target,
            fromParams, paramsUntouched: executionParams.user.id, newObject: fromParams !== executionParams
          }
        }`)
        expect(out.status, out.error ?? "").toBe("completed")
        const r = out.result as Record<string, unknown>
        const [u1, u2] = r.uuids as [string, string]
        expect(u1).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/)
        expect(u1).not.toBe(u2)
        expect(r.chunk).toStrictEqual([[[1, 2], [3, 4], [5]], [], [[1], [2], [3]]])
        expect(r.flatten).toStrictEqual([1, 2, [3, [4]], 5])
        expect(r.uniq).toStrictEqual([2, 1, null, "2"]) // NaN is kept once (SameValueZero), JSON writes null
        expect(r.merged).toStrictEqual({ a: { x: 2, keep: true, y: 3 }, list: [9, 2], b: 1 })
        expect(r.same).toBe(true)
        expect(r.fromParams).toStrictEqual({ user: { id: "u2", roles: ["admin"] }, extra: 1 })
        expect(r.paramsUntouched).toBe("u1")
        expect(r.newObject).toBe(true)
      })
    )

    it.effect("math: arithmetic, division by zero, random range, evaluate with the expression language", () =>
      Effect.gen(function* () {
        const out = yield* exec(`async function run() {
          const m = api.math
          const errors = []
          try { m.divide(1, 0) } catch (e) { errors.push(e.message) }
          try { m.evaluate("2 +") } catch (e) { errors.push(e instanceof Error) }
          const randoms = Array.from({ length: 200 }, () => m.random(5, 7))
          const units = Array.from({ length: 200 }, () => m.random())
          return {
            ops: [m.add(2, 3), m.subtract(2, 3), m.multiply(2, 3), m.divide(3, 2)],
            evaluate: [m.evaluate("2 + 3 * 4"), m.evaluate("'a' + 'b'"), m.evaluate("round(2.456, 1)")],
            errors,
            randomOk: randoms.every((x) => x >= 5 && x < 7) && units.every((x) => x >= 0 && x < 1)
          }
        }`)
        expect(out.result).toStrictEqual({
          ops: [5, -1, 6, 1.5],
          evaluate: [14, "ab", 2.5],
          errors: ["Division by zero", true],
          randomOk: true
        })
      })
    )
  })

  describe("measurements", () => {
    it.effect("cpu time is this run's delta, not the isolate's total; memory and duration are reported", () =>
      Effect.gen(function* () {
        // a generous timeout: on a loaded machine the busy loop's wall time is many times its CPU time
        const ws = { workspace: "cpu", timeoutMs: 20_000 }
        const busy = yield* exec("async function run() { let x = 0; for (let i = 0; i < 2e7; i++) x += i; return x > 0 }", ws)
        const idle = yield* exec("async function run() { return 1 }", ws)
        expect(busy.status).toBe("completed")
        expect(busy.cpuUsageSeconds).toBeGreaterThan(0)
        expect(idle.cpuUsageSeconds).toBeLessThan(busy.cpuUsageSeconds)
        expect(idle.memoryUsageBytes).toBeGreaterThan(0)
        expect(idle.memoryUsageBytes).toBeLessThan(MEMORY_MB * 1024 * 1024)
        expect(busy.durationMs).toBeGreaterThan(0)
      })
    )
  })
})

describe("Sandbox pool", () => {
  const small = defaultLimits({ timeoutMs: 5_000, memoryMb: MEMORY_MB, concurrency: 1, nodeMemoryMb: MEMORY_MB * 2 })

  it.live("reuses isolates within a workspace, never across, and evicts the least recently used idle one", () =>
    Effect.gen(function* () {
      const sandbox = yield* Sandbox
      const runIn = (workspace: string) => exec("async function run() { return 1 }", { workspace })
      yield* runIn("a")
      yield* runIn("a")
      expect(yield* sandbox.stats).toStrictEqual({ isolates: 1, busy: 0, idle: 1, created: 1, compiledScripts: 1, warmContexts: 0 })
      yield* runIn("b")
      expect(yield* sandbox.stats).toStrictEqual({ isolates: 2, busy: 0, idle: 2, created: 2, compiledScripts: 2, warmContexts: 0 })
      yield* runIn("c") // at the cap of 2: evicts a's isolate
      expect(yield* sandbox.stats).toStrictEqual({ isolates: 2, busy: 0, idle: 2, created: 3, compiledScripts: 2, warmContexts: 0 })
      yield* runIn("b") // b's isolate survived
      expect((yield* sandbox.stats).created).toBe(3)
      yield* runIn("a") // a's was evicted
      expect((yield* sandbox.stats).created).toBe(4)
    }).pipe(Effect.provide(Sandbox.layer(small)))
  )

  it.live("runs of the same version share a warm context: top-level code ran once, module state persists", () =>
    Effect.gen(function* () {
      const sandbox = yield* Sandbox
      const code = `var loads = (typeof loads === "number" ? loads : 0) + 1
        globalThis.atLoad = [typeof api, executionParams.user.id, (globalThis.atLoad ?? []).length]
        Object.prototype.marks = (({}).marks ?? 0) + 1
        async function run() {
          globalThis.runs = (globalThis.runs ?? 0) + 1
          return { loads, runs, marks: ({}).marks, atLoad }
        }`
      for (let i = 1; i <= 3; i++) {
        const out = yield* exec(code, { contextKey: "fn@1" })
        expect(out.status, out.error ?? "").toBe("completed")
        expect(out.result).toStrictEqual({ loads: 1, runs: i, marks: 1, atLoad: ["object", "u1", 0] })
      }
      // without a key (and so for another version) a fresh context: its top-level code runs again
      const fresh = yield* exec(code)
      expect(fresh.result).toStrictEqual({ loads: 1, runs: 1, marks: 1, atLoad: ["object", "u1", 0] })
      expect(yield* sandbox.stats).toMatchObject({ created: 1, compiledScripts: 1 })
    }).pipe(Effect.provide(Sandbox.layer(small)))
  )

  it.live("compiled scripts are cached per isolate, at most SCRIPT_CACHE_SIZE, and a new version's code is what runs", () =>
    Effect.gen(function* () {
      const sandbox = yield* Sandbox
      const version = (n: number) => `async function run() { return ${n} }`
      for (let round = 0; round < 2; round++) {
        for (let n = 0; n < SCRIPT_CACHE_SIZE + 4; n++) {
          expect((yield* exec(version(n))).result).toBe(n)
          expect((yield* sandbox.stats).compiledScripts).toBe(Math.min(n + 1 + round * SCRIPT_CACHE_SIZE, SCRIPT_CACHE_SIZE))
        }
      }
      // the most recently used one is still cached (and runs as itself); an evicted one is compiled again
      expect((yield* exec(version(SCRIPT_CACHE_SIZE + 3))).result).toBe(SCRIPT_CACHE_SIZE + 3)
      expect((yield* exec(version(0))).result).toBe(0)
      expect(yield* sandbox.stats).toMatchObject({ created: 1, compiledScripts: SCRIPT_CACHE_SIZE })
    }).pipe(Effect.provide(Sandbox.layer(small)))
  )

  it.live("recycles an isolate after maxRunsPerIsolate runs", () =>
    Effect.gen(function* () {
      const sandbox = yield* Sandbox
      for (let i = 0; i < 5; i++) yield* exec("async function run() { return 1 }")
      expect((yield* sandbox.stats).created).toBe(3)
    }).pipe(Effect.provide(Sandbox.layer(defaultLimits({ ...small, maxRunsPerIsolate: 2 }))))
  )

  it.live("at most `concurrency` runs at once; nested runs skip the semaphore", () =>
    Effect.gen(function* () {
      let inside = 0
      let most = 0
      let open = false
      const waiting: Array<() => void> = []
      const bridge: HostBridge = {
        call: () => {
          inside++
          most = Math.max(most, inside)
          if (open) {
            inside--
            return Promise.resolve({ ok: true, value: null })
          }
          return new Promise((resolve) =>
            waiting.push(() => {
              inside--
              resolve({ ok: true, value: null })
            })
          )
        }
      }
      const code = "async function run() { await api.fetchRecord('x'); return 'done' }"
      const fibers = yield* Effect.forEach([1, 2, 3, 4], (i) => Effect.forkChild(exec(code, { bridge, workspace: `w${i}` })))
      yield* wait(300)
      expect(inside).toBe(2)
      const nested = yield* Effect.forkChild(exec(code, { bridge, nested: true }))
      yield* wait(200)
      expect(inside, "the nested run entered although both slots are taken").toBe(3)
      // from here on calls answer at once: the runs still waiting for a slot finish whenever they get one
      open = true
      waiting.splice(0).forEach((release) => release())
      const outcomes = yield* Effect.forEach([...fibers, nested], Fiber.join)
      expect(outcomes.every((o) => o.result === "done")).toBe(true)
      expect(most).toBe(3)
    }).pipe(Effect.provide(Sandbox.layer(defaultLimits({ ...small, concurrency: 2, nodeMemoryMb: MEMORY_MB * 8 }))))
  )

  it.live("closing the layer disposes every isolate; later runs fail cleanly", () =>
    Effect.gen(function* () {
      const scope = yield* Scope.make()
      const sandbox = Context.get(yield* Layer.buildWithScope(Sandbox.layer(small), scope), Sandbox)
      yield* sandbox.execute(job("async function run() { return 1 }"))
      expect((yield* sandbox.stats).isolates).toBe(1)
      yield* Scope.close(scope, Exit.void)
      expect((yield* sandbox.stats).isolates).toBe(0)
      const after = yield* sandbox.execute(job("async function run() { return 1 }"))
      expect(after.status).toBe("failed")
      expect(after.error).toBe("Sandbox is shut down")
    })
  )
})
