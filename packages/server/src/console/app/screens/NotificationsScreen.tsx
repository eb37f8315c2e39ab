// Notifications: the message log (and the development inbox: captured mail rendered in a sandboxed frame beside its
// text part), the templates (NotificationTemplates.tsx: an editor with a live preview) and the provider settings with
// a "send a test message" button. Sub-routes: #/notifications, #/notifications/templates, #/notifications/settings,
// #/notifications/<message id>.
import { useState } from "preact/hooks"
import { useSession } from "../Session.tsx"
import {
  AsyncView,
  Button,
  ErrorBox,
  Field,
  hashQuery,
  href,
  navigate,
  PageHead,
  Pager,
  StatusBadge,
  TableHead,
  Tabs,
  useAction,
  useAsync,
  when
} from "../Ui.tsx"
import { type ListOf, type NotificationMessage, notificationApi } from "./NotificationApi.ts"
import { TemplatesPanel } from "./NotificationTemplates.tsx"

type Tab = "messages" | "templates" | "settings"

export const NotificationsScreen = ({ route }: { route: ReadonlyArray<string> }) => {
  const { can } = useSession()
  const sub = route[0]
  if (sub !== undefined && sub !== "templates" && sub !== "settings") return <MessageDetail key={sub} id={sub} />
  const tab: Tab = sub === "templates" ? "templates" : sub === "settings" ? "settings" : "messages"
  const tabs: Array<readonly [Tab, string]> = [
    ["messages", "Messages"],
    ["templates", "Templates"],
    ...(can("manage:notifications") ? [["settings", "Settings"] as const] : [])
  ]
  return (
    <section>
      <PageHead title="Notifications" />
      <Tabs tabs={tabs} active={tab} onChange={(t) => navigate("notifications", ...(t === "messages" ? [] : [t]))} />
      {tab === "messages" ? <MessageList /> : tab === "templates" ? <TemplatesPanel /> : <SettingsPanel />}
    </section>
  )
}

const MessageList = () => {
  const { api } = useSession()
  const n = notificationApi(api)
  const [status, setStatus] = useState(hashQuery().get("status") ?? "")
  const [channel, setChannel] = useState("")
  const [page, setPage] = useState(1)
  const { state, reload } = useAsync(
    () => n.get<ListOf<NotificationMessage>>("/messages", { status: status || undefined, channel: channel || undefined, page, limit: 50 }),
    [status, channel, page]
  )
  return (
    <>
      <div class="filters">
        <select
          aria-label="Status"
          value={status}
          onChange={(e) => {
            setStatus(e.currentTarget.value)
            setPage(1)
          }}
        >
          <option value="">every status</option>
          {["queued", "sending", "sent", "failed", "captured"].map((s) => (
            <option key={s} value={s}>
              {s === "captured" ? "captured (inbox)" : s}
            </option>
          ))}
        </select>
        <select
          aria-label="Channel"
          value={channel}
          onChange={(e) => {
            setChannel(e.currentTarget.value)
            setPage(1)
          }}
        >
          <option value="">email and SMS</option>
          <option value="email">email</option>
          <option value="sms">SMS</option>
        </select>
        <Button onClick={reload}>Refresh</Button>
      </div>
      <AsyncView state={state} isEmpty={(d) => d.data.length === 0} empty="No messages yet.">
        {(d) => (
          <>
            <table class="table">
              <TableHead columns={["When", "Channel", "To", "Subject", "Status", "Attempts", "Last error"]} />
              <tbody>
                {d.data.map((m) => (
                  <tr key={m.id} data-testid="message-row">
                    <td>
                      <a href={href("notifications", m.id)}>{when(m.createdAt)}</a>
                    </td>
                    <td>{m.channel}</td>
                    <td>{m.to.join(", ")}</td>
                    <td>{m.subject ?? ""}</td>
                    <td>
                      <StatusBadge status={m.status} />
                    </td>
                    <td>{m.attempts}</td>
                    <td class="muted">{m.lastError ?? ""}</td>
                  </tr>
                ))}
              </tbody>
            </table>
            <Pager page={page} pageSize={50} total={d.total} onPage={setPage} />
          </>
        )}
      </AsyncView>
    </>
  )
}

