// The notification service end to end (CONTRACT §8.3, docs/notifications.md) against real peers on 127.0.0.1: an
// SMTP server whose deliveries are parsed (headers, both parts, recipients), 451 then 250, 550, a server that never
// answers, STARTTLS with a certificate made here; an SMS provider in Twilio's form (basic auth, form fields, 500
// then 201, 400); the development inbox when no provider is set; every bad input a 400 naming its field; the
// Idempotency-Key; permissions; the per-workspace limit; and one workspace's slow backlog not holding another's.
// Each scenario runs in a workspace of its own (settings are per workspace), on one node.
import { execFile } from "node:child_process"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { generate } from "selfsigned"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { computeClient, fn } from "./support/compute.ts"
import { createAccount, createUser } from "./support/IdentityHelpers.ts"
import { type MailServer, startMailServer, startSilentServer, startSmsProvider } from "./support/MailServer.ts"
import { startServer, type TestServer } from "./support/TestServer.ts"
import { eventually } from "./support/wait.ts"
import { startReceiver } from "./support/WebhookReceiver.ts"

const dir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "troupe-notify-"))
let server: TestServer
let tls: { key: string; cert: string }
const closers: Array<() => Promise<unknown>> = []

beforeAll(async () => {
  const pems = await generate([{ name: "commonName", value: "localhost" }], {
    keyType: "ec",
    extensions: [
      {
        name: "subjectAltName",
        altNames: [
          { type: 7, ip: "127.0.0.1" },
          { type: 2, value: "localhost" }
        ]
      }
    ]
  })
  tls = { key: pems.private, cert: pems.cert }
  Fs.writeFileSync(Path.join(dir, "ca.pem"), pems.cert)
  server = await startServer({
    env: {
      TROUPE_WEBHOOK_RETRY_DELAYS: "1,1,1",
      TROUPE_NOTIFY_TIMEOUT_SECONDS: "2",
      TROUPE_LIMIT_NOTIFICATIONS: "60",
      TROUPE_NOTIFY_CONCURRENCY: "8",
      TROUPE_NOTIFY_WORKSPACE_CONCURRENCY: "3",
      // the node trusts the test's own certificate (the STARTTLS test verifies it for real)
      NODE_EXTRA_CA_CERTS: Path.join(dir, "ca.pem")
    }
  })
}, 300_000)

afterAll(async () => {
  for (const close of closers) await close().catch(() => {})
  await server?.close()
  Fs.rmSync(dir, { recursive: true, force: true })
})

let counter = 0
/** A fresh workspace (the admin owns it) and calls on its notification base. */
const workspace = async (prefix: string) => {
  const slug = `${prefix}-${++counter}`
  const root = await server.adminToken()
  const created = await server.request("POST", "/workspace/api/v1/workspaces", { token: root, body: { slug } })
  expect(created.status).toBe(201)
  const token = await server.userToken("admin", server.adminPassword, slug)
  const base = `/notification/workspace/${slug}/api/v1`
  const call = (method: string, path: string, body?: unknown, headers: Record<string, string> = {}, as = token) =>
    server.request(method, `${base}${path}`, { token: as, ...(body === undefined ? {} : { body }), headers })
  const status = (id: string, wanted: ReadonlyArray<string>, timeoutMs = 60_000) =>
    eventually(async () => {
      const res = await call("GET", `/messages/${id}`)
      return wanted.includes(res.body.status) ? res.body : undefined
    }, timeoutMs)
  return { slug, token, base, call, status }
}

const smtpSettings = (mail: MailServer | { url: string }, from = "Troupe <noreply@troupe.test>") => ({
  email: { smtpUrl: mail.url, from }
})

