// The words of a search text and their quoted tsquery form, shared by GET /search (search/) and the lists' `search=`
// and SEARCH() (query/CompileSearch.ts), so both cut a query the same way. Our own tokenizer: no input reaches
// PostgreSQL's tsquery parser unquoted.

/** At most this many words of a query are used (the rest are ignored, as Meilisearch does past 10). */
export const MAX_WORDS = 10

/** Letters, digits and combining marks; everything else (punctuation, operators, emoji, NUL) separates words. */
const wordPattern = /[\p{L}\p{N}\p{M}]+/gu

/** The words of a query, lower-cased, in order, duplicates kept (each must match), at most MAX_WORDS. */
export const wordsOf = (q: string): Array<string> => (q.toLowerCase().match(wordPattern) ?? []).slice(0, MAX_WORDS)

/** A lexeme as a quoted tsquery operand (the lexeme is taken as it is: no parsing, no normalization). */
export const quoteLexeme = (lexeme: string): string => `'${lexeme.replace(/\\/g, "\\\\").replace(/'/g, "''")}'`

/** Every word required, the last also as a prefix: tsquery text for `to_tsquery(language, …)` to normalize. */
export const prefixQueryText = (words: ReadonlyArray<string>): string =>
  words.map((w, i) => `${quoteLexeme(w)}${i === words.length - 1 ? ":*" : ""}`).join(" & ")
