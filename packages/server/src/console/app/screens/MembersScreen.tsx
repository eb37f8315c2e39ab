// Members and roles: the workspace's members with their roles (change, remove, add), what each role grants, and the
// IAM groups with their policies and members.
import { useState } from "preact/hooks"
import type { Group, Member, Page, Role, ServiceAccount } from "../lib/Types.ts"
import { roles } from "../lib/Types.ts"
import { useSession } from "../Session.tsx"
import { AsyncView, Button, Can, confirmed, ErrorBox, PageHead, TableHead, useAction, useAsync, useToast, when } from "../Ui.tsx"

const grants: Record<Role, string> = {
  viewer: "read:structures, read:records, read:functions, read:storage",
  developer: "viewer + write:structures, write:records, write:functions, execute:functions, write:storage",
  admin: "developer + read/write:webhooks, read/write:triggers, read/write:service-accounts, secrets:reveal",
  owner: "everything + workspace:members (members and IAM groups)"
}

// the policy actions and resources of @troupe/api (identity/Roles.ts; the generated schema types them as strings)
const actions = ["create", "retrieve", "list", "update", "delete", "manage", "validate", "execute"]
const resources = [
  "records",
  "structures",
  "compute-functions",
  "function-triggers",
  "webhooks",
  "service-accounts",
  "storage",
  "secrets",
  "notifications",
  "cors",
  "*"
]

export const MembersScreen = () => {
  const { can } = useSession()
  return (
    <section>
      <PageHead title="Members and roles" />
      {can("workspace:members") ? <Members /> : <p class="muted">Only owners see and manage members.</p>}
      <h2>Roles</h2>
      <table class="table">
        <TableHead columns={["Role", "Grants"]} />
        <tbody>
          {roles.map((r) => (
            <tr key={r}>
              <td>{r}</td>
              <td>{grants[r]}</td>
            </tr>
          ))}
        </tbody>
      </table>
      {can("read:service-accounts") && <Groups />}
    </section>
  )
}