const MessageDetail = ({ id }: { id: string }) => {
  const { api } = useSession()
  const { state } = useAsync(() => notificationApi(api).get<NotificationMessage>(`/messages/${id}`), [id])
  return (
    <section>
      <PageHead title="Message">
        <a class="btn btn-plain" href={href("notifications")}>
          ‹ Messages
        </a>
      </PageHead>
      <AsyncView state={state}>
        {(m) => (
          <>
            <dl class="facts">
              <dt>Status</dt>
              <dd>
                <StatusBadge status={m.status} /> after {m.attempts} attempt(s)
                {m.nextAttemptAt !== null && ` · next attempt ${when(m.nextAttemptAt)}`}
              </dd>
              <dt>From</dt>
              <dd>{m.from ?? "(the provider's sender)"}</dd>
              <dt>To</dt>
              <dd>{[...m.to, ...m.cc.map((c) => `cc ${c}`), ...m.bcc.map((b) => `bcc ${b}`)].join(", ")}</dd>
              {m.subject !== null && (
                <>
                  <dt>Subject</dt>
                  <dd data-testid="message-subject">{m.subject}</dd>
                </>
              )}
              {m.templateName !== null && (
                <>
                  <dt>Template</dt>
                  <dd>
                    {m.templateName} v{m.templateVersion}
                  </dd>
                </>
              )}
              {m.lastError !== null && (
                <>
                  <dt>Last error</dt>
                  <dd class="error-text">{m.lastError}</dd>
                </>
              )}
              {m.providerMessageId !== null && (
                <>
                  <dt>Provider id</dt>
                  <dd>
                    <code>{m.providerMessageId}</code>
                  </dd>
                </>
              )}
              {m.messageId != null && (
                <>
                  <dt>Message-ID</dt>
                  <dd>
                    <code>{m.messageId}</code>
                  </dd>
                </>
              )}
              <dt>Queued</dt>
              <dd>{when(m.createdAt)}</dd>
              {m.sentAt !== null && (
                <>
                  <dt>Sent</dt>
                  <dd>{when(m.sentAt)}</dd>
                </>
              )}
            </dl>
            <MailView html={m.html ?? null} text={m.text ?? null} />
          </>
        )}
      </AsyncView>
    </section>
  )
}

/** A rendered mail: the HTML in a frame that runs no script and reaches nothing, the text part beside it. */
export const MailView = ({ html, text }: { html: string | null; text: string | null }) => (
  <div class="grid">
    {html !== null && (
      <Field label="HTML">
        <iframe class="mail-frame" title="Rendered HTML" sandbox="" srcdoc={html} data-testid="mail-html" />
      </Field>
    )}
    {text !== null && (
      <Field label="Text">
        <pre class="json" data-testid="mail-text">
          {text}
        </pre>
      </Field>
    )}
  </div>
)

interface Settings {
  readonly email: { smtpUrl: string; from: string } | null
  readonly sms: { url: string; accountSid: string; authToken: string; from: string } | null
  readonly active: { readonly email: string; readonly sms: string }
}

const SettingsPanel = () => {
  const { api } = useSession()
  const n = notificationApi(api)
  const { state, reload } = useAsync(() => n.get<Settings>("/settings"), [])
  return <AsyncView state={state}>{(s) => <SettingsForm key={JSON.stringify(s)} settings={s} onSaved={reload} />}</AsyncView>
}