describe("the development inbox (no provider configured)", () => {
  it("captures a templated email, rendered in full, with the template version it used", async () => {
    const ws = await workspace("inbox")
    const settings = await ws.call("GET", "/settings")
    expect(settings.body).toMatchObject({ email: null, sms: null, active: { email: "capture", sms: "capture" } })
    const template = await ws.call("POST", "/templates", {
      name: "welcome",
      channel: "email",
      subject: "Welcome, {{ user.name }}",
      html: "<h1>Hello {{ user.name }}</h1><p>Your code is <b>{{ code }}</b>.</p>"
    })
    expect(template.status).toBe(201)
    expect(template.body).toMatchObject({ name: "welcome", version: 1, variables: ["code", "user"], text: null })

    const sent = await ws.call("POST", "/email", {
      to: "ann@example.com",
      template: "welcome",
      variables: { user: { name: "<Ann & Bo>" }, code: 42 }
    })
    expect(sent.status).toBe(202)
    expect(sent.body).toEqual({ id: sent.body.id, status: "queued" })
    const message = await ws.status(sent.body.id, ["captured"])
    expect(message).toMatchObject({
      channel: "email",
      to: ["ann@example.com"],
      subject: "Welcome, <Ann & Bo>",
      status: "captured",
      attempts: 0,
      templateName: "welcome",
      templateVersion: 1,
      messageId: `<${sent.body.id}@troupe.local>`
    })
    // HTML output is escaped; the text part was made from the HTML
    expect(message.html).toBe("<h1>Hello &lt;Ann &amp; Bo&gt;</h1><p>Your code is <b>42</b>.</p>")
    expect(message.text).toContain("HELLO <ANN & BO>")
    expect(message.text).toContain("Your code is 42.")

    const updated = await ws.call("PUT", `/templates/${template.body.id}`, {
      name: "welcome",
      channel: "email",
      subject: "Hi {{ user.name }}",
      text: "Code {{ code }}"
    })
    expect(updated.body).toMatchObject({ version: 2, html: null, text: "Code {{ code }}" })
    const versions = await ws.call("GET", `/templates/welcome/versions`)
    expect(versions.body.versions.map((v: any) => v.version)).toEqual([2, 1])
    const second = await ws.call("POST", "/email", {
      to: "ann@example.com",
      template: template.body.id,
      variables: { user: { name: "A" }, code: 7 }
    })
    expect((await ws.status(second.body.id, ["captured"])).templateVersion).toBe(2)

    const preview = await ws.call("POST", `/templates/${template.body.id}/preview`, { variables: { user: { name: "Z" }, code: 1 } })
    expect(preview.body).toEqual({ subject: "Hi Z", text: "Code 1", html: null })
    const list = await ws.call("GET", "/messages?status=captured&to=ann@example.com")
    expect(list.body.total).toBe(2)
    expect(list.body.data[0].id).toBe(second.body.id)
  }, 120_000)
})

