// Records of one structure: a paged, sortable table filtered with the `filter` parameter or a query-language
// condition (POST /query), soft-deleted records with restore, a record's form (checked against the schema), its
// history with restore and revert, its changelog, and bulk import of a JSON or CSV file with a progress bar.
// Size: over 500 lines, kept whole: one screen; its list, editor, import and dialogs share the screen state.
import { useState } from "preact/hooks"
import { ApiError, type ErrorDetail } from "../lib/ApiClient.ts"
import { jsonDiff } from "../lib/Diff.ts"
import { chunks, parseImport, type ParsedImport } from "../lib/ImportFile.ts"
import type { BulkResult, ChangelogEntry, DataRecord, RecordHistoryEntry, RecordList, Structure, StructureList } from "../lib/Types.ts"
import { useSession } from "../Session.tsx"
import { SearchBox } from "./SearchScreen.tsx"
import {
  AsyncView,
  Button,
  Can,
  cellText,
  confirmed,
  Empty,
  ErrorBox,
  Field,
  href,
  Json,
  Modal,
  navigate,
  PageHead,
  Pager,
  TableHead,
  Tabs,
  useAction,
  useAsync,
  useToast,
  when
} from "../Ui.tsx"
import { RecordForm, writableData } from "./RecordForm.tsx"

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

const NewRecord = ({ structure }: { structure: Structure }) => {
  const { api } = useSession()
  const toast = useToast()
  const [data, setData] = useState<Record<string, unknown>>({})
  const save = useAction()
  const details = save.error instanceof ApiError ? save.error.details : []
  return (
    <section>
      <PageHead title={<>New {structure.name} record</>}>
        <a class="btn btn-plain" href={href("records", structure.recordSlug)}>
          Cancel
        </a>
        <Button
          perm="write:records"
          kind="primary"
          busy={save.busy}
          onClick={() =>
            void save.run(async () => {
              const created = await api.post<DataRecord>("/records", {
                structureId: structure.recordSlug,
                data: writableData(structure, data)
              })
              toast("Record created")
              navigate("records", structure.recordSlug, created.id)
            })
          }
        >
          Create record
        </Button>
      </PageHead>
      <ErrorBox error={save.error} title="Not saved" />
      <RecordForm structure={structure} data={data} onChange={setData} readOnly={false} serverDetails={details} />
    </section>
  )
}

