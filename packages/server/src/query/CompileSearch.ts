// SEARCH('text') IN (fields) and the lists' `search=` / `searchFields=`: one set of rules with GET /search (words cut
// by lib/SearchWords, every word required, the last also as a prefix, normalized by the structure's search language;
// no typo tolerance here). Without named fields the structure's search index answers (`records.search_vector`, the
// fields GET /search searches, on its GIN index); named fields are matched one by one. Terms shorter than
// MIN_FULL_TEXT_LENGTH are case-insensitive substrings, as full text does nothing useful with them.
import * as Ast from "./Ast.ts"
import { type CompileContext, type Fragment, orAll, resolve, type Sql, TRUE, textExpr } from "./CompileFields.ts"
import { prefixQueryText, wordsOf } from "../lib/SearchWords.ts"

/** Terms shorter than this are matched by substring only. */
export const MIN_FULL_TEXT_LENGTH = 3

export const escapeLike = (s: string): string => s.replace(/[\\%_]/g, "\\$&")

export const compileSearch = (sql: Sql, e: Extract<Ast.Expr, { _tag: "Search" }>, ctx: CompileContext): Fragment => {
  const term = e.text.trim()
  if (term === "") return TRUE
  const words = wordsOf(term)
  const refs =
    e.fields.length > 0
      ? e.fields
      : ctx.defaultSearchField !== undefined && ctx.defaultSearchField !== ""
        ? [Ast.fieldRef(ctx.defaultSearchField)]
        : []
  if (term.length < MIN_FULL_TEXT_LENGTH || words.length === 0) {
    const pattern = `%${escapeLike(term)}%`
    if (refs.length === 0)
      return sql`(EXISTS (SELECT 1 FROM jsonb_path_query(r.data, 'strict $.**') AS q_s(v)
        WHERE jsonb_typeof(q_s.v) = 'string' AND (q_s.v #>> '{}') ILIKE ${pattern}::text))`
    return orAll(
      sql,
      refs.map((ref) => sql`(${textExpr(sql, resolve(ref, ctx))} ILIKE ${pattern}::text)`)
    )
  }
  const language = ctx.search?.language ?? "simple"
  const query = sql`to_tsquery(${language}::text::regconfig, ${prefixQueryText(words)}::text)`
  if (e.fields.length === 0 && ctx.search !== undefined && ctx.search.indexed) return sql`(r.search_vector @@ ${query})`
  if (refs.length === 0) return sql`(jsonb_to_tsvector(${language}::text::regconfig, r.data, '["string"]') @@ ${query})`
  return orAll(
    sql,
    refs.map((ref) => sql`(to_tsvector(${language}::text::regconfig, coalesce(${textExpr(sql, resolve(ref, ctx))}, '')) @@ ${query})`)
  )
}
