// What the task board asks of Troupe, through @troupe/client-fetch: the session (a user's token from the password
// grant, kept in sessionStorage for this tab), the `tasks` structure (made on first use by a user who may), the
// list (filtered by status and searched), creates and edits (the server's 400 details mapped to the form's fields)
// and the live stream of the workspace's task events.
import { createTroupeClient, handedToken, type IssuedToken, signIn, type TroupeClient, TokenError } from "@troupe/client-fetch"

const meta = (name: string) => document.querySelector<HTMLMetaElement>(`meta[name="${name}"]`)?.content ?? ""

export const config = { baseUrl: meta("troupe-url"), workspace: meta("troupe-workspace") || "default" }

export const STATUSES = ["todo", "doing", "done"] as const
export type Status = (typeof STATUSES)[number]

export interface TaskData {
  readonly title: string
  readonly status: Status
  readonly priority: number
  readonly assignee?: string | undefined
}

export interface Task {
  readonly id: string
  readonly version: number
  readonly data: TaskData
  readonly updatedAt: string
}

/** The board's structure: the server validates every task against it (and answers 400 with details). */
const tasksStructure = {
  name: "Tasks",
  recordSlug: "tasks",
  description: "The shared task board (examples/task-board)",
  properties: [
    { name: "title", type: "string", required: true, minLength: 3, maxLength: 80 },
    { name: "status", type: "string", required: true, enum: [...STATUSES], default: "todo" },
    { name: "priority", type: "number", required: true, integer: true, minimum: 1, maximum: 5, default: 3 },
    { name: "assignee", type: "string", maxLength: 40 }
  ]
}

// ---------------------------------------------------------------- session

const KEY = `troupe-board:${config.baseUrl}:${config.workspace}`
const stored = (): IssuedToken | undefined => {
  try {
    return JSON.parse(sessionStorage.getItem(KEY) ?? "null") ?? undefined
  } catch {
    return undefined
  }
}

const expiredListeners = new Set<() => void>()
/** The signed-in user's token: held for this tab only; an expired or refused one asks the user to sign in again. */
export const session = handedToken({
  initial: stored(),
  onExpired: () => {
    sessionStorage.removeItem(KEY)
    for (const listener of expiredListeners) listener()
  }
})
export const onSignedOut = (listener: () => void) => {
  expiredListeners.add(listener)
  return () => {
    expiredListeners.delete(listener)
  }
}

export const api: TroupeClient = createTroupeClient({ baseUrl: config.baseUrl, workspace: config.workspace, tokenProvider: session })

/** Signs in; answers a message for the user when it fails. */
export const startSession = async (username: string, password: string): Promise<string | undefined> => {
  try {
    const token = await signIn({ baseUrl: config.baseUrl, workspace: config.workspace, username, password })
    session.set(token)
    sessionStorage.setItem(KEY, JSON.stringify(token))
    return undefined
  } catch (e) {
    if (!(e instanceof TokenError)) throw e
    if (e.error === "network_error") {
      return (
        `Troupe at ${config.baseUrl} did not answer this page. Is it running, and does it allow this origin ` +
        `(${location.origin})? See TROUPE_CORS_ORIGINS or the workspace's CORS settings.`
      )
    }
    return e.error === "invalid_scope" ? `You are not a member of the workspace "${config.workspace}".` : e.description
  }
}

export const endSession = () => {
  sessionStorage.removeItem(KEY)
  session.set(undefined)
}

// ---------------------------------------------------------------- tasks

/** A failed call as the board shows it: a message, and the messages of the form's fields. */
export interface Problem {
  readonly message: string
  readonly fields: Readonly<Record<string, string>>
}

interface ErrorBody {
  readonly message?: string
  readonly details?: ReadonlyArray<{ readonly field: string; readonly message: string }>
}

/** The server's error body as the form shows it: `data.title` is the title field's message. */
const problemOf = (error: unknown, status: number): Problem => {
  const body = (error ?? {}) as ErrorBody
  const fields: Record<string, string> = {}
  for (const d of body.details ?? []) {
    const name = d.field.replace(/^data\./, "").replace(/\[.*$/, "")
    fields[name] ??= d.message
  }
  return { message: body.message ?? `Troupe answered ${status}`, fields }
}

/** Makes sure the board's structure exists: undefined when it does (or was just made), else what went wrong. */
export const ensureBoard = async (): Promise<Problem | undefined> => {
  const found = await api.GET("/structures/slug/{recordSlug}", { params: { path: { recordSlug: "tasks" } } })
  if (found.response.ok) return undefined
  if (found.response.status !== 404) return problemOf(found.error, found.response.status)
  const made = await api.POST("/structures", { body: tasksStructure as never })
  if (made.response.ok) return undefined
  return made.response.status === 403
    ? { message: "The board is not set up yet: an admin of the workspace opens it once to create it.", fields: {} }
    : problemOf(made.error, made.response.status)
}

export const listTasks = async (status: Status | "all", search: string): Promise<ReadonlyArray<Task> | Problem> => {
  const query: Record<string, string> = { structureId: "tasks", sort: "-createdAt", limit: "100" }
  if (status !== "all") query.filter = `status:${status}`
  if (search.trim() !== "") query.search = search.trim()
  const res = await api.GET("/records", { params: { query } })
  if (!res.response.ok) return problemOf(res.error, res.response.status)
  return (res.data as unknown as { results: ReadonlyArray<Task> }).results
}

/** Creates a task, or edits one at the version the form was opened on. */
export const saveTask = async (data: Record<string, unknown>, editing: Task | undefined): Promise<Problem | undefined> => {
  const res =
    editing === undefined
      ? await api.POST("/records", { body: { structureId: "tasks", data } as never })
      : await api.PATCH("/records/{id}", {
          params: { path: { id: editing.id } },
          headers: { "if-match": String(editing.version) },
          body: { data } as never
        })
  if (res.response.ok) return undefined
  if (res.response.status === 409) {
    return { message: "Someone changed this task meanwhile: the board shows their version, edit it again.", fields: {} }
  }
  return problemOf(res.error, res.response.status)
}

/** Follows the workspace's task events; `onChange` on each, `onLive` when the stream is open or not. */
export const followTasks = (onChange: () => void, onLive: (live: boolean) => void) =>
  api.subscribe({
    structures: ["tasks"],
    events: ["record.*"],
    onOpen: () => onLive(true),
    onEvent: () => onChange(),
    onError: () => onLive(false)
  })
