// The console's frame: sign-in, the header (workspace, user, switching workspace, sign-out), the navigation (only
// the screens the caller may read) and the screen the hash names.
import { useState } from "preact/hooks"
import type { ComponentChildren } from "preact"
import { ActivityScreen } from "./screens/ActivityScreen.tsx"
import { CorsScreen } from "./screens/CorsScreen.tsx"
import { FilesScreen } from "./screens/FilesScreen.tsx"
import { DataHealthScreen } from "./screens/DataHealthScreen.tsx"
import { FunctionsScreen } from "./screens/FunctionsScreen.tsx"
import { MembersScreen } from "./screens/MembersScreen.tsx"
import { NotificationsScreen } from "./screens/NotificationsScreen.tsx"
import { QueryScreen } from "./screens/QueryScreen.tsx"
import { RecordsScreen } from "./screens/RecordsScreen.tsx"
import { RunsScreen } from "./screens/RunsScreen.tsx"
import { SearchScreen } from "./screens/SearchScreen.tsx"
import { ServiceAccountsScreen } from "./screens/ServiceAccountsScreen.tsx"
import { StructuresScreen } from "./screens/StructuresScreen.tsx"
import { TriggersScreen } from "./screens/TriggersScreen.tsx"
import { WebhooksScreen } from "./screens/WebhooksScreen.tsx"
import { lastWorkspace, SessionGate, useSession } from "./Session.tsx"
import { Button, ErrorBox, Field, href, Modal, Toasts, useAction, useAsync, useRoute } from "./Ui.tsx"

interface Screen {
  readonly key: string
  readonly label: string
  /** shown to callers holding any of these */
  readonly needs: ReadonlyArray<string>
  readonly render: (rest: ReadonlyArray<string>) => ComponentChildren
}

const screens: ReadonlyArray<Screen> = [
  { key: "structures", label: "Structures", needs: ["read:structures"], render: (r) => <StructuresScreen route={r} /> },
  { key: "records", label: "Records", needs: ["read:records"], render: (r) => <RecordsScreen route={r} /> },
  { key: "query", label: "Query", needs: ["read:records"], render: () => <QueryScreen /> },
  { key: "search", label: "Search", needs: ["read:records"], render: (r) => <SearchScreen route={r} /> },
  { key: "data-health", label: "Data health", needs: ["read:structures"], render: (r) => <DataHealthScreen route={r} /> },
  { key: "functions", label: "Functions", needs: ["read:functions"], render: (r) => <FunctionsScreen route={r} /> },
  { key: "triggers", label: "Triggers", needs: ["read:triggers"], render: (r) => <TriggersScreen route={r} /> },
  { key: "runs", label: "Runs", needs: ["read:functions"], render: (r) => <RunsScreen route={r} /> },
  { key: "webhooks", label: "Webhooks", needs: ["read:webhooks"], render: (r) => <WebhooksScreen route={r} /> },
  { key: "notifications", label: "Notifications", needs: ["read:notifications"], render: (r) => <NotificationsScreen route={r} /> },
  { key: "files", label: "Files", needs: ["read:storage"], render: () => <FilesScreen /> },
  {
    key: "service-accounts",
    label: "Service accounts",
    needs: ["read:service-accounts"],
    render: () => <ServiceAccountsScreen />
  },
  {
    key: "members",
    label: "Members and roles",
    needs: ["workspace:members", "read:service-accounts"],
    render: () => <MembersScreen />
  },
  { key: "cors", label: "Browser apps (CORS)", needs: ["read:cors"], render: () => <CorsScreen /> },
  { key: "activity", label: "Live activity", needs: ["read:records"], render: () => <ActivityScreen /> }
]

const SignIn = ({
  signIn,
  notice
}: {
  signIn: (username: string, password: string, workspace: string) => Promise<void>
  notice: string | undefined
}) => {
  const [username, setUsername] = useState("")
  const [password, setPassword] = useState("")
  const [workspace, setWorkspace] = useState(lastWorkspace)
  const action = useAction()
  return (
    <main class="signin">
      <form
        class="card"
        onSubmit={(e) => {
          e.preventDefault()
          void action.run(() => signIn(username.trim(), password, workspace.trim()))
        }}
      >
        <h1>Troupe console</h1>
        {notice !== undefined && <p class="notice">{notice}</p>}
        <Field label="Username">
          <input name="username" autocomplete="username" value={username} onInput={(e) => setUsername(e.currentTarget.value)} required />
        </Field>
        <Field label="Password">
          <input
            name="password"
            type="password"
            autocomplete="current-password"
            value={password}
            onInput={(e) => setPassword(e.currentTarget.value)}
            required
          />
        </Field>
        <Field label="Workspace" hint="The token is issued for this workspace (scope workspace:…)">
          <input name="workspace" value={workspace} onInput={(e) => setWorkspace(e.currentTarget.value)} required />
        </Field>
        <ErrorBox error={action.error} />
        <Button type="submit" kind="primary" busy={action.busy}>
          Sign in
        </Button>
      </form>
    </main>
  )
}

