// The first part of the sandbox's bootstrap (SandboxBootstrap.ts): the builtins captured before user code runs and
// the pure helpers every run's `api` shares (text and error formatting, formatDate, the HTTP request shaping, the
// lodash subset, math). It is not a script of its own: SandboxBootstrap.ts splices it into its function body, so
// every name here is in scope of the runtime part (init, control) and of nothing else.
// Plain JS in a raw string (no "${" nor backticks inside): nothing here may be touched by the TS toolchain.

/** The bootstrap body's declarations up to the run's runtime: one scope with SandboxBootstrap.ts's part. */
export const BOOTSTRAP_LIBRARY = String.raw`const G = globalThis
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
`
