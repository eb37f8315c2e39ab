// The HTTP edge's input guards (HttpEdge for the Effect stack, FastRoutes for the fast lane, and HTTP triggers):
// checked once, before routing and decoding, for every request (the fast routes run the same checks): no NUL
// character or lone surrogate in a path segment, a query parameter, a form field or a JSON string (PostgreSQL
// refuses both in text and jsonb, which would otherwise surface as a 500 wherever the value reaches it), and no
// JSON body nested deeper than TROUPE_MAX_JSON_DEPTH (recursive decoders and walks would overflow the stack).
import { badRequest, type ErrorDetail, errorDetail } from "@troupe/api/Errors"

const NUL = "must not contain NUL characters"
const SURROGATE = "must be valid Unicode (no lone surrogates)"

/** The problem of decoded text, if any. */
export const textProblem = (s: string): string | undefined => (s.includes("\u0000") ? NUL : s.isWellFormed() ? undefined : SURROGATE)

/** NUL raw, percent-encoded or overlong; the (WTF-8) percent-encoding of a surrogate. */
const encodedNul = /%00|%c0%80|\u0000/i
const encodedSurrogate = /%ed%[ab][0-9a-f]/i

/** The problem of a raw (percent-encoded) piece of a URL, if any. */
const encodedProblem = (raw: string): string | undefined =>
  encodedNul.test(raw) ? NUL : encodedSurrogate.test(raw) || !raw.isWellFormed() ? SURROGATE : undefined

/** Whether a request target holds anything the edge refuses (cheap: one pass of two patterns). */
export const suspectUrl = (url: string): boolean => encodedProblem(url) !== undefined

/** A field name fit for a message: escapes a NUL or a lone surrogate. */
const printable = (s: string) => (textProblem(s) === undefined ? s : JSON.stringify(s).slice(1, -1))

const decodeQueryName = (raw: string) => {
  const spaced = raw.replaceAll("+", " ")
  try {
    return decodeURIComponent(spaced)
  } catch {
    return spaced
  }
}

/**
 * The NULs and lone surrogates of a request target (path aliases already rewritten), each naming the path parameter
 * (`path.slug`, found by `paramAt`, else `path`) or the query parameter (`query.filter`) it is in.
 */
export const urlProblems = (
  url: string,
  paramAt: (path: string, segment: number) => string | undefined = () => undefined
): Array<ErrorDetail> => {
  if (!suspectUrl(url)) return []
  const problems: Array<ErrorDetail> = []
  const at = url.indexOf("?")
  const path = at < 0 ? url : url.slice(0, at)
  path.split("/").forEach((segment, i) => {
    const problem = encodedProblem(segment)
    if (problem === undefined) return
    const name = paramAt(path, i)
    problems.push(errorDetail(name === undefined ? "path" : `path.${name}`, problem))
  })
  if (at >= 0) {
    for (const pair of url.slice(at + 1).split("&")) {
      const eq = pair.indexOf("=")
      const key = eq < 0 ? pair : pair.slice(0, eq)
      const keyProblem = encodedProblem(key)
      if (keyProblem !== undefined) {
        problems.push(errorDetail("query", `a parameter name ${keyProblem}`))
        continue
      }
      const problem = eq < 0 ? undefined : encodedProblem(pair.slice(eq + 1))
      if (problem !== undefined) problems.push(errorDetail(`query.${decodeQueryName(key)}`, problem))
    }
  }
  return problems
}

/** The NULs and lone surrogates of a form body (`application/x-www-form-urlencoded`), each naming its field. */
export const formProblems = (text: string): Array<ErrorDetail> => {
  if (!encodedNul.test(text) && text.isWellFormed()) return []
  const problems: Array<ErrorDetail> = []
  for (const [key, value] of new URLSearchParams(text)) {
    const problem = textProblem(key) ?? textProblem(value)
    if (problem !== undefined) problems.push(errorDetail(printable(key) || "body", problem))
  }
  return problems
}

interface JsonFrame {
  readonly array: boolean
  /** arrays: the index of the current item */
  index: number
  /** objects: where the current key's JSON string starts and ends in the text */
  keyStart: number
  keyEnd: number
}

const MAX_JSON_PROBLEMS = 20
const QUOTE = 34
const BACKSLASH = 92

/** The code unit of a `\\uXXXX` escape whose hex digits start at `at`, NaN when they are not four hex digits. */
const escapedUnit = (text: string, at: number) => {
  const hex = text.slice(at, at + 4)
  return /^[0-9a-fA-F]{4}$/.test(hex) ? parseInt(hex, 16) : NaN
}

