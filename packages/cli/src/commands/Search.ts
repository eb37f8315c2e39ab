/**
 * `troupe search <words>`: full-text search over the workspace's records (GET /search of
 * `/search/workspace/{ws}/api/v1`, docs/search.md): one line per hit, best first, the matches in [brackets].
 *
 * @since 0.1.0
 */
import { Effect } from "effect"
import { Argument, Command, Flag } from "effect/cli"
import { orUndefined, result } from "../Output.ts"
import { TroupeApi } from "../TroupeApi.ts"

interface Hit {
  readonly recordSlug: string
  readonly id: string
  readonly score: number
  readonly highlights: Record<string, string>
}

const unmark = (html: string) =>
  html
    .replace(/<mark>/g, "[")
    .replace(/<\/mark>/g, "]")
    .replace(/&lt;/g, "<")
    .replace(/&gt;/g, ">")
    .replace(/&quot;/g, '"')
    .replace(/&#39;/g, "'")
    .replace(/&amp;/g, "&")

/** @category commands */
export const search = Command.make(
  "search",
  {
    q: Argument.String("words").pipe(Argument.withDescription("What to find (quote several words)")),
    structure: Flag.String("structure").pipe(Flag.withDescription("Only this structure (slug or id; repeatable)"), Flag.atLeast(0)),
    limit: Flag.Int("limit").pipe(Flag.withDescription("Results (1-100, default 20)"), Flag.optional),
    offset: Flag.Int("offset").pipe(Flag.withDescription("Results to skip"), Flag.optional)
  },
  (input) =>
    Effect.gen(function* () {
      const api = yield* TroupeApi
      const limit = orUndefined(input.limit)
      const offset = orUndefined(input.offset)
      const found = (yield* api.call("GET", `/search/workspace/${encodeURIComponent(api.session.workspace)}/api/v1/search`, {
        root: true,
        query: {
          q: input.q,
          ...(input.structure.length > 0 ? { structures: input.structure.join(",") } : {}),
          ...(limit === undefined ? {} : { limit }),
          ...(offset === undefined ? {} : { offset })
        }
      })) as { results: ReadonlyArray<Hit>; total: number; tookMs: number }
      return yield* result(found, (f) =>
        f.results
          .map((h) => {
            const marks = Object.entries(h.highlights).map(([field, html]) => `${field}: ${unmark(html)}`)
            return `${h.recordSlug}/${h.id}  ${h.score.toFixed(3)}${marks.length > 0 ? `  ${marks.join("  ")}` : ""}`
          })
          .concat([`${f.total} match(es) in ${f.tookMs} ms`])
      )
    })
).pipe(
  Command.withDescription("Search the workspace's records (every word, the last as a prefix, typos tolerated)"),
  Command.provide(TroupeApi.layer)
)