describe("bad input", () => {
  it("answers 400 naming the field for every rule of §8.3", async () => {
    const ws = await workspace("rules")
    await ws.call("POST", "/templates", { name: "hello", channel: "email", subject: "Hi {{ name }}", text: "Hello {{ name }}" })
    const many = Array.from({ length: 51 }, (_, i) => `r${i}@example.com`)
    const cases: ReadonlyArray<readonly [string, string, unknown, string]> = [
      ["/email", "no @", { to: "nobody", text: "x" }, "to"],
      ["/email", "second of a list", { to: ["a@example.com", "b@@example.com"], text: "x" }, "to[1]"],
      ["/email", "a domain without a dot", { to: "a@localhost", text: "x" }, "to"],
      ["/email", "a local part over 64 octets", { to: `${"x".repeat(65)}@example.com`, text: "x" }, "to"],
      [
        "/email",
        "an address over 254 octets",
        { to: `a@${"b".repeat(63)}.${"c".repeat(63)}.${"d".repeat(63)}.${"e".repeat(63)}.com`, text: "x" },
        "to"
      ],
      ["/email", "a bad cc", { to: "a@example.com", cc: ["c@example.com", "oops"], text: "x" }, "cc[1]"],
      ["/email", "51 recipients", { to: many, text: "x" }, "to"],
      ["/email", "a bad sender", { to: "a@example.com", from: "Me <me@>", text: "x" }, "from"],
      ["/email", "a subject over 998", { to: "a@example.com", subject: "s".repeat(999), text: "x" }, "subject"],
      ["/email", "a subject of two lines", { to: "a@example.com", subject: "a\r\nBcc: x@example.com", text: "x" }, "subject"],
      ["/email", "html over 256 KB", { to: "a@example.com", html: "h".repeat(256 * 1024 + 1) }, "html"],
      ["/email", "no body", { to: "a@example.com", subject: "empty" }, "text"],
      ["/email", "an unknown template", { to: "a@example.com", template: "nope" }, "template"],
      ["/email", "a missing variable", { to: "a@example.com", template: "hello", variables: {} }, "variables.name"],
      ["/email", "a template and a body", { to: "a@example.com", template: "hello", text: "x" }, "text"],
      ["/sms", "a number not in E.164", { to: "0612345678", text: "x" }, "to"],
      ["/sms", "an SMS without text", { to: "+14155550100" }, "text"],
      ["/sms", "an email template", { to: "+14155550100", template: "hello", variables: { name: "x" } }, "template"],
      ["/templates", "a Liquid syntax error", { name: "broken", channel: "email", html: "{% if %}" }, "html"],
      ["/templates", "an SMS template with html", { name: "s1", channel: "sms", html: "<p>x</p>" }, "html"],
      ["/templates", "an email template without a body", { name: "e1", channel: "email", subject: "x" }, "text"],
      ["/templates/hello/preview", "a preview missing a variable", { variables: {} }, "variables.name"]
    ]
    for (const [path, what, body, field] of cases) {
      const res = await ws.call("POST", path, body)
      expect(res.status, `${what}: ${res.text}`).toBe(400)
      expect(
        res.body.details.map((d: any) => d.field),
        what
      ).toContain(field)
    }
    const taken = await ws.call("POST", "/templates", { name: "hello", channel: "email", text: "again" })
    expect(taken.status).toBe(409)
    // an internationalised domain is an address
    const idn = await ws.call("POST", "/email", { to: "user@exämple.com", text: "x" })
    expect(idn.status).toBe(202)
    const unknown = await ws.call("GET", "/messages/00000000-0000-4000-8000-000000000000")
    expect(unknown.status).toBe(404)
    // a malformed id is the caller's mistake: 400 naming `id`, not a 404 (docs/errors.md)
    // lists take limit 1-1000 (CONTRACT §8), more is a 400 naming it
    for (const list of ["/messages", "/templates"]) {
      const most = await ws.call("GET", `${list}?limit=1000`)
      expect(most.status, list).toBe(200)
      expect(most.body.limit).toBe(1000)
      expect((await ws.call("GET", `${list}?limit=1001`)).status, list).toBe(400)
    }
    const malformed = await ws.call("GET", "/messages/not-a-uuid")
    expect(malformed.status).toBe(400)
    expect(malformed.body).toMatchObject({ code: "BAD_REQUEST", details: [{ field: "id", property: "id" }] })
  }, 120_000)

  it("replays a send for the same Idempotency-Key and refuses the key for another request", async () => {
    const ws = await workspace("idem")
    const body = { to: "a@example.com", subject: "Once", text: "only once" }
    const first = await ws.call("POST", "/email", body, { "idempotency-key": "order-42" })
    const again = await ws.call("POST", "/email", body, { "idempotency-key": "order-42" })
    expect(first.status).toBe(202)
    expect(again.status).toBe(202)
    expect(again.body.id).toBe(first.body.id)
    expect(again.headers.get("idempotent-replayed")).toBe("true")
    const other = await ws.call("POST", "/email", { ...body, text: "changed" }, { "idempotency-key": "order-42" })
    expect(other.status).toBe(422)
    expect(other.body.code).toBe("IDEMPOTENCY_KEY_REUSED")
    expect((await ws.call("GET", "/messages")).body.total).toBe(1)
  }, 60_000)
})

