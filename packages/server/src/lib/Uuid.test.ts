import { Schema } from "effect"
import { describe, expect, it } from "vitest"
import { uuidv7 } from "./Uuid.ts"

const isV7 = Schema.is(Schema.String.check(Schema.isUUID(7)))

describe("uuidv7", () => {
  it("is a version 7 UUID carrying the current millisecond, and unique", () => {
    const before = Date.now()
    const ids = Array.from({ length: 50_000 }, uuidv7)
    const after = Date.now()
    for (const id of ids.slice(0, 1000)) expect(isV7(id), id).toBe(true)
    expect(ids.every(isV7)).toBe(true)
    expect(new Set(ids).size).toBe(ids.length)
    const ms = Number.parseInt(ids[0]!.replace(/-/g, "").slice(0, 12), 16)
    expect(ms).toBeGreaterThanOrEqual(before)
    expect(ms).toBeLessThanOrEqual(after)
  })

  it("ids of later milliseconds sort after earlier ones, and the random bits vary", async () => {
    const first = uuidv7()
    await new Promise((resolve) => setTimeout(resolve, 3))
    const second = uuidv7()
    expect(first < second).toBe(true)
    // the 74 random bits: no position outside the timestamp, version and variant is fixed across many ids
    const ids = Array.from({ length: 2000 }, uuidv7).map((id) => id.replace(/-/g, ""))
    for (const position of [13, 14, 15, 17, 18, 19, 20, 25, 31]) {
      expect(new Set(ids.map((id) => id[position])).size, `hex digit ${position}`).toBeGreaterThan(8)
    }
  })
})
