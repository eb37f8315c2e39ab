// Shared pieces of every screen: loading, empty and error states, the error box (the contract body's message and
// each `details[].field: message`), write controls that exist only for callers who hold the permission, modals,
// JSON fields, tables and the hash router.
import { type ButtonHTMLAttributes, type ComponentChildren, createContext } from "preact"
import { useCallback, useContext, useEffect, useRef, useState } from "preact/hooks"
import { ApiError } from "./lib/ApiClient.ts"
import { useCan } from "./Session.tsx"

// Routing ------------------------------------------------------------------------------------------------------

/** The hash path split into segments: `#/records/books/123` -> ["records", "books", "123"]. */
export const useRoute = (): Array<string> => {
  const read = () =>
    window.location.hash
      .replace(/^#\/?/, "")
      .split("?")[0]!
      .split("/")
      .filter((s) => s.length > 0)
      .map(decodeURIComponent)
  const [route, setRoute] = useState(read)
  useEffect(() => {
    const onChange = () => setRoute(read())
    window.addEventListener("hashchange", onChange)
    // a hash set between the first render and this listener fired no event we heard: read it once more
    onChange()
    return () => window.removeEventListener("hashchange", onChange)
  }, [])
  return route
}

/** The parameters after `?` in the hash: `#/runs?triggerId=…`. */
export const hashQuery = () => new URLSearchParams(window.location.hash.split("?")[1] ?? "")

export const href = (...segments: ReadonlyArray<string>) => `#/${segments.map(encodeURIComponent).join("/")}`
export const navigate = (...segments: ReadonlyArray<string>) => {
  window.location.hash = href(...segments)
}

// Async state --------------------------------------------------------------------------------------------------

export type AsyncState<T> =
  | { readonly status: "loading"; readonly data?: T }
  | { readonly status: "error"; readonly error: unknown; readonly data?: T }
  | { readonly status: "ready"; readonly data: T }

/** Loads `load()` now and whenever `deps` change; `reload` loads again (keeping the old data on screen meanwhile). */
export const useAsync = <T,>(load: () => Promise<T>, deps: ReadonlyArray<unknown>) => {
  const [state, setState] = useState<AsyncState<T>>({ status: "loading" })
  const [tick, setTick] = useState(0)
  useEffect(() => {
    let live = true
    setState((s) => (s.data === undefined ? { status: "loading" } : { status: "loading", data: s.data }))
    load().then(
      (data) => live && setState({ status: "ready", data }),
      (error) => live && setState({ status: "error", error })
    )
    return () => {
      live = false
    }
  }, [...deps, tick])
  const reload = useCallback(() => setTick((t) => t + 1), [])
  return { state, reload }
}

/** Runs user actions (saves, deletes): busy while one runs, its error kept for the ErrorBox. */
export const useAction = () => {
  const [busy, setBusy] = useState(false)
  const [error, setError] = useState<unknown>(undefined)
  const run = async <T,>(action: () => Promise<T>): Promise<T | undefined> => {
    setBusy(true)
    setError(undefined)
    try {
      return await action()
    } catch (e) {
      setError(e)
      return undefined
    } finally {
      setBusy(false)
    }
  }
  return { run, busy, error, setError }
}

export const Loading = ({ label = "Loading…" }: { label?: string }) => (
  <div class="state loading" role="status" aria-live="polite">
    <span class="spinner" aria-hidden="true" />
    {label}
  </div>
)

export const Empty = ({ children }: { children: ComponentChildren }) => <div class="state empty">{children}</div>

/** An error as the API answered it: its message, then each detail as `field: message`. */
export const ErrorBox = ({ error, title }: { error: unknown; title?: string }) => {
  if (error === undefined || error === null) return null
  const message = error instanceof Error ? error.message : String(error)
  const details = error instanceof ApiError ? error.details : []
  return (
    <div class="state error" role="alert">
      {title !== undefined && <div class="error-title">{title}</div>}
      <div class="error-message">
        {message}
        {error instanceof ApiError && error.code !== "" && <span class="error-code">{error.code}</span>}
      </div>
      {details.length > 0 && (
        <ul class="error-details">
          {details.map((d, i) => (
            <li key={i}>
              {d.field !== "" && <code>{d.field}</code>}
              {d.field !== "" && ": "}
              {d.message}
            </li>
          ))}
        </ul>
      )}
    </div>
  )
}

/** Loading, error or empty state for `state`, else the children rendered with its data. */
export const AsyncView = <T,>({
  state,
  isEmpty,
  empty,
  children
}: {
  state: AsyncState<T>
  isEmpty?: (data: T) => boolean
  empty?: ComponentChildren
  children: (data: T) => ComponentChildren
}) => {
  if (state.status === "error") {
    return (
      <>
        <ErrorBox error={state.error} />
        {state.data !== undefined && children(state.data)}
      </>
    )
  }
  if (state.data === undefined) return <Loading />
  if (isEmpty?.(state.data) === true) return <Empty>{empty ?? "Nothing here yet."}</Empty>
  return <>{children(state.data)}</>
}

// Write controls -----------------------------------------------------------------------------------------------

/** Renders its children only for callers who hold `perm`. */
export const Can = ({ perm, children }: { perm: string; children: ComponentChildren }) => (useCan()(perm) ? children : null)

type ButtonProps = Omit<ButtonHTMLAttributes<HTMLButtonElement>, "type" | "disabled"> & {
  /** the permission this control needs: without it the control is not rendered at all */
  perm?: string
  busy?: boolean
  kind?: "primary" | "danger" | "plain"
  disabled?: boolean
  type?: "button" | "submit"
}

/** A button; with `perm`, a write control (marked `data-write`) that only callers holding `perm` see. */
export const Button = ({ perm, busy, kind = "plain", children, disabled, type = "button", ...rest }: ButtonProps) => {
  const can = useCan()
  if (perm !== undefined && !can(perm)) return null
  return (
    <button
      {...rest}
      type={type}
      class={`btn btn-${kind}${rest.class === undefined ? "" : ` ${rest.class}`}`}
      disabled={disabled === true || busy === true}
      data-write={perm === undefined ? undefined : perm}
    >
      {busy === true && <span class="spinner small" aria-hidden="true" />}
      {children}
    </button>
  )
}

/** Asks before a destructive action. */
export const confirmed = (question: string) => window.confirm(question)

// Layout -------------------------------------------------------------------------------------------------------

export const Modal = ({
  title,
  onClose,
  children,
  wide
}: {
  title: string
  onClose: () => void
  children: ComponentChildren
  wide?: boolean
}) => {
  useEffect(() => {
    const onKey = (e: KeyboardEvent) => e.key === "Escape" && onClose()
    window.addEventListener("keydown", onKey)
    return () => window.removeEventListener("keydown", onKey)
  }, [onClose])
  return (
    <div class="modal-backdrop" onClick={(e) => e.target === e.currentTarget && onClose()}>
      <div class={`modal${wide === true ? " wide" : ""}`} role="dialog" aria-modal="true" aria-label={title}>
        <div class="modal-head">
          <h2>{title}</h2>
          <button type="button" class="btn btn-plain close" aria-label="Close" onClick={onClose}>
            ×
          </button>
        </div>
        <div class="modal-body">{children}</div>
      </div>
    </div>
  )
}

export const Field = ({
  label,
  hint,
  children,
  error
}: {
  label: string
  hint?: ComponentChildren
  children: ComponentChildren
  error?: string | undefined
}) => (
  <label class={`field${error === undefined ? "" : " invalid"}`}>
    <span class="field-label">{label}</span>
    {children}
    {hint !== undefined && <span class="field-hint">{hint}</span>}
    {error !== undefined && <span class="field-error">{error}</span>}
  </label>
)

export const Tabs = <K extends string>({
  tabs,
  active,
  onChange
}: {
  tabs: ReadonlyArray<readonly [K, string]>
  active: K
  onChange: (k: K) => void
}) => (
  <div class="tabs" role="tablist">
    {tabs.map(([key, label]) => (
      <button
        key={key}
        type="button"
        role="tab"
        aria-selected={key === active}
        class={`tab${key === active ? " active" : ""}`}
        onClick={() => onChange(key)}
      >
        {label}
      </button>
    ))}
  </div>
)

export const PageHead = ({ title, children }: { title: ComponentChildren; children?: ComponentChildren }) => (
  <div class="page-head">
    <h1>{title}</h1>
    <div class="actions">{children}</div>
  </div>
)

// Values -------------------------------------------------------------------------------------------------------

export const pretty = (value: unknown) => JSON.stringify(value, null, 2) ?? "undefined"

export const Json = ({ value }: { value: unknown }) => <pre class="json">{pretty(value)}</pre>

/** A short text of any value for a table cell. */
export const cellText = (value: unknown): string => {
  if (value === undefined) return ""
  if (value === null) return "null"
  if (typeof value === "string") return value.length > 80 ? `${value.slice(0, 80)}…` : value
  const text = JSON.stringify(value)
  return text.length > 80 ? `${text.slice(0, 80)}…` : text
}

export const when = (iso: string | null | undefined) => {
  if (iso === null || iso === undefined) return ""
  const d = new Date(iso)
  return Number.isNaN(d.getTime()) ? iso : d.toLocaleString()
}

/** A textarea holding JSON: `onChange` gets the parsed value, or the parse error shown under it. */
export const JsonInput = ({
  value,
  onChange,
  rows = 6,
  label,
  readOnly,
  placeholder,
  name
}: {
  value: unknown
  onChange: (value: unknown) => void
  rows?: number
  label: string
  readOnly?: boolean
  placeholder?: string
  name?: string
}) => {
  const [text, setText] = useState(() => (value === undefined ? "" : pretty(value)))
  const [problem, setProblem] = useState<string | undefined>(undefined)
  const last = useRef(value)
  useEffect(() => {
    // a new value from outside (another record loaded): show it
    if (JSON.stringify(value) !== JSON.stringify(last.current)) {
      last.current = value
      setText(value === undefined ? "" : pretty(value))
      setProblem(undefined)
    }
  }, [value])
  return (
    <Field label={label} error={problem}>
      <textarea
        class="code"
        name={name}
        rows={rows}
        value={text}
        readOnly={readOnly === true}
        placeholder={placeholder}
        spellcheck={false}
        onInput={(e) => {
          const next = e.currentTarget.value
          setText(next)
          if (next.trim() === "") {
            setProblem(undefined)
            last.current = undefined
            return onChange(undefined)
          }
          try {
            const parsed: unknown = JSON.parse(next)
            setProblem(undefined)
            last.current = parsed
            onChange(parsed)
          } catch (err) {
            setProblem(`Not valid JSON: ${err instanceof Error ? err.message : String(err)}`)
          }
        }}
      />
    </Field>
  )
}

/** A comma-separated list of names, kept as typed while it is edited. */
export const ListInput = ({
  value,
  onChange,
  readOnly,
  label
}: {
  value: ReadonlyArray<string> | undefined
  onChange: (items: ReadonlyArray<string> | undefined) => void
  readOnly?: boolean
  label?: string
}) => {
  const [text, setText] = useState(() => (value ?? []).join(", "))
  const parse = (t: string) =>
    t
      .split(",")
      .map((s) => s.trim())
      .filter((s) => s.length > 0)
  useEffect(() => {
    // a new value from outside: show it unless it is what the text already says
    if (JSON.stringify(parse(text)) !== JSON.stringify(value ?? [])) setText((value ?? []).join(", "))
  }, [JSON.stringify(value)])
  return (
    <input
      aria-label={label}
      value={text}
      readOnly={readOnly === true}
      onInput={(e) => {
        setText(e.currentTarget.value)
        const items = parse(e.currentTarget.value)
        onChange(items.length === 0 ? undefined : items)
      }}
    />
  )
}

/** A table's header row: one cell per column name ("" for an unnamed column, such as one of buttons). */
export const TableHead = ({ columns }: { columns: ReadonlyArray<string> }) => (
  <thead>
    <tr>{columns.map((c, i) => (c === "" ? <th key={i} /> : <th key={i}>{c}</th>))}</tr>
  </thead>
)

export const Pager = ({
  page,
  pageSize,
  total,
  hasMore,
  onPage
}: {
  page: number
  pageSize: number
  total?: number | undefined
  hasMore?: boolean
  onPage: (page: number) => void
}) => {
  const pages = total === undefined ? undefined : Math.max(1, Math.ceil(total / pageSize))
  const more = pages === undefined ? hasMore === true : page < pages
  return (
    <div class="pager">
      <button type="button" class="btn btn-plain" disabled={page <= 1} onClick={() => onPage(page - 1)}>
        ‹ Previous
      </button>
      <span>
        Page {page}
        {pages !== undefined && ` of ${pages}`}
        {total !== undefined && ` · ${total} in all`}
      </span>
      <button type="button" class="btn btn-plain" disabled={!more} onClick={() => onPage(page + 1)}>
        Next ›
      </button>
    </div>
  )
}

export const StatusBadge = ({ status }: { status: string }) => <span class={`badge badge-${status}`}>{status}</span>

// Notices ------------------------------------------------------------------------------------------------------

interface Toast {
  readonly id: number
  readonly text: string
}

const ToastContext = createContext<(text: string) => void>(() => {})

export const useToast = () => useContext(ToastContext)

export const Toasts = ({ children }: { children: ComponentChildren }) => {
  const [toasts, setToasts] = useState<ReadonlyArray<Toast>>([])
  const counter = useRef(0)
  const show = useCallback((text: string) => {
    const id = ++counter.current
    setToasts((t) => [...t, { id, text }])
    setTimeout(() => setToasts((t) => t.filter((x) => x.id !== id)), 4000)
  }, [])
  return (
    <ToastContext.Provider value={show}>
      {children}
      <div class="toasts" aria-live="polite">
        {toasts.map((t) => (
          <div key={t.id} class="toast">
            {t.text}
          </div>
        ))}
      </div>
    </ToastContext.Provider>
  )
}

/** Copies text to the clipboard (secrets shown once). */
export const CopyButton = ({ text }: { text: string }) => {
  const toast = useToast()
  return (
    <button
      type="button"
      class="btn btn-plain"
      onClick={() =>
        navigator.clipboard.writeText(text).then(
          () => toast("Copied"),
          () => toast("Copy failed: select and copy it")
        )
      }
    >
      Copy
    </button>
  )
}