describe("the fast lane", () => {
  // POST /email and /sms take the fast lane (notification/FastSends.ts); a query string sends the same request through
  // the Effect HTTP stack (an endpoint without query parameters is the stack's then): both answer alike.
  it("answers sends as the HTTP stack does: 202, 400 naming the field, the replay header, a bad Idempotency-Key", async () => {
    const ws = await workspace("lane")
    for (const via of ["", "?via=stack"]) {
      const sent = await ws.call("POST", `/email${via}`, { to: "a@example.com", subject: "Hi", text: "hello" })
      expect(sent.status).toBe(202)
      expect(Object.keys(sent.body).sort()).toEqual(["id", "status"])
      expect(sent.body.status).toBe("queued")
      expect(sent.headers.get("content-type")).toContain("application/json")
      const sms = await ws.call("POST", `/sms${via}`, { to: "+15005550006", text: "hello" })
      expect(sms.status).toBe(202)
      const bad = await ws.call("POST", `/email${via}`, { to: "not-an-address", text: "x" })
      expect(bad.status).toBe(400)
      expect(bad.body.details.map((d: { field: string }) => d.field)).toEqual(["to"])
      const undecodable = await ws.call("POST", `/email${via}`, { to: 42 })
      expect(undecodable.status).toBe(400)
      expect(undecodable.body.code).toBe("VALIDATION_ERROR")
      const key = { "idempotency-key": `lane${via}` }
      const first = await ws.call("POST", `/email${via}`, { to: "a@example.com", text: "once" }, key)
      const again = await ws.call("POST", `/email${via}`, { to: "a@example.com", text: "once" }, key)
      expect([first.status, again.status]).toEqual([202, 202])
      expect(again.body.id).toBe(first.body.id)
      expect(first.headers.get("idempotent-replayed")).toBeNull()
      expect(again.headers.get("idempotent-replayed")).toBe("true")
      const long = await ws.call("POST", `/email${via}`, { to: "a@example.com", text: "x" }, { "idempotency-key": "k".repeat(256) })
      expect(long.status).toBe(400)
      expect(long.text).toContain("Idempotency-Key must be 1 to 255 characters")
    }
  }, 60_000)
})

describe("permissions and limits", () => {
  it("lets viewers read, developers send, admins configure; service accounts as granted", async () => {
    const owner = await server.adminToken()
    const viewer = await createUser(server, owner, "viewer")
    const developer = await createUser(server, owner, "developer")
    const base = `/notification/workspace/${server.workspace}/api/v1`
    const v = viewer.token
    const d = developer.token
    expect((await server.request("GET", `${base}/messages`, { token: v })).status).toBe(200)
    expect((await server.request("GET", `${base}/templates`, { token: v })).status).toBe(200)
    const refused = await server.request("POST", `${base}/email`, { token: v, body: { to: "a@example.com", text: "x" } })
    expect(refused.status).toBe(403)
    expect(refused.body.code).toBe("PERMISSION_DENIED")
    expect((await server.request("POST", `${base}/email`, { token: d, body: { to: "a@example.com", text: "x" } })).status).toBe(202)
    expect((await server.request("GET", `${base}/settings`, { token: d })).status).toBe(403)
    expect((await server.request("PUT", `${base}/settings`, { token: d, body: {} })).status).toBe(403)
    const sa = (await createAccount(server, owner, { name: "mailer", permissions: ["write:notifications"] })).token
    expect((await server.request("POST", `${base}/sms`, { token: sa, body: { to: "+14155550100", text: "hi" } })).status).toBe(202)
    expect((await server.request("GET", `${base}/messages`, { token: sa })).status).toBe(403)
  }, 120_000)

  it("answers 429 QUOTA_EXCEEDED with Retry-After past TROUPE_LIMIT_NOTIFICATIONS a minute", async () => {
    const ws = await workspace("limit")
    let limited: Awaited<ReturnType<typeof ws.call>> | undefined
    // (a window boundary may fall inside the loop: then it takes up to 60 more)
    for (let i = 0; i < 130 && limited === undefined; i++) {
      const res = await ws.call("POST", "/sms", { to: "+14155550100", text: `n${i}` })
      if (res.status === 429) limited = res
      else expect(res.status).toBe(202)
    }
    expect(limited?.body.code).toBe("QUOTA_EXCEEDED")
    expect(Number(limited?.headers.get("retry-after"))).toBeGreaterThan(0)
    const sent = (await ws.call("GET", "/messages?limit=1")).body.total
    expect(sent).toBeGreaterThanOrEqual(60)
    expect(sent).toBeLessThan(130)
  }, 120_000)
})

