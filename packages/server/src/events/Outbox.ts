// The transactional outbox. A write appends its event with `appendEvent` inside its own transaction, so the event
// exists exactly when the change committed; the relay is woken by a NOTIFY sent after the commit (Wake.ts: never
// inside the write transaction, where it would serialise every commit), and polls as well. The relay
// (OutboxRelay.ts) hands committed events on, at least once.
import type { EventNames } from "@troupe/api/events/Webhook"
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import type { SqlError } from "effect/sql/SqlError"
import { notifyAfterCommit } from "./Wake.ts"

/** The channel the relay LISTENs on (a wake-up without payload). */
export const EVENTS_CHANNEL = "troupe_events"

/** Dotted record event names (README "Events"), as stored in `events.type`: the API's event names of records. */
export type RecordEventType = Extract<(typeof EventNames)[number], `record.${string}`>

/** One event to append. `payload` is the full event body (see `recordEvent` / `bulkEvent`). */
export interface OutboxEvent {
  readonly workspace: string
  readonly type: string
  readonly structureId?: string | null | undefined
  readonly recordSlug?: string | null | undefined
  readonly recordId?: string | null | undefined
  readonly payload: unknown
}

/** An event as the relay reads it back. */
export interface StoredEvent {
  readonly id: string
  readonly workspace: string
  readonly type: string
  readonly structureId: string | null
  readonly recordSlug: string | null
  readonly recordId: string | null
  readonly payload: EventPayload
  readonly createdAt: string
}

/** The stored event body: `{event, timestamp, workspace, structure, data}` (README "Events"). */
export interface EventPayload {
  readonly event?: string
  readonly timestamp?: string
  readonly workspace?: string
  readonly structure?: string
  readonly data?: unknown
  readonly [key: string]: unknown
}

/** Appends one event in the caller's transaction (the ambient one of `sql`); the relay is woken after commit. */
export const appendEvent = (sql: SqlClient.SqlClient, event: OutboxEvent): Effect.Effect<void, SqlError> =>
  sql`INSERT INTO events (workspace, type, structure_id, record_slug, record_id, payload)
    VALUES (${event.workspace}, ${event.type}, ${event.structureId ?? null}::uuid, ${event.recordSlug ?? null},
      ${event.recordId ?? null}::uuid, ${JSON.stringify(event.payload ?? {})}::jsonb)`.pipe(
    Effect.andThen(notifyAfterCommit(sql, EVENTS_CHANNEL))
  )

/** Appends several events in order (one statement, one wake-up). */
export const appendEvents = (sql: SqlClient.SqlClient, events: ReadonlyArray<OutboxEvent>): Effect.Effect<void, SqlError> => {
  if (events.length === 0) return Effect.void
  if (events.length === 1) return appendEvent(sql, events[0]!)
  const rows = events.map((e, i) => ({
    i,
    workspace: e.workspace,
    type: e.type,
    structure_id: e.structureId ?? null,
    record_slug: e.recordSlug ?? null,
    record_id: e.recordId ?? null,
    payload: e.payload ?? {}
  }))
  return sql`INSERT INTO events (workspace, type, structure_id, record_slug, record_id, payload)
    SELECT workspace, type, structure_id, record_slug, record_id, payload
    FROM jsonb_to_recordset(${JSON.stringify(rows)}::jsonb)
      AS v(i int, workspace text, type text, structure_id uuid, record_slug text, record_id uuid, payload jsonb)
    ORDER BY i`.pipe(Effect.andThen(notifyAfterCommit(sql, EVENTS_CHANNEL)))
}

/** `appendEvent` with the SqlClient from the context (inside a `withTransaction`, that transaction). */
export const publish = (event: OutboxEvent): Effect.Effect<void, SqlError, SqlClient.SqlClient> =>
  Effect.flatMap(Effect.service(SqlClient.SqlClient), (sql) => appendEvent(sql, event))

/** The record of a record event: its id, structure id and (secret-masked) data. */
export interface EventRecord {
  readonly id: string
  readonly structureId: string
  readonly data: Readonly<Record<string, unknown>>
}

/**
 * Builds a single-record event in the shape the relay, webhooks and SSE read:
 * `{event, timestamp, workspace, structure, data: {record, previous, changes, metadata}}`.
 */
export const recordEvent = (input: {
  readonly type: RecordEventType
  readonly workspace: string
  readonly structure: { readonly id: string; readonly slug: string }
  readonly record: EventRecord
  readonly previous?: { readonly data: Readonly<Record<string, unknown>> } | null | undefined
  readonly changes?: Readonly<Record<string, { readonly old: unknown; readonly new: unknown }>> | undefined
  readonly metadata?: { readonly userId?: string | null; readonly source?: string | null } | undefined
  /** ISO 8601; the time of the change */
  readonly timestamp: string
}): OutboxEvent => ({
  workspace: input.workspace,
  type: input.type,
  structureId: input.structure.id,
  recordSlug: input.structure.slug,
  recordId: input.record.id,
  payload: {
    event: input.type,
    timestamp: input.timestamp,
    workspace: input.workspace,
    structure: input.structure.slug,
    data: {
      record: { id: input.record.id, structureId: input.record.structureId, data: input.record.data },
      previous: input.previous ?? null,
      changes: input.changes ?? {},
      metadata: { userId: input.metadata?.userId ?? null, source: input.metadata?.source ?? "api" }
    }
  }
})

/** Builds a bulk event: `data: {structure, count, recordIds}`. */
export const bulkEvent = (input: {
  readonly type: "record.bulk.created" | "record.bulk.updated" | "record.bulk.deleted"
  readonly workspace: string
  readonly structure: { readonly id: string; readonly slug: string }
  readonly recordIds: ReadonlyArray<string>
  readonly timestamp: string
}): OutboxEvent => ({
  workspace: input.workspace,
  type: input.type,
  structureId: input.structure.id,
  recordSlug: input.structure.slug,
  recordId: null,
  payload: {
    event: input.type,
    timestamp: input.timestamp,
    workspace: input.workspace,
    structure: input.structure.slug,
    data: { structure: input.structure.slug, count: input.recordIds.length, recordIds: input.recordIds }
  }
})
