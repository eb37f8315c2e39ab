// User-supplied regular expressions. Every pattern must compile under RE2 (linear-time matching, no backreferences
// or lookarounds) and runs on RE2JS, so no pattern can hang the server whatever the text it is tested against. RE2JS
// is several times slower than V8's backtracking engine, so a pattern whose matching work provably does not depend on
// the length of the text (see `nativeSafe`) runs on a native RegExp instead.
import { RE2JS } from "re2js"

export interface CompiledPattern {
  /** Unanchored search, like `RegExp.prototype.test`. */
  readonly test: (s: string) => boolean
  /** Which engine runs it (for tests and diagnostics). */
  readonly engine: "native" | "re2"
}

export const MAX_PATTERN_LENGTH = 1000

/** Compiles a pattern or returns the reason it is refused. */
export const compilePattern = (source: string): CompiledPattern | { readonly error: string } => {
  if (source.length > MAX_PATTERN_LENGTH) return { error: `pattern is longer than ${MAX_PATTERN_LENGTH} characters` }
  let re2: RE2JS
  try {
    re2 = RE2JS.compile(source)
  } catch (e) {
    const message = e instanceof Error ? e.message : String(e)
    return { error: `pattern is not a valid regular expression: ${message}` }
  }
  if (nativeSafe(source)) {
    try {
      const native = new RegExp(source, "u")
      return { test: (s) => native.test(s), engine: "native" }
    } catch {
      // RE2 syntax that JavaScript reads differently: stay on RE2.
    }
  }
  return { test: (s) => re2.test(s), engine: "re2" }
}

interface Frame {
  factor: number
  alternatives: number
  quantified: boolean
  /** characters the frame can match at most (every alternative counted: an over-estimate) */
  span: number
}

/** The most paths a native match may explore: the product of bounded repetition ranges and alternative counts. */
const MAX_FACTOR = 1000
/** The most steps a native match may take: paths times the longest match. */
const MAX_WORK = 100_000

const frame = (): Frame => ({ factor: 1, alternatives: 1, quantified: false, span: 0 })

/**
 * True when a backtracking engine does a bounded amount of work whatever the text: the pattern is anchored at its
 * start (`^`, so only the first position is tried), has no unbounded quantifier (`*`, `+`, `{n,}`: each one lets the
 * work grow with the text, and two adjacent ones or a nested one make it polynomial or exponential), no quantified
 * group that itself contains a quantifier or an alternation, and the product of its bounded repetition ranges and
 * alternative counts (the paths a backtracking search can explore) is at most MAX_FACTOR. Each path is at most the
 * longest match long, so the work is at most their product, itself bounded by MAX_WORK, whatever the text. Anything
 * unusual (flags groups, nested classes, odd brackets) answers false. Unanchored patterns are never native, even
 * without an unbounded quantifier: `a{1,999}$` retries up to 999 steps at each of a million start positions.
 */
export const nativeSafe = (p: string): boolean => {
  if (!p.startsWith("^")) return false
  const stack: Array<Frame> = [frame()]
  let i = 1
  // The last atom or group, so a following quantifier knows what it repeats.
  let last: { kind: "none" } | { kind: "atom" } | { kind: "group"; frame: Frame } = { kind: "none" }
  const top = () => stack[stack.length - 1]!
  const atom = () => {
    top().span++
    last = { kind: "atom" }
  }
  while (i < p.length) {
    const c = p[i]!
    if (c === "\\") {
      const e = p[i + 1]
      if (e === undefined) return false
      if ((e === "p" || e === "P" || e === "x" || e === "u") && p[i + 2] === "{") {
        const close = p.indexOf("}", i + 3)
        if (close < 0) return false
        i = close + 1
      } else if (e === "x") {
        i += 4
      } else if (e === "u") {
        i += 6
      } else if (/[0-9]/.test(e)) {
        return false
      } else {
        i += 2
      }
      atom()
      continue
    }
    if (c === "[") {
      let j = i + 1
      if (p[j] === "^") j++
      if (p[j] === "]") return false // RE2 reads a leading ] as a literal, JavaScript as an empty class
      for (; j < p.length && p[j] !== "]"; j++) {
        if (p[j] === "\\") j++
        else if (p[j] === "[") return false
      }
      if (j >= p.length) return false
      i = j + 1
      atom()
      continue
    }
    if (c === "(") {
      if (p[i + 1] === "?") {
        if (p[i + 2] !== ":") return false
        i += 3
      } else {
        i++
      }
      stack.push(frame())
      last = { kind: "none" }
      continue
    }
    if (c === ")") {
      if (stack.length === 1) return false
      const closed = stack.pop()!
      closed.factor *= closed.alternatives
      const parent = top()
      parent.factor *= closed.factor
      parent.span += closed.span
      if (closed.quantified) parent.quantified = true
      last = { kind: "group", frame: closed }
      i++
      continue
    }
    if (c === "|") {
      // a top-level alternative is not anchored by the leading ^
      if (stack.length === 1) return false
      top().alternatives++
      last = { kind: "none" }
      i++
      continue
    }
    if (c === "*" || c === "+" || c === "?" || c === "{") {
      let min: number
      let max: number
      let end: number
      if (c === "{") {
        const m = /^\{(\d+)(,(\d*))?\}/.exec(p.slice(i, i + 24))
        if (m === null) return false
        min = +m[1]!
        max = m[2] === undefined ? min : m[3] === "" ? Infinity : +m[3]!
        end = i + m[0].length
      } else {
        min = c === "+" ? 1 : 0
        max = c === "?" ? 1 : Infinity
        end = i + 1
      }
      if (p[end] === "?") end++
      if (last.kind === "none" || max === Infinity || max < min) return false
      const current = top()
      // what is repeated: one character, or a group (a plain sequence) of `span` characters
      let repeated = 1
      if (last.kind === "group") {
        const g = last.frame
        if (g.quantified || g.alternatives > 1 || g.factor > 1) return false
        repeated = g.span
      }
      current.quantified = true
      current.factor *= max - min + 1
      current.span += (max - 1) * repeated
      if (current.factor > MAX_FACTOR) return false
      last = { kind: "none" }
      i = end
      continue
    }
    if (c === "]" || c === "}") return false
    atom()
    i++
  }
  if (stack.length !== 1) return false
  const root = stack[0]!
  const factor = root.factor * root.alternatives
  return factor <= MAX_FACTOR && factor * Math.max(1, root.span) <= MAX_WORK
}
