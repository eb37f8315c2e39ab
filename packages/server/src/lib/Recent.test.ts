import { describe, expect, it } from "vitest"
import * as Recent from "./Recent.ts"

const make = () => Recent.make<string>({ maxEntries: 3, maxBytes: 10, maxEntryBytes: 6, sizeOf: (v) => v.length })

describe("Recent", () => {
  it("keeps the most recently set entries within the count, dropping the oldest", () => {
    const recent = make()
    for (const k of ["a", "b", "c", "d"]) recent.set(k, "x")
    expect(["a", "b", "c", "d"].map(recent.has)).toEqual([false, true, true, true])
    // setting again makes an entry the newest
    recent.set("b", "y")
    recent.set("e", "z")
    expect(["b", "c", "d", "e"].map(recent.has)).toEqual([true, false, true, true])
    expect(recent.get("b")).toBe("y")
  })

  it("keeps the entries within the size budget, and an entry over the per-entry limit not at all", () => {
    const recent = make()
    recent.set("a", "12345")
    recent.set("b", "12345")
    expect(recent.bytes()).toBe(10)
    recent.set("c", "1")
    expect([recent.has("a"), recent.has("b"), recent.has("c")]).toEqual([false, true, true])
    expect(recent.bytes()).toBe(6)
    // too large for one entry: not kept, and an older value under the key is gone too
    recent.set("b", "1234567")
    expect(recent.has("b")).toBe(false)
    expect(recent.bytes()).toBe(1)
    recent.delete("c")
    expect([recent.size(), recent.bytes()]).toEqual([0, 0])
  })
})
