// Service accounts: create with a role or a list of permissions (the secret shown once), rename, describe, rotate
// (a new secret shown once; also reactivates a revoked account), revoke, delete.
import { useState } from "preact/hooks"
import { allPermissions, type Page, type Role, roles, type ServiceAccount } from "../lib/Types.ts"
import { origin, useSession } from "../Session.tsx"
import {
  AsyncView,
  Button,
  confirmed,
  CopyButton,
  ErrorBox,
  Field,
  Modal,
  PageHead,
  StatusBadge,
  TableHead,
  useAction,
  useAsync,
  useToast,
  when
} from "../Ui.tsx"

const SecretOnce = ({ account, onClose }: { account: { clientId: string; clientSecret: string }; onClose: () => void }) => (
  <Modal title="Client secret" onClose={onClose}>
    <p>Shown this once. The account signs in with the client-credentials grant:</p>
    <dl class="facts">
      <dt>client_id</dt>
      <dd>
        <code>{account.clientId}</code> <CopyButton text={account.clientId} />
      </dd>
      <dt>client_secret</dt>
      <dd>
        <code data-testid="client-secret">{account.clientSecret}</code> <CopyButton text={account.clientSecret} />
      </dd>
    </dl>
    <pre class="json">{`curl -s ${origin}/oidc/token -d grant_type=client_credentials \\\n  -d client_id=${account.clientId} -d client_secret=…`}</pre>
    <Button kind="primary" onClick={onClose}>
      Done
    </Button>
  </Modal>
)

const CreateAccount = ({ onCreated, onClose }: { onCreated: (a: ServiceAccount) => void; onClose: () => void }) => {
  const { api, can } = useSession()
  const [name, setName] = useState("")
  const [description, setDescription] = useState("")
  const [mode, setMode] = useState<"role" | "permissions">("role")
  const [role, setRole] = useState<Role>("developer")
  const [permissions, setPermissions] = useState<ReadonlyArray<string>>([])
  const save = useAction()
  return (
    <Modal title="New service account" onClose={onClose}>
      <form
        onSubmit={(e) => {
          e.preventDefault()
          void save.run(async () =>
            onCreated(
              await api.post<ServiceAccount>("/service-accounts", {
                name,
                ...(description.trim() === "" ? {} : { description }),
                ...(mode === "role" ? { role } : { permissions })
              })
            )
          )
        }}
      >
        <Field label="Name">
          <input name="account-name" required value={name} onInput={(e) => setName(e.currentTarget.value)} />
        </Field>
        <Field label="Description">
          <input value={description} onInput={(e) => setDescription(e.currentTarget.value)} />
        </Field>
        <div class="toolbar">
          <label class="check">
            <input type="radio" checked={mode === "role"} onChange={() => setMode("role")} /> A role
          </label>
          <label class="check">
            <input type="radio" checked={mode === "permissions"} onChange={() => setMode("permissions")} /> Chosen permissions
          </label>
        </div>
        {mode === "role" ? (
          <Field label="Role">
            <select value={role} onChange={(e) => setRole(e.currentTarget.value as Role)}>
              {roles.map((r) => (
                <option key={r} value={r}>
                  {r}
                </option>
              ))}
            </select>
          </Field>
        ) : (
          <div class="checks">
            {allPermissions.filter(can).map((p) => (
              <label key={p} class="check">
                <input
                  type="checkbox"
                  checked={permissions.includes(p)}
                  onChange={(e) => setPermissions(e.currentTarget.checked ? [...permissions, p] : permissions.filter((x) => x !== p))}
                />
                <code>{p}</code>
              </label>
            ))}
          </div>
        )}
        <p class="muted">Nobody can give an account a permission they do not hold themselves.</p>
        <ErrorBox error={save.error} title="Not created" />
        <Button type="submit" kind="primary" perm="write:service-accounts" busy={save.busy}>
          Create
        </Button>
      </form>
    </Modal>
  )
}

