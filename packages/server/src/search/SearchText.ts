// The text side of search, without the database: the user's words (our own tokenizer: no input reaches
// PostgreSQL's tsquery parser unquoted), the typo budget of a word, the edit distance that checks a typo candidate,
// tsquery text from normalized lexemes, and highlights made safe for HTML.
import { quoteLexeme } from "../lib/SearchWords.ts"

export { MAX_WORDS, quoteLexeme, wordsOf } from "../lib/SearchWords.ts"

/** A query longer than this is refused (400). */
export const MAX_QUERY_LENGTH = 1000

/**
 * Typos a word tolerates: one from 5 letters, two from 9 (counted in characters, not UTF-16 units); none for a word
 * with a digit (a number, a code, an id: `10045` is not a typo of `10046`).
 */
export const typoBudget = (word: string): number => {
  if (/\p{N}/u.test(word)) return 0
  const n = [...word].length
  return n >= 9 ? 2 : n >= 5 ? 1 : 0
}

/**
 * Edit distance with adjacent transpositions counting one (optimal string alignment), or `max + 1` as soon as it is
 * certainly above `max`.
 */
export const editDistance = (a: string, b: string, max: number): number => {
  const s = [...a]
  const t = [...b]
  if (Math.abs(s.length - t.length) > max) return max + 1
  let prev2: Array<number> = []
  let prev = Array.from({ length: t.length + 1 }, (_, j) => j)
  for (let i = 1; i <= s.length; i++) {
    const row = [i]
    let best = i
    for (let j = 1; j <= t.length; j++) {
      const cost = s[i - 1] === t[j - 1] ? 0 : 1
      let d = Math.min(prev[j]! + 1, row[j - 1]! + 1, prev[j - 1]! + cost)
      if (i > 1 && j > 1 && s[i - 1] === t[j - 2] && s[i - 2] === t[j - 1]) d = Math.min(d, prev2[j - 2]! + 1)
      row.push(d)
      if (d < best) best = d
    }
    if (best > max) return max + 1
    prev2 = prev
    prev = row
  }
  return prev[t.length]!
}

/**
 * Edit distance between `typed` and the closest start of `word` (or all of it): how far a typed prefix is from
 * being one of `word`'s prefixes. `max + 1` when certainly above `max`.
 */
export const prefixDistance = (word: string, typed: string, max: number): number => {
  const w = [...word]
  const n = [...typed].length
  let best = max + 1
  for (let k = Math.max(0, n - max); k <= Math.min(w.length, n + max); k++)
    best = Math.min(best, editDistance(w.slice(0, k).join(""), typed, max))
  return best
}

/** One required word of a query: its normalized lexeme and the lexicon's words within its typo budget. */
export interface Term {
  readonly lexeme: string
  readonly typos: ReadonlyArray<string>
  /** the last word of the query also matches as a prefix */
  readonly prefix: boolean
}

/**
 * The tsquery text of `terms` (every term must match; a term matches its lexeme, as a prefix when asked, or one of
 * its typo words), limited to the tsvector labels `weights` ("A", "AB", …) when given.
 */
export const tsqueryText = (terms: ReadonlyArray<Term>, weights = ""): string =>
  terms
    .map((t) => {
      const exact = `${quoteLexeme(t.lexeme)}${t.prefix || weights !== "" ? ":" : ""}${t.prefix ? "*" : ""}${weights}`
      const typos = t.typos.map((w) => `${quoteLexeme(w)}${weights === "" ? "" : `:${weights}`}`)
      return typos.length === 0 ? exact : `(${[exact, ...typos].join(" | ")})`
    })
    .join(" & ")

/** Marks ts_headline puts around a match (removed from the text before, so the text cannot forge them). */
export const START_MARK = "\u0001"
export const STOP_MARK = "\u0002"

const escapeHtml = (s: string) =>
  s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;").replace(/'/g, "&#39;")

/** A ts_headline fragment as HTML: the text escaped, the matches in `<mark>`; undefined when nothing matched. */
export const highlightHtml = (fragment: string): string | undefined =>
  fragment.includes(START_MARK) ? escapeHtml(fragment.trim()).replaceAll(START_MARK, "<mark>").replaceAll(STOP_MARK, "</mark>") : undefined
