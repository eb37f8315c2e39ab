/**
 * `troupe notify email|sms`: one message through the workspace's notification service (POST /email, POST /sms of
 * `/notification/workspace/{ws}/api/v1`), answered with its id once it is queued; `--wait` follows it until it is
 * sent, failed or captured.
 *
 * @since 0.1.0
 */
import { Duration, Effect, Option } from "effect"
import { Command, Flag } from "effect/cli"
import { orUndefined, result, usage } from "../Output.ts"
import { TroupeApi } from "../TroupeApi.ts"

const FINAL = new Set(["sent", "failed", "captured"])

const common = {
  template: Flag.String("template").pipe(Flag.withDescription("A template's name or id (instead of the text)"), Flag.optional),
  vars: Flag.KeyValuePair("var").pipe(Flag.withDescription("A template variable: --var name=Ann (repeatable)"), Flag.optional),
  key: Flag.String("idempotency-key").pipe(Flag.withDescription("Sends once for this key (24 hours)"), Flag.optional),
  wait: Flag.Boolean("wait").pipe(Flag.withDefault(false), Flag.withDescription("Wait until the message is sent, failed or captured"))
}

/** Sends, then (with --wait) reads the message until it is final. */
const send = (route: "email" | "sms", body: Record<string, unknown>, key: string | undefined, wait: boolean) =>
  Effect.gen(function* () {
    const api = yield* TroupeApi
    const base = `/notification/workspace/${encodeURIComponent(api.session.workspace)}/api/v1`
    const accepted = (yield* api.call("POST", `${base}/${route}`, {
      root: true,
      body,
      ...(key === undefined ? {} : { headers: { "idempotency-key": key } })
    })) as { id: string; status: string }
    if (!wait) return yield* result(accepted, (a) => `${a.id} ${a.status}`)
    let message = accepted as Record<string, unknown>
    for (let i = 0; i < 600 && !FINAL.has(String(message.status)); i++) {
      yield* Effect.sleep(Duration.millis(500))
      message = (yield* api.call("GET", `${base}/messages/${accepted.id}`, { root: true })) as Record<string, unknown>
    }
    return yield* result(message, (m) =>
      [`${String(m.id)} ${String(m.status)} after ${String(m.attempts ?? 0)} attempt(s)`].concat(
        typeof m.lastError === "string" ? [`last error: ${m.lastError}`] : []
      )
    )
  })

const email = Command.make(
  "email",
  {
    to: Flag.String("to").pipe(Flag.withDescription("Recipient address (repeat for several)"), Flag.atLeast(1)),
    cc: Flag.String("cc").pipe(Flag.withDescription("Copy to (repeatable)"), Flag.atLeast(0)),
    subject: Flag.String("subject").pipe(Flag.optional),
    text: Flag.String("text").pipe(Flag.withDescription("Plain-text body"), Flag.optional),
    html: Flag.String("html").pipe(Flag.withDescription("HTML body (a text part is made from it)"), Flag.optional),
    from: Flag.String("from").pipe(Flag.withDescription("Sender, instead of the settings' one"), Flag.optional),
    ...common
  },
  (input) =>
    Effect.gen(function* () {
      const template = orUndefined(input.template)
      if (template === undefined && Option.isNone(input.text) && Option.isNone(input.html)) {
        return yield* usage("give --text, --html or --template")
      }
      const body = {
        to: input.to,
        ...(input.cc.length > 0 ? { cc: input.cc } : {}),
        ...Option.match(input.subject, { onNone: () => ({}), onSome: (subject) => ({ subject }) }),
        ...Option.match(input.text, { onNone: () => ({}), onSome: (text) => ({ text }) }),
        ...Option.match(input.html, { onNone: () => ({}), onSome: (html) => ({ html }) }),
        ...Option.match(input.from, { onNone: () => ({}), onSome: (from) => ({ from }) }),
        ...(template === undefined ? {} : { template, variables: orUndefined(input.vars) ?? {} })
      }
      return yield* send("email", body, orUndefined(input.key), input.wait)
    })
).pipe(Command.withDescription("Send an email (POST /email): its text, HTML or a template with --var values"))

const sms = Command.make(
  "sms",
  {
    to: Flag.String("to").pipe(Flag.withDescription("E.164 number, e.g. +14155550100")),
    text: Flag.String("text").pipe(Flag.optional),
    ...common
  },
  (input) =>
    Effect.gen(function* () {
      const template = orUndefined(input.template)
      if (template === undefined && Option.isNone(input.text)) return yield* usage("give --text or --template")
      const body = {
        to: input.to,
        ...Option.match(input.text, { onNone: () => ({}), onSome: (text) => ({ text }) }),
        ...(template === undefined ? {} : { template, variables: orUndefined(input.vars) ?? {} })
      }
      return yield* send("sms", body, orUndefined(input.key), input.wait)
    })
).pipe(Command.withDescription("Send an SMS (POST /sms): its text or a template with --var values"))

/** @category commands */
export const notify = Command.make("notify").pipe(
  Command.withDescription("Send email and SMS through the workspace's notification service"),
  Command.withSubcommands([email, sms]),
  Command.provide(TroupeApi.layer)
)