const SettingsForm = ({ settings, onSaved }: { settings: Settings; onSaved: () => void }) => {
  const { api } = useSession()
  const n = notificationApi(api)
  const [email, setEmail] = useState({ smtpUrl: settings.email?.smtpUrl ?? "", from: settings.email?.from ?? "" })
  const [sms, setSms] = useState({
    url: settings.sms?.url ?? "",
    accountSid: settings.sms?.accountSid ?? "",
    authToken: settings.sms?.authToken ?? "",
    from: settings.sms?.from ?? ""
  })
  const [testTo, setTestTo] = useState({ email: "", sms: "" })
  const [tested, setTested] = useState<string | undefined>(undefined)
  const save = useAction()
  const test = useAction()
  const body = {
    ...(email.smtpUrl.trim() === "" ? {} : { email }),
    ...(sms.url.trim() === "" ? {} : { sms })
  }
  const sendTest = (channel: "email" | "sms") =>
    test.run(async () => {
      const r = await n.send<{ delivered: boolean; status: string; provider: string; error: string | null; durationMs: number }>(
        "POST",
        "/settings/test",
        { channel, to: testTo[channel] }
      )
      setTested(`${channel}: ${r.status} through ${r.provider}${r.error === null ? "" : ` (${r.error})`} in ${Math.round(r.durationMs)} ms`)
    })
  return (
    <form
      onSubmit={(e) => {
        e.preventDefault()
        void save.run(async () => {
          await n.send("PUT", "/settings", body)
          onSaved()
        })
      }}
    >
      <p class="muted">
        Email goes through <strong>{settings.active.email}</strong>, SMS through <strong>{settings.active.sms}</strong>. With no provider,
        messages are captured: kept in the log, never sent. Secrets read back as ********; saving them unchanged keeps them.
      </p>
      <fieldset class="group">
        <legend>Email (SMTP)</legend>
        <div class="grid">
          <Field label="SMTP URL" hint="smtp://user:password@host:587 (STARTTLS) or smtps://…:465">
            <input name="smtp-url" value={email.smtpUrl} onInput={(e) => setEmail({ ...email, smtpUrl: e.currentTarget.value })} />
          </Field>
          <Field label="From" hint="name@example.com or Name <name@example.com>">
            <input name="smtp-from" value={email.from} onInput={(e) => setEmail({ ...email, from: e.currentTarget.value })} />
          </Field>
        </div>
      </fieldset>
      <fieldset class="group">
        <legend>SMS (Twilio's Messages form)</legend>
        <div class="grid">
          <Field label="URL">
            <input name="sms-url" value={sms.url} onInput={(e) => setSms({ ...sms, url: e.currentTarget.value })} />
          </Field>
          <Field label="Account SID">
            <input value={sms.accountSid} onInput={(e) => setSms({ ...sms, accountSid: e.currentTarget.value })} />
          </Field>
          <Field label="Auth token">
            <input type="password" value={sms.authToken} onInput={(e) => setSms({ ...sms, authToken: e.currentTarget.value })} />
          </Field>
          <Field label="From" hint="E.164 number or sender id">
            <input value={sms.from} onInput={(e) => setSms({ ...sms, from: e.currentTarget.value })} />
          </Field>
        </div>
      </fieldset>
      <ErrorBox error={save.error} />
      <Button type="submit" kind="primary" busy={save.busy} perm="manage:notifications">
        Save settings
      </Button>
      <fieldset class="group">
        <legend>Send a test message (through the saved settings)</legend>
        <div class="grid">
          <Field label="Email to">
            <input name="test-email" value={testTo.email} onInput={(e) => setTestTo({ ...testTo, email: e.currentTarget.value })} />
          </Field>
          <Button busy={test.busy} onClick={() => void sendTest("email")} perm="manage:notifications">
            Send test email
          </Button>
          <Field label="SMS to">
            <input name="test-sms" value={testTo.sms} onInput={(e) => setTestTo({ ...testTo, sms: e.currentTarget.value })} />
          </Field>
          <Button busy={test.busy} onClick={() => void sendTest("sms")} perm="manage:notifications">
            Send test SMS
          </Button>
        </div>
        <ErrorBox error={test.error} />
        {tested !== undefined && <p data-testid="test-result">{tested}</p>}
      </fieldset>
    </form>
  )
}