describe("email over SMTP", () => {
  it("delivers to a real SMTP server: headers, both parts, recipients, masked settings, test send, the event", async () => {
    const mail = await startMailServer({ auth: { user: "mailer", pass: "s3cret:pw" } })
    const hooks = await startReceiver()
    closers.push(mail.close, hooks.close)
    const ws = await workspace("smtp")
    const put = await ws.call("PUT", "/settings", smtpSettings(mail))
    expect(put.status).toBe(200)
    expect(put.body.email.smtpUrl).toBe(`smtp://mailer:********@127.0.0.1:${mail.port}`)
    expect(put.body.active.email).toBe("workspace")
    // the masked value sent back keeps the stored password
    const kept = await ws.call("PUT", "/settings", { email: { smtpUrl: put.body.email.smtpUrl, from: "Ops <ops@troupe.test>" } })
    expect(kept.status).toBe(200)
    const test = await ws.call("POST", "/settings/test", { channel: "email", to: "probe@example.com" })
    expect(test.body).toMatchObject({ delivered: true, status: "sent", provider: "workspace", error: null })
    expect(mail.accepted()[0]?.user).toBe("mailer")

    const webhooks = `/workspace/${ws.slug}/api/v1/webhooks`
    const hook = await server.request("POST", webhooks, { token: ws.token, body: { url: `${hooks.url}/n`, events: ["notification.*"] } })
    expect(hook.status).toBe(201)
    await ws.call("POST", "/templates", {
      name: "receipt",
      channel: "email",
      subject: "Receipt {{ order }}",
      text: "Order {{ order }}: {{ total }}",
      html: "<p>Order <b>{{ order }}</b>: {{ total }}</p>"
    })
    const sent = await ws.call("POST", "/email", {
      to: ["ann@example.com", "bob@example.com"],
      cc: "carol@example.com",
      bcc: ["dave@example.com"],
      template: "receipt",
      variables: { order: "A-1", total: "9.50 EUR" }
    })
    expect(sent.status).toBe(202)
    const message = await ws.status(sent.body.id, ["sent", "failed"])
    expect(message).toMatchObject({ status: "sent", attempts: 1, lastError: null, from: "Ops <ops@troupe.test>" })
    expect(message.providerMessageId).toMatch(/^Q\d+$/)
    const delivered = mail.accepted().find((m) => m.messageId === message.messageId)!
    expect(delivered).toBeDefined()
    expect(message.messageId).toBe(`<${sent.body.id}@troupe.test>`)
    expect(delivered.parsed.subject).toBe("Receipt A-1")
    expect(delivered.parsed.from?.value).toEqual([{ name: "Ops", address: "ops@troupe.test" }])
    expect((delivered.parsed.to as any).value.map((a: any) => a.address)).toEqual(["ann@example.com", "bob@example.com"])
    expect((delivered.parsed.cc as any).value.map((a: any) => a.address)).toEqual(["carol@example.com"])
    expect(delivered.parsed.bcc).toBeUndefined()
    expect([...delivered.envelopeTo].sort()).toEqual(["ann@example.com", "bob@example.com", "carol@example.com", "dave@example.com"])
    expect(delivered.parsed.text?.trim()).toBe("Order A-1: 9.50 EUR")
    expect(delivered.parsed.html).toBe("<p>Order <b>A-1</b>: 9.50 EUR</p>")
    expect(delivered.secure).toBe(false)

    await hooks.waitFor((h) => h.some((x) => x.json?.event === "notification.sent"), 30_000, "notification.sent")
    const event = hooks.hits.find((x) => x.json?.event === "notification.sent")!.json
    expect(event.data).toMatchObject({ id: sent.body.id, channel: "email", status: "sent", templateName: "receipt" })
  }, 120_000)

  it("retries a 451 and sends with the same Message-ID; fails a 550 at once with the server's words", async () => {
    const mail = await startMailServer()
    const hooks = await startReceiver()
    closers.push(mail.close, hooks.close)
    const ws = await workspace("retry")
    await ws.call("PUT", "/settings", smtpSettings(mail))
    await server.request("POST", `/workspace/${ws.slug}/api/v1/webhooks`, {
      token: ws.token,
      body: { url: hooks.url, events: ["notification.failed"] }
    })
    mail.answer = (m, n) => (m.envelopeTo.includes("nobody@example.com") ? 550 : n === 1 ? 451 : 250)

    const flaky = await ws.call("POST", "/email", { to: "ann@example.com", subject: "Flaky", text: "second time lucky" })
    const sent = await ws.status(flaky.body.id, ["sent", "failed"])
    expect(sent).toMatchObject({ status: "sent", attempts: 2 })
    const tries = mail.attempts.filter((a) => a.parsed.subject === "Flaky")
    expect(tries.map((a) => a.code)).toEqual([451, 250])
    expect(new Set(tries.map((a) => a.messageId))).toEqual(new Set([sent.messageId]))

    const refused = await ws.call("POST", "/email", { to: "nobody@example.com", subject: "Bounce", text: "nobody home" })
    const failed = await ws.status(refused.body.id, ["sent", "failed"])
    expect(failed.status).toBe("failed")
    expect(failed.attempts).toBe(1)
    expect(failed.lastError).toContain("550")
    expect(failed.lastError).toContain("User unknown")
    await hooks.waitFor((h) => h.some((x) => x.json?.data?.id === refused.body.id), 30_000, "notification.failed")
    expect(hooks.hits.find((x) => x.json?.data?.id === refused.body.id)!.json).toMatchObject({
      event: "notification.failed",
      data: { status: "failed", attempts: 1 }
    })
  }, 120_000)

  it("gives up on a server that never answers after every attempt timed out", async () => {
    const silent = await startSilentServer()
    closers.push(silent.close)
    const ws = await workspace("silent")
    await ws.call("PUT", "/settings", smtpSettings(silent))
    const sent = await ws.call("POST", "/email", { to: "ann@example.com", subject: "Hello?", text: "anyone" })
    const failed = await ws.status(sent.body.id, ["sent", "failed"], 90_000)
    expect(failed.status).toBe("failed")
    // one attempt and the three retries of TROUPE_WEBHOOK_RETRY_DELAYS=1,1,1
    expect(failed.attempts).toBe(4)
    expect(failed.lastError).toMatch(/ETIMEDOUT|timed out|timeout/i)
  }, 120_000)

  it("upgrades to TLS with STARTTLS and verifies the server's certificate", async () => {
    const mail = await startMailServer({ tls, auth: { user: "tls-user", pass: "pw" } })
    closers.push(mail.close)
    const ws = await workspace("tls")
    await ws.call("PUT", "/settings", smtpSettings({ url: `smtp://tls-user:pw@127.0.0.1:${mail.port}?requireTLS=true` }))
    const sent = await ws.call("POST", "/email", { to: "ann@example.com", subject: "Sealed", html: "<p>over TLS</p>" })
    expect((await ws.status(sent.body.id, ["sent", "failed"])).status).toBe("sent")
    const delivered = mail.accepted().find((m) => m.parsed.subject === "Sealed")!
    expect(delivered.secure).toBe(true)
    expect(delivered.user).toBe("tls-user")
    expect(delivered.parsed.text?.trim()).toBe("over TLS")
  }, 120_000)
})