interface WorkspaceList {
  readonly data: ReadonlyArray<{ readonly slug: string; readonly name: string }>
}

/** Another workspace needs another token: the password grant again, for the chosen workspace. */
const SwitchWorkspace = ({ onClose }: { onClose: () => void }) => {
  const session = useSession()
  const [target, setTarget] = useState(session.workspace)
  const [password, setPassword] = useState("")
  const action = useAction()
  const list = useAsync(
    () =>
      session.me.isPlatformAdmin
        ? session.api.call<WorkspaceList>("GET", "/workspace/api/v1/workspaces", { query: { limit: 100 } })
        : Promise.resolve<WorkspaceList>({ data: [] }),
    []
  )
  const known = list.state.data?.data ?? []
  return (
    <Modal title="Switch workspace" onClose={onClose}>
      <form
        onSubmit={(e) => {
          e.preventDefault()
          void action.run(async () => {
            await session.signIn(session.username, password, target.trim())
            window.location.hash = "#/structures"
            onClose()
          })
        }}
      >
        {known.length > 0 ? (
          <Field label="Workspace" hint="Every workspace (you are a platform administrator)">
            <select value={target} onChange={(e) => setTarget(e.currentTarget.value)}>
              {known.map((w) => (
                <option key={w.slug} value={w.slug}>
                  {w.slug}
                  {w.name !== w.slug ? ` (${w.name})` : ""}
                </option>
              ))}
            </select>
          </Field>
        ) : (
          <Field label="Workspace">
            <input value={target} onInput={(e) => setTarget(e.currentTarget.value)} required />
          </Field>
        )}
        {list.state.status === "error" && <ErrorBox error={list.state.error} />}
        <Field label={`Password of ${session.username}`} hint="A token is for one workspace: a new one is issued">
          <input
            type="password"
            autocomplete="current-password"
            value={password}
            onInput={(e) => setPassword(e.currentTarget.value)}
            required
          />
        </Field>
        <ErrorBox error={action.error} />
        <Button type="submit" kind="primary" busy={action.busy}>
          Switch
        </Button>
      </form>
    </Modal>
  )
}

const Frame = () => {
  const session = useSession()
  const route = useRoute()
  const [switching, setSwitching] = useState(false)
  const visible = screens.filter((s) => s.needs.some(session.can))
  const current = visible.find((s) => s.key === route[0]) ?? visible[0]
  return (
    <div class="frame">
      <header class="top">
        <a class="brand" href="#/structures">
          Troupe
        </a>
        <button type="button" class="btn btn-plain workspace" onClick={() => setSwitching(true)} title="Switch workspace">
          Workspace <strong data-testid="workspace">{session.workspace}</strong> ▾
        </button>
        <span class="spacer" />
        <span class="who">
          {session.username}
          {session.me.role !== null && <span class="badge">{session.me.role}</span>}
          {session.me.isPlatformAdmin && <span class="badge">platform admin</span>}
        </span>
        <button type="button" class="btn btn-plain" onClick={() => session.signOut()}>
          Sign out
        </button>
      </header>
      <nav class="side" aria-label="Screens">
        {visible.map((s) => (
          <a key={s.key} href={href(s.key)} class={s === current ? "active" : ""} aria-current={s === current ? "page" : undefined}>
            {s.label}
          </a>
        ))}
      </nav>
      <main class="content">
        {current === undefined ? (
          <p class="state empty">Your role in this workspace grants no permission the console can use.</p>
        ) : (
          current.render(current.key === route[0] ? route.slice(1) : [])
        )}
      </main>
      {switching && <SwitchWorkspace onClose={() => setSwitching(false)} />}
    </div>
  )
}

export const Shell = () => (
  <Toasts>
    <SessionGate signedOut={(props) => <SignIn {...props} />}>
      <Frame />
    </SessionGate>
  </Toasts>
)
