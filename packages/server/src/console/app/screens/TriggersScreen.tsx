// Triggers of every type: on demand (execute, followed to its run), event-driven (event and structure), scheduled
// (interval, cron or once, previewed as the next five fire times computed in the browser by the server's own
// schedule module), HTTP (path and URL); params with encryption; pause and resume; versions; drafts with publish.
// Size: over 500 lines, kept whole: one screen; its list, per-type editor and dialogs share the screen state.
import { useEffect, useMemo, useState } from "preact/hooks"
import { jsonDiff } from "../lib/Diff.ts"
import { formatInZone, previewSchedule } from "../lib/SchedulePreview.ts"
import type { ComputeFunction, Draft, ExecutionType, JobQueued, StructureList, Trigger } from "../lib/Types.ts"
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
  JsonInput,
  navigate,
  PageHead,
  StatusBadge,
  TableHead,
  Tabs,
  useAction,
  useAsync,
  useToast,
  when
} from "../Ui.tsx"
import { DraftActions } from "./DraftActions.tsx"
import { FollowedRun, useFollowRun } from "./RunView.tsx"

const types: ReadonlyArray<readonly [ExecutionType, string]> = [
  ["on-demand", "On demand"],
  ["event-driven", "On a record event"],
  ["scheduled", "On a schedule"],
  ["http-trigger", "On an HTTP call"]
]

const events = [
  "record_created",
  "record_updated",
  "record_deleted",
  "record_restored",
  "record_reverted",
  "record_create_failed",
  "record_updated_failed",
  "record_deleted_failed"
]

const timeZones = (() => {
  try {
    return (Intl as unknown as { supportedValuesOf: (k: string) => ReadonlyArray<string> }).supportedValuesOf("timeZone")
  } catch {
    return ["UTC"]
  }
})()

export const TriggersScreen = ({ route }: { route: ReadonlyArray<string> }) => {
  if (route[0] === undefined) return <TriggerList />
  if (route[0] === "new") return <TriggerEditor key="new" />
  if (route[0] === "draft" && route[1] !== undefined) return <TriggerEditor key={`d${route[1]}`} draftId={route[1]} />
  return <TriggerEditor key={route[0]} id={route[0]} />
}

const useFunctions = () => {
  const { api } = useSession()
  return useAsync(() => api.get<{ functions: ReadonlyArray<ComputeFunction> }>("/compute-functions", { limit: 1000, sort: "name" }), [])
}

const describe = (t: Trigger) => {
  const m = t.triggerMetadata
  switch (t.executionType) {
    case "event-driven":
      return `${String(m.event)} on ${String(m.recordSlug)}`
    case "scheduled":
      return m.scheduleType === "cron"
        ? `cron ${String(m.cronExpression)} (${String(m.timezone ?? "UTC")})`
        : m.scheduleType === "once"
          ? `once at ${String(m.scheduledAt)}`
          : `every ${String(m.interval)} s`
    case "http-trigger":
      return `/${String(m.path ?? "").replace(/^\//, "")}`
    default:
      return ""
  }
}

