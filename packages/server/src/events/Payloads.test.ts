import { assert, describe, it } from "@effect/vitest"
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
  it("is {event, workspace, timestamp, data: {structure, recordId, record}} with record = fields + id", () => {
    const p = deliveryPayload(stored(updated)) as any
    assert.strictEqual(p.event, "record.updated")
    assert.strictEqual(p.workspace, "acme")
    assert.strictEqual(p.timestamp, "2024-05-01T10:00:00.000Z")
    assert.strictEqual(p.data.structure, "orders")
    assert.strictEqual(p.data.recordId, "r-1")
    assert.deepStrictEqual(p.data.record, { status: "paid", total: 10, id: "r-1" })
    assert.deepStrictEqual(p.data.previous, { status: "open", total: 10, id: "r-1" })
    assert.deepStrictEqual(p.data.changes, { status: { old: "open", new: "paid" } })
    assert.deepStrictEqual(Object.keys(p), ["event", "workspace", "timestamp", "data"])
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
    assert.deepStrictEqual(p.data, { structure: "orders", count: 2, recordIds: ["a", "b"] })
    const fn = deliveryPayload({ ...stored(updated), type: "function.failed", payload: { data: { runId: "x" } } }) as any
    assert.strictEqual(fn.event, "function.failed")
    assert.deepStrictEqual(fn.data, { runId: "x" })
    assert.strictEqual(fn.timestamp, "2024-05-01T00:00:00.000Z")
  })
})

describe("realtimeMessage", () => {
  it("is the stored event body plus its id", () => {
    const m = realtimeMessage(stored(updated, "42")) as any
    assert.strictEqual(m.id, "42")
    assert.strictEqual(m.event, "record.updated")
    assert.strictEqual(m.structure, "orders")
    assert.deepStrictEqual(m.data.record, { id: "r-1", structureId: "s-1", data: { status: "paid", total: 10 } })
    assert.deepStrictEqual(m.data.metadata, { userId: "u-1", source: "api" })
  })
})
