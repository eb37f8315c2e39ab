// Provider settings of a workspace (CONTRACT §8.3): `PUT /settings` replaces them whole (`{}` clears them, the
// node's providers then apply), secrets (the SMTP URL, which carries the password, and the SMS auth token) are
// stored encrypted with the node's key and read back masked as ********. Sending a masked value back keeps the
// stored secret, so a console can edit the sender without retyping the password. In production a workspace's
// servers may not be loopback or private addresses (the webhook rule). `POST /settings/test` sends one message at
// once through the channel's current provider and answers what happened.
import type { NotificationSettings, NotificationSettingsInput } from "@troupe/api/notification/Notification"
import type { BadRequest } from "@troupe/api/Errors"
import { Clock, Context, Effect, Layer, Result } from "effect"
import * as Crypto from "node:crypto"
import { checkWebhookUrl, isPrivateAddress } from "../events/UrlPolicy.ts"
import { AppConfig } from "../platform/AppConfig.ts"
import { Notifier } from "../platform/Notifier.ts"
import { Secrets } from "../platform/Secrets.ts"
import { emailProblem, parseMailbox, phoneProblem } from "./Addresses.ts"
import type { StoredEmail, StoredSms } from "./model.ts"
import { NotificationRepo } from "./NotificationRepo.ts"
import { invalid, invalidAll } from "./Problems.ts"
import { Providers, SETTINGS_TOPIC, secretContext } from "./Providers.ts"
import { parseSmtpUrl } from "./SmtpTransport.ts"

export const MASK = "********"

/** The SMTP URL with its password replaced by the mask. */
const maskUrl = (raw: string) => {
  if (!URL.canParse(raw)) return MASK
  const url = new URL(raw)
  if (url.password !== "") url.password = MASK
  return url.toString()
}

/** An SMS sender: an E.164 number or an alphanumeric sender id (up to 11 characters). */
const senderProblem = (from: string) =>
  phoneProblem(from) === undefined || /^[A-Za-z0-9][A-Za-z0-9 ]{0,10}$/.test(from)
    ? undefined
    : "must be an E.164 number or an alphanumeric sender id of at most 11 characters"

const localHost = (host: string) => host === "localhost" || host.endsWith(".localhost") || isPrivateAddress(host)

export interface TestResult {
  readonly delivered: boolean
  readonly status: "sent" | "captured" | "failed"
  readonly provider: "workspace" | "node" | "capture"
  readonly error: string | null
  readonly providerMessageId: string | null
  readonly durationMs: number
}

export class SettingsService extends Context.Service<
  SettingsService,
  {
    readonly get: (workspace: string) => Effect.Effect<NotificationSettings>
    readonly put: (workspace: string, input: NotificationSettingsInput) => Effect.Effect<NotificationSettings, BadRequest>
    readonly test: (workspace: string, channel: "email" | "sms", to: string) => Effect.Effect<TestResult, BadRequest>
  }
