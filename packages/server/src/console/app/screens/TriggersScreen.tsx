// Triggers of every type: on demand (execute, followed to its run), event-driven (event and structure), scheduled
// (interval, cron or once, previewed as the next five fire times computed in the browser by the server's own
// schedule module), HTTP (path and URL); params with encryption; pause and resume; versions; drafts with publish.
// The per-type metadata fields and schedule preview are in TriggerMetadata.tsx, the Versions tab in TriggerVersions.tsx.
import { useEffect, useState } from "preact/hooks"
import type { ComputeFunction, Draft, ExecutionType, JobQueued, StructureList, Trigger } from "../lib/Types.ts"
import { useSession } from "../Session.tsx"
import {
  AsyncView,
  Button,
  Can,
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
import { TriggerVersions } from "./TriggerVersions.tsx"
import { type Form, MetadataFields, SchedulePreviewPanel } from "./TriggerMetadata.tsx"

const types: ReadonlyArray<readonly [ExecutionType, string]> = [
  ["on-demand", "On demand"],
  ["event-driven", "On a record event"],
  ["scheduled", "On a schedule"],
  ["http-trigger", "On an HTTP call"]
]

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

const emptyForm: Form = { name: "", description: "", functionId: "", executionType: "on-demand", triggerMetadata: {} }

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
