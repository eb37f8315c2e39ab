// A search's words before its page statement (search/SearchService.ts): each word's lexemes in each language of the
// scope, and the lexicon's typo candidates of the lexemes nobody wrote as they are. Both are remembered per node, so
// that a repeated query (most are: a few words make most searches) costs its page statement alone:
// - lexemes, by language and word: to_tsvector with a built-in configuration is a pure function of the two;
// - "known" answers, by scope and lexeme: the lexicon only ever gains words (search/Lexicon.ts adds, nothing
//   removes), so a lexeme found there stays there. "Unknown" is never kept: a write may add the word any second.
import { Effect } from "effect"
import type { SqlClient } from "effect/sql"
import * as Recent from "../lib/Recent.ts"

/** A lexeme whose typo candidates are wanted; `prefix` for the last word (a word starting with it counts as known). */
export interface Wanted {
  readonly lex: string
  readonly prefix: boolean
}

const bounded = <V>(sizeOf: (v: V) => number) =>
  Recent.make<V>({ maxEntries: 20_000, maxBytes: 4 * 1024 * 1024, maxEntryBytes: 64 * 1024, sizeOf })

export const makeQueryWords = (sql: SqlClient.SqlClient) => {
  const lexemesOf = bounded<ReadonlyArray<string>>((l) => 64 + l.reduce((n, x) => n + 2 * x.length, 0))
  const known = bounded<true>(() => 64)
  const pairKey = (lang: string, word: string) => `${lang}\u0000${word}`

  /** Each language's lexemes of each word (none for a stop word), by language then word index. */
  const normalize = (languages: ReadonlyArray<string>, words: ReadonlyArray<string>) =>
    Effect.gen(function* () {
      const missing = languages.flatMap((lang) => words.filter((w) => !lexemesOf.has(pairKey(lang, w))).map((word) => ({ lang, word })))
      if (missing.length > 0) {
        const rows = yield* sql`SELECT m ->> 'lang' AS lang, m ->> 'word' AS word,
            tsvector_to_array(to_tsvector((m ->> 'lang')::regconfig, m ->> 'word')) AS lexemes
          FROM jsonb_array_elements(${JSON.stringify(missing)}::jsonb) AS m`.pipe(Effect.orDie)
        for (const r of rows as Array<any>)
          lexemesOf.set(pairKey(r.lang, r.word), Array.isArray(r.lexemes) ? r.lexemes.map(String) : parseArray(String(r.lexemes)))
      }
      const out = new Map<string, Array<ReadonlyArray<string>>>()
      for (const lang of languages)
        out.set(
          lang,
          words.map((w) => lexemesOf.get(pairKey(lang, w)) ?? [])
        )
      return out
    })

  /**
   * Lexicon words near each lexeme (trigram similarity), from the structures in scope; none for a lexeme someone
   * wrote as it is (for the last word: a word starting with it): such a word is taken as typed, not corrected.
   */
  const candidates = (structureIds: ReadonlyArray<string>, wanted: ReadonlyArray<Wanted>) =>
    Effect.gen(function* () {
      const out = new Map<string, Array<string>>()
      const scopeKey = [...structureIds].sort().join(",")
      const knownKey = (w: Wanted) => `${scopeKey}\u0000${w.prefix ? "p" : "e"}\u0000${w.lex}`
      const lexemes = wanted.filter((w) => !known.has(knownKey(w)))
      if (lexemes.length === 0) return out
      // ids as constants (IN ($1, …)): the planner sees them, as it would not a set returned by a function
      const ids = sql.in(structureIds)
      // one statement for the common case: every word is known, nothing to correct; each pattern is a constant of
      // its own, so that the lexicon's trigram index answers the prefix check
      const checks = lexemes
        .map(({ lex, prefix }) => {
          const exact = sql`NOT EXISTS (SELECT 1 FROM search_lexicon WHERE structure_id IN ${ids} AND word = ${lex})`
          const pattern = `${lex.replace(/[\\%_]/g, "\\$&")}%`
          return prefix
            ? sql`SELECT ${lex}::text AS lex WHERE ${exact}
                AND NOT EXISTS (SELECT 1 FROM search_lexicon WHERE structure_id IN ${ids} AND word LIKE ${pattern})`
            : sql`SELECT ${lex}::text AS lex WHERE ${exact}`
        })
        .reduce((a, b) => sql`${a} UNION ALL ${b}`)
      const unknownRows = (yield* checks.pipe(Effect.orDie)) as Array<{ lex: string }>
      const unknownSet = new Set(unknownRows.map((u) => u.lex))
      for (const w of lexemes) if (!unknownSet.has(w.lex)) known.set(knownKey(w), true)
      if (unknownRows.length === 0) return out
      const unknown = [...unknownSet]
      // an unknown last word may be a mistyped prefix: words whose start is near it (`<%`, word similarity)
      const prefixes = unknown.filter((u) => lexemes.some((l) => l.lex === u && l.prefix))
      const nearStart =
        prefixes.length === 0
          ? sql``
          : sql`UNION ALL SELECT t.lex, l.word FROM jsonb_array_elements_text(${JSON.stringify(prefixes)}::jsonb) AS t(lex)
              CROSS JOIN LATERAL (SELECT word FROM search_lexicon
                WHERE structure_id IN ${ids} AND t.lex <% word AND length(word) >= length(t.lex) - 2
                ORDER BY word_similarity(t.lex, word) DESC, word LIMIT 64) l`
      const rows = yield* sql
        .withTransaction(
          Effect.andThen(
            sql`SELECT set_config('pg_trgm.similarity_threshold', '0.2', true),
              set_config('pg_trgm.word_similarity_threshold', '0.3', true)`,
            sql`SELECT t.lex, l.word FROM jsonb_array_elements_text(${JSON.stringify(unknown)}::jsonb) AS t(lex)
              CROSS JOIN LATERAL (SELECT word FROM search_lexicon
                WHERE structure_id IN ${ids} AND word % t.lex AND length(word) BETWEEN length(t.lex) - 2 AND length(t.lex) + 2
                ORDER BY similarity(word, t.lex) DESC, word LIMIT 64) l ${nearStart}`
          )
        )
        .pipe(Effect.orDie)
      for (const r of rows as Array<any>) out.set(r.lex, [...(out.get(r.lex) ?? []), String(r.word)])
      return out
    })

  return { normalize, candidates }
}

/** A PostgreSQL text[] literal's elements (a driver that answers arrays as text). */
const parseArray = (text: string): Array<string> => {
  if (text === "{}" || text === "") return []
  const out: Array<string> = []
  const re = /"((?:[^"\\]|\\.)*)"|([^,{}]+)/g
  for (const m of text.slice(1, -1).matchAll(re)) out.push(m[1] !== undefined ? m[1].replace(/\\(.)/g, "$1") : m[2]!)
  return out
}
