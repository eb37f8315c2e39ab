// Records of one structure: a paged, sortable table filtered with the `filter` parameter or a query-language
// condition (POST /query), soft-deleted records with restore, a record's form (checked against the schema), its
// history with restore and revert, its changelog, and bulk import of a JSON or CSV file with a progress bar.
// A record's page and the new-record form are in RecordDetail.tsx, the import dialog in RecordImport.tsx.
import { useState } from "preact/hooks"
import type { DataRecord, RecordList, Structure, StructureList } from "../lib/Types.ts"
import { useSession } from "../Session.tsx"
import { SearchBox } from "./SearchScreen.tsx"
import { AsyncView, Button, cellText, ErrorBox, href, navigate, PageHead, Pager, useAction, useAsync, useToast, when } from "../Ui.tsx"
import { ImportDialog } from "./RecordImport.tsx"
import { NewRecord, RecordDetail } from "./RecordDetail.tsx"

export const RecordsScreen = ({ route }: { route: ReadonlyArray<string> }) => {
  const { api } = useSession()
  const [slug, id] = route
  const structures = useAsync(
    () => api.get<StructureList>("/structures", { limit: 500, "sort[field]": "name", "sort[direction]": "asc" }),
    []
  )
  return (
    <AsyncView
      state={structures.state}
      isEmpty={(d) => d.data.length === 0}
      empty={
        <>
          No structures yet: <a href={href("structures", "new")}>create one</a> first.
        </>
      }
    >
      {(list) => {
        const structure = list.data.find((s) => s.recordSlug === slug || s.id === slug)
        if (slug === undefined || structure === undefined) {
          return (
            <section>
              <PageHead title="Records" />
              {slug !== undefined && <ErrorBox error={new Error(`No structure ${slug}`)} />}
              <p>Pick a structure:</p>
              <ul class="picker">
                {list.data.map((s) => (
                  <li key={s.id}>
                    <a href={href("records", s.recordSlug)}>{s.name}</a> <code>{s.recordSlug}</code>
                  </li>
                ))}
              </ul>
            </section>
          )
        }
        if (id === "new") return <NewRecord structure={structure} />
        if (id !== undefined) return <RecordDetail key={id} structure={structure} id={id} />
        return <RecordTable key={structure.id} structure={structure} />
      }}
    </AsyncView>
  )
}

const bareField = (name: string) => (/^[A-Za-z_$][\w$-]*(\.[A-Za-z_$][\w$-]*)*$/.test(name) ? name : `"${name.replaceAll('"', "")}"`)

interface Sort {
  readonly field: string
  readonly desc: boolean
}

interface Page {
  readonly records: ReadonlyArray<DataRecord>
  readonly total: number | undefined
  readonly hasMore: boolean
  readonly ms: number
}

