import { assert, describe, it } from "@effect/vitest"
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
    data: { record: { id: "r-1", structureId: "s-1", data: over.data ?? { status: "paid", amount: 150, tags: ["a", "b"], address: { city: "Paris" } } } }
  },
  ...over
})

describe("eventSelected", () => {
  it("matches exact names, family wildcards and *", () => {
    assert.isTrue(eventSelected(["record.created"], "record.created"))
    assert.isFalse(eventSelected(["record.updated"], "record.created"))
    assert.isTrue(eventSelected(["*"], "function.failed"))
    assert.isTrue(eventSelected(["record.*"], "record.bulk.deleted"))
    assert.isTrue(eventSelected(["record.bulk.*"], "record.bulk.created"))
    assert.isFalse(eventSelected(["record.bulk.*"], "record.created"))
    assert.isFalse(eventSelected(["function.*"], "record.created"))
  })
})

describe("validateEvents", () => {
  it("names each unknown event", () => {
    const problems = validateEvents(["record.created", "record.exploded", "*", "nope"])
    assert.deepStrictEqual(problems.map((p) => p.field), ["events[1]", "events[3]"])
    assert.match(problems[0]!.message, /record\.exploded/)
  })
  it("accepts every documented name", () => {
    assert.lengthOf(validateEvents(["record.reverted", "record.expired", "function.completed", "trigger.fired", "record.*"]), 0)
  })
})

describe("validateFilters", () => {
  it("accepts structure, data and a parseable query", () => {
    const r = validateFilters({ structure: "orders", data: { status: "paid" }, query: "amount > 100" })
    assert.isTrue(Result.isSuccess(r))
    if (Result.isSuccess(r)) assert.deepStrictEqual(r.success, { structure: "orders", data: { status: "paid" }, query: "amount > 100" })
  })
  it("treats null and undefined as no filters", () => {
    assert.deepStrictEqual(Result.getOrThrow(validateFilters(null)), {})
    assert.deepStrictEqual(Result.getOrThrow(validateFilters(undefined)), {})
  })
  it("refuses unknown keys, wrong types and a query that does not parse, naming each", () => {
    const r = validateFilters({ structur: "x", structure: 3, data: [1], query: "amount >" })
    assert.isTrue(Result.isFailure(r))
    if (Result.isFailure(r)) {
      assert.deepStrictEqual(r.failure.map((d) => d.field).sort(), ["filters.data", "filters.query", "filters.structur", "filters.structure"])
      assert.match(r.failure.find((d) => d.field === "filters.query")!.message, /position/)
    }
  })
})

describe("compileMatcher", () => {
  it("applies the events list", () => {
    const m = compileMatcher(["record.updated"], {})
    assert.isFalse(m.test(event()))
    assert.isTrue(m.test(event({ type: "record.updated" })))
  })
  it("filters by structure slug and id", () => {
    assert.isTrue(compileMatcher(["*"], { structure: "orders" }).test(event()))
    assert.isFalse(compileMatcher(["*"], { structure: "users" }).test(event()))
    assert.isTrue(compileMatcher(["*"], { structureId: "s-1" }).test(event()))
    assert.isFalse(compileMatcher(["*"], { structureId: "s-2" }).test(event()))
  })
  it("filters by field equality, including nested paths and arrays", () => {
    assert.isTrue(compileMatcher(["*"], { data: { status: "paid" } }).test(event()))
    assert.isFalse(compileMatcher(["*"], { data: { status: "open" } }).test(event()))
    assert.isTrue(compileMatcher(["*"], { data: { "address.city": "Paris", amount: 150 } }).test(event()))
    assert.isFalse(compileMatcher(["*"], { data: { amount: "150" } }).test(event()))
    assert.isTrue(compileMatcher(["*"], { data: { tags: ["a", "b"] } }).test(event()))
  })
  it("a data or query filter never matches an event without a record (bulk)", () => {
    const bulk = event({ type: "record.bulk.created", payload: { data: { structure: "orders", count: 2, recordIds: ["a", "b"] } } })
    assert.isFalse(compileMatcher(["*"], { data: { status: "paid" } }).test(bulk))
    assert.isFalse(compileMatcher(["*"], { query: "amount > 1" }).test(bulk))
    assert.isTrue(compileMatcher(["*"], { structure: "orders" }).test(bulk))
  })
  it("evaluates query-language conditions", () => {
    const yes = (q: string) => assert.isTrue(compileMatcher(["*"], { query: q }).test(event()), q)
    const no = (q: string) => assert.isFalse(compileMatcher(["*"], { query: q }).test(event()), q)
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
    assert.isTrue(likeMatch("a%c", "abbbc", false))
    assert.isTrue(likeMatch("a_c", "abc", false))
    assert.isFalse(likeMatch("a_c", "abbc", false))
    assert.isTrue(likeMatch("%", "", false))
    assert.isTrue(likeMatch("100\\%", "100%", false))
    assert.isFalse(likeMatch("100\\%", "1000", false))
    assert.isTrue(likeMatch("HELLO%", "hello world", true))
    assert.isFalse(likeMatch("HELLO%", "hello world", false))
  })
  it("answers patterns that make backtracking regexes blow up", () => {
    assert.isFalse(likeMatch("%a%a%a%a%a%a%a%b", "a".repeat(5000), false))
    assert.isTrue(likeMatch("%a%a%a%a%a%a%a%b", `${"a".repeat(5000)}b`, false))
  })
})
