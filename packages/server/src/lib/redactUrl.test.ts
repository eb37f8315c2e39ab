import { assert, describe, it } from "@effect/vitest"
import { redactUrl } from "./redactUrl.ts"

describe("redactUrl", () => {
  it("hides access_token (and other credential parameters) and keeps everything else as sent", () => {
    const token = "eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiJ4In0.c2ln"
    const url = `/realtime/workspace/default/api/v1/events?structure=notes&access_token=${token}&lastEventId=4`
    const out = redactUrl(url)
    assert.notInclude(out, token)
    assert.strictEqual(out, "/realtime/workspace/default/api/v1/events?structure=notes&access_token=REDACTED&lastEventId=4")
    assert.notInclude(redactUrl(`/x?ACCESS_TOKEN=${token}`), token)
    assert.notInclude(redactUrl(`/x?access%5Ftoken=${token}`), token)
    assert.notInclude(redactUrl(`/x?a=1&client_secret=sk_1&password=pw`), "sk_1")
    assert.notInclude(redactUrl(`/x?a=1&client_secret=sk_1&password=pw`), "=pw")
    assert.strictEqual(redactUrl("/records?filter=a:1&limit=5"), "/records?filter=a:1&limit=5")
    assert.strictEqual(redactUrl("/plain/path"), "/plain/path")
  })
})