describe("SMS over HTTP", () => {
  it("posts Twilio's form with basic auth; retries a 500, fails a 400 with the provider's words", async () => {
    const sms = await startSmsProvider()
    closers.push(sms.close)
    const ws = await workspace("sms")
    const put = await ws.call("PUT", "/settings", { sms: { url: sms.url, accountSid: "AC123", authToken: "tok-en", from: "+15005550006" } })
    expect(put.status).toBe(200)
    expect(put.body.sms).toEqual({ url: sms.url, accountSid: "AC123", authToken: "********", from: "+15005550006" })
    sms.status = (hit, n) => (hit.form.To === "+15005550001" ? 400 : n === 1 ? 500 : 201)
    await ws.call("POST", "/templates", { name: "code", channel: "sms", text: "Your code is {{ code }}" })

    const ok = await ws.call("POST", "/sms", { to: "+14155550100", template: "code", variables: { code: "123456" } })
    const sent = await ws.status(ok.body.id, ["sent", "failed"])
    expect(sent).toMatchObject({ status: "sent", attempts: 2, providerMessageId: `SM${"2".padStart(32, "0")}` })
    expect(sms.hits[0]!.authorization).toBe(`Basic ${Buffer.from("AC123:tok-en").toString("base64")}`)
    expect(sms.hits[0]!.contentType).toBe("application/x-www-form-urlencoded")
    expect(sms.hits[1]!.form).toEqual({ To: "+14155550100", From: "+15005550006", Body: "Your code is 123456" })

    const bad = await ws.call("POST", "/sms", { to: "+15005550001", text: "never" })
    const failed = await ws.status(bad.body.id, ["sent", "failed"])
    expect(failed).toMatchObject({ status: "failed", attempts: 1 })
    expect(failed.lastError).toBe("HTTP 400: The 'To' number +15005550001 is not a valid phone number. (code 21211)")
  }, 120_000)
})