const RecordTable = ({ structure }: { structure: Structure }) => {
  const { api } = useSession()
  const toast = useToast()
  const [mode, setMode] = useState<"filter" | "query">("filter")
  const [text, setText] = useState("")
  const [applied, setApplied] = useState({ mode: "filter" as "filter" | "query", text: "" })
  const [sort, setSort] = useState<Sort>({ field: "createdAt", desc: true })
  const [page, setPage] = useState(1)
  const [pageSize, setPageSize] = useState(20)
  const [deleted, setDeleted] = useState(false)
  const [importing, setImporting] = useState(false)
  const restore = useAction()
  const columns = structure.properties.slice(0, 8).map((p) => p.name)

  const { state, reload } = useAsync(async (): Promise<Page> => {
    const start = performance.now()
    if (applied.mode === "query") {
      const where = applied.text.trim() === "" ? "" : ` WHERE ${applied.text}`
      const [rows, count] = await Promise.all([
        api.post<{ results: ReadonlyArray<DataRecord> }>("/query", {
          query: `FROM ${structure.recordSlug}${where} ORDER BY ${bareField(sort.field)} ${sort.desc ? "DESC" : "ASC"} LIMIT ${pageSize} OFFSET ${(page - 1) * pageSize}`,
          includeDeleted: deleted
        }),
        api.post<{ results: ReadonlyArray<{ n: number }> }>("/query", {
          query: `SELECT COUNT(*) AS n FROM ${structure.recordSlug}${where}`,
          includeDeleted: deleted
        })
      ])
      const total = count.results[0]?.n ?? 0
      return { records: rows.results, total, hasMore: page * pageSize < total, ms: performance.now() - start }
    }
    const list = await api.get<RecordList>("/records", {
      structureId: structure.recordSlug,
      filter: applied.text.trim() || undefined,
      sort: `${sort.desc ? "-" : ""}${sort.field}`,
      limit: pageSize,
      offset: (page - 1) * pageSize,
      includeCount: true,
      includeDeleted: deleted ? "true" : undefined
    })
    return { records: list.results, total: list.pagination.total, hasMore: list.pagination.hasMore, ms: performance.now() - start }
  }, [applied, sort, page, pageSize, deleted])

  const sortBy = (field: string) => {
    setSort((s) => (s.field === field ? { field, desc: !s.desc } : { field, desc: false }))
    setPage(1)
  }
  const th = (field: string, label = field) => (
    <th key={field}>
      <button type="button" class="sort" onClick={() => sortBy(field)} aria-label={`Sort by ${label}`}>
        {label}
        {sort.field === field ? (sort.desc ? " ▼" : " ▲") : ""}
      </button>
    </th>
  )

  return (
    <section>
      <PageHead
        title={
          <>
            {structure.name} <small>records</small>
          </>
        }
      >
        <a class="btn btn-plain" href={href("structures", structure.id)}>
          Structure
        </a>
        <Button perm="write:records" onClick={() => setImporting(true)}>
          Import…
        </Button>
        <Button perm="write:records" kind="primary" onClick={() => navigate("records", structure.recordSlug, "new")}>
          New record
        </Button>
      </PageHead>
      <SearchBox structure={structure.recordSlug} />
      <form
        class="toolbar"
        onSubmit={(e) => {
          e.preventDefault()
          setApplied({ mode, text })
          setPage(1)
        }}
      >
        <select aria-label="Filter syntax" value={mode} onChange={(e) => setMode(e.currentTarget.value as "filter" | "query")}>
          <option value="filter">filter parameter</option>
          <option value="query">query language (WHERE …)</option>
        </select>
        <input
          class="grow"
          name="record-filter"
          aria-label="Filter"
          placeholder={mode === "filter" ? "price:>100,category:[tech,home]" : "price > 100 AND category IN ('tech', 'home')"}
          value={text}
          onInput={(e) => setText(e.currentTarget.value)}
        />
        <button type="submit" class="btn btn-plain">
          Apply
        </button>
        <label class="check">
          <input
            type="checkbox"
            checked={deleted}
            onChange={(e) => {
              setDeleted(e.currentTarget.checked)
              setPage(1)
            }}
          />
          Include deleted
        </label>
        <select
          aria-label="Page size"
          value={String(pageSize)}
          onChange={(e) => {
            setPageSize(Number(e.currentTarget.value))
            setPage(1)
          }}
        >
          {[20, 50, 100].map((n) => (
            <option key={n} value={n}>
              {n} a page
            </option>
          ))}
        </select>
      </form>
      <ErrorBox error={restore.error} />
      <AsyncView
        state={state}
        isEmpty={(p) => p.records.length === 0 && page === 1}
        empty={applied.text !== "" ? "No record matches the filter." : "No records yet."}
      >
        {(p) => (
          <>
            <div class="table-wrap">
              <table class="table records">
                <thead>
                  <tr>
                    {columns.map((c) => th(c))}
                    {th("version")}
                    {th("updatedAt", "updated")}
                    <th />
                  </tr>
                </thead>
                <tbody>
                  {p.records.map((r) => (
                    <tr key={r.id} class={r.deletedAt ? "deleted" : ""}>
                      {columns.map((c, i) => (
                        <td key={c}>
                          {i === 0 ? (
                            <a href={href("records", structure.recordSlug, r.id)}>{cellText(r.data[c]) || "(empty)"}</a>
                          ) : (
                            cellText(r.data[c])
                          )}
                        </td>
                      ))}
                      <td>{r.version}</td>
                      <td>{when(r.updatedAt)}</td>
                      <td>
                        {columns.length === 0 && <a href={href("records", structure.recordSlug, r.id)}>open</a>}
                        {r.deletedAt && (
                          <Button
                            perm="write:records"
                            onClick={() =>
                              void restore.run(async () => {
                                await api.post(`/records/${r.id}/restore`, {})
                                toast("Record restored")
                                reload()
                              })
                            }
                          >
                            Restore
                          </Button>
                        )}
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
            <Pager page={page} pageSize={pageSize} total={p.total} hasMore={p.hasMore} onPage={setPage} />
            <p class="muted">{Math.round(p.ms)} ms</p>
          </>
        )}
      </AsyncView>
      {importing && (
        <ImportDialog
          structure={structure}
          onClose={() => {
            setImporting(false)
            reload()
          }}
        />
      )}
    </section>
  )
}
