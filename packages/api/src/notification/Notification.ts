/**
 * Notification models on the wire (CONTRACT §8.3, docs/notifications.md): provider settings (secrets masked),
 * Liquid templates with their versions, send requests for email and SMS, and the message log. Addresses, numbers
 * and body sizes are checked by the server, which names the offending field (`to[2]`, `html`, `variables.name`).
 *
 * @since 0.1.0
 */
import { Schema } from "effect"

const optional = Schema.optionalKey
const JsonObject = Schema.Record(Schema.String, Schema.Json)
const Timestamp = Schema.String.annotate({ description: "ISO-8601 timestamp" })

/** @category models */
export const Channel = Schema.Literals(["email", "sms"])
/** @category models */
export type Channel = typeof Channel.Type

/**
 * `queued` (waiting for its first or next attempt) → `sending` → `sent` | `failed`; `captured` when no provider is
 * configured (kept, readable, never sent). @category models
 */
export const MessageStatus = Schema.Literals(["queued", "sending", "sent", "failed", "captured"])
/** @category models */
export type MessageStatus = typeof MessageStatus.Type

// ---------------------------------------------------------------------------------------------------------------
// Settings

/** @category models */
export const EmailSettings = Schema.Struct({
  smtpUrl: Schema.String.annotate({
    description: "smtp://user:password@host:587 (STARTTLS when offered) or smtps://…:465; the password reads back as ********"
  }),
  from: Schema.String.annotate({ description: 'Default sender: "name@example.com" or "Name <name@example.com>"' })
})

/** @category models */
export const SmsSettings = Schema.Struct({
  url: Schema.String.annotate({ description: "The provider's Messages endpoint (Twilio's form: To, From, Body)" }),
  accountSid: Schema.String,
  authToken: Schema.String.annotate({ description: "Reads back as ********; sending ******** keeps the stored token" }),
  from: Schema.String.annotate({ description: "Sender number (E.164) or name" })
})

/** `PUT /settings` replaces the whole settings; `{}` clears them. @category models */
export const NotificationSettingsInput = Schema.Struct({
  email: optional(Schema.NullOr(EmailSettings)),
  sms: optional(Schema.NullOr(SmsSettings))
}).annotate({ identifier: "NotificationSettingsInput" })
/** @category models */
export type NotificationSettingsInput = typeof NotificationSettingsInput.Type

/** Where a channel's messages go: the workspace's provider, the node's (environment), or the capture inbox. */
export const ProviderSource = Schema.Literals(["workspace", "node", "capture"])

/** Settings as read back: secrets masked, and which provider each channel uses now. @category models */
export const NotificationSettings = Schema.Struct({
  email: Schema.NullOr(EmailSettings),
  sms: Schema.NullOr(SmsSettings),
  active: Schema.Struct({ email: ProviderSource, sms: ProviderSource }),
  updatedAt: Schema.NullOr(Timestamp)
}).annotate({ identifier: "NotificationSettings" })
/** @category models */
export type NotificationSettings = typeof NotificationSettings.Type

/** `POST /settings/test`: one message sent at once through the channel's current provider. @category models */
export const TestSendRequest = Schema.Struct({
  channel: Channel,
  to: Schema.String.annotate({ description: "An email address or an E.164 number" })
}).annotate({ identifier: "NotificationTestRequest" })

/** @category models */
export const TestSendResult = Schema.Struct({
  delivered: Schema.Boolean,
  status: Schema.Literals(["sent", "captured", "failed"]),
  provider: ProviderSource,
  error: Schema.NullOr(Schema.String),
  providerMessageId: Schema.NullOr(Schema.String),
  durationMs: Schema.Number
}).annotate({ identifier: "NotificationTestResult" })

// ---------------------------------------------------------------------------------------------------------------
// Templates

const TemplateName = Schema.String.check(
  Schema.isPattern(/^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$/, {
    message: "name must be 1 to 100 letters, digits or ._- and start with a letter or digit"
  })
)

/** @category models */
export const TemplateInput = Schema.Struct({
  name: TemplateName,
  channel: Channel,
  subject: optional(Schema.NullOr(Schema.String)),
  text: optional(Schema.NullOr(Schema.String)),
  html: optional(Schema.NullOr(Schema.String))
}).annotate({ identifier: "NotificationTemplateInput" })
/** @category models */
export type TemplateInput = typeof TemplateInput.Type

/** @category models */
export const Template = Schema.Struct({
  id: Schema.String,
  name: Schema.String,
  channel: Channel,
  subject: Schema.NullOr(Schema.String),
  text: Schema.NullOr(Schema.String),
  html: Schema.NullOr(Schema.String),
  variables: Schema.Array(Schema.String).annotate({ description: "Top-level variables the template reads" }),
  version: Schema.Int,
  createdAt: Timestamp,
  updatedAt: Timestamp
}).annotate({ identifier: "NotificationTemplate" })
/** @category models */
export type Template = typeof Template.Type

/** @category models */
export const TemplateList = Schema.Struct({
  data: Schema.Array(Template),
  total: Schema.Int,
  page: Schema.Int,
  limit: Schema.Int
}).annotate({ identifier: "NotificationTemplateList" })

/** One stored version of a template. @category models */
export const TemplateVersion = Schema.Struct({
  version: Schema.Int,
  subject: Schema.NullOr(Schema.String),
  text: Schema.NullOr(Schema.String),
  html: Schema.NullOr(Schema.String),
  variables: Schema.Array(Schema.String),
  createdAt: Timestamp
}).annotate({ identifier: "NotificationTemplateVersion" })
/** @category models */
export type TemplateVersion = typeof TemplateVersion.Type