>()("@troupe/server/notification/SettingsService") {
  static readonly layer = Layer.effect(
    SettingsService,
    Effect.gen(function* () {
      const repo = yield* NotificationRepo
      const secrets = yield* Secrets
      const providers = yield* Providers
      const notifier = yield* Notifier
      const config = yield* AppConfig

      const open = (workspace: string, field: "smtpUrl" | "authToken", value: string) =>
        Effect.orElseSucceed(secrets.decrypt(value, secretContext(workspace, field)), () => "")

      const get = (workspace: string) =>
        Effect.gen(function* () {
          const stored = yield* Effect.orDie(repo.settings(workspace))
          const email = stored?.email ?? null
          const sms = stored?.sms ?? null
          return {
            email: email === null ? null : { smtpUrl: maskUrl(yield* open(workspace, "smtpUrl", email.smtpUrl)), from: email.from },
            sms: sms === null ? null : { url: sms.url, accountSid: sms.accountSid, authToken: MASK, from: sms.from },
            active: {
              email: (yield* providers.resolve(workspace, "email")).source,
              sms: (yield* providers.resolve(workspace, "sms")).source
            },
            updatedAt: stored?.updatedAt ?? null
          }
        })

      const put = (workspace: string, input: NotificationSettingsInput) =>
        Effect.gen(function* () {
          const stored = yield* Effect.orDie(repo.settings(workspace))
          const problems: Array<readonly [string, string]> = []
          let email: StoredEmail | null = null
          let sms: StoredSms | null = null
          if (input.email != null) {
            let url = input.email.smtpUrl
            const parsed = parseSmtpUrl(url)
            if (Result.isFailure(parsed)) problems.push(["email.smtpUrl", parsed.failure])
            else {
              if (config.production && localHost(parsed.success.host)) {
                problems.push(["email.smtpUrl", "points to a loopback or private address, which is refused in production"])
              }
              const given = new URL(url)
              if (given.password === MASK) {
                // the masked value read back: keep the stored password
                const previous = stored?.email == null ? "" : yield* open(workspace, "smtpUrl", stored.email.smtpUrl)
                if (previous === "" || !URL.canParse(previous)) {
                  problems.push(["email.smtpUrl", `${MASK} is the masked password: give the password itself`])
                } else {
                  given.password = new URL(previous).password
                  url = given.toString()
                }
              }
            }
            const from = parseMailbox(input.email.from)
            if (!from.ok) problems.push(["email.from", from.problem])
            email = { smtpUrl: secrets.encrypt(url, secretContext(workspace, "smtpUrl")), from: input.email.from.trim() }
          }
          if (input.sms != null) {
            const s = input.sms
            const urlProblem = checkWebhookUrl(s.url, config.production)
            if (urlProblem !== undefined) problems.push(["sms.url", urlProblem.replace(/^url /, "")])
            if (s.accountSid.trim() === "" || s.accountSid.length > 200) problems.push(["sms.accountSid", "must be 1 to 200 characters"])
            let token = s.authToken
            if (token === MASK) {
              token = stored?.sms == null ? "" : yield* open(workspace, "authToken", stored.sms.authToken)
              if (token === "") problems.push(["sms.authToken", `${MASK} is the masked token: give the token itself`])
            } else if (token === "" || token.length > 500) problems.push(["sms.authToken", "must be 1 to 500 characters"])
            const sender = senderProblem(s.from)
            if (sender !== undefined) problems.push(["sms.from", sender])
            sms = {
              url: s.url,
              accountSid: s.accountSid,
              authToken: secrets.encrypt(token, secretContext(workspace, "authToken")),
              from: s.from
            }
          }
          if (problems.length > 0) return yield* invalidAll(problems)
          yield* Effect.orDie(repo.putSettings(workspace, email, sms))
          yield* notifier.publish(SETTINGS_TOPIC, workspace)
          return yield* get(workspace)
        })

      const test = (workspace: string, channel: "email" | "sms", to: string) =>
        Effect.gen(function* () {
          const problem = channel === "email" ? emailProblem(to) : phoneProblem(to)
          if (problem !== undefined) return yield* invalid("to", `to ${problem}`)
          const provider = yield* providers.resolve(workspace, channel)
          const base = { provider: provider.source, providerMessageId: null, durationMs: 0 }
          if (provider.problem !== null) return { ...base, delivered: false, status: "failed" as const, error: provider.problem }
          if (provider.transport === undefined) {
            return { ...base, delivered: false, status: "captured" as const, error: "no provider is configured: messages are captured" }
          }
          const text = `This is a test message from Troupe (workspace ${workspace}): the ${channel} settings work.`
          const from = provider.from ?? "no-reply@localhost"
          const start = yield* Clock.currentTimeMillis
          const sent = yield* Effect.result(
            provider.transport.send(
              channel === "email"
                ? {
                    channel,
                    from,
                    to: [to],
                    cc: [],
                    bcc: [],
                    subject: "Troupe test message",
                    text,
                    html: null,
                    messageId: `<${Crypto.randomUUID()}@${from.split("@").pop()?.replace(/>$/, "") ?? "troupe"}>`
                  }
                : { channel, from, to, text }
            )
          )
          const durationMs = (yield* Clock.currentTimeMillis) - start
          return Result.isSuccess(sent)
            ? {
                ...base,
                delivered: true,
                status: "sent" as const,
                error: null,
                providerMessageId: sent.success.providerMessageId,
                durationMs
              }
            : { ...base, delivered: false, status: "failed" as const, error: sent.failure.reason, durationMs }
        })

      return SettingsService.of({ get, put, test })
    })
  )
}
