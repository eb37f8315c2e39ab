// The JavaScript that runs inside each sandbox context before the user's code. Its completion value is
// `control(op, ...)`, the host's one handle on the context:
// - op 2 `init(hostCall, hostSync, execJson, trigJson, maxResultBytes, maxLogBytes, maxCallBytes, suffixLine)`
//   makes the run's frozen `api`, `executionParams` and `triggerParams` the current ones (the globals are getters
//   over them), retires the previous run's `api`, and arms the run's start (an ignored call: the host does not wait
//   for it, the user's script is queued right behind it on the isolate);
// - op 3, the same arguments: the same for the next run of a warm context (its script already ran), started at once;
// - op 0 starts `run` (once) and resolves to [ok, resultJsonOrError, logs, droppedLogs, logsCut];
// - op 1 delivers a host answer.
// The user's script is compiled with `userScriptSuffix()` appended, which starts the run from the script's last
// statement, so the script's completion value is op 0's promise: top-level code and the run's start are one isolate
// call. The suffix reaches the start through a global lexical binding with a random name (START_BINDING): not a
// property of the global object, so no enumeration finds it, and it is cleared when called.
// The host callbacks live only in this closure: user code can reach neither them nor any isolated-vm object.
// Builtins are captured before user code runs, so patching prototypes can bend only the user's own results.
// Plain JS in a raw string (no "${" nor backticks inside): nothing here may be touched by the TS toolchain.
// The script is one function body in two files: SandboxLibrary.ts (the builtins captured before user code runs and
// the pure helpers the api shares), spliced in first, and the per-run runtime below (the run's globals, init,
// control), which uses its names.
import { randomBytes } from "node:crypto"
import { BOOTSTRAP_LIBRARY } from "./SandboxLibrary.ts"

/** Name the user's script is compiled under; stack frames from it are "user frames". */
export const USER_FILENAME = "function.js"

/** The lexical binding through which a user script's suffix starts its run: random per process, so unguessable. */
const START_BINDING = `__troupeStart${randomBytes(12).toString("hex")}`

/** Appended to the user's code when it is compiled: a line of its own, with nothing that can close a user construct. */
export const userScriptSuffix = `\n;typeof ${START_BINDING} === "function" ? ${START_BINDING}() : void 0`

/** The 1-based line of `code + userScriptSuffix` that holds the suffix: its frame is not a user frame. */
export const suffixLine = (code: string): number => (code.match(/\r\n|[\n\r\u2028\u2029]/g)?.length ?? 0) + 2

