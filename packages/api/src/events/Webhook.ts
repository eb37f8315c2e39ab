/**
 * Webhooks (README "Webhooks"): outbound HTTP callbacks for record and compute events,
 * their delivery log, failures and test sends. The signing secret is returned only by create and by an update that
 * sets a new one.
 *
 * @since 0.1.0
 */
import { Schema } from "effect"

/** Event names a record or compute change emits (the outbox `type`). @category models */
export const EventNames = [
  "record.created",
  "record.updated",
  "record.deleted",
  "record.restored",
  "record.reverted",
  "record.bulk.created",
  "record.bulk.updated",
  "record.bulk.deleted",
  "record.expired",
  "function.completed",
  "function.failed",
  "trigger.fired",
  "notification.sent",
  "notification.failed",
  "file.uploaded",
  "file.deleted",
  "anomaly.detected"
] as const
/** @category models */
export type EventName = (typeof EventNames)[number]

/** What a webhook may subscribe to: an event name, a family wildcard, or `*` for every event. @category models */
export const WebhookEventName = Schema.Literals([
  ...EventNames,
  "record.*",
  "record.bulk.*",
  "function.*",
  "notification.*",
  "file.*",
  "*"
]).annotate({
  description: "An event name (record.created, ...), a family (record.*, function.*) or * for all"
})
/** @category models */
export type WebhookEventName = typeof WebhookEventName.Type

/** @category models */
export const WebhookStatus = Schema.Literals(["active", "failed", "disabled"])
/** @category models */
export type WebhookStatus = typeof WebhookStatus.Type

/**
 * Which events reach the webhook besides its `events` list. All given conditions must hold.
 * @category models
 */
export const WebhookFilters = Schema.Struct({
  structure: Schema.optionalKey(Schema.String.annotate({ description: "Only events of the structure with this slug" })),
  structureId: Schema.optionalKey(Schema.String.annotate({ description: "Only events of the structure with this id" })),
  data: Schema.optionalKey(
    Schema.Record(Schema.String, Schema.Json).annotate({
      description: 'Field equality on the record\'s data, e.g. {"status": "paid"} (dotted paths reach nested fields)'
    })
  ),
  query: Schema.optionalKey(
    Schema.String.annotate({
      description: "A query-language condition on the record (what follows WHERE), e.g. \"amount > 100 AND status = 'paid'\""
    })
  )
})
/** @category models */
export type WebhookFilters = typeof WebhookFilters.Type

const optional = Schema.optionalKey

const Name = Schema.String.check(
  Schema.isPattern(/\S/, { message: "name must not be blank" }),
  Schema.isMaxLength(200, { message: "name must be at most 200 characters" })
)
const Url = Schema.String.check(
  Schema.isMinLength(1, { message: "url is required" }),
  Schema.isMaxLength(2048, { message: "url must be at most 2048 characters" })
)
const Secret = Schema.String.check(
  Schema.isMinLength(1, { message: "secret must not be empty" }),
  Schema.isMaxLength(512, { message: "secret must be at most 512 characters" })
)
const Events = Schema.Array(WebhookEventName).check(Schema.isMinLength(1, { message: "events must name at least one event" }))
/** Filters arrive as a free object; the server checks the keys and values so it can name each bad one. */
const FiltersInput = Schema.Record(Schema.String, Schema.Json).annotate({
  description: "structure (slug), structureId, data (field equality), query (query-language condition)"
})

/** A stored webhook, without its secret. @category models */
export const Webhook = Schema.Struct({
  id: Schema.String,
  name: Schema.String,
  url: Schema.String,
  events: Schema.Array(Schema.String),
  filters: WebhookFilters,
  enabled: Schema.Boolean,
  status: WebhookStatus,
  createdAt: Schema.String,
  updatedAt: Schema.String,
  createdBy: Schema.NullOr(Schema.String)
})
/** @category models */
export type Webhook = typeof Webhook.Type

/** A webhook plus its secret: the create answer, and the update answer when the secret changed. @category models */
export const WebhookWithSecret = Schema.Struct({ ...Webhook.fields, secret: optional(Schema.String) })
/** @category models */
export type WebhookWithSecret = typeof WebhookWithSecret.Type

