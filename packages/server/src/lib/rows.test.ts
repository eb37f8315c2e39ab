import { describe, expect, it } from "@effect/vitest"
import * as fc from "fast-check"
import { isoString } from "./rows.ts"

describe("isoString", () => {
  it("writes exactly what toISOString writes, for any instant", () => {
    fc.assert(
      fc.property(fc.integer({ min: -8.64e15, max: 8.64e15 }), (ms) => {
        const date = new Date(ms)
        expect(isoString(date)).toBe(date.toISOString())
      }),
      { numRuns: 20_000 }
    )
  })

  it("the edges: the epoch, leap days, years below 1000, the last millisecond before year 10000 and after", () => {
    for (const text of ["1970-01-01T00:00:00.000Z", "2000-02-29T23:59:59.999Z", "2100-03-01T00:00:00.000Z", "0999-12-31T12:00:00.001Z"]) {
      expect(isoString(new Date(text))).toBe(text)
    }
    for (const ms of [253_402_300_799_999, 253_402_300_800_000, -1]) expect(isoString(new Date(ms))).toBe(new Date(ms).toISOString())
  })
})
