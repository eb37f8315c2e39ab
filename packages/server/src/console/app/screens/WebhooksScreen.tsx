// Webhooks: create and edit (events, filters, secret shown once, enabled), a test delivery, the delivery log with
// each delivery's payload, redelivery, and the failures.
import { useState } from "preact/hooks"
import type { Delivery, Page, StructureList, Webhook } from "../lib/Types.ts"
import { useSession } from "../Session.tsx"
import {
  AsyncView,
  Button,
  confirmed,
  CopyButton,
  ErrorBox,
  Field,
  href,
  Json,
  JsonInput,
  Modal,
  navigate,
  PageHead,
  Pager,
  StatusBadge,
  TableHead,
  useAction,
  useAsync,
  useToast,
  when
} from "../Ui.tsx"

const eventNames = [
  "*",
  "record.*",
  "record.created",
  "record.updated",
  "record.deleted",
  "record.restored",
  "record.reverted",
  "record.expired",
  "record.bulk.*",
  "record.bulk.created",
  "record.bulk.updated",
  "record.bulk.deleted",
  "function.*",
  "function.completed",
  "function.failed",
  "trigger.fired"
]

export const WebhooksScreen = ({ route }: { route: ReadonlyArray<string> }) =>
  route[0] === undefined ? <WebhookList /> : <WebhookDetail key={route[0]} id={route[0]} />

const SecretOnce = ({ secret, onClose }: { secret: string; onClose: () => void }) => (
  <Modal title="Signing secret" onClose={onClose}>
    <p>Shown this once: keep it where the receiver verifies signatures.</p>
    <div class="secret">
      <code data-testid="secret">{secret}</code> <CopyButton text={secret} />
    </div>
    <Button kind="primary" onClick={onClose}>
      Done
    </Button>
  </Modal>
)

const WebhookForm = ({ webhook, onSaved, onClose }: { webhook?: Webhook; onSaved: (w: Webhook) => void; onClose: () => void }) => {
  const { api } = useSession()
  const structures = useAsync(() => api.get<StructureList>("/structures", { limit: 500 }), [])
  const [name, setName] = useState(webhook?.name ?? "")
  const [url, setUrl] = useState(webhook?.url ?? "")
  const [events, setEvents] = useState<ReadonlyArray<string>>(webhook?.events ?? ["record.*"])
  const [structure, setStructure] = useState(webhook?.filters.structure ?? "")
  const [data, setData] = useState<unknown>(webhook?.filters.data)
  const [query, setQuery] = useState(webhook?.filters.query ?? "")
  const [secret, setSecret] = useState("")
  const [enabled, setEnabled] = useState(webhook?.enabled ?? true)
  const save = useAction()
  const filters = {
    ...(structure === "" ? {} : { structure }),
    ...(data === undefined ? {} : { data }),
    ...(query.trim() === "" ? {} : { query })
  }
  return (
    <Modal title={webhook === undefined ? "New webhook" : `Edit ${webhook.name}`} onClose={onClose} wide>
      <form
        onSubmit={(e) => {
          e.preventDefault()
          void save.run(async () => {
            const body = { ...(name.trim() === "" ? {} : { name }), url, events, filters, enabled, ...(secret === "" ? {} : { secret }) }
            onSaved(
              webhook === undefined ? await api.post<Webhook>("/webhooks", body) : await api.patch<Webhook>(`/webhooks/${webhook.id}`, body)
            )
          })
        }}
      >
        <div class="grid">
          <Field label="Name">
            <input value={name} placeholder="Webhook to <host>" onInput={(e) => setName(e.currentTarget.value)} />
          </Field>
          <Field label="URL">
            <input
              name="webhook-url"
              type="url"
              required
              value={url}
              placeholder="https://example.com/hook"
              onInput={(e) => setUrl(e.currentTarget.value)}
            />
          </Field>
        </div>
        <fieldset class="group">
          <legend>Events</legend>
          <div class="checks">
            {eventNames.map((ev) => (
              <label key={ev} class="check">
                <input
                  type="checkbox"
                  checked={events.includes(ev)}
                  onChange={(e) => setEvents(e.currentTarget.checked ? [...events, ev] : events.filter((x) => x !== ev))}
                />
                <code>{ev}</code>
              </label>
            ))}
          </div>
        </fieldset>
        <fieldset class="group">
          <legend>Filters (all must hold)</legend>
          <div class="grid">
            <Field label="Structure">
              <select value={structure} onChange={(e) => setStructure(e.currentTarget.value)}>
                <option value="">any</option>
                {(structures.state.data?.data ?? []).map((s) => (
                  <option key={s.id} value={s.recordSlug}>
                    {s.recordSlug}
                  </option>
                ))}
              </select>
            </Field>
            <Field label="Condition (query language)" hint="amount > 100 AND status = 'paid'">
              <input value={query} onInput={(e) => setQuery(e.currentTarget.value)} />
            </Field>
          </div>
          <JsonInput label="Field equality (JSON object)" rows={2} value={data} onChange={setData} placeholder='{"status": "paid"}' />
        </fieldset>
        <div class="grid">
          <Field
            label={webhook === undefined ? "Signing secret" : "New signing secret"}
            hint={webhook === undefined ? "generated (whsec_…) when empty" : "empty keeps the current one"}
          >
            <input value={secret} autocomplete="off" onInput={(e) => setSecret(e.currentTarget.value)} />
          </Field>
          <label class="check">
            <input type="checkbox" checked={enabled} onChange={(e) => setEnabled(e.currentTarget.checked)} /> Enabled
          </label>
        </div>
        <ErrorBox error={save.error} title="Not saved" />
        <Button type="submit" kind="primary" perm="write:webhooks" busy={save.busy}>
          {webhook === undefined ? "Create webhook" : "Save"}
        </Button>
      </form>
    </Modal>
  )
}

