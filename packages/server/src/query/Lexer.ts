// Tokens of the gen-A expression language and the query language. The two differ only in what `"..."` means
// (a string in gen A, a quoted identifier in the query language) and in `:name` parameters (query language only).

export type TokenKind = "ident" | "qident" | "string" | "number" | "word" | "param" | "op" | "eof"

export interface Token {
  readonly kind: TokenKind
  /** identifier / operator text, unescaped string contents, number source text, parameter name */
  readonly text: string
  readonly start: number
  readonly end: number
}

export type Dialect = "expression" | "query"

/** A lexing failure at `position`. */
export class LexError {
  readonly message: string
  readonly position: number
  constructor(message: string, position: number) {
    this.message = message
    this.position = position
  }
}

const identStart = /[A-Za-z_$]/
const identPart = /[A-Za-z0-9_$]/
const wordAt = /[A-Za-z0-9_$]+/y
const numberAt = /\d+(?:\.\d+)?(?:[eE][+-]?\d+)?|\.\d+(?:[eE][+-]?\d+)?/y
const twoCharOps: ReadonlySet<string> = new Set(["==", "!=", "<>", ">=", "<=", "&&", "||"])
const oneCharOps: ReadonlySet<string> = new Set(["=", ">", "<", "!", "(", ")", ",", "*", "-", "+", "[", "]"])
const escapes: Readonly<Record<string, string>> = { n: "\n", t: "\t", r: "\r" }

/** Reads a quoted run starting at the opening quote; a doubled quote or a backslash escapes. */
const readQuoted = (input: string, start: number): { text: string; end: number } => {
  const quote = input[start]!
  let text = ""
  let i = start + 1
  while (i < input.length) {
    const c = input[i]!
    if (c === "\\" && i + 1 < input.length) {
      const next = input[i + 1]!
      text += escapes[next] ?? next
      i += 2
    } else if (c === quote) {
      if (input[i + 1] === quote) {
        text += quote
        i += 2
      } else {
        return { text, end: i + 1 }
      }
    } else {
      text += c
      i++
    }
  }
  throw new LexError("Unterminated string", start)
}

export const tokenize = (input: string, dialect: Dialect): Array<Token> => {
  const tokens: Array<Token> = []
  let i = 0
  while (i < input.length) {
    const c = input[i]!
    if (/\s/.test(c)) {
      i++
      continue
    }
    const start = i
    if (identStart.test(c)) {
      i++
      while (i < input.length) {
        if (identPart.test(input[i]!)) i++
        else if (input[i] === "." && i + 1 < input.length && identPart.test(input[i + 1]!)) i += 2
        else break
      }
      tokens.push({ kind: "ident", text: input.slice(start, i), start, end: i })
      continue
    }
    if (/\d/.test(c) || (c === "." && /\d/.test(input[i + 1] ?? ""))) {
      numberAt.lastIndex = i
      const m = numberAt.exec(input)!
      i += m[0].length
      if (i < input.length && identPart.test(input[i]!)) {
        // A part of a structure slug that starts with digits (`3d-models`, `items-3d`, `acc-09cb14e9`): a word,
        // which only a slug may be (the parser refuses it anywhere else).
        wordAt.lastIndex = start
        const word = dialect === "query" ? wordAt.exec(input) : null
        if (word === null || word[0].length < m[0].length) throw new LexError(`Unexpected character '${input[i]}'`, i)
        i = start + word[0].length
        tokens.push({ kind: "word", text: word[0], start, end: i })
        continue
      }
      tokens.push({ kind: "number", text: m[0], start, end: i })
      continue
    }
    if (c === "'" || c === '"') {
      const q = readQuoted(input, i)
      i = q.end
      tokens.push({ kind: c === '"' && dialect === "query" ? "qident" : "string", text: q.text, start, end: i })
      continue
    }
    if (c === ":" && dialect === "query" && identStart.test(input[i + 1] ?? "")) {
      i++
      while (i < input.length && identPart.test(input[i]!)) i++
      tokens.push({ kind: "param", text: input.slice(start + 1, i), start, end: i })
      continue
    }
    const two = input.slice(i, i + 2)
    if (twoCharOps.has(two)) {
      i += 2
      tokens.push({ kind: "op", text: two, start, end: i })
      continue
    }
    if (oneCharOps.has(c)) {
      i++
      tokens.push({ kind: "op", text: c, start, end: i })
      continue
    }
    throw new LexError(`Unexpected character '${c}'`, i)
  }
  tokens.push({ kind: "eof", text: "", start: input.length, end: input.length })
  return tokens
}
