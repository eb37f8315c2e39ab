// Rows of the notification tables as either driver returns them, decoded through Schema, and their wire forms
// (@troupe/api/notification/Notification).
import type { Channel, Message, MessageDetail, MessageStatus, Template, TemplateVersion } from "@troupe/api/notification/Notification"
import { Schema } from "effect"
import { json } from "../lib/rows.ts"
import { column, Count, Timestamp, TimestampOrNull } from "../query/RecordRow.ts"

const Strings = column(Schema.Unknown, Schema.Array(Schema.String), (v) => json<ReadonlyArray<string>>(v ?? []).map(String))
const CountOrNull = Schema.NullOr(Count)
const JsonOrNull = column(Schema.Unknown, Schema.Unknown, (v) => (v === null || v === undefined ? null : json(v)))

export const TemplateRowDb = Schema.Struct({
  id: Schema.String,
  workspace: Schema.String,
  name: Schema.String,
  channel: Schema.Literals(["email", "sms"]),
  subject: Schema.NullOr(Schema.String),
  text_body: Schema.NullOr(Schema.String),
  html_body: Schema.NullOr(Schema.String),
  variables: Strings,
  version: Count,
  created_at: Timestamp,
  updated_at: Timestamp
})
export type TemplateRow = typeof TemplateRowDb.Type
export const decodeTemplateRow = Schema.decodeUnknownSync(TemplateRowDb)

export const toTemplate = (r: TemplateRow): Template => ({
  id: r.id,
  name: r.name,
  channel: r.channel,
  subject: r.subject,
  text: r.text_body,
  html: r.html_body,
  variables: r.variables,
  version: r.version,
  createdAt: r.created_at,
  updatedAt: r.updated_at
})

export const TemplateVersionRowDb = Schema.Struct({
  version: Count,
  subject: Schema.NullOr(Schema.String),
  text_body: Schema.NullOr(Schema.String),
  html_body: Schema.NullOr(Schema.String),
  variables: Strings,
  created_at: Timestamp
})
export const decodeTemplateVersionRow = Schema.decodeUnknownSync(TemplateVersionRowDb)

export const toTemplateVersion = (r: typeof TemplateVersionRowDb.Type): TemplateVersion => ({
  version: r.version,
  subject: r.subject,
  text: r.text_body,
  html: r.html_body,
  variables: r.variables,
  createdAt: r.created_at
})

export const MessageRowDb = Schema.Struct({
  id: Schema.String,
  workspace: Schema.String,
  channel: Schema.Literals(["email", "sms"]),
  status: Schema.Literals(["queued", "sending", "sent", "failed", "captured"]),
  to_list: Strings,
  cc_list: Strings,
  bcc_list: Strings,
  from_address: Schema.NullOr(Schema.String),
  subject: Schema.NullOr(Schema.String),
  text_body: Schema.NullOr(Schema.String),
  html_body: Schema.NullOr(Schema.String),
  template_id: Schema.NullOr(Schema.String),
  template_name: Schema.NullOr(Schema.String),
  template_version: CountOrNull,
  message_id: Schema.NullOr(Schema.String),
  attempts: Count,
  last_error: Schema.NullOr(Schema.String),
  provider_message_id: Schema.NullOr(Schema.String),
  next_attempt_at: TimestampOrNull,
  created_at: Timestamp,
  sent_at: TimestampOrNull
})
export type MessageRow = typeof MessageRowDb.Type
export const decodeMessageRow = Schema.decodeUnknownSync(MessageRowDb)

export const toMessage = (r: MessageRow): Message => ({
  id: r.id,
  channel: r.channel,
  to: r.to_list,
  cc: r.cc_list,
  bcc: r.bcc_list,
  from: r.from_address,
  subject: r.subject,
  status: r.status,
  attempts: r.attempts,
  lastError: r.last_error,
  providerMessageId: r.provider_message_id,
  templateId: r.template_id,
  templateName: r.template_name,
  templateVersion: r.template_version,
  nextAttemptAt: r.status === "queued" ? r.next_attempt_at : null,
  createdAt: r.created_at,
  sentAt: r.sent_at
})

export const toMessageDetail = (r: MessageRow): MessageDetail => ({
  ...toMessage(r),
  text: r.text_body,
  html: r.html_body,
  messageId: r.message_id
})

/** The stored settings of a workspace: secrets (`smtpUrl`, `authToken`) encrypted. */
export interface StoredEmail {
  readonly smtpUrl: string
  readonly from: string
}
export interface StoredSms {
  readonly url: string
  readonly accountSid: string
  readonly authToken: string
  readonly from: string
}

export const SettingsRowDb = Schema.Struct({
  email: JsonOrNull,
  sms: JsonOrNull,
  updated_at: Timestamp
})
export const decodeSettingsRow = Schema.decodeUnknownSync(SettingsRowDb)

/** A message to store: rendered, checked, with its Message-ID. */
export interface NewMessage {
  readonly id: string
  readonly workspace: string
  readonly channel: Channel
  readonly to: ReadonlyArray<string>
  readonly cc: ReadonlyArray<string>
  readonly bcc: ReadonlyArray<string>
  readonly from: string | null
  readonly subject: string | null
  readonly text: string | null
  readonly html: string | null
  readonly templateId: string | null
  readonly templateName: string | null
  readonly templateVersion: number | null
  readonly messageId: string | null
  readonly createdBy: string | null
  /** the function run that sent it, and its depth */
  readonly runId: string | null
  readonly runDepth: number | null
}

/** The columns a new message's row takes from it (the insert adds its lease and author; the worker its status). */
export const messageColumns = (m: NewMessage) => ({
  id: m.id,
  workspace: m.workspace,
  channel: m.channel,
  to_list: m.to,
  cc_list: m.cc,
  bcc_list: m.bcc,
  from_address: m.from,
  subject: m.subject,
  text_body: m.text,
  html_body: m.html,
  template_id: m.templateId,
  template_name: m.templateName,
  template_version: m.templateVersion,
  message_id: m.messageId
})

/** How an attempt ended, as the worker records it. */
export interface Outcome {
  readonly id: string
  readonly status: Extract<MessageStatus, "sent" | "failed" | "queued" | "captured">
  readonly error: string | null
  readonly providerMessageId: string | null
  /** for `queued` (a retry): milliseconds until the next attempt */
  readonly retryInMs: number | null
  /** the attempt counted (false for captured messages and for a send never tried) */
  readonly attempted: boolean
}
