// User-supplied regular expressions. Every pattern must compile under RE2 (linear-time matching, no backreferences
// or lookarounds), so no pattern can hang the server. RE2JS is several times slower than V8's engine, so a pattern
// whose shape provably cannot backtrack badly (see `nativeSafe`) runs on a native RegExp instead; anything else
// runs on RE2JS.
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
  unbounded: number
  factor: number
  alternatives: number
  quantified: boolean
}

const MAX_FACTOR = 10_000

/**
 * True when a backtracking engine runs the pattern in linear time: no quantified group that itself contains a
 * quantifier or an alternation, the product of bounded repetition ranges and alternative counts small, and at most
 * one unbounded quantifier when the pattern is anchored at its start (`^`), none otherwise (an unanchored search
 * retries every start position). Anything unusual (flags groups, nested classes, odd brackets) answers false.
 */
export const nativeSafe = (p: string): boolean => {
  const stack: Array<Frame> = [{ unbounded: 0, factor: 1, alternatives: 1, quantified: false }]
  let anchored = p.startsWith("^")
  let i = anchored ? 1 : 0
  // Stats of the last atom, so a following quantifier knows what it repeats.
  let last: { kind: "none" } | { kind: "atom" } | { kind: "group"; frame: Frame } = { kind: "none" }
  const top = () => stack[stack.length - 1]!
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
      last = { kind: "atom" }
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
      last = { kind: "atom" }
      continue
    }
    if (c === "(") {
      if (p[i + 1] === "?") {
        if (p[i + 2] !== ":") return false
        i += 3
      } else {
        i++
      }
      stack.push({ unbounded: 0, factor: 1, alternatives: 1, quantified: false })
      last = { kind: "none" }
      continue
    }
    if (c === ")") {
      if (stack.length === 1) return false
      const frame = stack.pop()!
      frame.factor *= frame.alternatives
      const parent = top()
      parent.unbounded += frame.unbounded
      parent.factor *= frame.factor
      if (frame.quantified) parent.quantified = true
      last = { kind: "group", frame }
      i++
      continue
    }
    if (c === "|") {
      top().alternatives++
      if (stack.length === 1) anchored = false
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
      if (last.kind === "none") return false
      const frame = top()
      if (last.kind === "group") {
        const g = last.frame
        if (g.quantified || g.unbounded > 0 || g.alternatives > 1 || g.factor > 1) return false
      }
      frame.quantified = true
      if (max === Infinity) frame.unbounded++
      else frame.factor *= max - min + 1
      if (frame.factor > MAX_FACTOR) return false
      last = { kind: "none" }
      i = end
      continue
    }
    if (c === "]" || c === "}") return false
    last = { kind: "atom" }
    i++
  }
  if (stack.length !== 1) return false
  const root = stack[0]!
  const factor = root.factor * root.alternatives
  return factor <= MAX_FACTOR && root.unbounded <= (anchored ? 1 : 0)
}
