// Browser apps (CORS): the origins whose pages may call this workspace's routes from a browser (CONTRACT §9,
// GET/PUT /settings/cors; docs/browser.md). Readers (read:cors) see the list; callers holding write:cors edit it,
// one origin a line, and save it with PUT, which replaces the whole list. The server validates and canonicalizes
// each origin: a bad one is a 400 whose detail names the entry (allowedOrigins[i]), shown as it answered.
import { useState } from "preact/hooks"
import { useSession } from "../Session.tsx"
import { AsyncView, Button, ErrorBox, Field, PageHead, useAction, useAsync, useToast } from "../Ui.tsx"

interface CorsSettings {
  readonly allowedOrigins: ReadonlyArray<string>
}

const lines = (text: string) =>
  text
    .split("\n")
    .map((s) => s.trim())
    .filter((s) => s.length > 0)

export const CorsScreen = () => {
  const { api } = useSession()
  const { state, reload } = useAsync(() => api.get<CorsSettings>("/settings/cors"), [])
  return (
    <section>
      <PageHead title="Browser apps (CORS)" />
      <p class="muted">
        A web page on another origin may call this workspace's routes (and the token endpoint) only if its origin is listed here. An origin
        is <code>scheme://host[:port]</code>, such as <code>https://app.example.com</code> or <code>http://localhost:5173</code>: no path,
        no <code>*</code>. The node-wide <code>TROUPE_CORS_ORIGINS</code> applies as well. CORS decides which pages may read the answers;
        what a token may do is still decided by its permissions.
      </p>
      <AsyncView state={state}>{(s) => <CorsForm key={s.allowedOrigins.join("\n")} settings={s} onSaved={reload} />}</AsyncView>
    </section>
  )
}

const CorsForm = ({ settings, onSaved }: { settings: CorsSettings; onSaved: () => void }) => {
  const { api, can } = useSession()
  const toast = useToast()
  const [text, setText] = useState(settings.allowedOrigins.join("\n"))
  const save = useAction()
  const writable = can("write:cors")
  const origins = lines(text)
  if (!writable) {
    return settings.allowedOrigins.length === 0 ? (
      <p class="state empty" data-testid="cors-empty">
        No origin is allowed.
      </p>
    ) : (
      <ul data-testid="cors-origins">
        {settings.allowedOrigins.map((o) => (
          <li key={o}>
            <code>{o}</code>
          </li>
        ))}
      </ul>
    )
  }
  return (
    <form
      onSubmit={(e) => {
        e.preventDefault()
        void save.run(async () => {
          const stored = await api.put<CorsSettings>("/settings/cors", { allowedOrigins: origins })
          toast(stored.allowedOrigins.length === 0 ? "No origin is allowed now" : `${stored.allowedOrigins.length} origin(s) allowed`)
          onSaved()
        })
      }}
    >
      <Field label="Allowed origins" hint="One a line; at most 100. Saving replaces the whole list (an empty list allows none).">
        <textarea
          name="allowed-origins"
          rows={8}
          spellcheck={false}
          placeholder="https://app.example.com"
          value={text}
          onInput={(e) => setText(e.currentTarget.value)}
        />
      </Field>
      <ErrorBox error={save.error} />
      <Button type="submit" kind="primary" busy={save.busy} perm="write:cors">
        Save origins
      </Button>
    </form>
  )
}