const EditAccount = ({ account, onSaved, onClose }: { account: ServiceAccount; onSaved: () => void; onClose: () => void }) => {
  const { api } = useSession()
  const [name, setName] = useState(account.name)
  const [description, setDescription] = useState(account.description ?? "")
  const save = useAction()
  return (
    <Modal title={`Edit ${account.name}`} onClose={onClose}>
      <form
        onSubmit={(e) => {
          e.preventDefault()
          void save.run(async () => {
            if (name !== account.name) await api.put(`/service-accounts/${account.id}/name`, { name })
            if (description !== (account.description ?? "")) {
              await api.put(`/service-accounts/${account.id}/description`, { description: description.trim() === "" ? null : description })
            }
            onSaved()
          })
        }}
      >
        <Field label="Name">
          <input required value={name} onInput={(e) => setName(e.currentTarget.value)} />
        </Field>
        <Field label="Description">
          <input value={description} onInput={(e) => setDescription(e.currentTarget.value)} />
        </Field>
        <ErrorBox error={save.error} title="Not saved" />
        <Button type="submit" kind="primary" perm="write:service-accounts" busy={save.busy}>
          Save
        </Button>
      </form>
    </Modal>
  )
}

export const ServiceAccountsScreen = () => {
  const { api } = useSession()
  const toast = useToast()
  const { state, reload } = useAsync(() => api.get<Page<ServiceAccount>>("/service-accounts", { limit: 100 }), [])
  const [creating, setCreating] = useState(false)
  const [editing, setEditing] = useState<ServiceAccount | undefined>(undefined)
  const [secret, setSecret] = useState<{ clientId: string; clientSecret: string } | undefined>(undefined)
  const action = useAction()
  return (
    <section>
      <PageHead title="Service accounts">
        <Button perm="write:service-accounts" kind="primary" onClick={() => setCreating(true)}>
          New service account
        </Button>
      </PageHead>
      <ErrorBox error={action.error} />
      <AsyncView state={state} isEmpty={(d) => d.data.length === 0} empty="No service accounts yet.">
        {(list) => (
          <table class="table">
            <TableHead columns={["Name", "Client id", "Access", "Status", "Created", ""]} />
            <tbody>
              {list.data.map((a) => (
                <tr key={a.id}>
                  <td>
                    {a.name}
                    {a.description !== null && <div class="muted">{a.description}</div>}
                  </td>
                  <td>
                    <code>{a.clientId}</code>
                  </td>
                  <td>{a.role ?? (a.permissions.length === 0 ? "nothing" : a.permissions.join(", "))}</td>
                  <td>
                    <StatusBadge status={a.status} />
                  </td>
                  <td>{when(a.createdAt)}</td>
                  <td class="row-actions">
                    <Button perm="write:service-accounts" onClick={() => setEditing(a)}>
                      Edit
                    </Button>
                    <Button
                      perm="write:service-accounts"
                      onClick={() =>
                        confirmed(`Rotate the secret of ${a.name}? The old one stops working now.`) &&
                        void action.run(async () => {
                          const rotated = await api.post<{ clientId: string; clientSecret: string }>(`/service-accounts/${a.id}/rotate`)
                          setSecret(rotated)
                          reload()
                        })
                      }
                    >
                      Rotate secret
                    </Button>
                    {a.status === "active" && (
                      <Button
                        perm="write:service-accounts"
                        kind="danger"
                        onClick={() =>
                          confirmed(`Revoke ${a.name}? Its tokens stop working now; rotating reactivates it.`) &&
                          void action.run(async () => {
                            await api.post(`/service-accounts/${a.id}/revoke`)
                            toast(`${a.name} revoked`)
                            reload()
                          })
                        }
                      >
                        Revoke
                      </Button>
                    )}
                    <Button
                      perm="write:service-accounts"
                      kind="danger"
                      onClick={() =>
                        confirmed(`Delete ${a.name}?`) &&
                        void action.run(async () => {
                          await api.del(`/service-accounts/${a.id}`)
                          toast(`${a.name} deleted`)
                          reload()
                        })
                      }
                    >
                      Delete
                    </Button>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
      </AsyncView>
      {creating && (
        <CreateAccount
          onClose={() => setCreating(false)}
          onCreated={(a) => {
            setCreating(false)
            reload()
            if (a.clientSecret !== undefined) setSecret({ clientId: a.clientId, clientSecret: a.clientSecret })
          }}
        />
      )}
      {editing !== undefined && (
        <EditAccount
          account={editing}
          onClose={() => setEditing(undefined)}
          onSaved={() => {
            setEditing(undefined)
            toast("Saved")
            reload()
          }}
        />
      )}
      {secret !== undefined && <SecretOnce account={secret} onClose={() => setSecret(undefined)} />}
    </section>
  )
}
