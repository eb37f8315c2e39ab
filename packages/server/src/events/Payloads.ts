// What leaves the server for one event: the webhook body (docs/events-and-realtime.md, "Delivery") and the SSE message.
import { Predicate } from "effect"
import type { StoredEvent } from "./Outbox.ts"

/**
 * The webhook delivery body: `{event, workspace, timestamp, data: {structure, recordId, record, previous, changes,
 * metadata?}}`. `record` and `previous` have the realtime message's shape, `{id, structureId, data: {fields}}` and
 * `{id, data: {fields}} | null` (one shape on both channels, docs/events-and-realtime.md); until the flat form is
 * removed they also carry the fields at their top level, as deliveries did before (deprecated). Bulk events carry
 * `data: {structure, count, recordIds}`; other events their own `data`.
 */
export const deliveryPayload = (e: StoredEvent): Record<string, unknown> => {
  const p = e.payload
  const base = {
    event: e.type,
    workspace: e.workspace,
    timestamp: typeof p.timestamp === "string" ? p.timestamp : e.createdAt
  }
  const data = Predicate.isObject(p.data) ? p.data : undefined
  const record = data !== undefined && Predicate.isObject(data.record) ? data.record : undefined
  if (record !== undefined) {
    const fields = Predicate.isObject(record.data) ? record.data : {}
    const id = typeof record.id === "string" ? record.id : e.recordId
    const before = Predicate.isObject(data!.previous) && Predicate.isObject(data!.previous.data) ? data!.previous.data : undefined
    const previous = before === undefined ? null : { ...before, id, data: before }
    const structureId = typeof record.structureId === "string" ? record.structureId : e.structureId
    return {
      ...base,
      data: {
        structure: p.structure ?? e.recordSlug,
        recordId: id,
        record: { ...fields, id, structureId, data: fields },
        previous,
        changes: Predicate.isObject(data!.changes) ? data!.changes : {},
        ...(Predicate.isObject(data!.metadata) ? { metadata: data!.metadata } : {})
      }
    }
  }
  return { ...base, data: data ?? (p.data === undefined ? {} : p.data) }
}

/** The SSE message: the stored event body plus its id (the same id as the SSE `id:` line). */
export const realtimeMessage = (e: StoredEvent): Record<string, unknown> => {
  const { event, workspace, timestamp, structure, data, ...rest } = e.payload
  return {
    ...rest,
    id: e.id,
    event: event ?? e.type,
    workspace: workspace ?? e.workspace,
    timestamp: timestamp ?? e.createdAt,
    structure: structure ?? e.recordSlug,
    data: data ?? null
  }
}
