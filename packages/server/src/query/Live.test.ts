import { describe, expect, it } from "@effect/vitest"
import { isExpired, isLive } from "./Live.ts"

const at = Date.parse("2030-01-01T00:00:00.000Z")

describe("Live", () => {
  it("a record is live unless soft-deleted or expired (expiry at exactly now counts as expired)", () => {
    expect(isLive({ deletedAt: null, expiresAt: null }, at)).toBe(true)
    expect(isLive({ deletedAt: null, expiresAt: "2030-01-01T00:00:00.001Z" }, at)).toBe(true)
    expect(isLive({ deletedAt: null, expiresAt: "2030-01-01T00:00:00.000Z" }, at)).toBe(false)
    expect(isLive({ deletedAt: "2029-12-31T00:00:00.000Z", expiresAt: null }, at)).toBe(false)
    expect(isExpired({ expiresAt: "2029-12-31T23:59:59.999Z" }, at)).toBe(true)
    expect(isExpired({ expiresAt: null }, at)).toBe(false)
  })
})
