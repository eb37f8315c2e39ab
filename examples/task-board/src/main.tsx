// The task board: sign in, the list (filter by status, search), a form to create or edit a task with the server's
// validation errors shown by each field, and live updates from the workspace's event stream. Everything it shows
// comes from Troupe, on another origin, through CORS.
import { render } from "preact"
import { useCallback, useEffect, useRef, useState } from "preact/hooks"
import {
  config,
  endSession,
  ensureBoard,
  followTasks,
  listTasks,
  onSignedOut,
  type Problem,
  STATUSES,
  type Status,
  saveTask,
  session,
  startSession,
  type Task
} from "./board.ts"
import "./style.css"

const SignIn = ({ onDone }: { onDone: () => void }) => {
  const [error, setError] = useState<string | undefined>()
  const [busy, setBusy] = useState(false)
  const submit = async (e: Event) => {
    e.preventDefault()
    const form = new FormData(e.currentTarget as HTMLFormElement)
    setBusy(true)
    const failed = await startSession(String(form.get("username")), String(form.get("password")))
    setBusy(false)
    if (failed === undefined) onDone()
    else setError(failed)
  }
  return (
    <form class="card signin" onSubmit={submit}>
      <h1>Task board</h1>
      <p class="muted">
        Workspace <b>{config.workspace}</b> on {config.baseUrl}
      </p>
      <label>
        Username <input name="username" autocomplete="username" required />
      </label>
      <label>
        Password <input name="password" type="password" autocomplete="current-password" required />
      </label>
      {error !== undefined && (
        <p class="error" role="alert" data-error="signin">
          {error}
        </p>
      )}
      <button type="submit" disabled={busy}>
        {busy ? "Signing in…" : "Sign in"}
      </button>
    </form>
  )
}

const empty = { title: "", status: "todo", priority: "3", assignee: "" }

const TaskForm = ({ editing, onSaved, onCancel }: { editing: Task | undefined; onSaved: () => void; onCancel: () => void }) => {
  const [values, setValues] = useState<Record<string, string>>(empty)
  const [problem, setProblem] = useState<Problem | undefined>()
  useEffect(() => {
    setProblem(undefined)
    setValues(
      editing === undefined
        ? empty
        : {
            title: editing.data.title,
            status: editing.data.status,
            priority: String(editing.data.priority),
            assignee: editing.data.assignee ?? ""
          }
    )
  }, [editing])
  const set = (name: string) => (e: Event) => setValues({ ...values, [name]: (e.currentTarget as HTMLInputElement).value })
  const submit = async (e: Event) => {
    e.preventDefault()
    // sent as typed; the rules (length, range, whole numbers) are the server's, answered per field
    const data: Record<string, unknown> = {
      title: values.title,
      status: values.status,
      priority: values.priority === "" ? null : Number(values.priority)
    }
    if (values.assignee !== "") data.assignee = values.assignee
    const failed = await saveTask(data, editing)
    setProblem(failed)
    if (failed === undefined) {
      setValues(empty)
      onSaved()
    }
  }
  const field = (name: string, label: string, input: preact.JSX.Element) => (
    <label class={problem?.fields[name] === undefined ? "" : "invalid"}>
      {label}
      {input}
      {problem?.fields[name] !== undefined && (
        <span class="field-error" data-error-for={name}>
          {problem.fields[name]}
        </span>
      )}
    </label>
  )
  return (
    <form class="card task-form" onSubmit={submit} data-mode={editing === undefined ? "create" : "edit"}>
      <h2>{editing === undefined ? "New task" : "Edit task"}</h2>
      {field("title", "Title", <input name="title" value={values.title} onInput={set("title")} />)}
      {field(
        "status",
        "Status",
        <select name="status" value={values.status} onChange={set("status")}>
          {STATUSES.map((s) => (
            <option value={s}>{s}</option>
          ))}
        </select>
      )}
      {field("priority", "Priority (1-5)", <input name="priority" inputMode="numeric" value={values.priority} onInput={set("priority")} />)}
      {field("assignee", "Assignee", <input name="assignee" value={values.assignee} onInput={set("assignee")} />)}
      {problem !== undefined && (
        <p class="error" role="alert" data-error="form">
          {problem.message}
        </p>
      )}
      <div class="actions">
        <button type="submit">{editing === undefined ? "Add task" : "Save"}</button>
        {editing !== undefined && (
          <button type="button" class="secondary" onClick={onCancel}>
            Cancel
          </button>
        )}
      </div>
    </form>
  )
}

