// Notification templates: the list, and an editor whose preview follows the typing (POST /templates/preview renders
// the unsaved sources with the sample variables, 300 ms after the last keystroke; a missing variable or a syntax
// error shows as the server words it). Saving makes a new version.
import { useEffect, useState } from "preact/hooks"
import { useSession } from "../Session.tsx"
import { AsyncView, Button, confirmed, ErrorBox, Field, JsonInput, Modal, TableHead, useAction, useAsync, when } from "../Ui.tsx"
import { type ListOf, type NotificationTemplate, notificationApi, type Rendered } from "./NotificationApi.ts"
import { MailView } from "./NotificationsScreen.tsx"

export const TemplatesPanel = () => {
  const { api } = useSession()
  const n = notificationApi(api)
  const { state, reload } = useAsync(() => n.get<ListOf<NotificationTemplate>>("/templates", { limit: 500 }), [])
  const [editing, setEditing] = useState<NotificationTemplate | "new" | undefined>(undefined)
  const remove = useAction()
  return (
    <>
      <div class="filters">
        <Button kind="primary" perm="write:notifications" onClick={() => setEditing("new")}>
          New template
        </Button>
      </div>
      <ErrorBox error={remove.error} />
      <AsyncView state={state} isEmpty={(d) => d.data.length === 0} empty="No templates yet.">
        {(d) => (
          <table class="table">
            <TableHead columns={["Name", "Channel", "Variables", "Version", "Updated", ""]} />
            <tbody>
              {d.data.map((t) => (
                <tr key={t.id} data-testid="template-row">
                  <td>
                    <button type="button" class="btn btn-plain" onClick={() => setEditing(t)}>
                      {t.name}
                    </button>
                  </td>
                  <td>{t.channel}</td>
                  <td>{t.variables.join(", ")}</td>
                  <td>v{t.version}</td>
                  <td>{when(t.updatedAt)}</td>
                  <td>
                    <Button
                      kind="danger"
                      perm="write:notifications"
                      onClick={() =>
                        confirmed(`Delete the template ${t.name}?`) &&
                        void remove.run(async () => {
                          await n.send("DELETE", `/templates/${t.id}`)
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
      {editing !== undefined && (
        <TemplateEditor
          template={editing === "new" ? undefined : editing}
          onClose={() => setEditing(undefined)}
          onSaved={() => {
            setEditing(undefined)
            reload()
          }}
        />
      )}
    </>
  )
}

const TemplateEditor = ({
  template,
  onClose,
  onSaved
}: {
  template: NotificationTemplate | undefined
  onClose: () => void
  onSaved: () => void
}) => {
  const { api } = useSession()
  const n = notificationApi(api)
  const [name, setName] = useState(template?.name ?? "")
  const [channel, setChannel] = useState<"email" | "sms">(template?.channel ?? "email")
  const [subject, setSubject] = useState(template?.subject ?? "")
  const [text, setText] = useState(template?.text ?? "")
  const [html, setHtml] = useState(template?.html ?? "")
  const [variables, setVariables] = useState<unknown>(Object.fromEntries((template?.variables ?? []).map((v) => [v, `<${v}>`])))
  const [preview, setPreview] = useState<Rendered | undefined>(undefined)
  const [problem, setProblem] = useState<unknown>(undefined)
  const save = useAction()
  const sources = {
    channel,
    ...(channel === "email" && subject !== "" ? { subject } : {}),
    ...(text !== "" ? { text } : {}),
    ...(channel === "email" && html !== "" ? { html } : {})
  }
  useEffect(() => {
    const timer = setTimeout(() => {
      n.send<Rendered>("POST", "/templates/preview", {
        ...sources,
        variables: typeof variables === "object" && variables !== null ? variables : {}
      }).then(
        (r) => {
          setPreview(r)
          setProblem(undefined)
        },
        (e) => setProblem(e)
      )
    }, 300)
    return () => clearTimeout(timer)
  }, [channel, subject, text, html, JSON.stringify(variables)])
  return (
    <Modal title={template === undefined ? "New template" : `Edit ${template.name} (v${template.version})`} onClose={onClose} wide>
      <form
        onSubmit={(e) => {
          e.preventDefault()
          void save.run(async () => {
            const body = { name, ...sources }
            if (template === undefined) await n.send("POST", "/templates", body)
            else await n.send("PUT", `/templates/${template.id}`, body)
            onSaved()
          })
        }}
      >
        <div class="grid">
          <Field label="Name">
            <input name="template-name" required value={name} onInput={(e) => setName(e.currentTarget.value)} />
          </Field>
          <Field label="Channel">
            <select
              value={channel}
              disabled={template !== undefined}
              onChange={(e) => setChannel(e.currentTarget.value as "email" | "sms")}
            >
              <option value="email">email</option>
              <option value="sms">SMS</option>
            </select>
          </Field>
        </div>
        {channel === "email" && (
          <Field label="Subject" hint="Liquid: {{ user.name }}">
            <input name="template-subject" value={subject} onInput={(e) => setSubject(e.currentTarget.value)} />
          </Field>
        )}
        <div class="grid">
          {channel === "email" && (
            <Field label="HTML" hint="Output is HTML-escaped; {{ x | raw }} is not">
              <textarea name="template-html" rows={10} value={html} onInput={(e) => setHtml(e.currentTarget.value)} />
            </Field>
          )}
          <Field label="Text" hint={channel === "email" ? "Made from the HTML when empty" : "The SMS"}>
            <textarea name="template-text" rows={10} value={text} onInput={(e) => setText(e.currentTarget.value)} />
          </Field>
        </div>
        <JsonInput label="Sample variables (JSON)" name="template-variables" value={variables} onChange={setVariables} />
        <h3>Preview</h3>
        {problem !== undefined ? (
          <ErrorBox error={problem} />
        ) : (
          preview !== undefined && (
            <div data-testid="template-preview">
              {preview.subject !== null && (
                <p>
                  <strong>Subject:</strong> {preview.subject}
                </p>
              )}
              <MailView html={preview.html} text={preview.text} />
            </div>
          )
        )}
        <ErrorBox error={save.error} />
        <Button type="submit" kind="primary" busy={save.busy} perm="write:notifications">
          Save
        </Button>
      </form>
    </Modal>
  )
}