const WebhookList = () => {
  const { api } = useSession()
  const toast = useToast()
  const { state, reload } = useAsync(() => api.get<Page<Webhook>>("/webhooks", { limit: 100 }), [])
  const [creating, setCreating] = useState(false)
  const [secret, setSecret] = useState<{ secret: string; id: string } | undefined>(undefined)
  return (
    <section>
      <PageHead title="Webhooks">
        <Button perm="write:webhooks" kind="primary" onClick={() => setCreating(true)}>
          New webhook
        </Button>
      </PageHead>
      <AsyncView state={state} isEmpty={(d) => d.data.length === 0} empty="No webhooks yet.">
        {(list) => (
          <table class="table">
            <TableHead columns={["Name", "URL", "Events", "Status", "Created"]} />
            <tbody>
              {list.data.map((w) => (
                <tr key={w.id}>
                  <td>
                    <a href={href("webhooks", w.id)}>{w.name}</a>
                  </td>
                  <td>
                    <code>{w.url}</code>
                  </td>
                  <td>{w.events.join(", ")}</td>
                  <td>
                    <StatusBadge status={w.status} />
                  </td>
                  <td>{when(w.createdAt)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
      </AsyncView>
      {creating && (
        <WebhookForm
          onClose={() => setCreating(false)}
          onSaved={(w) => {
            setCreating(false)
            toast(`Webhook ${w.name} created`)
            reload()
            if (w.secret !== undefined) setSecret({ secret: w.secret, id: w.id })
          }}
        />
      )}
      {secret !== undefined && (
        <SecretOnce
          secret={secret.secret}
          onClose={() => {
            const id = secret.id
            setSecret(undefined)
            navigate("webhooks", id)
          }}
        />
      )}
    </section>
  )
}

const WebhookDetail = ({ id }: { id: string }) => {
  const { api } = useSession()
  const toast = useToast()
  const { state, reload } = useAsync(() => api.get<Webhook>(`/webhooks/${id}`), [id])
  const [status, setStatus] = useState("")
  const [page, setPage] = useState(1)
  const deliveries = useAsync(() => api.get<Page<Delivery>>(`/webhooks/${id}/deliveries`, { status, page, limit: 25 }), [id, status, page])
  const failures = useAsync(
    () =>
      api.get<{
        failures: ReadonlyArray<{
          id: string
          event: string
          attempts: number
          lastStatus: number | null
          lastError: string | null
          failedAt: string
        }>
      }>(`/webhooks/${id}/failures`, { limit: 20 }),
    [id]
  )
  const [editing, setEditing] = useState(false)
  const [secret, setSecret] = useState<string | undefined>(undefined)
  const [open, setOpen] = useState<Delivery | undefined>(undefined)
  const [test, setTest] = useState<{ delivered: boolean; status: number | null; durationMs: number; error?: string } | undefined>(undefined)
  const action = useAction()
  return (
    <AsyncView state={state}>
      {(webhook) => (
        <section>
          <PageHead
            title={
              <>
                {webhook.name} <StatusBadge status={webhook.status} />
              </>
            }
          >
            <a class="btn btn-plain" href={href("webhooks")}>
              All webhooks
            </a>
            <Button
              perm="write:webhooks"
              busy={action.busy}
              onClick={() =>
                void action.run(async () => {
                  setTest(await api.post(`/webhooks/${webhook.id}/test`, {}))
                })
              }
            >
              Send a test
            </Button>
            <Button perm="write:webhooks" onClick={() => setEditing(true)}>
              Edit
            </Button>
            {webhook.status === "failed" && (
              <Button
                perm="write:webhooks"
                kind="primary"
                onClick={() =>
                  void action.run(async () => {
                    await api.patch(`/webhooks/${webhook.id}`, { enabled: true })
                    toast("Webhook active again")
                    reload()
                  })
                }
              >
                Re-enable
              </Button>
            )}
            <Button
              perm="write:webhooks"
              kind="danger"
              onClick={() =>
                confirmed(`Delete ${webhook.name}?`) &&
                void action.run(async () => {
                  await api.del(`/webhooks/${webhook.id}`)
                  navigate("webhooks")
                })
              }
            >
              Delete
            </Button>
          </PageHead>
          <p>
            <code>{webhook.url}</code> · {webhook.events.join(", ")}
            {Object.keys(webhook.filters).length > 0 && (
              <>
                {" "}
                · filters <code>{JSON.stringify(webhook.filters)}</code>
              </>
            )}
          </p>
          <ErrorBox error={action.error} />
          {test !== undefined && (
            <p class={`notice ${test.delivered ? "ok" : "bad"}`} data-testid="webhook-test">
              Test {test.delivered ? "delivered" : "not delivered"}: status {test.status ?? "none"} in {Math.round(test.durationMs)} ms
              {test.error ? ` · ${test.error}` : ""}
            </p>
          )}
          <h2>Deliveries</h2>
          <div class="toolbar">
            <select
              aria-label="Delivery status"
              value={status}
              onChange={(e) => {
                setStatus(e.currentTarget.value)
                setPage(1)
              }}
            >
              <option value="">every status</option>
              {["pending", "retrying", "delivered", "failed", "skipped"].map((s) => (
                <option key={s} value={s}>
                  {s}
                </option>
              ))}
            </select>
            <button type="button" class="btn btn-plain" onClick={deliveries.reload}>
              Refresh
            </button>
          </div>
          <AsyncView state={deliveries.state} isEmpty={(d) => d.data.length === 0} empty="No deliveries yet.">
            {(list) => (
              <>
                <table class="table">
                  <TableHead columns={["When", "Event", "Status", "Attempts", "Answer", ""]} />
                  <tbody>
                    {list.data.map((d) => (
                      <tr key={d.id}>
                        <td>{when(d.createdAt)}</td>
                        <td>
                          <code>{d.event}</code>
                          {d.redeliveryOf !== null && <span class="badge">redelivery</span>}
                        </td>
                        <td>
                          <StatusBadge status={d.status} />
                        </td>
                        <td>{d.attempts}</td>
                        <td>
                          {d.lastStatus ?? ""} {d.lastError ?? ""} {d.durationMs !== null ? `${Math.round(d.durationMs)} ms` : ""}
                        </td>
                        <td>
                          <button
                            type="button"
                            class="btn btn-plain"
                            onClick={() =>
                              void api.get<Delivery>(`/webhooks/${webhook.id}/deliveries/${d.id}`).then(setOpen, action.setError)
                            }
                          >
                            Payload
                          </button>
                          <Button
                            perm="write:webhooks"
                            onClick={() =>
                              void action.run(async () => {
                                await api.post(`/webhooks/${webhook.id}/deliveries/${d.id}/redeliver`)
                                toast("Redelivery queued")
                                deliveries.reload()
                              })
                            }
                          >
                            Redeliver
                          </Button>
                        </td>
                      </tr>
                    ))}
                  </tbody>
                </table>
                <Pager page={page} pageSize={list.limit} total={list.total} onPage={setPage} />
              </>
            )}
          </AsyncView>
          <h2>Failures</h2>
          <AsyncView state={failures.state} isEmpty={(f) => f.failures.length === 0} empty="No failed deliveries.">
            {({ failures: list }) => (
              <table class="table">
                <TableHead columns={["Failed", "Event", "Attempts", "Last answer"]} />
                <tbody>
                  {list.map((f) => (
                    <tr key={f.id}>
                      <td>{when(f.failedAt)}</td>
                      <td>{f.event}</td>
                      <td>{f.attempts}</td>
                      <td>
                        {f.lastStatus ?? ""} {f.lastError ?? ""}
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            )}
          </AsyncView>
          {open !== undefined && (
            <Modal title={`Delivery ${open.id.slice(0, 8)}`} onClose={() => setOpen(undefined)} wide>
              <Json value={open} />
            </Modal>
          )}
          {editing && (
            <WebhookForm
              webhook={webhook}
              onClose={() => setEditing(false)}
              onSaved={(w) => {
                setEditing(false)
                toast("Webhook saved")
                reload()
                if (w.secret !== undefined) setSecret(w.secret)
              }}
            />
          )}
          {secret !== undefined && <SecretOnce secret={secret} onClose={() => setSecret(undefined)} />}
        </section>
      )}
    </AsyncView>
  )
}
