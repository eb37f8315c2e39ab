// Which provider sends a workspace's messages, per channel: the workspace's own settings (secrets decrypted with the
// node's key), else the node's (TROUPE_SMTP_URL / TROUPE_SMS_URL), else none: the message is captured. Transports are
// built once and kept (SMTP connections stay pooled); a settings change reaches every node through the Notifier and
// drops that workspace's transports, and entries also expire after a minute so a lost signal only delays. A
// replaced SMTP pool is closed once the sends it may still carry have timed out.
import { Clock, Context, Duration, Effect, Layer, Option, Redacted, Result, Stream } from "effect"
import { AppConfig } from "../platform/AppConfig.ts"
import { Notifier } from "../platform/Notifier.ts"
import { Secrets } from "../platform/Secrets.ts"
import type { MailTransport } from "./MailTransport.ts"
import type { StoredEmail, StoredSms } from "./model.ts"
import { NotificationRepo } from "./NotificationRepo.ts"
import { makeSmsHttpTransport } from "./SmsHttpTransport.ts"
import { makeSmtpTransport, parseSmtpUrl } from "./SmtpTransport.ts"

/** Notifier topic: a workspace's notification settings changed (payload: workspace). */
export const SETTINGS_TOPIC = "notification.settings"

/** The AES-GCM associated data of a stored secret: bound to its workspace and field. */
export const secretContext = (workspace: string, field: "smtpUrl" | "authToken") => `notification:${workspace}:${field}`

export type ProviderSource = "workspace" | "node" | "capture"

/** A channel's provider as resolved for one workspace. */
export interface Provider {
  readonly source: ProviderSource
  /** absent: capture (or a broken configuration, see `problem`) */
  readonly transport: MailTransport | undefined
  /** the default sender */
  readonly from: string | null
  /** the workspace's settings cannot be used (a secret that no key of the ring opens): messages fail */
  readonly problem: string | null
}

interface Entry {
  readonly email: Provider
  readonly sms: Provider
  /** the stored settings it was built from */
  readonly key: string
  readonly at: number
}

const TTL_MS = 60_000

export class Providers extends Context.Service<
  Providers,
  {
    readonly resolve: (workspace: string, channel: "email" | "sms") => Effect.Effect<Provider>
  }
>()("@troupe/server/notification/Providers") {
  static readonly layer = Layer.effect(
    Providers,
    Effect.gen(function* () {
      const config = yield* AppConfig
      const repo = yield* NotificationRepo
      const secrets = yield* Secrets
      const notifier = yield* Notifier
      const n = config.notification
      const cache = new Map<string, Entry>()
      const scope = yield* Effect.scope

      const smtp = (url: string, guarded: boolean, maxConnections: number) =>
        Result.map(parseSmtpUrl(url), (options) => makeSmtpTransport({ options, timeoutMs: n.timeoutMs, maxConnections, guarded }))

      const capture: Provider = { source: "capture", transport: undefined, from: null, problem: null }

      // the node's providers: built once, shared by every workspace without settings of its own
      const nodeEmail: Provider = Option.match(n.smtpUrl, {
        onNone: () => capture,
        onSome: (url) =>
          Result.match(smtp(Redacted.value(url), false, n.concurrency), {
            onSuccess: (transport) => ({
              source: "node" as const,
              transport,
              from: Option.getOrElse(n.smtpFrom, () => "no-reply@localhost"),
              problem: null
            }),
            onFailure: (problem) => ({ source: "node" as const, transport: undefined, from: null, problem: `TROUPE_SMTP_URL: ${problem}` })
          })
      })
      const nodeSms: Provider = Option.match(n.smsUrl, {
        onNone: () => capture,
        onSome: (raw) => {
          const url = new URL(Redacted.value(raw))
          const accountSid = decodeURIComponent(url.username)
          const authToken = decodeURIComponent(url.password)
          url.username = ""
          url.password = ""
          return {
            source: "node" as const,
            transport: makeSmsHttpTransport({ url: url.toString(), accountSid, authToken, timeoutMs: n.timeoutMs, guarded: false }),
            from: Option.getOrElse(n.smsFrom, () => "Troupe"),
            problem: null
          }
        }
      })
      yield* Effect.addFinalizer(() => Effect.all([nodeEmail, nodeSms].map((p) => p.transport?.close ?? Effect.void)))

      const broken = (problem: string): Provider => ({ source: "workspace", transport: undefined, from: null, problem })

      const emailOf = (workspace: string, stored: StoredEmail | null) =>
        Effect.gen(function* () {
          if (stored === null) return nodeEmail
          const url = yield* Effect.result(secrets.decrypt(stored.smtpUrl, secretContext(workspace, "smtpUrl")))
          if (Result.isFailure(url)) return broken(`the SMTP settings cannot be read: ${url.failure.message}`)
          return Result.match(smtp(url.success, config.production, n.workspaceConcurrency), {
            onSuccess: (transport): Provider => ({ source: "workspace", transport, from: stored.from, problem: null }),
            onFailure: broken
          })
        })

      const smsOf = (workspace: string, stored: StoredSms | null) =>
        Effect.gen(function* () {
          if (stored === null) return nodeSms
          const token = yield* Effect.result(secrets.decrypt(stored.authToken, secretContext(workspace, "authToken")))
          if (Result.isFailure(token)) return broken(`the SMS settings cannot be read: ${token.failure.message}`)
          const transport = makeSmsHttpTransport({
            url: stored.url,
            accountSid: stored.accountSid,
            authToken: token.success,
            timeoutMs: n.timeoutMs,
            guarded: config.production
          })
          return { source: "workspace", transport, from: stored.from, problem: null } satisfies Provider
        })

      /** Closes a workspace's own transports once sends still using them are over. */
      const retire = (entry: Entry) =>
        Effect.forkIn(
          Effect.andThen(
            Effect.sleep(Duration.millis(n.timeoutMs + 1000)),
            Effect.all([entry.email, entry.sms].filter((p) => p.source === "workspace").map((p) => p.transport?.close ?? Effect.void))
          ),
          scope
        )

      const drop = (workspace: string) =>
        Effect.suspend(() => {
          const entry = cache.get(workspace)
          if (entry === undefined) return Effect.void
          cache.delete(workspace)
          return Effect.asVoid(retire(entry))
        })

      yield* Effect.forkScoped(Stream.runForEach(notifier.subscribe(SETTINGS_TOPIC), drop))

      const load = (workspace: string, now: number) =>
        Effect.gen(function* () {
          const stored = yield* Effect.orDie(repo.settings(workspace))
          const key = JSON.stringify([stored?.email ?? null, stored?.sms ?? null])
          const previous = cache.get(workspace)
          if (previous !== undefined && previous.key === key) {
            // unchanged since it was built: keep the transports (and their open connections)
            const kept = { ...previous, at: now }
            cache.set(workspace, kept)
            return kept
          }
          const entry: Entry = {
            email: yield* emailOf(workspace, stored?.email ?? null),
            sms: yield* smsOf(workspace, stored?.sms ?? null),
            key,
            at: now
          }
          cache.set(workspace, entry)
          if (previous !== undefined) yield* retire(previous)
          return entry
        })

      const resolve = (workspace: string, channel: "email" | "sms") =>
        Effect.gen(function* () {
          const now = yield* Clock.currentTimeMillis
          const cached = cache.get(workspace)
          const entry = cached !== undefined && now - cached.at < TTL_MS ? cached : yield* load(workspace, now)
          return channel === "email" ? entry.email : entry.sms
        })

      return Providers.of({ resolve })
    })
  )
}