const RecordDetail = ({ structure, id }: { structure: Structure; id: string }) => {
  const session = useSession()
  const { api } = session
  const toast = useToast()
  const { state, reload } = useAsync(() => api.get<DataRecord>(`/records/${id}`, { includeDeleted: "true" }), [id])
  const [tab, setTab] = useState<"data" | "history" | "changelog" | "json">("data")
  const [edited, setEdited] = useState<Record<string, unknown> | undefined>(undefined)
  const action = useAction()
  const readOnly = !session.can("write:records")
  return (
    <AsyncView state={state}>
      {(record) => {
        const deleted = record.deletedAt !== undefined && record.deletedAt !== null
        const data = edited ?? record.data
        const details: ReadonlyArray<ErrorDetail> = action.error instanceof ApiError ? action.error.details : []
        const done = (message: string) => {
          toast(message)
          setEdited(undefined)
          reload()
        }
        return (
          <section>
            <PageHead
              title={
                <>
                  {structure.name}{" "}
                  <small>
                    <code>{record.id}</code> · v{record.version}
                  </small>
                </>
              }
            >
              <a class="btn btn-plain" href={href("records", structure.recordSlug)}>
                All records
              </a>
              {!deleted && (
                <Button
                  perm="write:records"
                  kind="primary"
                  busy={action.busy}
                  disabled={edited === undefined}
                  onClick={() =>
                    void action.run(async () => {
                      const saved = await api.put<DataRecord>(`/records/${record.id}`, {
                        data: writableData(structure, data),
                        expectedVersion: record.version
                      })
                      done(`Saved as version ${saved.version}`)
                    })
                  }
                >
                  Save
                </Button>
              )}
              {!deleted && (
                <Button
                  perm="write:records"
                  onClick={() =>
                    confirmed("Write the previous version's data as a new version?") &&
                    void action.run(async () => {
                      const r = await api.post<DataRecord>(`/records/${record.id}/revert`, {})
                      done(`Reverted: version ${r.version}`)
                    })
                  }
                >
                  Revert
                </Button>
              )}
              {deleted && (
                <Button
                  perm="write:records"
                  kind="primary"
                  onClick={() =>
                    void action.run(async () => {
                      await api.post(`/records/${record.id}/restore`, {})
                      done("Record restored")
                    })
                  }
                >
                  Restore
                </Button>
              )}
              {!deleted && (
                <Button
                  perm="write:records"
                  kind="danger"
                  onClick={() =>
                    confirmed("Delete this record? It can be restored until it is deleted permanently.") &&
                    void action.run(async () => {
                      await api.del(`/records/${record.id}`)
                      done("Record deleted")
                    })
                  }
                >
                  Delete
                </Button>
              )}
              <Button
                perm="write:records"
                kind="danger"
                onClick={() =>
                  confirmed("Delete this record permanently, with its versions and changelog? This cannot be undone.") &&
                  void action.run(async () => {
                    await api.del(`/records/${record.id}`, { permanent: "true" })
                    toast("Record deleted permanently")
                    navigate("records", structure.recordSlug)
                  })
                }
              >
                Delete permanently
              </Button>
            </PageHead>
            {deleted && <p class="notice">Deleted {when(record.deletedAt)}: hidden from reads and lists until restored.</p>}
            <ErrorBox error={action.error} title="Not done" />
            <Tabs
              tabs={[
                ["data", "Data"],
                ["history", "History"],
                ["changelog", "Changelog"],
                ["json", "JSON"]
              ]}
              active={tab}
              onChange={setTab}
            />
            {tab === "data" && (
              <>
                <RecordForm
                  key={`${record.id}-${record.version}`}
                  structure={structure}
                  data={data}
                  onChange={setEdited}
                  readOnly={readOnly || deleted}
                  serverDetails={details}
                />
                <p class="muted">
                  Created {when(record.createdAt)} · updated {when(record.updatedAt)}
                  {record.expiresAt ? ` · expires ${when(record.expiresAt)}` : ""}
                </p>
              </>
            )}
            {tab === "history" && <History record={record} onRestored={(v) => done(`Version ${v} restored`)} />}
            {tab === "changelog" && <Changelog id={record.id} version={record.version} />}
            {tab === "json" && <Json value={record} />}
          </section>
        )
      }}
    </AsyncView>
  )
}

const History = ({ record, onRestored }: { record: DataRecord; onRestored: (version: number) => void }) => {
  const { api } = useSession()
  const restore = useAction()
  const [reason, setReason] = useState("")
  const { state } = useAsync(
    () => api.get<{ versions: ReadonlyArray<RecordHistoryEntry> }>(`/records/${record.id}/history`),
    [record.id, record.version]
  )
  return (
    <AsyncView state={state} isEmpty={(h) => h.versions.length === 0} empty="No history.">
      {({ versions }) => (
        <div>
          <ErrorBox error={restore.error} />
          <Can perm="write:records">
            <Field label="Reason (kept in the changelog)">
              <input value={reason} onInput={(e) => setReason(e.currentTarget.value)} />
            </Field>
          </Can>
          <table class="table">
            <TableHead columns={["Version", "When", "By", "Changes", ""]} />
            <tbody>
              {versions.map((v, i) => {
                const previous = versions[i + 1]
                const changes =
                  Object.keys(v.changes ?? {}).length > 0
                    ? Object.entries(v.changes).map(([f, c]) => `${f}: ${cellText(c.old)} → ${cellText(c.new)}`)
                    : jsonDiff(previous?.data, v.data).map((c) => `${c.path}: ${cellText(c.before)} → ${cellText(c.after)}`)
                return (
                  <tr key={v.version}>
                    <td>
                      {v.version}
                      {v.restoredFrom ? ` (from v${v.restoredFrom})` : ""}
                    </td>
                    <td>{when(v.updatedAt)}</td>
                    <td>{v.updatedBy ?? ""}</td>
                    <td>
                      <ul class="changes">
                        {changes.slice(0, 8).map((c, k) => (
                          <li key={k}>{c}</li>
                        ))}
                      </ul>
                    </td>
                    <td>
                      {v.version !== record.version && !record.deletedAt && (
                        <Button
                          perm="write:records"
                          busy={restore.busy}
                          onClick={() =>
                            void restore.run(async () => {
                              await api.post(`/records/${record.id}/restore`, {
                                version: v.version,
                                ...(reason.trim() === "" ? {} : { reason })
                              })
                              onRestored(v.version)
                            })
                          }
                        >
                          Restore this version
                        </Button>
                      )}
                    </td>
                  </tr>
                )
              })}
            </tbody>
          </table>
        </div>
      )}
    </AsyncView>
  )
}