const TriggerList = () => {
  const { api } = useSession()
  const toast = useToast()
  const { state, reload } = useAsync(() => api.get<{ triggers: ReadonlyArray<Trigger> }>("/function-triggers", { limit: 1000 }), [])
  const functions = useFunctions()
  const drafts = useAsync(() => api.get<{ drafts: ReadonlyArray<Draft> }>("/drafts", { resourceType: "function-triggers", limit: 100 }), [])
  const action = useAction()
  const names = new Map((functions.state.data?.functions ?? []).map((f) => [f.id, f.name]))
  const pauseResume = (t: Trigger) =>
    action.run(async () => {
      await api.patch(`/function-triggers/${t.id}/${t.paused ? "resume" : "pause"}`)
      toast(`${t.name} ${t.paused ? "resumed" : "paused"}`)
      reload()
    })
  return (
    <section>
      <PageHead title="Triggers">
        <Button perm="write:triggers" kind="primary" onClick={() => navigate("triggers", "new")}>
          New trigger
        </Button>
      </PageHead>
      <ErrorBox error={action.error} />
      <AsyncView state={state} isEmpty={(d) => d.triggers.length === 0} empty="No triggers yet.">
        {({ triggers }) => (
          <table class="table">
            <TableHead columns={["Name", "Type", "When", "Function", "Status", "Next run", ""]} />
            <tbody>
              {triggers.map((t) => (
                <tr key={t.id}>
                  <td>
                    <a href={href("triggers", t.id)}>{t.name}</a>
                    {t.isSystem && <span class="badge">system</span>}
                  </td>
                  <td>{t.executionType}</td>
                  <td>{describe(t)}</td>
                  <td>
                    {t.functionId === null ? (
                      ""
                    ) : (
                      <a href={href("functions", t.functionId)}>{names.get(t.functionId) ?? t.functionId.slice(0, 8)}</a>
                    )}
                  </td>
                  <td>
                    <StatusBadge status={t.status} />
                  </td>
                  <td>{when(t.nextRunAt)}</td>
                  <td>
                    {t.executionType === "scheduled" && t.status !== "completed" && (
                      <Button perm="write:triggers" onClick={() => void pauseResume(t)}>
                        {t.paused ? "Resume" : "Pause"}
                      </Button>
                    )}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
      </AsyncView>
      <h2>Drafts</h2>
      <AsyncView state={drafts.state} isEmpty={(d) => d.drafts.length === 0} empty="No trigger drafts.">
        {({ drafts: list }) => (
          <ul class="picker">
            {list.map((d) => (
              <li key={d.id}>
                <a href={href("triggers", "draft", d.id)}>{String(d.data.name ?? "(unnamed)")}</a> · {when(d.updatedAt)}
              </li>
            ))}
          </ul>
        )}
      </AsyncView>
    </section>
  )
}

interface Form {
  readonly name: string
  readonly description: string
  readonly functionId: string
  readonly executionType: ExecutionType
  readonly triggerMetadata: Record<string, unknown>
}

const emptyForm: Form = { name: "", description: "", functionId: "", executionType: "on-demand", triggerMetadata: {} }

const scheduleKeys = ["scheduleType", "interval", "cronExpression", "scheduledAt", "timezone"]

const SchedulePreviewPanel = ({ metadata, trigger }: { metadata: Record<string, unknown>; trigger: Trigger | undefined }) => {
  const [now, setNow] = useState(() => new Date())
  useEffect(() => {
    const timer = setInterval(() => setNow(new Date()), 30_000)
    return () => clearInterval(timer)
  }, [])
  const unchanged =
    trigger !== undefined && scheduleKeys.every((k) => JSON.stringify(trigger.triggerMetadata[k]) === JSON.stringify(metadata[k]))
  const next = unchanged && !trigger.paused && typeof trigger.nextRunAt === "string" ? new Date(trigger.nextRunAt) : undefined
  const preview = useMemo(() => previewSchedule(metadata, now, 5, next), [JSON.stringify(metadata), now.getTime(), next?.getTime()])
  const zone = typeof metadata.timezone === "string" && metadata.timezone !== "" ? metadata.timezone : "UTC"
  return (
    <div class="schedule-preview" data-testid="schedule-preview">
      <h4>Next fire times {unchanged && trigger?.paused ? "(after a resume now)" : next === undefined ? "(if saved now)" : ""}</h4>
      {preview.ok ? (
        preview.times.length === 0 ? (
          <p class="muted">None: it fired already.</p>
        ) : (
          <ol>
            {preview.times.map((t) => (
              <li key={t.getTime()}>
                {formatInZone(t, zone)}
                {zone !== "UTC" && <span class="muted"> · {t.toISOString()}</span>}
              </li>
            ))}
          </ol>
        )
      ) : (
        <ul class="error-details">
          {preview.problems.map((p, i) => (
            <li key={i}>
              <code>{p.field}</code>: {p.message}
            </li>
          ))}
        </ul>
      )}
    </div>
  )
}

const MetadataFields = ({
  form,
  setMeta,
  readOnly,
  structures
}: {
  form: Form
  setMeta: (key: string, value: unknown) => void
  readOnly: boolean
  structures: ReadonlyArray<string>
}) => {
  const m = form.triggerMetadata
  const str = (k: string) => (typeof m[k] === "string" ? (m[k] as string) : "")
  switch (form.executionType) {
    case "event-driven":
      return (
        <div class="grid">
          <Field label="Event">
            <select value={str("event")} disabled={readOnly} onChange={(e) => setMeta("event", e.currentTarget.value || undefined)}>
              <option value="">choose…</option>
              {events.map((e) => (
                <option key={e} value={e}>
                  {e}
                </option>
              ))}
            </select>
          </Field>
          <Field label="Structure">
            <select
              value={str("recordSlug")}
              disabled={readOnly}
              onChange={(e) => setMeta("recordSlug", e.currentTarget.value || undefined)}
            >
              <option value="">choose…</option>
              {structures.map((s) => (
                <option key={s} value={s}>
                  {s}
                </option>
              ))}
            </select>
          </Field>
        </div>
      )
    case "scheduled": {
      const kind = str("scheduleType") || "interval"
      return (
        <div class="grid">
          <Field label="Schedule">
            <select value={kind} disabled={readOnly} onChange={(e) => setMeta("scheduleType", e.currentTarget.value)}>
              <option value="interval">every N seconds</option>
              <option value="cron">cron (5 fields)</option>
              <option value="once">once</option>
            </select>
          </Field>
          {kind === "interval" && (
            <Field label="Interval (seconds)">
              <input
                name="interval"
                type="number"
                step="any"
                min="0"
                value={typeof m.interval === "number" ? String(m.interval) : ""}
                readOnly={readOnly}
                onInput={(e) => setMeta("interval", e.currentTarget.value === "" ? undefined : Number(e.currentTarget.value))}
              />
            </Field>
          )}
          {kind === "cron" && (
            <Field label="Cron expression" hint="minute hour day month weekday (Sunday 0), e.g. 0 9 * * 1-5">
              <input
                name="cronExpression"
                class="code"
                value={str("cronExpression")}
                readOnly={readOnly}
                onInput={(e) => setMeta("cronExpression", e.currentTarget.value)}
              />
            </Field>
          )}
          {kind === "once" && (
            <Field label="At" hint="ISO 8601; without an offset it is read in the time zone">
              <input
                name="scheduledAt"
                value={str("scheduledAt")}
                placeholder="2030-01-01T09:00:00"
                readOnly={readOnly}
                onInput={(e) => setMeta("scheduledAt", e.currentTarget.value)}
              />
            </Field>
          )}
          {kind !== "interval" && (
            <Field label="Time zone">
              <input
                name="timezone"
                list="time-zones"
                value={str("timezone")}
                placeholder="UTC"
                readOnly={readOnly}
                onInput={(e) => setMeta("timezone", e.currentTarget.value || undefined)}
              />
              <datalist id="time-zones">
                {timeZones.map((z) => (
                  <option key={z} value={z} />
                ))}
              </datalist>
            </Field>
          )}
        </div>
      )
    }
    case "http-trigger":
      return (
        <Field
          label="Path"
          hint="served at /workspace/{ws}/api/v1/http-triggers/<path>, any method, with a token holding execute:functions"
        >
          <input
            name="path"
            value={str("path")}
            placeholder="/orders/new"
            readOnly={readOnly}
            onInput={(e) => setMeta("path", e.currentTarget.value)}
          />
        </Field>
      )
    default:
      return null
  }
}

const TriggerEditor = ({ id, draftId }: { id?: string; draftId?: string }) => {
  const session = useSession()
  const { api } = session
  const toast = useToast()
  const readOnly = !session.can("write:triggers")
  const loaded = useAsync(async () => {
    if (id !== undefined) return { trigger: await api.get<Trigger>(`/function-triggers/${id}`), draft: undefined }
    if (draftId !== undefined) return { trigger: undefined, draft: await api.get<Draft>(`/drafts/${draftId}`) }
    return { trigger: undefined, draft: undefined }
  }, [id, draftId])
  const functions = useFunctions()
  const structures = useAsync(() => api.get<StructureList>("/structures", { limit: 500 }), [])
  const [form, setForm] = useState<Form>(emptyForm)
  const [tab, setTab] = useState<"trigger" | "versions">("trigger")
  const [execParams, setExecParams] = useState<unknown>({})
  const save = useAction()
  const exec = useAction()
  const follower = useFollowRun()

  useEffect(() => {
    if (loaded.state.status !== "ready") return
    const { trigger, draft } = loaded.state.data
    const source = trigger ?? (draft?.data as Partial<Trigger> | undefined)
    if (source !== undefined) {
      setForm({
        name: String(source.name ?? ""),
        description: String(source.description ?? ""),
        functionId: String(source.functionId ?? ""),
        executionType: (source.executionType ?? "on-demand") as ExecutionType,
        triggerMetadata: (source.triggerMetadata ?? {}) as Record<string, unknown>
      })
    }
  }, [loaded.state])

  if (loaded.state.status !== "ready") return <AsyncView state={loaded.state}>{() => null}</AsyncView>
  const { trigger, draft } = loaded.state.data
  const locked = readOnly || trigger?.isSystem === true

  const setMeta = (key: string, value: unknown) =>
    setForm((f) => {
      const triggerMetadata = { ...f.triggerMetadata }
      if (value === undefined || value === "") delete triggerMetadata[key]
      else triggerMetadata[key] = value
      return { ...f, triggerMetadata }
    })
  const body = {
    name: form.name.trim(),
    ...(form.description.trim() === "" ? {} : { description: form.description }),
    functionId: form.functionId,
    ...(trigger === undefined ? { executionType: form.executionType } : {}),
    triggerMetadata: form.triggerMetadata
  }

  return (
    <section>
      <PageHead
        title={
          trigger !== undefined ? (
            <>
              {trigger.name} <small>v{trigger.version}</small> <StatusBadge status={trigger.status} />
            </>
          ) : draft !== undefined ? (
            "Trigger draft"
          ) : (
            "New trigger"
          )
        }
      >
        <a class="btn btn-plain" href={href("triggers")}>
          All triggers
        </a>
        {trigger === undefined && (
          <DraftActions
            resource="function-triggers"
            screen="triggers"
            perm="write:triggers"
            noun="trigger"
            body={body}
            draft={draft}
            save={save}
          />
        )}
        {trigger !== undefined && !trigger.isSystem && (
          <>
            <Button
              perm="write:triggers"
              kind="primary"
              busy={save.busy}
              onClick={() =>
                void save.run(async () => {
                  const updated = await api.put<Trigger>(`/function-triggers/${trigger.id}`, body)
                  toast(`Saved as version ${updated.version}`)
                  loaded.reload()
                })
              }
            >
              Save
            </Button>
            {trigger.executionType === "scheduled" && trigger.status !== "completed" && (
              <Button
                perm="write:triggers"
                busy={save.busy}
                onClick={() =>
                  void save.run(async () => {
                    await api.patch(`/function-triggers/${trigger.id}/${trigger.paused ? "resume" : "pause"}`)
                    toast(trigger.paused ? "Resumed" : "Paused")
                    loaded.reload()
                  })
                }
              >
                {trigger.paused ? "Resume" : "Pause"}
              </Button>
            )}
            <Button
              perm="write:triggers"
              kind="danger"
              onClick={() =>
                confirmed(`Delete ${trigger.name}? Its runs stay.`) &&
                void save.run(async () => {
                  await api.del(`/function-triggers/${trigger.id}`)
                  toast("Trigger deleted")
                  navigate("triggers")
                })
              }
            >
              Delete
            </Button>
          </>
        )}
      </PageHead>
      {trigger?.isSystem === true && (
        <p class="notice">default-trigger runs test executions and POST /functions/{"{id}"}/execute; it cannot be changed.</p>
      )}
      <ErrorBox error={save.error} title="Not saved" />
      {trigger !== undefined && (
        <Tabs
          tabs={[
            ["trigger", "Trigger"],
            ["versions", "Versions"]
          ]}
          active={tab}
          onChange={setTab}
        />
      )}
      {tab === "trigger" && (
        <div class="editor">
          <div class="grid">
            <Field label="Name">
              <input
                name="trigger-name"
                value={form.name}
                readOnly={locked}
                onInput={(e) => setForm({ ...form, name: e.currentTarget.value })}
              />
            </Field>
            <Field label="Description">
              <input value={form.description} readOnly={locked} onInput={(e) => setForm({ ...form, description: e.currentTarget.value })} />
            </Field>
            <Field label="Function">
              <select
                name="trigger-function"
                value={form.functionId}
                disabled={locked}
                onChange={(e) => setForm({ ...form, functionId: e.currentTarget.value })}
              >
                <option value="">choose…</option>
                {(functions.state.data?.functions ?? []).map((f) => (
                  <option key={f.id} value={f.id}>
                    {f.name}
                  </option>
                ))}
              </select>
            </Field>
            <Field label="Type" hint={trigger === undefined ? undefined : "fixed once created"}>
              <select
                name="trigger-type"
                value={form.executionType}
                disabled={locked || trigger !== undefined}
                onChange={(e) =>
                  setForm({
                    ...form,
                    executionType: e.currentTarget.value as ExecutionType,
                    triggerMetadata: form.triggerMetadata.params === undefined ? {} : { params: form.triggerMetadata.params }
                  })
                }
              >
                {types.map(([t, label]) => (
                  <option key={t} value={t}>
                    {label}
                  </option>
                ))}
              </select>
            </Field>
          </div>
          <MetadataFields
            form={form}
            setMeta={setMeta}
            readOnly={locked}
            structures={(structures.state.data?.data ?? []).map((s) => s.recordSlug)}
          />
          {form.executionType === "scheduled" && <SchedulePreviewPanel metadata={form.triggerMetadata} trigger={trigger} />}
          {form.executionType === "http-trigger" && trigger?.url && (
            <p>
              URL: <code>{trigger.url}</code>
            </p>
          )}
          <JsonInput
            label="Params (triggerParams). Write {&quot;value&quot;: …, &quot;encrypt&quot;: true} to store a value encrypted"
            rows={4}
            value={form.triggerMetadata.params}
            readOnly={locked}
            onChange={(v) => setMeta("params", v)}
          />
          {trigger !== undefined && trigger.executionType === "on-demand" && !trigger.isSystem && (
            <Can perm="execute:functions">
              <div class="run-box">
                <h3>Execute</h3>
                <JsonInput label="executionParams" rows={3} value={execParams} onChange={setExecParams} />
                <Button
                  perm="execute:functions"
                  kind="primary"
                  busy={exec.busy}
                  onClick={() =>
                    void exec.run(async () => {
                      const queued = await api.post<JobQueued>(`/function-triggers/${trigger.id}/execute`, execParams ?? {})
                      follower.follow(queued.jobId)
                    })
                  }
                >
                  Execute
                </Button>
                <ErrorBox error={exec.error} />
                <FollowedRun follower={follower} />
              </div>
            </Can>
          )}
          {trigger !== undefined && (
            <p class="muted">
              <a href={`${href("runs")}?triggerId=${trigger.id}`}>Runs of this trigger</a>
            </p>
          )}
        </div>
      )}
      {tab === "versions" && trigger !== undefined && <TriggerVersions trigger={trigger} />}
    </section>
  )
}

interface TriggerVersion {
  readonly version: number
  readonly name: string
  readonly functionId: string | null
  readonly triggerMetadata: Record<string, unknown>
  readonly createdAt: string
}

const TriggerVersions = ({ trigger }: { trigger: Trigger }) => {
  const { api } = useSession()
  const { state } = useAsync(
    () => api.get<{ versions: ReadonlyArray<TriggerVersion> }>(`/function-triggers/${trigger.id}/versions`),
    [trigger.id, trigger.version]
  )
  return (
    <AsyncView state={state} isEmpty={(d) => d.versions.length === 0} empty="No versions.">
      {({ versions }) => (
        <table class="table">
          <TableHead columns={["Version", "Saved", "Changes from the one before"]} />
          <tbody>
            {versions.map((v, i) => {
              const before = versions[i + 1]
              const changes = before === undefined ? [] : jsonDiff(before, v, ["version", "createdAt", "createdBy"])
              return (
                <tr key={v.version}>
                  <td>{v.version}</td>
                  <td>{when(v.createdAt)}</td>
                  <td>
                    {before === undefined ? (
                      "created"
                    ) : (
                      <ul class="changes">
                        {changes.map((c, k) => (
                          <li key={k}>
                            <code>{c.path}</code>: {cellText(c.before)} → {cellText(c.after)}
                          </li>
                        ))}
                      </ul>
                    )}
                  </td>
                </tr>
              )
            })}
          </tbody>
        </table>
      )}
    </AsyncView>
  )
}