/** @category models */
export const WebhookCreate = Schema.Struct({
  name: optional(Name),
  url: Url,
  events: Events,
  filters: optional(Schema.NullOr(FiltersInput)),
  secret: optional(Secret.annotate({ description: "Signing secret; generated (whsec_...) when omitted" })),
  enabled: optional(Schema.Boolean)
})
/** @category models */
export type WebhookCreate = typeof WebhookCreate.Type

/** Partial update; `enabled: true` also brings a failed webhook back to `active`. @category models */
export const WebhookUpdate = Schema.Struct({
  name: optional(Name),
  url: optional(Url),
  events: optional(Events),
  filters: optional(Schema.NullOr(FiltersInput)),
  secret: optional(Secret),
  enabled: optional(Schema.Boolean)
})
/** @category models */
export type WebhookUpdate = typeof WebhookUpdate.Type

/** @category models */
export const PageQuery = {
  page: optional(Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: 1_000_000 }))),
  limit: optional(Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: 500 })))
}

/** @category models */
export const WebhookList = Schema.Struct({
  data: Schema.Array(Webhook),
  total: Schema.Int,
  page: Schema.Int,
  limit: Schema.Int
})

/** @category models */
export const DeliveryStatus = Schema.Literals(["pending", "retrying", "delivered", "failed", "skipped"])
/** @category models */
export type DeliveryStatus = typeof DeliveryStatus.Type

/** One entry of a webhook's delivery log. @category models */
export const WebhookDelivery = Schema.Struct({
  id: Schema.String,
  webhookId: Schema.String,
  eventId: Schema.NullOr(Schema.String),
  event: Schema.String,
  status: DeliveryStatus,
  attempts: Schema.Int,
  /** HTTP status of the last attempt (null when it got no answer) */
  lastStatus: Schema.NullOr(Schema.Int),
  lastError: Schema.NullOr(Schema.String),
  durationMs: Schema.NullOr(Schema.Number),
  nextAttemptAt: Schema.NullOr(Schema.String),
  deliveredAt: Schema.NullOr(Schema.String),
  failedAt: Schema.NullOr(Schema.String),
  redeliveryOf: Schema.NullOr(Schema.String),
  createdAt: Schema.String,
  updatedAt: Schema.String
})
/** @category models */
export type WebhookDelivery = typeof WebhookDelivery.Type

/** A delivery with the body that was (or will be) sent. @category models */
export const WebhookDeliveryDetail = Schema.Struct({ ...WebhookDelivery.fields, payload: Schema.Json })
/** @category models */
export type WebhookDeliveryDetail = typeof WebhookDeliveryDetail.Type

/** @category models */
export const WebhookDeliveryList = Schema.Struct({
  data: Schema.Array(WebhookDelivery),
  total: Schema.Int,
  page: Schema.Int,
  limit: Schema.Int
})

/** @category models */
export const DeliveryListQuery = { ...PageQuery, status: optional(DeliveryStatus) }

/** A delivery that used up every attempt; the webhook is then `failed`. @category models */
export const WebhookFailure = Schema.Struct({
  id: Schema.String,
  event: Schema.String,
  payload: Schema.Json,
  attempts: Schema.Int,
  lastStatus: Schema.NullOr(Schema.Int),
  lastError: Schema.NullOr(Schema.String),
  failedAt: Schema.String
})
/** @category models */
export type WebhookFailure = typeof WebhookFailure.Type

/** @category models */
export const WebhookFailures = Schema.Struct({ failures: Schema.Array(WebhookFailure) })

/** Optional body of a test send. @category models */
export const WebhookTestRequest = Schema.Struct({
  /** `webhook.test` (the default) or one of the event names (not a family or `*`: a test sends one event) */
  event: optional(Schema.Literals(["webhook.test", ...EventNames])),
  /** the test event's `data`: an object */
  data: optional(Schema.Record(Schema.String, Schema.Json))
})

/** @category models */
export const WebhookTestResult = Schema.Struct({
  delivered: Schema.Boolean,
  /** the receiver's HTTP status, null when it did not answer */
  status: Schema.NullOr(Schema.Int),
  durationMs: Schema.Number,
  error: optional(Schema.String)
})
/** @category models */
export type WebhookTestResult = typeof WebhookTestResult.Type
