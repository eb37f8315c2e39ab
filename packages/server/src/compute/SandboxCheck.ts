// Static validation of function code, run when code is saved or tested. It compiles with node:vm (compile only,
// never run) for syntax errors, and scans the code with string, template, regex and comment contents blanked out,
// so that `import` or `module.exports` inside a string or a comment is not refused.
import * as vm from "node:vm"
import { USER_FILENAME } from "./SandboxBootstrap.ts"

const MODULE_MESSAGE = "Functions define `async function run()`; module.exports / exports.handler / import are not supported"
const NO_RUN_MESSAGE = "Functions must define `async function run()` (or `const run = async () => ...`)"

// After these a `/` starts a regular expression, not a division.
const REGEX_AFTER_CHAR = new Set("(,=:[!&|?{};+-*%<>~^")
const REGEX_AFTER_WORD = new Set([
  "return",
  "typeof",
  "case",
  "do",
  "else",
  "in",
  "of",
  "new",
  "delete",
  "void",
  "throw",
  "yield",
  "await",
  "instanceof"
])

const isWordChar = (c: string) => /[\w$]/.test(c)

/** The code with the contents of strings, templates, regex literals and comments replaced by spaces. */
export const blankLiterals = (code: string): string => {
  const out: Array<string> = []
  const templateBraces: Array<number> = [] // brace depth at each open `${`
  let braces = 0
  let i = 0
  const n = code.length
  const blank = (from: number, to: number) => {
    for (let k = from; k < to; k++) out.push(code[k] === "\n" ? "\n" : " ")
  }
  const previousToken = (): string => {
    let k = out.length - 1
    while (k >= 0 && /\s/.test(out[k]!)) k--
    if (k < 0) return ""
    if (!isWordChar(out[k]!)) return out[k]!
    let start = k
    while (start > 0 && isWordChar(out[start - 1]!)) start--
    return out.slice(start, k + 1).join("")
  }
  // Scans template text from i (just after ` or }) to its end or the next `${`.
  const template = () => {
    const from = i
    while (i < n) {
      const c = code[i]
      if (c === "\\") i += 2
      else if (c === "`") {
        blank(from, i)
        out.push("`")
        i++
        return
      } else if (c === "$" && code[i + 1] === "{") {
        blank(from, i)
        out.push("${")
        i += 2
        templateBraces.push(++braces)
        return
      } else i++
    }
    blank(from, n)
  }
  while (i < n) {
    const c = code[i]!
    const next = code[i + 1]
    if (c === "/" && next === "/") {
      const end = code.indexOf("\n", i)
      const to = end < 0 ? n : end
      blank(i, to)
      i = to
    } else if (c === "/" && next === "*") {
      const end = code.indexOf("*/", i + 2)
      const to = end < 0 ? n : end + 2
      blank(i, to)
      i = to
    } else if (c === "'" || c === '"') {
      let k = i + 1
      while (k < n && code[k] !== c && code[k] !== "\n") k += code[k] === "\\" ? 2 : 1
      out.push(c)
      blank(i + 1, Math.min(k, n))
      if (k < n) out.push(code[k]!)
      i = k + 1
    } else if (c === "`") {
      out.push("`")
      i++
      template()
    } else if (c === "/") {
      const prev = previousToken()
      if (prev === "" || REGEX_AFTER_CHAR.has(prev) || REGEX_AFTER_WORD.has(prev)) {
        let k = i + 1
        let inClass = false
        while (k < n && code[k] !== "\n" && (inClass || code[k] !== "/")) {
          if (code[k] === "\\") k++
          else if (code[k] === "[") inClass = true
          else if (code[k] === "]") inClass = false
          k++
        }
        out.push("/")
        blank(i + 1, Math.min(k, n))
        if (k < n) out.push(code[k]!)
        i = k + 1
      } else {
        out.push(c)
        i++
      }
    } else if (c === "{") {
      braces++
      out.push(c)
      i++
    } else if (c === "}") {
      out.push(c)
      i++
      if (templateBraces.length > 0 && templateBraces[templateBraces.length - 1] === braces) {
        templateBraces.pop()
        braces--
        template()
      } else braces--
    } else {
      out.push(c)
      i++
    }
  }
  return out.join("")
}

const MODULE_PATTERNS = [
  /\bmodule\s*\.\s*exports\b/,
  /(?<![.$\w])exports\s*\.\s*handler\b/,
  /(?<![.$\w])import\b(?!\s*:)/ // static, dynamic import() and import.meta, not obj.import or { import: x }
]
const RUN_PATTERNS = [/(?<![.$\w])function\s*\*?\s*run\s*\(/, /(?<![.$\w])(?:const|let|var)\s+run\s*=/]

/** Verdicts kept, least recently used first, and the longest code whose verdict is kept (≤ 8 MB in all). */
export const CHECK_MEMO_SIZE = 128
const CHECK_MEMO_MAX_CHARS = 32 * 1024
const verdicts = new Map<string, string | undefined>()

/**
 * Returns why the code cannot be a function, or undefined when it is acceptable. A pure function of the code, so
 * recent verdicts are kept: every test execution is checked, and one sent again unchanged (the console's "run
 * again", a client retrying) is not scanned and compiled again (~0.5 ms of the node's thread for 3 kB of code).
 */
export const check = (code: string): string | undefined => {
  if (code.length > CHECK_MEMO_MAX_CHARS) return checkNow(code)
  if (verdicts.has(code)) {
    const verdict = verdicts.get(code)
    verdicts.delete(code)
    verdicts.set(code, verdict)
    return verdict
  }
  const verdict = checkNow(code)
  verdicts.set(code, verdict)
  if (verdicts.size > CHECK_MEMO_SIZE) verdicts.delete(verdicts.keys().next().value!)
  return verdict
}

const checkNow = (code: string): string | undefined => {
  const bare = blankLiterals(code)
  if (MODULE_PATTERNS.some((p) => p.test(bare))) return MODULE_MESSAGE
  try {
    new vm.Script(code, { filename: USER_FILENAME })
  } catch (e) {
    const error = e as { name?: unknown; message?: unknown; stack?: unknown }
    const line = typeof error.stack === "string" ? /^function\.js:(\d+)/.exec(error.stack)?.[1] : undefined
    return `${String(error.name ?? "SyntaxError")}: ${String(error.message ?? e)}${line ? ` (line ${line})` : ""}`
  }
  if (!RUN_PATTERNS.some((p) => p.test(bare))) return NO_RUN_MESSAGE
  return undefined
}
