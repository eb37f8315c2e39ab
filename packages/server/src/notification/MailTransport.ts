// The one seam between the outbox and a provider (DESIGN "sibling services": SmtpTransport, SmsHttpTransport, and
// capture when none is configured). A transport sends one message and answers the provider's id, or fails with the
// provider's words and whether trying again later may help: temporary (SMTP 4xx, network, timeouts, HTTP 429/5xx)
// or permanent (SMTP 5xx, HTTP 4xx), which decides between a retry and `failed` at once.
import { Data, type Effect } from "effect"

/** An email as handed to SMTP: rendered, recipients checked, the Message-ID fixed for every attempt. */
export interface OutgoingEmail {
  readonly channel: "email"
  readonly from: string
  readonly to: ReadonlyArray<string>
  readonly cc: ReadonlyArray<string>
  readonly bcc: ReadonlyArray<string>
  readonly subject: string
  readonly text: string | null
  readonly html: string | null
  /** `<uuid@domain>`: the same on every attempt, so a receiving server can drop a duplicate */
  readonly messageId: string
}

/** An SMS as handed to the provider. */
export interface OutgoingSms {
  readonly channel: "sms"
  readonly from: string
  readonly to: string
  readonly text: string
}

export type Outgoing = OutgoingEmail | OutgoingSms

export interface Delivered {
  /** the provider's id of the message (the SMS sid, the SMTP queue id or answer) */
  readonly providerMessageId: string | null
  /** a partial delivery (some recipients refused): said here, the message is still sent */
  readonly warning: string | null
}

/** A failed attempt: the provider's words, and whether a later attempt may succeed. */
export class SendFailure extends Data.TaggedError("SendFailure")<{ readonly temporary: boolean; readonly reason: string }> {
  override get message() {
    return this.reason
  }
}

export interface MailTransport {
  readonly send: (message: Outgoing) => Effect.Effect<Delivered, SendFailure>
  /** closes pooled connections */
  readonly close: Effect.Effect<void>
}

const cut = (s: string, max = 1000) => (s.length > max ? `${s.slice(0, max)}…` : s)

/** Network-level SMTP errors of nodemailer: worth another attempt. */
const transient = new Set(["ECONNECTION", "ETIMEDOUT", "ESOCKET", "EDNS", "ECONNREFUSED", "ECONNRESET", "EPIPE", "EPROTOCOL", "ETLS"])

/**
 * An SMTP error (nodemailer's, carrying `responseCode`, `response`, `code`) as a SendFailure: a 4xx reply is
 * temporary, a 5xx reply permanent, a network error or timeout temporary; the server's reply is kept as it said it.
 */
export const smtpFailure = (error: unknown): SendFailure => {
  const e = (typeof error === "object" && error !== null ? error : {}) as {
    readonly responseCode?: unknown
    readonly response?: unknown
    readonly code?: unknown
    readonly message?: unknown
  }
  const code = typeof e.responseCode === "number" ? e.responseCode : undefined
  const words = typeof e.response === "string" && e.response.length > 0 ? e.response : String(e.message ?? error)
  if (code !== undefined) {
    return new SendFailure({ temporary: code >= 400 && code < 500, reason: cut(`SMTP ${code}: ${words.replace(/^\d{3}[ -]/, "")}`) })
  }
  const kind = typeof e.code === "string" ? e.code : undefined
  const temporary = kind === undefined || transient.has(kind)
  return new SendFailure({ temporary, reason: cut(kind === undefined ? words : `${kind}: ${words}`) })
}

/**
 * An HTTP answer of an SMS provider as a SendFailure: 429 and 5xx (and no answer at all) are temporary, other
 * statuses permanent; the provider's JSON `message` (Twilio's error body) or its text is kept.
 */
export const httpFailure = (status: number | null, error: string | null, body: string): SendFailure => {
  if (status === null) return new SendFailure({ temporary: true, reason: cut(error ?? "no answer") })
  let words = body.trim()
  try {
    const parsed = JSON.parse(body) as { message?: unknown; code?: unknown }
    if (typeof parsed?.message === "string") {
      words = parsed.code === undefined ? parsed.message : `${parsed.message} (code ${String(parsed.code)})`
    }
  } catch {
    // not JSON: the text as it came
  }
  return new SendFailure({
    temporary: status === 429 || status >= 500,
    reason: cut(`HTTP ${status}${words.length > 0 ? `: ${words}` : ""}`)
  })
}
