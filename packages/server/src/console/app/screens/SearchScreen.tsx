// Search: the global search across the workspace's structures (GET /search of the search service, docs/search.md),
// or one structure's records (#/search/<slug>, the records screen's search box). The words are in the hash
// (`?q=`), so a search can be bookmarked. Highlights come HTML-escaped from the server with `<mark>` around matches.
import { useState } from "preact/hooks"
import { useSession } from "../Session.tsx"
import { AsyncView, hashQuery, href, PageHead, Pager, TableHead, useAsync } from "../Ui.tsx"

interface Hit {
  readonly structureId: string
  readonly recordSlug: string
  readonly id: string
  readonly score: number
  readonly highlights: Readonly<Record<string, string>>
}

interface Results {
  readonly results: ReadonlyArray<Hit>
  readonly total: number
  readonly tookMs: number
}

const PAGE = 20

/** A search box that opens the search screen (for one structure when `structure` is given). */
export const SearchBox = ({ structure, initial = "" }: { structure?: string | undefined; initial?: string }) => {
  const [text, setText] = useState(initial)
  return (
    <form
      class="toolbar"
      onSubmit={(e) => {
        e.preventDefault()
        if (text.trim() === "") return
        window.location.hash = `${structure === undefined ? href("search") : href("search", structure)}?q=${encodeURIComponent(text)}`
      }}
    >
      <input
        type="search"
        aria-label="Search records"
        placeholder={structure === undefined ? "Search every structure…" : "Search these records…"}
        value={text}
        onInput={(e) => setText(e.currentTarget.value)}
      />
      <button type="submit" class="btn btn-plain">
        Search
      </button>
    </form>
  )
}

export const SearchScreen = ({ route }: { route: ReadonlyArray<string> }) => {
  const structure = route[0]
  const q = hashQuery().get("q") ?? ""
  return (
    <section>
      <PageHead title={structure === undefined ? "Search" : `Search ${structure}`} />
      <SearchBox key={`${structure}/${q}`} structure={structure} initial={q} />
      {q.trim() !== "" && <ResultList key={`${structure}/${q}`} q={q} structure={structure} />}
    </section>
  )
}

const ResultList = ({ q, structure }: { q: string; structure: string | undefined }) => {
  const { api } = useSession()
  const [page, setPage] = useState(1)
  const { state } = useAsync(
    () =>
      api.call<Results>("GET", `/search/workspace/${encodeURIComponent(api.workspace)}/api/v1/search`, {
        query: { q, limit: PAGE, offset: (page - 1) * PAGE, ...(structure === undefined ? {} : { structures: structure }) }
      }),
    [q, structure, page]
  )
  return (
    <AsyncView state={state} isEmpty={(r) => r.total === 0} empty="No record matches every word.">
      {(r) => (
        <>
          <p class="muted">
            {r.total} match{r.total === 1 ? "" : "es"} in {r.tookMs} ms
          </p>
          <table>
            <TableHead columns={["Record", "Matches", "Score"]} />
            <tbody>
              {r.results.map((h) => (
                <tr key={h.id}>
                  <td>
                    <a href={href("records", h.recordSlug, h.id)}>
                      <code>{h.recordSlug}</code> {h.id.slice(0, 8)}
                    </a>
                  </td>
                  <td>
                    {Object.entries(h.highlights).map(([field, html]) => (
                      <div key={field}>
                        <small>{field}</small> {/* the server escapes the text and adds only <mark> (search/SearchText.ts highlightHtml) */}
                        <span dangerouslySetInnerHTML={{ __html: html }} />
                      </div>
                    ))}
                  </td>
                  <td>{h.score.toFixed(3)}</td>
                </tr>
              ))}
            </tbody>
          </table>
          <Pager page={page} pageSize={PAGE} total={r.total} onPage={setPage} />
        </>
      )}
    </AsyncView>
  )
}