const Members = () => {
  const { api, me } = useSession()
  const toast = useToast()
  const { state, reload } = useAsync(() => api.get<Page<Member>>("/members", { limit: 100 }), [])
  const [username, setUsername] = useState("")
  const [password, setPassword] = useState("")
  const [role, setRole] = useState<Role>("viewer")
  const action = useAction()
  return (
    <>
      <ErrorBox error={action.error} />
      <AsyncView state={state} isEmpty={(d) => d.data.length === 0} empty="No members.">
        {(list) => (
          <table class="table">
            <TableHead columns={["User", "Role", "Since", ""]} />
            <tbody>
              {list.data.map((m) => (
                <tr key={m.userId}>
                  <td>
                    {m.username}
                    {m.userId === me.id && <span class="badge">you</span>}
                  </td>
                  <td>
                    <select
                      aria-label={`Role of ${m.username}`}
                      value={m.role}
                      onChange={(e) => {
                        const next = e.currentTarget.value
                        void action.run(async () => {
                          await api.put(`/members/${m.userId}/role`, { role: next })
                          toast(`${m.username} is now ${next}`)
                          reload()
                        })
                      }}
                    >
                      {roles.map((r) => (
                        <option key={r} value={r}>
                          {r}
                        </option>
                      ))}
                    </select>
                  </td>
                  <td>{when(m.createdAt)}</td>
                  <td>
                    <Button
                      perm="workspace:members"
                      kind="danger"
                      onClick={() =>
                        confirmed(`Remove ${m.username} from the workspace? Their tokens stop working now.`) &&
                        void action.run(async () => {
                          await api.del(`/members/${m.userId}`)
                          toast(`${m.username} removed`)
                          reload()
                        })
                      }
                    >
                      Remove
                    </Button>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
      </AsyncView>
      <form
        class="toolbar"
        onSubmit={(e) => {
          e.preventDefault()
          void action.run(async () => {
            await api.post("/members", { username, role, ...(password === "" ? {} : { password }) })
            toast(`${username} added as ${role}`)
            setUsername("")
            setPassword("")
            reload()
          })
        }}
      >
        <input aria-label="Username" placeholder="username" required value={username} onInput={(e) => setUsername(e.currentTarget.value)} />
        <input
          aria-label="Password"
          type="password"
          placeholder="password (a new user)"
          autocomplete="new-password"
          value={password}
          onInput={(e) => setPassword(e.currentTarget.value)}
        />
        <select aria-label="Role" value={role} onChange={(e) => setRole(e.currentTarget.value as Role)}>
          {roles.map((r) => (
            <option key={r} value={r}>
              {r}
            </option>
          ))}
        </select>
        <Button type="submit" perm="workspace:members" kind="primary" busy={action.busy}>
          Add member
        </Button>
      </form>
    </>
  )
}

const Groups = () => {
  const { api, can } = useSession()
  const toast = useToast()
  const { state, reload } = useAsync(() => api.get<Page<Group>>("/groups", { limit: 100 }), [])
  const members = useAsync(
    () => (can("workspace:members") ? api.get<Page<Member>>("/members", { limit: 100 }) : Promise.resolve(undefined)),
    []
  )
  const accounts = useAsync(() => api.get<Page<ServiceAccount>>("/service-accounts", { limit: 100 }), [])
  const [name, setName] = useState("")
  const action = useAction()
  return (
    <>
      <h2>IAM groups</h2>
      <ErrorBox error={action.error} />
      <AsyncView state={state} isEmpty={(d) => d.data.length === 0} empty="No groups.">
        {(list) => (
          <div class="groups">
            {list.data.map((g) => (
              <div key={g.id} class="card">
                <div class="page-head">
                  <h3>{g.name}</h3>
                  <div class="actions">
                    <Button
                      perm="workspace:members"
                      kind="danger"
                      onClick={() =>
                        confirmed(`Delete group ${g.name}?`) &&
                        void action.run(async () => {
                          await api.del(`/groups/${g.id}`)
                          reload()
                        })
                      }
                    >
                      Delete group
                    </Button>
                  </div>
                </div>
                <h4>Policies</h4>
                <ul class="picker">
                  {g.policies.map((p) => (
                    <li key={p.id}>
                      <code>
                        {p.effect} {p.action} {p.resource}
                      </code>{" "}
                      <Button
                        perm="workspace:members"
                        onClick={() =>
                          void action.run(async () => {
                            await api.del(`/groups/${g.id}/policies/${p.id}`)
                            reload()
                          })
                        }
                      >
                        Remove
                      </Button>
                    </li>
                  ))}
                </ul>
                <Can perm="workspace:members">
                  <PolicyForm
                    onAdd={(policy) =>
                      action.run(async () => {
                        await api.post(`/groups/${g.id}/policies`, policy)
                        toast("Policy added")
                        reload()
                      })
                    }
                  />
                </Can>
                <h4>Members</h4>
                <ul class="picker">
                  {g.members.map((m) => (
                    <li key={`${m.type}${m.id}`}>
                      {m.name} <span class="badge">{m.type}</span>{" "}
                      <Button
                        perm="workspace:members"
                        onClick={() =>
                          void action.run(async () => {
                            await api.del(`/groups/${g.id}/members/${m.type === "user" ? "users" : "service-accounts"}/${m.id}`)
                            reload()
                          })
                        }
                      >
                        Remove
                      </Button>
                    </li>
                  ))}
                </ul>
                <Can perm="workspace:members">
                  <select
                    aria-label={`Add to ${g.name}`}
                    value=""
                    onChange={(e) => {
                      const [kind, id] = e.currentTarget.value.split(":")
                      if (id === undefined) return
                      void action.run(async () => {
                        await api.post(`/groups/${g.id}/members`, kind === "user" ? { userId: id } : { serviceAccountId: Number(id) })
                        reload()
                      })
                    }}
                  >
                    <option value="">add a member…</option>
                    {(members.state.data?.data ?? []).map((m) => (
                      <option key={m.userId} value={`user:${m.userId}`}>
                        {m.username}
                      </option>
                    ))}
                    {(accounts.state.data?.data ?? []).map((a) => (
                      <option key={a.id} value={`sa:${a.id}`}>
                        {a.name} (service account)
                      </option>
                    ))}
                  </select>
                </Can>
              </div>
            ))}
          </div>
        )}
      </AsyncView>
      <Can perm="workspace:members">
        <form
          class="toolbar"
          onSubmit={(e) => {
            e.preventDefault()
            void action.run(async () => {
              await api.post("/groups", { name })
              setName("")
              reload()
            })
          }}
        >
          <input aria-label="Group name" placeholder="group name" required value={name} onInput={(e) => setName(e.currentTarget.value)} />
          <Button type="submit" perm="workspace:members">
            Create group
          </Button>
        </form>
      </Can>
    </>
  )
}

const PolicyForm = ({ onAdd }: { onAdd: (p: { action: string; resource: string; effect: string }) => void }) => {
  const [action, setAction] = useState("retrieve")
  const [resource, setResource] = useState("records")
  const [effect, setEffect] = useState("allow")
  return (
    <div class="toolbar">
      <select aria-label="Effect" value={effect} onChange={(e) => setEffect(e.currentTarget.value)}>
        <option>allow</option>
        <option>deny</option>
      </select>
      <select aria-label="Action" value={action} onChange={(e) => setAction(e.currentTarget.value)}>
        {actions.map((a) => (
          <option key={a}>{a}</option>
        ))}
      </select>
      <select aria-label="Resource" value={resource} onChange={(e) => setResource(e.currentTarget.value)}>
        {resources.map((r) => (
          <option key={r}>{r}</option>
        ))}
      </select>
      <button type="button" class="btn btn-plain" data-write="workspace:members" onClick={() => onAdd({ action, resource, effect })}>
        Add policy
      </button>
    </div>
  )
}
