// GET /search (CONTRACT §8.2, docs/search.md) on the index of migration 0011:
// 1. the scope: the workspace's live structures (or those `structures=` names) with their search language, from the
//    node's cache of structures when names are given;
// 2. the words (SearchText.wordsOf), normalized by each language in scope (to_tsvector: stemming, stop words), and
// 3. typo candidates from the lexicon's trigram index, checked by edit distance within each word's budget; both
//    remembered per node (search/QueryWords.ts), so a repeated query runs the page statement alone;
// 4. one statement per page: per language, the records whose search_vector matches, ranked by the heaviest field
//    class holding every word (A..D) then ts_rank_cd, counted, with ts_headline fragments of the page's rows.
import { type BadRequest, badRequest, details } from "@troupe/api/Errors"
import type { SearchHit, SearchResults } from "@troupe/api/search/Search"
import { Clock, Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { decodeRecordRow, toRecordB } from "../query/RecordRow.ts"
import type { Structure } from "@troupe/api/structures/Structure"
import { isUuid } from "../lib/Uuid.ts"
import { searchLanguageOf } from "../structures/SearchSettings.ts"
import { StructureService } from "../structures/StructureService.ts"
import { maskData } from "../structures/SecretPaths.ts"
import { applyVirtual } from "../structures/Validator.ts"
import { makeQueryWords } from "./QueryWords.ts"
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

      /** The live structures searched, by slug or id (from the node's cache); unknown names are a 400 naming them. */
      const scopeOf = (workspace: string, named: ReadonlyArray<string> | undefined) =>
        Effect.gen(function* () {
          const scopeRow = (s: Structure): ScopeRow => ({ id: s.id, slug: s.recordSlug, lang: searchLanguageOf(s) })
          if (named === undefined) return (yield* structures.all(workspace)).map(scopeRow)
          const found = yield* Effect.forEach(named, (n) =>
            Effect.option(structures.resolve(workspace, isUuid(n.toLowerCase()) ? n.toLowerCase() : n))
          )
          const unknown = named.filter((_, i) => found[i]!._tag === "None")
          if (unknown.length > 0) return yield* invalid("structures", `unknown structures: ${unknown.join(", ")}`)
          const byId = new Map<string, ScopeRow>()
          for (const f of found) if (f._tag === "Some") byId.set(f.value.id, scopeRow(f.value))
          return [...byId.values()]
        })

      const { normalize, candidates } = makeQueryWords(sql)

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