describe("fairness", () => {
  it("sends another workspace's messages while one workspace's slow server works through its backlog", async () => {
    const slow = await startMailServer()
    const fast = await startMailServer()
    closers.push(slow.close, fast.close)
    slow.delayMs = 1500
    const a = await workspace("backlog")
    const b = await workspace("quick")
    await a.call("PUT", "/settings", smtpSettings(slow))
    await b.call("PUT", "/settings", smtpSettings(fast))
    const backlog = 15
    for (let i = 0; i < backlog; i++)
      expect((await a.call("POST", "/email", { to: "a@example.com", subject: `A${i}`, text: "slow" })).status).toBe(202)
    const quick = []
    for (let i = 0; i < 3; i++)
      quick.push((await b.call("POST", "/email", { to: "b@example.com", subject: `B${i}`, text: "fast" })).body.id)
    for (const id of quick) expect((await b.status(id, ["sent", "failed"])).status).toBe("sent")
    // B is done while A's backlog is not: A holds at most its share of the node's slots (3 of 8)
    const aSent = (await a.call("GET", "/messages?status=sent")).body.total
    expect(aSent).toBeLessThan(backlog)
    await slow.waitFor((all) => all.length >= backlog, 90_000, "the backlog")
  }, 180_000)
})

describe("functions and triggers", () => {
  it("sends from a function (api.sendEmail, api.sendSms) and fires notification_sent triggers", async () => {
    const mail = await startMailServer()
    closers.push(mail.close)
    const ws = await workspace("fn")
    await ws.call("PUT", "/settings", smtpSettings(mail))
    const c = computeClient(server, ws.token, ws.slug)
    // a notification_sent trigger whose function texts the on-call number (SMS is captured: no SMS provider)
    const relay = await c.createFunction(
      "relay",
      fn(`const m = executionParams.data
return await api.sendSms({ to: "+14155550100", text: "sent: " + m.subject + " to " + m.to.join(",") })`)
    )
    const trigger = await c.createTrigger({
      name: "on-sent",
      functionId: relay.id,
      executionType: "event-driven",
      triggerMetadata: { event: "notification.sent" }
    })
    expect(trigger.triggerMetadata.event).toBe("notification_sent")

    const run = await c.runCode(
      fn(`const a = await api.sendEmail({ to: "ann@example.com", subject: "From a function", text: "hi" }, { idempotencyKey: "fn-1" })
const b = await api.sendEmail({ to: "ann@example.com", subject: "From a function", text: "hi" }, { idempotencyKey: "fn-1" })
let refused
try { await api.sendEmail({ to: "not-an-address", text: "x" }) } catch (e) { refused = e.details[0].field }
return { a, same: a.id === b.id, refused }`)
    )
    expect(run.status).toBe("completed")
    expect(run.result).toMatchObject({ a: { status: "queued" }, same: true, refused: "to" })
    const email = await ws.status(run.result.a.id, ["sent", "failed"])
    expect(email.status).toBe("sent")
    expect(mail.accepted().some((m) => m.parsed.subject === "From a function")).toBe(true)

    const sms = await eventually(async () => {
      const list = await ws.call("GET", "/messages?channel=sms")
      return list.body.data[0]
    }, 60_000)
    expect(sms).toMatchObject({ channel: "sms", to: ["+14155550100"] })
    expect((await ws.status(sms.id, ["captured"])).text).toBe("sent: From a function to ann@example.com")
  }, 120_000)
})

