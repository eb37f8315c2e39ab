// One record of the Records screen: the new-record form, and a record's page with its form (checked against the
// schema), delete and restore, its history with restore and revert, and its changelog.
import { useState } from "preact/hooks"
import { ApiError, type ErrorDetail } from "../lib/ApiClient.ts"
import { jsonDiff } from "../lib/Diff.ts"
import type { ChangelogEntry, DataRecord, RecordHistoryEntry, Structure } from "../lib/Types.ts"
import { useSession } from "../Session.tsx"
import {
  AsyncView,
  Button,
  Can,
  cellText,
  confirmed,
  ErrorBox,
  Field,
  href,
  Json,
  navigate,
  PageHead,
  TableHead,
  Tabs,
  useAction,
  useAsync,
  useToast,
  when
} from "../Ui.tsx"
import { RecordForm, writableData } from "./RecordForm.tsx"

export const NewRecord = ({ structure }: { structure: Structure }) => {
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

export const RecordDetail = ({ structure, id }: { structure: Structure; id: string }) => {
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
