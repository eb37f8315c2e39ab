import { describe, expect, it } from "@effect/vitest"
import { redactUrl } from "./redactUrl.ts"

describe("redactUrl", () => {
  it("hides access_token (and other credential parameters) and keeps everything else as sent", () => {
    const token = "eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiJ4In0.c2ln"
    const url = `/realtime/workspace/default/api/v1/events?structure=notes&access_token=${token}&lastEventId=4`
    const out = redactUrl(url)
    expect(out).not.toContain(token)
    expect(out).toBe("/realtime/workspace/default/api/v1/events?structure=notes&access_token=REDACTED&lastEventId=4")
    expect(redactUrl(`/x?ACCESS_TOKEN=${token}`)).not.toContain(token)
    expect(redactUrl(`/x?access%5Ftoken=${token}`)).not.toContain(token)
    expect(redactUrl(`/x?a=1&client_secret=sk_1&password=pw`)).not.toContain("sk_1")
    expect(redactUrl(`/x?a=1&client_secret=sk_1&password=pw`)).not.toContain("=pw")
    expect(redactUrl("/records?filter=a:1&limit=5")).toBe("/records?filter=a:1&limit=5")
    expect(redactUrl("/plain/path")).toBe("/plain/path")
  })
})
