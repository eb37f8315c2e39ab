// GET /search (CONTRACT §8.2, docs/search.md) on the index of migration 0011:
// 1. the scope: the workspace's live structures (or those `structures=` names) with their search language;
// 2. the words (SearchText.wordsOf), normalized by each language in scope (to_tsvector: stemming, stop words);
// 3. typo candidates from the lexicon's trigram index, checked by edit distance within each word's budget;
// 4. one statement per page: per language, the records whose search_vector matches, ranked by the heaviest field
//    class holding every word (A..D) then ts_rank_cd, counted, with ts_headline fragments of the page's rows.
import { type BadRequest, badRequest, details } from "@troupe/api/Errors"
import type { SearchHit, SearchResults } from "@troupe/api/search/Search"
import { Clock, Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { decodeRecordRow, toRecordB } from "../query/RecordRow.ts"
import { StructureService } from "../structures/StructureService.ts"
import { maskData } from "../structures/SecretPaths.ts"
import { applyVirtual } from "../structures/Validator.ts"
import {
  editDistance,
  highlightHtml,
  MAX_QUERY_LENGTH,
  prefixDistance,
  START_MARK,
  STOP_MARK,
  type Term,
  tsqueryText,
  typoBudget,
  wordsOf
} from "./SearchText.ts"

export interface SearchParams {
  readonly q?: string | undefined
  readonly structures?: string | undefined
  readonly limit?: string | undefined
  readonly offset?: string | undefined
}

/** What a search runs on, once its parameters are checked. */
export interface SearchRequest {
  readonly q: string
  /** structure slugs or ids; undefined = every live structure of the workspace */
  readonly structures: ReadonlyArray<string> | undefined
  readonly limit: number
  readonly offset: number
}

export const MAX_LIMIT = 100
export const MAX_OFFSET = 10_000
const MAX_STRUCTURES = 100

const invalid = (field: string, message: string): BadRequest =>
  badRequest({ message: `${field}: ${message}`, code: "VALIDATION_ERROR", details: details([[field, message]]) })

const intParam = (name: string, raw: string | undefined, fallback: number, min: number, max: number) => {
  if (raw === undefined || raw === "") return Effect.succeed(fallback)
  const n = /^\d{1,9}$/.test(raw.trim()) ? Number(raw.trim()) : Number.NaN
  return Number.isInteger(n) && n >= min && n <= max
    ? Effect.succeed(n)
    : Effect.fail(invalid(name, `must be an integer from ${min} to ${max}`))
}

/** The checked form of the query parameters (400 naming the first bad one). */
export const checkParams = (p: SearchParams): Effect.Effect<SearchRequest, BadRequest> =>
  Effect.gen(function* () {
    const q = p.q ?? ""
    if (q.trim() === "") return yield* invalid("q", "is required and must not be blank")
    if (q.length > MAX_QUERY_LENGTH) return yield* invalid("q", `must be at most ${MAX_QUERY_LENGTH} characters`)
    const limit = yield* intParam("limit", p.limit, 20, 1, MAX_LIMIT)
    const offset = yield* intParam("offset", p.offset, 0, 0, MAX_OFFSET)
    const named =
      p.structures === undefined
        ? []
        : [
            ...new Set(
              p.structures
                .split(",")
                .map((s) => s.trim())
                .filter((s) => s !== "")
            )
          ]
    if (named.length > MAX_STRUCTURES) return yield* invalid("structures", `must name at most ${MAX_STRUCTURES} structures`)
    return { q, limit, offset, structures: named.length === 0 ? undefined : named }
  })

interface ScopeRow {
  readonly id: string
  readonly slug: string
  readonly lang: string
}

/** ts_headline's options: the whole field when short, else about 35 words around the matches. */
const HEADLINE_OPTIONS = `StartSel="${START_MARK}", StopSel="${STOP_MARK}", MaxWords=35, MinWords=15, ShortWord=2, HighlightAll=false`

export class SearchService extends Context.Service<
  SearchService,
  {
    readonly search: (workspace: string, params: SearchParams) => Effect.Effect<SearchResults, BadRequest>
  }
>()("@troupe/server/search/SearchService") {
  static readonly layer = Layer.effect(
    SearchService,
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const structures = yield* StructureService

      /** The live structures searched, by slug or id; unknown names are a 400 naming them. */
      const scopeOf = (workspace: string, named: ReadonlyArray<string> | undefined) =>
        Effect.gen(function* () {
          const rows = (yield* sql`SELECT s.id::text AS id, s.record_slug AS slug, coalesce(c.language::text, 'simple') AS lang
            FROM structures s LEFT JOIN search_configs c ON c.structure_id = s.id
            WHERE s.workspace = ${workspace} AND NOT s.is_deleted`.pipe(Effect.orDie)) as unknown as Array<ScopeRow>
          if (named === undefined) return rows
          const unknown = named.filter((n) => !rows.some((r) => r.slug === n || r.id === n.toLowerCase()))
          if (unknown.length > 0) return yield* invalid("structures", `unknown structures: ${unknown.join(", ")}`)
          return rows.filter((r) => named.includes(r.slug) || named.includes(r.id))
        })

      /** Each language's lexemes of each word (none for a stop word), by language then word index. */
      const normalize = (languages: ReadonlyArray<string>, words: ReadonlyArray<string>) =>
        sql`SELECT l.lang, w.i::int AS i, tsvector_to_array(to_tsvector(l.lang::regconfig, w.word)) AS lexemes
          FROM jsonb_array_elements_text(${JSON.stringify(languages)}::jsonb) AS l(lang),
            jsonb_array_elements_text(${JSON.stringify(words)}::jsonb) WITH ORDINALITY AS w(word, i)`.pipe(
          Effect.orDie,
          Effect.map((rows) => {
            const out = new Map<string, Array<Array<string>>>()
            for (const r of rows as Array<any>) {
              const list = out.get(r.lang) ?? []
              list[Number(r.i) - 1] = Array.isArray(r.lexemes) ? r.lexemes.map(String) : parseArray(String(r.lexemes))
              out.set(r.lang, list)
            }
            return out
          })
        )

      /**
       * Lexicon words near each lexeme (trigram similarity), from the structures in scope; none for a lexeme someone
       * wrote as it is (for the last word: a word starting with it): such a word is taken as typed, not corrected.
       */
      const candidates = (structureIds: ReadonlyArray<string>, lexemes: ReadonlyArray<{ lex: string; prefix: boolean }>) =>
        Effect.gen(function* () {
          const out = new Map<string, Array<string>>()
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
          const unknown = (yield* checks.pipe(Effect.orDie)) as Array<{ lex: string }>
          if (unknown.length === 0) return out
          // an unknown last word may be a mistyped prefix: words whose start is near it (`<%`, word similarity)
          const prefixes = unknown.filter((u) => lexemes.some((l) => l.lex === u.lex && l.prefix)).map((u) => u.lex)
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
                sql`SELECT t.lex, l.word FROM jsonb_array_elements_text(${JSON.stringify(unknown.map((u) => u.lex))}::jsonb) AS t(lex)
                  CROSS JOIN LATERAL (SELECT word FROM search_lexicon
                    WHERE structure_id IN ${ids} AND word % t.lex AND length(word) BETWEEN length(t.lex) - 2 AND length(t.lex) + 2
                    ORDER BY similarity(word, t.lex) DESC, word LIMIT 64) l ${nearStart}`
              )
            )
            .pipe(Effect.orDie)
          for (const r of rows as Array<any>) out.set(r.lex, [...(out.get(r.lex) ?? []), String(r.word)])
          return out
        })

      const search = Effect.fn("SearchService.search")(function* (workspace: string, params: SearchParams) {
        const started = yield* Clock.currentTimeMillis
        const request = yield* checkParams(params)
        const scope = yield* scopeOf(workspace, request.structures)
        const words = wordsOf(request.q)
        const took = Effect.map(Clock.currentTimeMillis, (now) => now - started)
        if (words.length === 0 || scope.length === 0) return { results: [], total: 0, tookMs: yield* took }
        const languages = [...new Set(scope.map((s) => s.lang))]
        const normalized = yield* normalize(languages, words)
        // typo candidates for every lexeme of a word with a budget, in any language
        const wanted = new Map<string, { lex: string; prefix: boolean }>()
        for (const perWord of normalized.values()) {
          perWord.forEach((lexemes, i) => {
            if (typoBudget(words[i]!) === 0) return
            for (const lex of lexemes)
              if ([...lex].length >= 4) wanted.set(lex, { lex, prefix: (wanted.get(lex)?.prefix ?? false) || i === words.length - 1 })
          })
        }
        const near = yield* candidates(
          scope.map((s) => s.id),
          [...wanted.values()]
        )
        const branches = languages.flatMap((lang) => {
          const perWord = normalized.get(lang) ?? []
          const last = words.length - 1
          const terms: Array<Term> = perWord.flatMap((lexemes, i) =>
            lexemes.map((lexeme) => {
              const budget = typoBudget(words[i]!)
              const within = i === last ? (w: string) => prefixDistance(w, lexeme, budget) : (w: string) => editDistance(w, lexeme, budget)
              const typos = budget === 0 ? [] : [...new Set(near.get(lexeme) ?? [])].filter((w) => w !== lexeme && within(w) <= budget)
              return { lexeme, typos, prefix: i === last }
            })
          )
          if (terms.length === 0) return []
          return [{ lang, ids: scope.filter((s) => s.lang === lang).map((s) => s.id), terms }]
        })
        if (branches.length === 0) return { results: [], total: 0, tookMs: yield* took }
        const union = branches
          .map((b) => {
            const q = tsqueryText(b.terms)
            return sql`SELECT r.id, r.workspace, r.structure_id, r.data, r.metadata, r.version, r.status, r.created_by,
                r.updated_by, r.created_at, r.updated_at, r.deleted_at, r.expires_at, ${b.lang}::text AS lang,
                ${q}::text AS hq,
                (CASE WHEN r.search_vector @@ ${tsqueryText(b.terms, "A")}::tsquery THEN 3
                  WHEN r.search_vector @@ ${tsqueryText(b.terms, "AB")}::tsquery THEN 2
                  WHEN r.search_vector @@ ${tsqueryText(b.terms, "ABC")}::tsquery THEN 1 ELSE 0 END)
                  + ts_rank_cd(r.search_vector, ${q}::tsquery, 32) AS score
              FROM records r
              WHERE r.structure_id IN ${sql.in(b.ids)}
                AND r.search_vector @@ ${q}::tsquery AND r.deleted_at IS NULL
                AND (r.expires_at IS NULL OR r.expires_at > now())`
          })
          .reduce((a, b) => sql`${a} UNION ALL ${b}`)
        const rows = (yield* sql`WITH m AS (SELECT x.*, count(*) OVER () AS total FROM (${union}) x
            ORDER BY x.score DESC, x.id LIMIT ${request.limit} OFFSET ${request.offset})
          SELECT m.*, (SELECT jsonb_object_agg(f ->> 'name', ts_headline(m.lang::regconfig,
                translate(left(m.data ->> (f ->> 'name'), 100000), ${START_MARK + STOP_MARK}, ''), m.hq::tsquery, ${HEADLINE_OPTIONS}))
              FROM search_configs c, jsonb_array_elements(c.fields) f
              WHERE c.structure_id = m.structure_id AND jsonb_typeof(m.data -> (f ->> 'name')) = 'string') AS highlights
          FROM m ORDER BY m.score DESC, m.id`.pipe(Effect.orDie)) as Array<any>
        let total = rows.length > 0 ? Number(rows[0].total) : 0
        if (rows.length === 0 && request.offset > 0) {
          const counted = yield* sql`SELECT count(*) AS n FROM (${union}) x`.pipe(Effect.orDie)
          total = Number((counted[0] as any).n)
        }
        const now = new Date(yield* Clock.currentTimeMillis)
        const results: Array<SearchHit> = []
        for (const r of rows) {
          const structure = yield* Effect.option(structures.get(workspace, String(r.structure_id)))
          if (structure._tag === "None") continue
          const row = decodeRecordRow(r)
          const data = applyVirtual(structure.value, maskData(structure.value, row.data), now)
          const marks: Record<string, string> = {}
          const hl = typeof r.highlights === "string" ? JSON.parse(r.highlights) : (r.highlights ?? {})
          for (const [field, fragment] of Object.entries(hl as Record<string, unknown>)) {
            const html = typeof fragment === "string" ? highlightHtml(fragment) : undefined
            if (html !== undefined) marks[field] = html
          }
          results.push({
            structureId: row.structureId,
            recordSlug: structure.value.recordSlug,
            id: row.id,
            score: Math.round(Number(r.score) * 1e6) / 1e6,
            highlights: marks,
            record: toRecordB(row, data)
          })
        }
        return { results, total, tookMs: yield* took }
      })

      return { search }
    })
  )
}

/** A PostgreSQL text[] literal's elements (a driver that answers arrays as text). */
const parseArray = (text: string): Array<string> => {
  if (text === "{}" || text === "") return []
  const out: Array<string> = []
  const re = /"((?:[^"\\]|\\.)*)"|([^,{}]+)/g
  for (const m of text.slice(1, -1).matchAll(re)) out.push(m[1] !== undefined ? m[1].replace(/\\(.)/g, "$1") : m[2]!)
  return out
}
