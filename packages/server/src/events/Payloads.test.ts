import { describe, expect, it } from "@effect/vitest"
import type { StoredEvent } from "./Outbox.ts"
import { bulkEvent, recordEvent } from "./Outbox.ts"
import { deliveryPayload, realtimeMessage } from "./Payloads.ts"

const stored = (e: ReturnType<typeof recordEvent>, id = "7"): StoredEvent => ({
  id,
  workspace: e.workspace,
  type: e.type,
  structureId: e.structureId ?? null,
  recordSlug: e.recordSlug ?? null,
  recordId: e.recordId ?? null,
  payload: e.payload as any,
  createdAt: "2024-05-01T00:00:00.000Z"
})

const updated = recordEvent({
  type: "record.updated",
  workspace: "acme",
  structure: { id: "s-1", slug: "orders" },
  record: { id: "r-1", structureId: "s-1", data: { status: "paid", total: 10 } },
  previous: { data: { status: "open", total: 10 } },
  changes: { status: { old: "open", new: "paid" } },
  metadata: { userId: "u-1", source: "api" },
  timestamp: "2024-05-01T10:00:00.000Z"
})

describe("deliveryPayload", () => {
  it("is {event, workspace, timestamp, data: {structure, recordId, record, previous}}, record and previous shaped as on SSE", () => {
    const p = deliveryPayload(stored(updated)) as any
    expect(p.event).toBe("record.updated")
    expect(p.workspace).toBe("acme")
    expect(p.timestamp).toBe("2024-05-01T10:00:00.000Z")
    expect(p.data.structure).toBe("orders")
    expect(p.data.recordId).toBe("r-1")
    // the realtime message's shape, and the deprecated flat fields beside it
    expect(p.data.record).toStrictEqual({ status: "paid", total: 10, id: "r-1", structureId: "s-1", data: { status: "paid", total: 10 } })
    expect(p.data.previous).toStrictEqual({ status: "open", total: 10, id: "r-1", data: { status: "open", total: 10 } })
    const m = realtimeMessage(stored(updated)) as any
    expect(p.data.record).toMatchObject(m.data.record)
    expect(p.data.previous).toMatchObject(m.data.previous)
    expect(p.data.changes).toStrictEqual({ status: { old: "open", new: "paid" } })
    expect(Object.keys(p)).toStrictEqual(["event", "workspace", "timestamp", "data"])
  })

  it("passes bulk and other events' data through", () => {
    const bulk = bulkEvent({
      type: "record.bulk.created",
      workspace: "acme",
      structure: { id: "s-1", slug: "orders" },
      recordIds: ["a", "b"],
      timestamp: "2024-05-01T10:00:00.000Z"
    })
    const p = deliveryPayload(stored(bulk as any)) as any
    expect(p.data).toStrictEqual({ structure: "orders", count: 2, recordIds: ["a", "b"] })
    const fn = deliveryPayload({ ...stored(updated), type: "function.failed", payload: { data: { runId: "x" } } }) as any
    expect(fn.event).toBe("function.failed")
    expect(fn.data).toStrictEqual({ runId: "x" })
    expect(fn.timestamp).toBe("2024-05-01T00:00:00.000Z")
  })
})

describe("realtimeMessage", () => {
  it("is the stored event body plus its id", () => {
    const m = realtimeMessage(stored(updated, "42")) as any
    expect(m.id).toBe("42")
    expect(m.event).toBe("record.updated")
    expect(m.structure).toBe("orders")
    expect(m.data.record).toStrictEqual({ id: "r-1", structureId: "s-1", data: { status: "paid", total: 10 } })
    expect(m.data.metadata).toStrictEqual({ userId: "u-1", source: "api" })
  })
})