/** @category models */
export const TemplateVersionList = Schema.Struct({ versions: Schema.Array(TemplateVersion) })

/** @category models */
export const PreviewRequest = Schema.Struct({ variables: optional(JsonObject) }).annotate({ identifier: "NotificationPreviewRequest" })

/** `POST /templates/preview`: unsaved sources rendered as a send would render them (the console's live preview). */
export const DraftPreviewRequest = Schema.Struct({
  channel: Channel,
  subject: optional(Schema.NullOr(Schema.String)),
  text: optional(Schema.NullOr(Schema.String)),
  html: optional(Schema.NullOr(Schema.String)),
  variables: optional(JsonObject)
}).annotate({ identifier: "NotificationDraftPreviewRequest" })
/** @category models */
export type DraftPreviewRequest = typeof DraftPreviewRequest.Type

/** What a send would carry: the text part is made from the HTML when the template has none. @category models */
export const Rendered = Schema.Struct({
  subject: Schema.NullOr(Schema.String),
  text: Schema.NullOr(Schema.String),
  html: Schema.NullOr(Schema.String)
}).annotate({ identifier: "NotificationRendered" })

// ---------------------------------------------------------------------------------------------------------------
// Sends and messages

const Addresses = Schema.Union([Schema.String, Schema.Array(Schema.String)])

/** `POST /email`. @category models */
export const EmailRequest = Schema.Struct({
  to: Addresses,
  cc: optional(Addresses),
  bcc: optional(Addresses),
  subject: optional(Schema.String),
  text: optional(Schema.String),
  html: optional(Schema.String),
  template: optional(Schema.String.annotate({ description: "A template's id or name" })),
  variables: optional(JsonObject),
  from: optional(Schema.String)
}).annotate({ identifier: "EmailRequest" })
/** @category models */
export type EmailRequest = typeof EmailRequest.Type

/** `POST /sms`. @category models */
export const SmsRequest = Schema.Struct({
  to: Schema.String.annotate({ description: "E.164 number, e.g. +14155550100" }),
  text: optional(Schema.String),
  template: optional(Schema.String.annotate({ description: "A template's id or name" })),
  variables: optional(JsonObject)
}).annotate({ identifier: "SmsRequest" })
/** @category models */
export type SmsRequest = typeof SmsRequest.Type

/** The 202 answer of a send. @category models */
export const Accepted = Schema.Struct({ id: Schema.String, status: MessageStatus }).annotate({ identifier: "NotificationAccepted" })

const messageFields = {
  id: Schema.String,
  channel: Channel,
  to: Schema.Array(Schema.String),
  cc: Schema.Array(Schema.String),
  bcc: Schema.Array(Schema.String),
  from: Schema.NullOr(Schema.String),
  subject: Schema.NullOr(Schema.String),
  status: MessageStatus,
  attempts: Schema.Int,
  lastError: Schema.NullOr(Schema.String),
  providerMessageId: Schema.NullOr(Schema.String),
  templateId: Schema.NullOr(Schema.String),
  templateName: Schema.NullOr(Schema.String),
  templateVersion: Schema.NullOr(Schema.Int),
  nextAttemptAt: Schema.NullOr(Timestamp),
  createdAt: Timestamp,
  sentAt: Schema.NullOr(Timestamp)
}

/** A message as listed (no bodies). @category models */
export const Message = Schema.Struct(messageFields).annotate({ identifier: "NotificationMessage" })
/** @category models */
export type Message = typeof Message.Type

/** A message read alone: with its rendered bodies and SMTP Message-ID. @category models */
export const MessageDetail = Schema.Struct({
  ...messageFields,
  text: Schema.NullOr(Schema.String),
  html: Schema.NullOr(Schema.String),
  messageId: Schema.NullOr(Schema.String)
}).annotate({ identifier: "NotificationMessageDetail" })
/** @category models */
export type MessageDetail = typeof MessageDetail.Type

/** @category models */
export const MessageList = Schema.Struct({
  data: Schema.Array(Message),
  total: Schema.Int,
  page: Schema.Int,
  limit: Schema.Int
}).annotate({ identifier: "NotificationMessageList" })
/** @category models */
export type MessageList = typeof MessageList.Type

const pageField = (maximum: number, description: string) =>
  optional(Schema.FiniteFromString.check(Schema.isInt(), Schema.isBetween({ minimum: 1, maximum })).annotate({ description }))

/** @category models */
export const PageQuery = {
  page: pageField(1_000_000, "1-based page (default 1)"),
  // CONTRACT §8: every list of the sibling services takes limit 1-1000
  limit: pageField(1000, "Page size (default 50, at most 1000)")
}

/** Newest first. @category models */
export const MessageListQuery = {
  ...PageQuery,
  channel: optional(Channel),
  status: optional(MessageStatus),
  to: optional(Schema.String.annotate({ description: "Messages with this recipient (to, cc or bcc)" }))
}

/** `Idempotency-Key`: the same key answers the same message for 24 hours. @category models */
export const SendHeaders = {
  "idempotency-key": optional(
    Schema.String.check(Schema.isBetweenLength(1, 255, { message: "Idempotency-Key must be 1 to 255 characters" }))
  )
}