describe("the CLI", () => {
  it("troupe notify email|sms queue a message and --wait follows it to its end", async () => {
    const ws = await workspace("cli")
    const bin = Path.join(import.meta.dirname, "../packages/cli/bin/troupe.mjs")
    const env = {
      ...process.env,
      TROUPE_URL: server.baseUrl,
      TROUPE_WORKSPACE: ws.slug,
      TROUPE_TOKEN: ws.token,
      TROUPE_CONFIG: Path.join(dir, "cli.json")
    }
    const troupe = (args: ReadonlyArray<string>) =>
      new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
        execFile(process.execPath, [bin, ...args], { env }, (error, stdout, stderr) =>
          resolve({ code: error === null ? 0 : ((error as { code?: number }).code ?? 1), stdout, stderr })
        )
      })
    const email = await troupe([
      "notify",
      "email",
      "--to",
      "ann@example.com",
      "--subject",
      "From the CLI",
      "--text",
      "hello",
      "--wait",
      "--json"
    ])
    expect(email.code, email.stderr).toBe(0)
    expect(JSON.parse(email.stdout)).toMatchObject({ status: "captured", subject: "From the CLI", to: ["ann@example.com"] })
    await ws.call("POST", "/templates", { name: "otp", channel: "sms", text: "Code {{ code }}" })
    const sms = await troupe(["notify", "sms", "--to", "+14155550100", "--template", "otp", "--var", "code=991"])
    expect(sms.code, sms.stderr).toBe(0)
    const id = sms.stdout.trim().split(" ")[0]!
    expect((await ws.status(id, ["captured"])).text).toBe("Code 991")
    const bad = await troupe(["notify", "sms", "--to", "12345", "--text", "x"])
    expect(bad.code).not.toBe(0)
    expect(bad.stderr).toContain("E.164")
  }, 120_000)
})
