// SMS through an HTTP provider in Twilio's Messages form (CONTRACT §8.3): `POST {url}` form-encoded `To`, `From`,
// `Body` with HTTP basic auth `accountSid:authToken`; a 2xx answer is sent (its JSON `sid` is the provider's id),
// 429, 5xx and no answer are temporary, any other status fails the message with the provider's words. The request
// goes through the webhooks' POST (events/HttpPost.ts): keep-alive agents, a whole-exchange timeout and, for a
// workspace's own provider in production, the refusal of private addresses at connect time.
import { Effect } from "effect"
import { post } from "../events/HttpPost.ts"
import { type Delivered, httpFailure, type MailTransport, type Outgoing, SendFailure } from "./MailTransport.ts"

export interface SmsHttpConfig {
  readonly url: string
  readonly accountSid: string
  readonly authToken: string
  readonly timeoutMs: number
  /** refuse private addresses (a workspace's provider, in production) */
  readonly guarded: boolean
}

/** The SID in a provider's JSON answer, if any. */
const sidOf = (body: string): string | null => {
  try {
    const parsed = JSON.parse(body) as { sid?: unknown; id?: unknown }
    const sid = parsed?.sid ?? parsed?.id
    return typeof sid === "string" || typeof sid === "number" ? String(sid) : null
  } catch {
    return null
  }
}

export const makeSmsHttpTransport = (config: SmsHttpConfig): MailTransport => {
  const authorization = `Basic ${Buffer.from(`${config.accountSid}:${config.authToken}`, "utf8").toString("base64")}`
  const send = (message: Outgoing): Effect.Effect<Delivered, SendFailure> => {
    if (message.channel !== "sms") return Effect.fail(new SendFailure({ temporary: false, reason: "the SMS transport sends SMS only" }))
    const body = new URLSearchParams({ To: message.to, From: message.from, Body: message.text }).toString()
    return post(
      config.url,
      body,
      { authorization, "content-type": "application/x-www-form-urlencoded", accept: "application/json" },
      { timeoutMs: config.timeoutMs, allowPrivate: !config.guarded }
    ).pipe(
      Effect.flatMap((result) =>
        result.ok
          ? Effect.succeed({ providerMessageId: sidOf(result.body), warning: null })
          : Effect.fail(httpFailure(result.status, result.error, result.body))
      )
    )
  }
  return { send, close: Effect.void }
}