/**
 * Scans JSON text in one pass, without recursion and without parsing it (malformed text is left to the decoder): a
 * container nested deeper than `maxDepth`, and every string (key or value) holding a NUL or a lone surrogate, each
 * named by its path as the edge names body fields (`data.tags[2]`, `body` for the root).
 */
export const jsonProblems = (
  text: string,
  maxDepth: number
): { readonly tooDeep: boolean; readonly details: ReadonlyArray<ErrorDetail> } => {
  const stack: Array<JsonFrame> = []
  const details: Array<ErrorDetail> = []
  let expectKey = false
  const keyOf = (frame: JsonFrame) => {
    const raw = text.slice(frame.keyStart, frame.keyEnd)
    try {
      return printable(JSON.parse(raw) as string)
    } catch {
      return raw.slice(1, -1)
    }
  }
  const pathOf = (frames: number) => {
    let path = ""
    for (let k = 0; k < frames; k++) {
      const frame = stack[k]!
      path += frame.array ? `[${frame.index}]` : path === "" ? keyOf(frame) : `.${keyOf(frame)}`
    }
    return path === "" ? "body" : path
  }
  const n = text.length
  // the next quote and backslash at or after the scan position (searched again only once passed: linear overall)
  let quoteAt = -1
  let backslashAt = -1
  const next = (char: string, from: number) => {
    const at = text.indexOf(char, from)
    return at < 0 ? n : at
  }
  let i = 0
  while (i < n) {
    const c = text.charCodeAt(i)
    if (c === QUOTE) {
      const start = i
      let problem: string | undefined
      i++
      for (;;) {
        if (quoteAt < i) quoteAt = next('"', i)
        if (backslashAt < i) backslashAt = next("\\", i)
        if (quoteAt <= backslashAt) {
          i = quoteAt
          break
        }
        i = backslashAt
        if (text.charCodeAt(i + 1) !== 117 /* u */) {
          i += 2
          // escapes often come in runs (`\\n\\n`): the next one is found without a search
          if (text.charCodeAt(i) === BACKSLASH) backslashAt = i
          continue
        }
        const unit = escapedUnit(text, i + 2)
        i += 6
        if (unit === 0) problem ??= NUL
        else if (unit >= 0xd800 && unit <= 0xdbff) {
          const low = text.charCodeAt(i) === BACKSLASH && text.charCodeAt(i + 1) === 117 ? escapedUnit(text, i + 2) : NaN
          if (low >= 0xdc00 && low <= 0xdfff) i += 6
          else problem ??= SURROGATE
        } else if (unit >= 0xdc00 && unit <= 0xdfff) problem ??= SURROGATE
      }
      i++ // past the closing quote
      const top = stack[stack.length - 1]
      if (top !== undefined && !top.array && expectKey) {
        top.keyStart = start
        top.keyEnd = Math.min(i, n)
        expectKey = false
      }
      if (problem !== undefined && details.length < MAX_JSON_PROBLEMS) details.push(errorDetail(pathOf(stack.length), problem))
      continue
    }
    switch (c) {
      case 123: // {
      case 91: // [
        if (stack.length >= maxDepth) {
          return { tooDeep: true, details: [errorDetail(pathOf(stack.length), `is nested deeper than ${maxDepth} levels`)] }
        }
        stack.push({ array: c === 91, index: 0, keyStart: 0, keyEnd: 0 })
        expectKey = c === 123
        break
      case 125: // }
      case 93: // ]
        stack.pop()
        expectKey = false
        break
      case 44: {
        // ,
        const top = stack[stack.length - 1]
        if (top?.array) top.index++
        else expectKey = true
        break
      }
      case 58: // :
        expectKey = false
        break
    }
    i++
  }
  return { tooDeep: false, details }
}

/** The 400 of a body the guards refuse. */
const jsonRefusal = (problems: ReturnType<typeof jsonProblems>, maxDepth: number) =>
  badRequest({
    message: problems.tooDeep
      ? `Invalid request body: JSON nested deeper than ${maxDepth} levels`
      : "Invalid request body: text must not contain NUL characters or lone surrogates",
    code: "VALIDATION_ERROR",
    details: problems.details
  })

/** The 400 of a JSON body text, or undefined when it may go on (for the fast routes, which read bodies themselves). */
export const jsonBodyRefusal = (text: string, maxDepth: number) => {
  const problems = jsonProblems(text, maxDepth)
  return problems.tooDeep || problems.details.length > 0 ? jsonRefusal(problems, maxDepth) : undefined
}

/** The 400 of a request target's problems. */
export const urlRefusal = (details: ReadonlyArray<ErrorDetail>) =>
  badRequest({
    message: `Invalid request ${details[0]!.field.startsWith("query") ? "query" : "path"}: ${details[0]!.field} ${details[0]!.message}`,
    code: "VALIDATION_ERROR",
    details
  })
