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
// Size: over 500 lines, kept whole: one script evaluated in each context, whose parts share the builtins it captures
// before user code runs; split into files it would have to be joined again as one string.
import { randomBytes } from "node:crypto"

/** Name the user's script is compiled under; stack frames from it are "user frames". */
export const USER_FILENAME = "function.js"

/** The lexical binding through which a user script's suffix starts its run: random per process, so unguessable. */
const START_BINDING = `__troupeStart${randomBytes(12).toString("hex")}`

/** Appended to the user's code when it is compiled: a line of its own, with nothing that can close a user construct. */
export const userScriptSuffix = `\n;typeof ${START_BINDING} === "function" ? ${START_BINDING}() : void 0`

/** The 1-based line of `code + userScriptSuffix` that holds the suffix: its frame is not a user frame. */
export const suffixLine = (code: string): number => (code.match(/\r\n|[\n\r\u2028\u2029]/g)?.length ?? 0) + 2

const BOOTSTRAP_BODY = String.raw`(function (setStart) {
"use strict"
const G = globalThis
const O = Object
const freeze = O.freeze, isFrozen = O.isFrozen, keys = O.keys, getProto = O.getPrototypeOf
const defineProperty = O.defineProperty, hasOwn = O.hasOwn, create = O.create
const ObjectProto = O.prototype
const isArray = Array.isArray
const apply = Reflect.apply
const stringify = JSON.stringify, parse = JSON.parse
const MapCtor = Map, SetCtor = Set, DateCtor = Date, PromiseCtor = Promise
const ErrorCtor = Error, TypeErrorCtor = TypeError, RangeErrorCtor = RangeError
const StringCtor = String, NumberCtor = Number, isFiniteNum = Number.isFinite
const mathRandom = Math.random, floor = Math.floor, trunc = Math.trunc, abs = Math.abs, max = Math.max
const dateUTC = Date.UTC, dateParse = Date.parse
const DTF = Intl.DateTimeFormat
const uncurry = (f) => (self, ...args) => apply(f, self, args)
const mapGet = uncurry(Map.prototype.get), mapSet = uncurry(Map.prototype.set)
const mapDelete = uncurry(Map.prototype.delete)
const setHas = uncurry(Set.prototype.has), setAdd = uncurry(Set.prototype.add)
const slice = uncurry(String.prototype.slice), charCodeAt = uncurry(String.prototype.charCodeAt)
const indexOf = uncurry(String.prototype.indexOf), toLower = uncurry(String.prototype.toLowerCase)
const toUpper = uncurry(String.prototype.toUpperCase)
const padStart = uncurry(String.prototype.padStart), replace = uncurry(String.prototype.replace)
const trim = uncurry(String.prototype.trim), split = uncurry(String.prototype.split)
const getTime = uncurry(Date.prototype.getTime), toISOString = uncurry(Date.prototype.toISOString)
const formatToParts = uncurry(Intl.DateTimeFormat.prototype.formatToParts)

// The contract offers no timers, console, WebAssembly or shared memory; FinalizationRegistry would let code run
// after its run has ended.
const banned = ["console", "setTimeout", "setInterval", "setImmediate", "clearTimeout", "clearInterval",
  "clearImmediate", "WebAssembly", "Atomics", "SharedArrayBuffer", "FinalizationRegistry", "require", "process",
  "fetch"]
for (let i = 0; i < banned.length; i++) delete G[banned[i]]

const utf8Length = (s) => {
  let n = 0
  const len = s.length
  for (let i = 0; i < len; i++) {
    const c = charCodeAt(s, i)
    if (c < 0x80) n += 1
    else if (c < 0x800) n += 2
    else if (c >= 0xd800 && c <= 0xdbff && i + 1 < len) { n += 4; i++ }
    else n += 3
  }
  return n
}
// Cheap bound first: a string of L code units takes L..3L bytes.
const fitsBytes = (s, limit) => s.length * 3 <= limit || (s.length <= limit && utf8Length(s) <= limit)
const cutToBytes = (s, limit) => {
  let n = 0, i = 0
  for (; i < s.length; i++) {
    const c = charCodeAt(s, i)
    const w = c < 0x80 ? 1 : c < 0x800 ? 2 : c >= 0xd800 && c <= 0xdbff ? 4 : 3
    if (n + w > limit) break
    n += w
    if (w === 4) i++
  }
  return slice(s, 0, i)
}

const deepFreeze = (root) => {
  const stack = [root]
  while (stack.length > 0) {
    const v = stack[stack.length - 1]
    stack.length--
    if ((typeof v !== "object" || v === null) && typeof v !== "function") continue
    if (isFrozen(v)) continue
    freeze(v)
    const ks = keys(v)
    for (let i = 0; i < ks.length; i++) stack[stack.length] = v[ks[i]]
    if (typeof v === "function" && hasOwn(v, "prototype")) stack[stack.length] = v.prototype
  }
  return root
}

const safeString = (v) => {
  try { return StringCtor(v) } catch { return "[unprintable]" }
}
const toText = (v) => {
  if (typeof v === "string") return v
  if (v instanceof ErrorCtor) return safeString(v.name) + ": " + safeString(v.message)
  try {
    const s = stringify(v)
    return s === undefined ? safeString(v) : s
  } catch { return safeString(v) }
}
const MAX_ERROR = 8192
// The suffix's own line (see userScriptSuffix) is where the run was started from, not the user's code.
let suffixFrame = "function.js:0:"
const userFrame = (stack) => {
  const lines = split(stack, "\n")
  for (let i = 1; i < lines.length; i++) {
    if (indexOf(lines[i], "function.js:") >= 0 && indexOf(lines[i], suffixFrame) < 0) return trim(lines[i])
  }
  return undefined
}
const describeError = (e, withFrame) => {
  let text
  if ((typeof e === "object" && e !== null) || typeof e === "function") {
    let name, message, stack
    try { name = e.name; message = e.message; stack = e.stack } catch {}
    text = typeof message === "string"
      ? (typeof name === "string" && name !== "" ? name + ": " + message : message)
      : toText(e)
    if (withFrame && typeof stack === "string") {
      const frame = userFrame(stack)
      if (frame !== undefined) text = text + "\n    " + frame
    }
  } else text = toText(e)
  return text.length > MAX_ERROR ? slice(text, 0, MAX_ERROR) + "…[truncated]" : text
}

// formatDate tokens: YYYY 2024, YY 24, MMMM January, MMM Jan, MM 01, M 1, DD 05, D 5, dddd Monday, ddd Mon,
// HH 00-23, H 0-23, hh 01-12, h 1-12, mm 05, m 5, ss 09, s 9, SSS 007 (ms), A AM/PM, a am/pm,
// Z +01:00, ZZ +0100 (offset of the time zone); text in [brackets] is literal.
// The default format is ISO 8601 (toISOString in UTC, else YYYY-MM-DDTHH:mm:ss.SSSZ).
const MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
  "November", "December"]
const DAYS = ["Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"]
const TOKENS = /\[([^\]]*)\]|YYYY|YY|MMMM|MMM|MM|M|DD|D|dddd|ddd|HH|H|hh|h|mm|m|ss|s|SSS|A|a|ZZ|Z/g
const pad = (n, w) => padStart(StringCtor(n), w, "0")
const toEpoch = (date) => {
  let t = NaN
  if (typeof date === "number") t = date
  else if (typeof date === "string") t = dateParse(date)
  else if (typeof date === "object" && date !== null) {
    try { t = getTime(date) } catch { t = NaN }
  }
  if (!isFiniteNum(t) || abs(t) > 8.64e15) throw new RangeErrorCtor("formatDate: invalid date")
  return t
}

// Pure helpers and the host's sync calls, made once per context: they act for no principal, so every run's
// api shares them (frozen with the first one).
let hostSync
const callSync = (op, arg) => {
  const r = hostSync(op, arg)
  if (typeof r !== "string") throw new ErrorCtor("Invalid host answer")
  if (r[0] === "1") return parse(slice(r, 1))
  throw new ErrorCtor(slice(r, 1))
}

// HTTP: everything goes through host method "http" with one request object.
const normHeaders = (h) => {
  const out = create(null)
  if (h === undefined || h === null) return out
  if (isArray(h)) {
    for (let i = 0; i < h.length; i++) {
      if (isArray(h[i]) && h[i].length >= 2) out[StringCtor(h[i][0])] = StringCtor(h[i][1])
    }
  } else if (typeof h === "object") {
    const ks = keys(h)
    for (let i = 0; i < ks.length; i++) out[ks[i]] = StringCtor(h[ks[i]])
  }
  return out
}
const hasHeader = (h, name) => {
  const ks = keys(h)
  for (let i = 0; i < ks.length; i++) if (toLower(ks[i]) === name) return true
  return false
}
const http = async (callHost, method, url, body, options) => {
  const headers = normHeaders(options === undefined || options === null ? undefined : options.headers)
  const req = { method: toUpper(StringCtor(method)), url: StringCtor(url), headers }
  if (body !== undefined && body !== null) {
    if (typeof body === "string") req.body = body
    else {
      req.body = stringify(body)
      if (!hasHeader(headers, "content-type")) headers["content-type"] = "application/json"
    }
  }
  if (options !== undefined && options !== null && options.timeout !== undefined) {
    req.timeoutMs = NumberCtor(options.timeout)
  }
  return callHost("http", [req])
}
const httpResult = (r) => {
  let data = r.body
  try { data = parse(r.body) } catch {}
  const ok = r.status >= 200 && r.status < 300
  return { status: r.status, statusText: r.statusText, ok, headers: r.headers, data }
}
const response = (r) => {
  const lower = create(null)
  const hs = r.headers !== null && typeof r.headers === "object" ? r.headers : {}
  const ks = keys(hs)
  for (let i = 0; i < ks.length; i++) lower[toLower(ks[i])] = StringCtor(hs[ks[i]])
  const body = typeof r.body === "string" ? r.body : ""
  return freeze({
    ok: r.status >= 200 && r.status < 300,
    status: r.status,
    statusText: r.statusText,
    url: r.url,
    headers: freeze({
      get: (name) => {
        const v = lower[toLower(StringCtor(name))]
        return v === undefined ? null : v
      }
    }),
    text: async () => body,
    json: async () => parse(body)
  })
}

// formatDate
const zoneFormats = new MapCtor()
const wallClock = (t, zone) => {
  if (zone === "UTC") {
    const d = new DateCtor(t)
    return [d.getUTCFullYear(), d.getUTCMonth() + 1, d.getUTCDate(), d.getUTCHours(), d.getUTCMinutes(),
      d.getUTCSeconds(), d.getUTCDay(), 0]
  }
  let f = mapGet(zoneFormats, zone)
  if (f === undefined) {
    f = new DTF("en-US", { timeZone: zone, hourCycle: "h23", year: "numeric", month: "numeric", day: "numeric",
      hour: "numeric", minute: "numeric", second: "numeric" })
    mapSet(zoneFormats, zone, f)
  }
  const parts = formatToParts(f, t)
  const p = {}
  for (let i = 0; i < parts.length; i++) p[parts[i].type] = NumberCtor(parts[i].value)
  const ms = ((t % 1000) + 1000) % 1000
  const wall = dateUTC(p.year, p.month - 1, p.day, p.hour, p.minute, p.second, ms)
  return [p.year, p.month, p.day, p.hour, p.minute, p.second, new DateCtor(wall).getUTCDay(), (wall - t) / 60000]
}
const offset = (minutes, colon) => {
  const m = abs(minutes)
  return (minutes < 0 ? "-" : "+") + pad(floor(m / 60), 2) + (colon ? ":" : "") + pad(m % 60, 2)
}
const formatDate = (date, format, timeZone) => {
  const t = toEpoch(date)
  const zone = timeZone === undefined || timeZone === null ? "UTC" : StringCtor(timeZone)
  if ((format === undefined || format === null) && zone === "UTC") return toISOString(new DateCtor(t))
  const fmt = format === undefined || format === null ? "YYYY-MM-DDTHH:mm:ss.SSSZ" : StringCtor(format)
  const w = wallClock(t, zone)
  const ms = ((t % 1000) + 1000) % 1000
  const h12 = w[3] % 12 === 0 ? 12 : w[3] % 12
  return replace(fmt, TOKENS, (token, literal) => {
    if (literal !== undefined) return literal
    switch (token) {
      case "YYYY": return pad(w[0], 4)
      case "YY": return pad(w[0] % 100, 2)
      case "MMMM": return MONTHS[w[1] - 1]
      case "MMM": return slice(MONTHS[w[1] - 1], 0, 3)
      case "MM": return pad(w[1], 2)
      case "M": return StringCtor(w[1])
      case "DD": return pad(w[2], 2)
      case "D": return StringCtor(w[2])
      case "dddd": return DAYS[w[6]]
      case "ddd": return slice(DAYS[w[6]], 0, 3)
      case "HH": return pad(w[3], 2)
      case "H": return StringCtor(w[3])
      case "hh": return pad(h12, 2)
      case "h": return StringCtor(h12)
      case "mm": return pad(w[4], 2)
      case "m": return StringCtor(w[4])
      case "ss": return pad(w[5], 2)
      case "s": return StringCtor(w[5])
      case "SSS": return pad(ms, 3)
      case "A": return w[3] < 12 ? "AM" : "PM"
      case "a": return w[3] < 12 ? "am" : "pm"
      case "ZZ": return offset(w[7], false)
      default: return offset(w[7], true)
    }
  })
}

// lodash subset, with lodash semantics; merge copies frozen targets (params) instead of failing.
const isPlain = (v) => {
  if (typeof v !== "object" || v === null) return false
  const p = getProto(v)
  return p === ObjectProto || p === null
}
const shallowCopy = (v) => {
  const out = isArray(v) ? [] : {}
  const ks = keys(v)
  for (let i = 0; i < ks.length; i++) out[ks[i]] = v[ks[i]]
  return out
}
const mergeInto = (target, source, seen) => {
  if (isFrozen(target)) target = shallowCopy(target)
  const ks = keys(source)
  for (let i = 0; i < ks.length; i++) {
    const key = ks[i]
    if (key === "__proto__") continue
    const s = source[key], t = target[key]
    if (isArray(s) || isPlain(s)) {
      const known = mapGet(seen, s)
      if (known !== undefined) { target[key] = known; continue }
      const base = isArray(s)
        ? (isArray(t) ? t : [])
        : ((typeof t === "object" && t !== null) ? t : {})
      const next = isFrozen(base) ? shallowCopy(base) : base
      mapSet(seen, s, next)
      target[key] = mergeInto(next, s, seen)
    } else if (s !== undefined || !(key in target)) target[key] = s
  }
  return target
}
const lodash = {
  chunk: (array, size) => {
    const n = size === undefined ? 1 : max(trunc(NumberCtor(size)) || 0, 0)
    if (!isArray(array) || n < 1) return []
    const out = []
    for (let i = 0; i < array.length; i += n) {
      const c = []
      for (let j = i; j < i + n && j < array.length; j++) c[c.length] = array[j]
      out[out.length] = c
    }
    return out
  },
  flatten: (array) => {
    const out = []
    if (!isArray(array)) return out
    for (let i = 0; i < array.length; i++) {
      const v = array[i]
      if (isArray(v)) for (let j = 0; j < v.length; j++) out[out.length] = v[j]
      else out[out.length] = v
    }
    return out
  },
  uniq: (array) => {
    const out = []
    if (!isArray(array)) return out
    const seen = new SetCtor()
    for (let i = 0; i < array.length; i++) {
      if (setHas(seen, array[i])) continue
      setAdd(seen, array[i])
      out[out.length] = array[i]
    }
    return out
  },
  merge: (object, ...sources) => {
    let target = (typeof object === "object" && object !== null) || typeof object === "function" ? object : {}
    for (let i = 0; i < sources.length; i++) {
      const s = sources[i]
      if (typeof s === "object" && s !== null) target = mergeInto(target, s, new MapCtor())
    }
    return target
  }
}

const num = (name, v) => {
  const n = NumberCtor(v)
  if (typeof v === "object" || n !== n) throw new TypeErrorCtor("math." + name + " expects numbers")
  return n
}
const math = {
  add: (a, b) => num("add", a) + num("add", b),
  subtract: (a, b) => num("subtract", a) - num("subtract", b),
  multiply: (a, b) => num("multiply", a) * num("multiply", b),
  divide: (a, b) => {
    const d = num("divide", b)
    if (d === 0) throw new RangeErrorCtor("Division by zero")
    return num("divide", a) / d
  },
  random: (min, max_) => {
    const lo = min === undefined ? 0 : num("random", min)
    const hi = max_ === undefined ? (min === undefined ? 1 : lo + 1) : num("random", max_)
    return lo + mathRandom() * (hi - lo)
  },
  evaluate: (expression) => {
    if (typeof expression !== "string") throw new TypeErrorCtor("math.evaluate expects a string")
    if (expression.length > 2000) throw new RangeErrorCtor("math.evaluate: expression is longer than 2000 characters")
    return callSync("evaluate", expression)
  }
}


// The run's globals are getters over the current run, defined once per context: a warm context serves many runs,
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

/** The bootstrap script: the start binding, then the body called with its setter; completes with `control`. */
export const BOOTSTRAP_SOURCE = `let ${START_BINDING};\n${BOOTSTRAP_BODY}((f) => { ${START_BINDING} = f })\n`
