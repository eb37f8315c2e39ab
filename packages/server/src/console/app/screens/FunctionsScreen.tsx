// Functions: the list and the drafts; the CodeMirror editor; a test run of the editor's code with params, followed
// to its result and logs; execute; versions with a line diff against the editor; drafts saved and published.
import type { ComponentType } from "preact"
import { useEffect, useState } from "preact/hooks"
import type { CodeEditorProps } from "../CodeEditor.tsx"
import { lineDiff } from "../lib/Diff.ts"
import type { ComputeFunction, Draft, FunctionVersion, JobQueued } from "../lib/Types.ts"
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
  Loading,
  navigate,
  PageHead,
  TableHead,
  Tabs,
  useAction,
  useAsync,
  useToast,
  when
} from "../Ui.tsx"
import { DraftActions } from "./DraftActions.tsx"
import { FollowedRun, useFollowRun } from "./RunView.tsx"

export const template = `// executionParams: this run's input; triggerParams: the trigger's params
// api: records, queries, HTTP, log (see the README)
async function run() {
  api.log("params", executionParams)
  return { success: true, data: executionParams }
}
`

/** CodeMirror is most of the bundle: it is loaded when an editor first shows (esbuild splits it into its own file). */
const CodeEditor = (props: CodeEditorProps) => {
  const [Editor, setEditor] = useState<ComponentType<CodeEditorProps> | undefined>(undefined)
  const [error, setError] = useState<unknown>(undefined)
  useEffect(() => {
    import("../CodeEditor.tsx").then((m) => setEditor(() => m.CodeEditor), setError)
  }, [])
  if (error !== undefined) return <ErrorBox error={error} title="The editor could not be loaded" />
  return Editor === undefined ? <Loading label="Loading the editor…" /> : <Editor {...props} />
}

export const FunctionsScreen = ({ route }: { route: ReadonlyArray<string> }) => {
  if (route[0] === undefined) return <FunctionList />
  if (route[0] === "new") return <FunctionEditor key="new" />
  if (route[0] === "draft" && route[1] !== undefined) return <FunctionEditor key={`d${route[1]}`} draftId={route[1]} />
  return <FunctionEditor key={route[0]} id={route[0]} />
}