const Board = ({ onSignOut }: { onSignOut: () => void }) => {
  const [ready, setReady] = useState<Problem | "ok" | undefined>()
  const [tasks, setTasks] = useState<ReadonlyArray<Task>>([])
  const [problem, setProblem] = useState<Problem | undefined>()
  const [status, setStatus] = useState<Status | "all">("all")
  const [search, setSearch] = useState("")
  const [live, setLive] = useState(false)
  const [editing, setEditing] = useState<Task | undefined>()

  // answers can come back out of order (a search typed letter by letter, live events): only the latest is shown
  const latest = useRef(0)
  const reload = useCallback(async () => {
    const asked = ++latest.current
    const answer = await listTasks(status, search)
    if (asked !== latest.current) return
    if ("message" in answer) setProblem(answer)
    else {
      setProblem(undefined)
      setTasks(answer)
    }
  }, [status, search])

  useEffect(() => {
    ensureBoard().then((p) => setReady(p ?? "ok"))
  }, [])
  useEffect(() => {
    if (ready === "ok") void reload()
  }, [ready, reload])
  useEffect(() => {
    if (ready !== "ok") return
    const sub = followTasks(() => void reload(), setLive)
    return () => sub.close()
  }, [ready, reload])

  if (ready === undefined) return <p class="muted">Opening the board…</p>
  if (ready !== "ok") {
    return (
      <p class="error" role="alert" data-error="board">
        {ready.message}
      </p>
    )
  }
  return (
    <main class="board">
      <header>
        <h1>Task board</h1>
        <span class={live ? "live on" : "live"} data-live={live ? "on" : "off"}>
          {live ? "live" : "connecting…"}
        </span>
        <button type="button" class="secondary" onClick={onSignOut}>
          Sign out
        </button>
      </header>
      <div class="columns">
        <section>
          <div class="filters">
            <select name="filter-status" value={status} onChange={(e) => setStatus((e.currentTarget as HTMLSelectElement).value as Status)}>
              <option value="all">all statuses</option>
              {STATUSES.map((s) => (
                <option value={s}>{s}</option>
              ))}
            </select>
            <input
              class="search"
              name="search"
              placeholder="Search titles"
              value={search}
              onInput={(e) => setSearch((e.currentTarget as HTMLInputElement).value)}
            />
          </div>
          {problem !== undefined && (
            <p class="error" role="alert">
              {problem.message}
            </p>
          )}
          <ul class="tasks">
            {tasks.map((t) => (
              <li key={t.id} data-task={t.data.title} class={editing?.id === t.id ? "selected" : ""} onClick={() => setEditing(t)}>
                <span class={`status ${t.data.status}`}>{t.data.status}</span>
                <span class="title">{t.data.title}</span>
                <span class="meta">
                  P{t.data.priority}
                  {t.data.assignee ? ` · ${t.data.assignee}` : ""}
                </span>
              </li>
            ))}
            {tasks.length === 0 && <li class="muted">No tasks here yet.</li>}
          </ul>
        </section>
        <TaskForm editing={editing} onSaved={() => setEditing(undefined)} onCancel={() => setEditing(undefined)} />
      </div>
    </main>
  )
}

const App = () => {
  const [signedIn, setSignedIn] = useState(session.current() !== undefined)
  useEffect(() => onSignedOut(() => setSignedIn(false)), [])
  if (!signedIn) return <SignIn onDone={() => setSignedIn(true)} />
  return (
    <Board
      onSignOut={() => {
        endSession()
        setSignedIn(false)
      }}
    />
  )
}

render(<App />, document.getElementById("app")!)