const Changelog = ({ id, version }: { id: string; version: number }) => {
  const { api } = useSession()
  const { state } = useAsync(
    () => api.get<{ entries: ReadonlyArray<ChangelogEntry> }>(`/records/${id}/changelog`, { limit: 200 }),
    [id, version]
  )
  return (
    <AsyncView state={state} isEmpty={(c) => c.entries.length === 0} empty="No changelog entries.">
      {({ entries }) => (
        <table class="table">
          <TableHead columns={["When", "Action", "Who", "Changes", "Reason"]} />
          <tbody>
            {entries.map((e) => (
              <tr key={e.id}>
                <td>{when(e.timestamp)}</td>
                <td>{e.action}</td>
                <td>{e.userName ?? e.userId ?? ""}</td>
                <td>
                  <ul class="changes">
                    {Object.values(e.changes ?? {}).map((c) => (
                      <li key={c.field}>
                        <code>{c.field}</code>: {cellText(c.oldValue)} → {cellText(c.newValue)}
                      </li>
                    ))}
                  </ul>
                </td>
                <td>{typeof e.metadata?.reason === "string" ? e.metadata.reason : ""}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </AsyncView>
  )
}

interface ImportProgress {
  readonly done: number
  readonly created: number
  readonly failed: number
  readonly errors: ReadonlyArray<string>
  readonly finished: boolean
  readonly stopped?: string
}

const chunkSize = 100

const ImportDialog = ({ structure, onClose }: { structure: Structure; onClose: () => void }) => {
  const { api } = useSession()
  const [parsed, setParsed] = useState<(ParsedImport & { readonly name: string }) | undefined>(undefined)
  const [progress, setProgress] = useState<ImportProgress | undefined>(undefined)
  const [cancel] = useState(() => ({ requested: false }))
  const [atomic, setAtomic] = useState(false)

  const start = async (records: ReadonlyArray<Record<string, unknown>>) => {
    cancel.requested = false
    let state: ImportProgress = { done: 0, created: 0, failed: 0, errors: [], finished: false }
    setProgress(state)
    const parts = chunks(records, chunkSize)
    for (let c = 0; c < parts.length; c++) {
      if (cancel.requested) {
        state = { ...state, finished: true, stopped: "Stopped: the rest was not sent." }
        break
      }
      const part = parts[c]!
      const offset = c * chunkSize
      const row = (index: number) => offset + index + 1
      try {
        const answer = await api.post<BulkResult>("/records/bulk", {
          structureId: structure.recordSlug,
          records: part.map((data) => ({ data })),
          options: { returnRecords: false, atomic }
        })
        const errors = (answer.errors ?? []).map(
          (e) => `item ${row(e.index)}: ${e.message}${(e.details ?? []).map((d) => ` · ${d.field}: ${d.message}`).join("")}`
        )
        state = {
          ...state,
          done: state.done + part.length,
          created: state.created + (answer.created ?? part.length - errors.length),
          failed: state.failed + (answer.failed ?? errors.length),
          errors: [...state.errors, ...errors]
        }
      } catch (e) {
        if (!(e instanceof ApiError) || e.status === 0 || e.status === 401 || e.status === 413 || e.status === 429) {
          state = { ...state, finished: true, stopped: `Stopped at item ${offset + 1}: ${e instanceof Error ? e.message : String(e)}` }
          break
        }
        // every item of the chunk failed (or, atomic, one did): nothing of it was written
        const errors =
          e.details.length > 0
            ? e.details.map((d) => {
                const m = /^records\[(\d+)\]\.?(.*)$/.exec(d.field)
                return m === null ? `${d.field}: ${d.message}` : `item ${row(Number(m[1]))}: ${m[2] ? `${m[2]}: ` : ""}${d.message}`
              })
            : [`items ${offset + 1}–${offset + part.length}: ${e.message}`]
        state = { ...state, done: state.done + part.length, failed: state.failed + part.length, errors: [...state.errors, ...errors] }
      }
      setProgress(state)
    }
    setProgress({ ...state, finished: true })
  }

  return (
    <Modal title={`Import into ${structure.name}`} onClose={onClose} wide>
      {progress === undefined && (
        <>
          <p>
            A JSON file (an array of objects, <code>{"{records: […]}"}</code> or one object per line) or a CSV file whose first row names
            the fields. CSV cells are typed by the structure's properties. Records are sent {chunkSize} at a time to{" "}
            <code>POST /records/bulk</code>.
          </p>
          <input
            type="file"
            name="import-file"
            accept=".json,.jsonl,.ndjson,.csv,application/json,text/csv"
            onChange={(e) => {
              const file = e.currentTarget.files?.[0]
              if (file === undefined) return
              void file.text().then((text) => setParsed({ ...parseImport(text, file.name, structure.properties), name: file.name }))
            }}
          />
          {parsed !== undefined && (
            <div class="import-preview">
              <p>
                <strong>{parsed.records.length}</strong> record{parsed.records.length === 1 ? "" : "s"} read from {parsed.name}
                {parsed.problems.length > 0 && `, ${parsed.problems.length} unreadable`}
              </p>
              {parsed.problems.length > 0 && (
                <ul class="error-details">
                  {parsed.problems.slice(0, 20).map((p, i) => (
                    <li key={i}>{p}</li>
                  ))}
                </ul>
              )}
              {parsed.records[0] !== undefined && <Json value={parsed.records[0]} />}
              <label class="check">
                <input type="checkbox" checked={atomic} onChange={(e) => setAtomic(e.currentTarget.checked)} />
                All or nothing per batch of {chunkSize} (atomic)
              </label>
              <Button kind="primary" perm="write:records" disabled={parsed.records.length === 0} onClick={() => void start(parsed.records)}>
                Import {parsed.records.length} records
              </Button>
            </div>
          )}
        </>
      )}
      {progress !== undefined && parsed !== undefined && (
        <div class="import-progress">
          <progress max={parsed.records.length} value={progress.done} aria-label="Import progress" />
          <p data-testid="import-status">
            {progress.done} of {parsed.records.length} sent · {progress.created} created · {progress.failed} failed
            {progress.finished ? " · finished" : ""}
          </p>
          {progress.stopped !== undefined && <ErrorBox error={new Error(progress.stopped)} />}
          {progress.errors.length > 0 && (
            <ul class="error-details">
              {progress.errors.slice(0, 100).map((e, i) => (
                <li key={i}>{e}</li>
              ))}
              {progress.errors.length > 100 && <li>… and {progress.errors.length - 100} more</li>}
            </ul>
          )}
          {progress.finished ? (
            <Button kind="primary" onClick={onClose}>
              Close
            </Button>
          ) : (
            <Button kind="danger" onClick={() => (cancel.requested = true)}>
              Stop
            </Button>
          )}
        </div>
      )}
      {parsed !== undefined && parsed.records.length === 0 && progress === undefined && <Empty>Nothing to import.</Empty>}
    </Modal>
  )
}