const FunctionList = () => {
  const { api, can } = useSession()
  const functions = useAsync(
    () => api.get<{ functions: ReadonlyArray<ComputeFunction> }>("/compute-functions", { limit: 500, sort: "name" }),
    []
  )
  const drafts = useAsync(
    () =>
      can("read:functions")
        ? api.get<{ drafts: ReadonlyArray<Draft> }>("/drafts", { resourceType: "compute-functions", limit: 100 })
        : Promise.resolve({ drafts: [] }),
    []
  )
  return (
    <section>
      <PageHead title="Functions">
        <Button perm="write:functions" kind="primary" onClick={() => navigate("functions", "new")}>
          New function
        </Button>
      </PageHead>
      <AsyncView state={functions.state} isEmpty={(d) => d.functions.length === 0} empty="No functions yet.">
        {({ functions: list }) => (
          <table class="table">
            <TableHead columns={["Name", "Description", "Version", "Updated"]} />
            <tbody>
              {list.map((f) => (
                <tr key={f.id}>
                  <td>
                    <a href={href("functions", f.id)}>{f.name}</a>
                  </td>
                  <td>{f.description ?? ""}</td>
                  <td>{f.version}</td>
                  <td>{when(f.updatedAt)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
      </AsyncView>
      <h2>Drafts</h2>
      <AsyncView
        state={drafts.state}
        isEmpty={(d) => d.drafts.length === 0}
        empty="No drafts: “Save as draft” on a new function keeps it unpublished."
      >
        {({ drafts: list }) => (
          <table class="table">
            <TableHead columns={["Name", "Updated"]} />
            <tbody>
              {list.map((d) => (
                <tr key={d.id}>
                  <td>
                    <a href={href("functions", "draft", d.id)}>{String(d.data.name ?? "(unnamed)")}</a>
                  </td>
                  <td>{when(d.updatedAt)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
      </AsyncView>
    </section>
  )
}

interface Form {
  readonly name: string
  readonly description: string
  readonly code: string
}

const FunctionEditor = ({ id, draftId }: { id?: string; draftId?: string }) => {
  const session = useSession()
  const { api } = session
  const toast = useToast()
  const readOnly = !session.can("write:functions")
  const loaded = useAsync(async () => {
    if (id !== undefined) return { fn: await api.get<ComputeFunction>(`/compute-functions/${id}`), draft: undefined }
    if (draftId !== undefined) return { fn: undefined, draft: await api.get<Draft>(`/drafts/${draftId}`) }
    return { fn: undefined, draft: undefined }
  }, [id, draftId])
  const [form, setForm] = useState<Form>({ name: "", description: "", code: template })
  const [tab, setTab] = useState<"code" | "versions">("code")
  const [params, setParams] = useState<unknown>({})
  const save = useAction()
  const test = useAction()
  const follower = useFollowRun()

  useEffect(() => {
    if (loaded.state.status !== "ready") return
    const { fn, draft } = loaded.state.data
    if (fn !== undefined) setForm({ name: fn.name, description: fn.description ?? "", code: fn.code ?? "" })
    if (draft !== undefined) {
      setForm({
        name: String(draft.data.name ?? ""),
        description: String(draft.data.description ?? ""),
        code: String(draft.data.code ?? template)
      })
    }
  }, [loaded.state])

  if (loaded.state.status !== "ready") return <AsyncView state={loaded.state}>{() => null}</AsyncView>
  const { fn, draft } = loaded.state.data
  const body = { name: form.name.trim(), ...(form.description.trim() === "" ? {} : { description: form.description }), code: form.code }

  const testRun = () =>
    test.run(async () => {
      const queued = await api.post<JobQueued>("/compute-functions/test", { code: form.code, params: params ?? {} })
      follower.follow(queued.jobId)
    })
  const execute = () =>
    test.run(async () => {
      const queued = await api.post<JobQueued>(`/functions/${fn!.id}/execute`, params ?? {})
      follower.follow(queued.jobId)
    })

  return (
    <section>
      <PageHead
        title={
          fn !== undefined ? (
            <>
              {fn.name} <small>v{fn.version}</small>
            </>
          ) : draft !== undefined ? (
            <>
              {form.name || "Draft"} <small>draft</small>
            </>
          ) : (
            "New function"
          )
        }
      >
        <a class="btn btn-plain" href={href("functions")}>
          All functions
        </a>
        {fn === undefined && (
          <DraftActions
            resource="compute-functions"
            screen="functions"
            perm="write:functions"
            noun="function"
            body={body}
            draft={draft}
            save={save}
          />
        )}
        {fn !== undefined && (
          <>
            <Button
              perm="write:functions"
              kind="primary"
              busy={save.busy}
              onClick={() =>
                void save.run(async () => {
                  const updated = await api.put<ComputeFunction>(`/compute-functions/${fn.id}`, body)
                  toast(`Saved as version ${updated.version}`)
                  loaded.reload()
                })
              }
            >
              Save
            </Button>
            <Button
              perm="write:functions"
              kind="danger"
              onClick={() =>
                confirmed(`Delete ${fn.name}? Its triggers stop firing; its runs stay.`) &&
                void save.run(async () => {
                  await api.del(`/compute-functions/${fn.id}`)
                  toast("Function deleted")
                  navigate("functions")
                })
              }
            >
              Delete
            </Button>
          </>
        )}
      </PageHead>
      <ErrorBox error={save.error} title="Not saved" />
      <div class="grid">
        <Field label="Name">
          <input
            name="function-name"
            value={form.name}
            readOnly={readOnly}
            onInput={(e) => setForm({ ...form, name: e.currentTarget.value })}
          />
        </Field>
        <Field label="Description">
          <input value={form.description} readOnly={readOnly} onInput={(e) => setForm({ ...form, description: e.currentTarget.value })} />
        </Field>
      </div>
      {fn !== undefined && (
        <Tabs
          tabs={[
            ["code", "Code"],
            ["versions", "Versions"]
          ]}
          active={tab}
          onChange={setTab}
        />
      )}
      {tab === "code" && (
        <div class="split">
          <div class="split-main">
            <CodeEditor
              label="Function code"
              value={form.code}
              readOnly={readOnly}
              onChange={(code) => setForm((f) => ({ ...f, code }))}
              onRun={() => void testRun()}
            />
          </div>
          <Can perm="execute:functions">
            <aside class="split-side">
              <h3>Run</h3>
              <JsonInput name="run-params" label="Params (executionParams)" rows={5} value={params} onChange={setParams} />
              <div class="toolbar">
                <Button perm="execute:functions" kind="primary" busy={test.busy} onClick={() => void testRun()}>
                  Test run
                </Button>
                {fn !== undefined && (
                  <Button perm="execute:functions" busy={test.busy} onClick={() => void execute()}>
                    Execute saved
                  </Button>
                )}
              </div>
              <p class="muted">Test run: the editor's code, unsaved, on default-trigger. Execute: the saved version.</p>
              <ErrorBox error={test.error} title="Not started" />
              <FollowedRun follower={follower} />
            </aside>
          </Can>
        </div>
      )}
      {tab === "versions" && fn !== undefined && (
        <FunctionVersions
          fn={fn}
          current={form.code}
          onLoad={(code) => {
            setForm((f) => ({ ...f, code }))
            setTab("code")
          }}
        />
      )}
    </section>
  )
}

const FunctionVersions = ({ fn, current, onLoad }: { fn: ComputeFunction; current: string; onLoad: (code: string) => void }) => {
  const { api } = useSession()
  const { state } = useAsync(
    () => api.get<{ versions: ReadonlyArray<FunctionVersion> }>(`/compute-functions/${fn.id}/versions`),
    [fn.id, fn.version]
  )
  const [picked, setPicked] = useState<number | undefined>(undefined)
  return (
    <AsyncView state={state} isEmpty={(d) => d.versions.length === 0} empty="No versions.">
      {({ versions }) => {
        const version = versions.find((v) => v.version === (picked ?? versions[1]?.version ?? versions[0]!.version))!
        const diff = lineDiff(version.code, current)
        return (
          <div class="versions">
            <table class="table">
              <TableHead columns={["Version", "Saved", "Name", ""]} />
              <tbody>
                {versions.map((v) => (
                  <tr key={v.version} class={v.version === version.version ? "selected" : ""}>
                    <td>{v.version}</td>
                    <td>{when(v.createdAt)}</td>
                    <td>{v.name}</td>
                    <td>
                      <button type="button" class="btn btn-plain" onClick={() => setPicked(v.version)}>
                        Compare
                      </button>
                      <Button perm="write:functions" onClick={() => onLoad(v.code)}>
                        Load into editor
                      </Button>
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
            <h3>v{version.version} → editor</h3>
            <pre class="line-diff">
              {diff.map((l, i) => (
                <div key={i} class={`line-${l.kind}`}>
                  {l.kind === "added" ? "+ " : l.kind === "removed" ? "- " : "  "}
                  {l.text}
                </div>
              ))}
            </pre>
          </div>
        )
      }}
    </AsyncView>
  )
}
