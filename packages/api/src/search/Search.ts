/**
 * The search service's models (CONTRACT §8.2, docs/search.md).
 *
 * @since 0.1.0
 */
import { Schema } from "effect"

const optional = Schema.optional

/** Query of `GET /search`; every parameter is checked by the service (a bad one is a 400 naming it). @category models */
export const SearchQuery = {
  q: optional(Schema.String.annotate({ description: "The words to find (at most 1,000 characters)" })),
  structures: optional(Schema.String.annotate({ description: "Comma-separated structure slugs (or ids) to search; default all readable" })),
  limit: optional(Schema.String.annotate({ description: "Results per page: 1 to 100 (default 20)" })),
  offset: optional(Schema.String.annotate({ description: "Results to skip: 0 to 10,000 (default 0)" }))
}

/** One search hit. @category models */
export const SearchHit = Schema.Struct({
  structureId: Schema.String,
  recordSlug: Schema.String,
  id: Schema.String,
  score: Schema.Finite.annotate({ description: "Higher is better: the best field weight matched, plus ts_rank_cd in [0, 1)" }),
  highlights: Schema.Record(Schema.String, Schema.String).annotate({
    description: "Field -> fragment with the matched words in <mark>…</mark> (the rest HTML-escaped)"
  }),
  record: Schema.Record(Schema.String, Schema.Unknown).annotate({ description: "The record as generation B shows it (secrets masked)" })
}).annotate({ identifier: "SearchHit" })
/** @category models */
export type SearchHit = typeof SearchHit.Type

/** Answer of `GET /search`: best match first. @category models */
export const SearchResults = Schema.Struct({
  results: Schema.Array(SearchHit),
  total: Schema.Int,
  tookMs: Schema.Finite
}).annotate({ identifier: "SearchResults" })
/** @category models */
export type SearchResults = typeof SearchResults.Type
