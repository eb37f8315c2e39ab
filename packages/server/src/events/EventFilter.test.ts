import { describe, expect, it } from "@effect/vitest"
import { Result } from "effect"
import { compileMatcher, eventSelected, likeMatch, validateEvents, validateFilters } from "./EventFilter.ts"
import type { StoredEvent } from "./Outbox.ts"

const event = (over: Partial<StoredEvent> & { data?: Record<string, unknown> } = {}): StoredEvent => ({
  id: "1",
  workspace: "acme",
  type: "record.created",
  structureId: "s-1",
  recordSlug: "orders",
  recordId: "r-1",
  createdAt: "2024-01-01T00:00:00.000Z",
  payload: {
    event: over.type ?? "record.created",
    structure: over.recordSlug ?? "orders",
    data: {
      record: {
        id: "r-1",
        structureId: "s-1",
        data: over.data ?? { status: "paid", amount: 150, tags: ["a", "b"], address: { city: "Paris" } }
      }
    }
  },
  ...over
})

describe("eventSelected", () => {
  it("matches exact names, family wildcards and *", () => {
    expect(eventSelected(["record.created"], "record.created")).toBe(true)
    expect(eventSelected(["record.updated"], "record.created")).toBe(false)
    expect(eventSelected(["*"], "function.failed")).toBe(true)
    expect(eventSelected(["record.*"], "record.bulk.deleted")).toBe(true)
    expect(eventSelected(["record.bulk.*"], "record.bulk.created")).toBe(true)
    expect(eventSelected(["record.bulk.*"], "record.created")).toBe(false)
    expect(eventSelected(["function.*"], "record.created")).toBe(false)
  })
})

describe("validateEvents", () => {
  it("names each unknown event", () => {
    const problems = validateEvents(["record.created", "record.exploded", "*", "nope"])
    expect(problems.map((p) => p.field)).toStrictEqual(["events[1]", "events[3]"])
    expect(problems[0]!.message).toMatch(/record\.exploded/)
  })
  it("accepts every documented name", () => {
    expect(validateEvents(["record.reverted", "record.expired", "function.completed", "trigger.fired", "record.*"])).toHaveLength(0)
  })
})

describe("validateFilters", () => {
  it("accepts structure, data and a parseable query", () => {
    const r = validateFilters({ structure: "orders", data: { status: "paid" }, query: "amount > 100" })
    expect(Result.isSuccess(r)).toBe(true)
    if (Result.isSuccess(r)) expect(r.success).toStrictEqual({ structure: "orders", data: { status: "paid" }, query: "amount > 100" })
  })
  it("treats null and undefined as no filters", () => {
    expect(Result.getOrThrow(validateFilters(null))).toStrictEqual({})
    expect(Result.getOrThrow(validateFilters(undefined))).toStrictEqual({})
  })
  it("refuses unknown keys, wrong types and a query that does not parse, naming each", () => {
    const r = validateFilters({ structur: "x", structure: 3, data: [1], query: "amount >" })
    expect(Result.isFailure(r)).toBe(true)
    if (Result.isFailure(r)) {
      expect(r.failure.map((d) => d.field).sort()).toStrictEqual(["filters.data", "filters.query", "filters.structur", "filters.structure"])
      expect(r.failure.find((d) => d.field === "filters.query")!.message).toMatch(/position/)
    }
  })
})

describe("compileMatcher", () => {
  it("applies the events list", () => {
    const m = compileMatcher(["record.updated"], {})
    expect(m.test(event())).toBe(false)
    expect(m.test(event({ type: "record.updated" }))).toBe(true)
  })
  it("filters by structure slug and id", () => {
    expect(compileMatcher(["*"], { structure: "orders" }).test(event())).toBe(true)
    expect(compileMatcher(["*"], { structure: "users" }).test(event())).toBe(false)
    expect(compileMatcher(["*"], { structureId: "s-1" }).test(event())).toBe(true)
    expect(compileMatcher(["*"], { structureId: "s-2" }).test(event())).toBe(false)
  })
  it("filters by field equality, including nested paths and arrays", () => {
    expect(compileMatcher(["*"], { data: { status: "paid" } }).test(event())).toBe(true)
    expect(compileMatcher(["*"], { data: { status: "open" } }).test(event())).toBe(false)
    expect(compileMatcher(["*"], { data: { "address.city": "Paris", amount: 150 } }).test(event())).toBe(true)
    expect(compileMatcher(["*"], { data: { amount: "150" } }).test(event())).toBe(false)
    expect(compileMatcher(["*"], { data: { tags: ["a", "b"] } }).test(event())).toBe(true)
  })
  it("a data or query filter never matches an event without a record (bulk)", () => {
    const bulk = event({ type: "record.bulk.created", payload: { data: { structure: "orders", count: 2, recordIds: ["a", "b"] } } })
    expect(compileMatcher(["*"], { data: { status: "paid" } }).test(bulk)).toBe(false)
    expect(compileMatcher(["*"], { query: "amount > 1" }).test(bulk)).toBe(false)
    expect(compileMatcher(["*"], { structure: "orders" }).test(bulk)).toBe(true)
  })
  it("evaluates query-language conditions", () => {
    const yes = (q: string) => expect(compileMatcher(["*"], { query: q }).test(event()), q).toBe(true)
    const no = (q: string) => expect(compileMatcher(["*"], { query: q }).test(event()), q).toBe(false)
    yes("amount > 100 AND status = 'paid'")
    no("amount > 200")
    yes("amount BETWEEN 100 AND 200")
    yes("status IN ('paid', 'open')")
    no("status IN ('void')")
    yes("status LIKE 'pa%'")
    no("status LIKE 'x%'")
    yes("missing IS NULL")
    yes("status IS NOT NULL")
    yes("NOT (status = 'open') OR amount < 0")
    yes("address.city = 'Paris'")
    yes("data.amount >= 150")
    no("status != 'paid'")
  })
})

describe("likeMatch", () => {
  it("handles % and _ and escapes", () => {
    expect(likeMatch("a%c", "abbbc", false)).toBe(true)
    expect(likeMatch("a_c", "abc", false)).toBe(true)
    expect(likeMatch("a_c", "abbc", false)).toBe(false)
    expect(likeMatch("%", "", false)).toBe(true)
    expect(likeMatch("100\\%", "100%", false)).toBe(true)
    expect(likeMatch("100\\%", "1000", false)).toBe(false)
    expect(likeMatch("HELLO%", "hello world", true)).toBe(true)
    expect(likeMatch("HELLO%", "hello world", false)).toBe(false)
  })
  it("answers patterns that make backtracking regexes blow up", () => {
    expect(likeMatch("%a%a%a%a%a%a%a%b", "a".repeat(5000), false)).toBe(false)
    expect(likeMatch("%a%a%a%a%a%a%a%b", `${"a".repeat(5000)}b`, false)).toBe(true)
  })
})