const BOOTSTRAP_RUNTIME = String.raw`// The run's globals are getters over the current run, defined once per context: a warm context serves many runs,
// each with its own frozen api and parameters, and user code can neither replace nor delete them.
let current
const runGlobal = (name) => defineProperty(G, name, {
  get: () => (current === undefined ? undefined : current[name]), enumerable: true, configurable: false
})
runGlobal("api")
runGlobal("executionParams")
runGlobal("triggerParams")
const FINISHED = "This api belongs to a run that has finished: each run gets its own api (do not keep it in globals)"
let retirePrevious

// Parenthesised functions are compiled eagerly, so the per-process code cache covers them (faster cold isolates).
// One call per run: the previous run's api is retired (its calls fail from now on), this run's becomes current.
const init = (function init(hostCall, sync, execJson, trigJson, maxResultBytes, maxLogBytes, maxCallBytes, suffixAt) {
  if (retirePrevious !== undefined) retirePrevious()
  let active = true
  retirePrevious = () => { active = false }
  hostSync = sync
  suffixFrame = "function.js:" + suffixAt + ":"
  const executionParams = deepFreeze(parse(execJson))
  const triggerParams = deepFreeze(parse(trigJson))

  // Logs: each entry capped, the run capped by count and bytes; what does not fit is counted.
  const MAX_ENTRIES = 1000, MAX_ENTRY_BYTES = 8192, MARK = "…[truncated]"
  const logs = []
  let logBytes = 0, dropped = 0, cut = false
  const addLog = (level, args) => {
    if (!active) throw new ErrorCtor(FINISHED)
    if (logs.length >= MAX_ENTRIES) { dropped++; return }
    let msg = ""
    for (let i = 0; i < args.length; i++) {
      msg = msg + (i > 0 ? " " : "") + toText(args[i])
      if (msg.length > MAX_ENTRY_BYTES) break
    }
    if (!fitsBytes(msg, MAX_ENTRY_BYTES)) {
      msg = cutToBytes(msg, MAX_ENTRY_BYTES - 14) + MARK
      cut = true
    }
    const bytes = msg.length * 3 <= 1024 ? msg.length : utf8Length(msg)
    if (logBytes + bytes > maxLogBytes) { dropped++; return }
    logBytes += bytes
    const entry = [level, msg, toISOString(new DateCtor())]
    logs[logs.length] = entry
    // a copy goes to the host as it is written, so a run killed by its limits still has its logs
    hostCall(0, "log", stringify(entry))
  }

  // Host calls: one ignored callback out, the answer comes back through entry(1, id, json).
  const pending = new MapCtor()
  let nextId = 1
  const callHost = (method, args) => {
    if (!active) return PromiseCtor.reject(new ErrorCtor(FINISHED))
    let json
    try { json = stringify(args) } catch (e) {
      return PromiseCtor.reject(new TypeErrorCtor("api." + method + ": arguments are not JSON: " + describeError(e)))
    }
    if (!fitsBytes(json, maxCallBytes)) {
      return PromiseCtor.reject(new RangeErrorCtor("api." + method + ": arguments exceed " + maxCallBytes + " bytes"))
    }
    const id = nextId++
    return new PromiseCtor((resolve, reject) => {
      mapSet(pending, id, [resolve, reject])
      hostCall(id, method, json)
    })
  }
  const hostError = (err) => {
    const e = new ErrorCtor(typeof err === "object" && err !== null ? StringCtor(err.message) : "Host call failed")
    if (typeof err === "object" && err !== null) {
      if (hasOwn(err, "code")) e.code = err.code
      if (hasOwn(err, "statusCode")) e.statusCode = err.statusCode
      if (hasOwn(err, "details")) e.details = err.details
    }
    return e
  }
  const deliver = (id, answerJson) => {
    const p = mapGet(pending, id)
    if (p === undefined) return
    mapDelete(pending, id)
    let a
    try { a = parse(answerJson) } catch { return p[1](new ErrorCtor("Invalid host answer")) }
    if (a !== null && a.ok === true) p[0](a.value)
    else p[1](hostError(a === null ? null : a.error))
  }
  const log = (...args) => addLog("info", args)
  log.info = (...args) => addLog("info", args)
  log.warn = (...args) => addLog("warn", args)
  log.error = (...args) => addLog("error", args)
  log.debug = (...args) => addLog("debug", args)

  const api = deepFreeze({
    queryRecords: (recordSlug, options) => callHost("queryRecords", [recordSlug, options]),
    aggregateRecords: (recordSlug, params) => callHost("aggregateRecords", [recordSlug, params]),
    fetchRecord: (recordId) => callHost("fetchRecord", [recordId]),
    fetchRecordByUniqueField: (recordSlug, field, value) =>
      callHost("fetchRecordByUniqueField", [recordSlug, field, value]),
    createRecord: (recordSlug, data) => callHost("createRecord", [recordSlug, data]),
    updateRecord: (recordId, updates) => callHost("updateRecord", [recordId, updates]),
    deleteRecord: (recordId, hardDelete) => callHost("deleteRecord", [recordId, hardDelete]),
    incrementField: (recordId, field, value) => callHost("incrementField", [recordId, field, value]),
    decrementField: (recordId, field, value) => callHost("decrementField", [recordId, field, value]),
    invokeTrigger: (name, params) => callHost("invokeTrigger", [name, params]),
    sendEmail: (message, options) => callHost("sendEmail", [message, options]),
    sendSms: (message, options) => callHost("sendSms", [message, options]),
    storage: {
      list: (options) => callHost("storageList", [options]),
      get: (id) => callHost("storageGet", [id]),
      read: (id, options) => callHost("storageRead", [id, options]),
      write: (file) => callHost("storageWrite", [file]),
      remove: (id) => callHost("storageRemove", [id])
    },
    intelligence: {
      scan: (structure) => callHost("intelligenceScan", [structure]),
      trigger: (structure) => callHost("intelligenceTrigger", [structure]),
      analyze: (structure) => callHost("intelligenceAnalyze", [structure]),
      validate: (structure) => callHost("intelligenceValidate", [structure]),
      job: (id) => callHost("intelligenceJob", [id]),
      suggestions: (structure, options) => callHost("intelligenceSuggestions", [structure, options]),
      acceptSuggestion: (id) => callHost("intelligenceAcceptSuggestion", [id]),
      rejectSuggestion: (id) => callHost("intelligenceRejectSuggestion", [id]),
      insights: (structure, options) => callHost("intelligenceInsights", [structure, options]),
      acknowledgeInsight: (id) => callHost("intelligenceAcknowledgeInsight", [id]),
      dismissInsight: (id) => callHost("intelligenceDismissInsight", [id]),
      corrections: (structure, options) => callHost("intelligenceCorrections", [structure, options]),
      acceptCorrection: (id) => callHost("intelligenceAcceptCorrection", [id]),
      rejectCorrection: (id) => callHost("intelligenceRejectCorrection", [id])
    },
    search: (q, options) => callHost("search", [q, options]),
    httpGet: async (url, options) => httpResult(await http(callHost, "GET", url, undefined, options)),
    httpDelete: async (url, options) => httpResult(await http(callHost, "DELETE", url, undefined, options)),
    httpPost: async (url, body, options) => httpResult(await http(callHost, "POST", url, body, options)),
    httpPut: async (url, body, options) => httpResult(await http(callHost, "PUT", url, body, options)),
    fetch: async (url, init) => {
      const i = init === undefined || init === null ? {} : init
      return response(await http(callHost, i.method === undefined ? "GET" : i.method, url, i.body, i))
    },
    log,
    formatDate,
    uuid: () => callSync("uuid", ""),
    lodash,
    math
  })

  current = freeze({ api, executionParams, triggerParams })

  const finish = (ok, payload) => {
    active = false
    if (dropped > 0) logs[logs.length] = ["warn", dropped + " log entries dropped", toISOString(new DateCtor())]
    return [ok, payload, logs, dropped, cut]
  }
  const start = (async () => {
    let value
    try {
      if (typeof run !== "function") throw new TypeErrorCtor("Functions must define async function run()")
      value = await run(executionParams, triggerParams)
    } catch (e) {
      return finish(false, describeError(e, true))
    }
    let json
    try { json = stringify(value === undefined ? null : value) } catch (e) {
      return finish(false, "Result is not serialisable to JSON: " + describeError(e, false))
    }
    if (json === undefined) json = "null"
    if (!fitsBytes(json, maxResultBytes)) {
      return finish(false, "Result exceeds the limit of " + maxResultBytes + " bytes")
    }
    return finish(true, json)
  })
  let started
  const startOnce = () => {
    if (started === undefined) started = start()
    return started
  }
  return (function entry(op, id, answerJson) {
    if (op === 0) return startOnce()
    deliver(id, answerJson)
  })
})

let entry
return (function control(op, a, b, c, d, e, f, g, h) {
  if (op === 2 || op === 3) {
    const mine = init(a, b, c, d, e, f, g, h)
    entry = mine
    // op 2: the context's first run, started by its script's suffix; op 3: a warm context's next run, started here
    if (op === 2) {
      setStart(() => {
        setStart(undefined)
        return mine(0)
      })
      return
    }
    setStart(undefined)
    return mine(0)
  }
  if (entry === undefined) throw new ErrorCtor("The sandbox context was not initialised")
  return entry(op, a, b)
})
})
`

const BOOTSTRAP_BODY = `(function (setStart) {\n"use strict"\n${BOOTSTRAP_LIBRARY}\n${BOOTSTRAP_RUNTIME}`
/** The bootstrap script: the start binding, then the body called with its setter; completes with `control`. */
export const BOOTSTRAP_SOURCE = `let ${START_BINDING};\n${BOOTSTRAP_BODY}((f) => { ${START_BINDING} = f })\n`
