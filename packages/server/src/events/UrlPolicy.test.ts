import { assert, describe, it } from "@effect/vitest"
import { checkWebhookUrl, isPrivateAddress } from "./UrlPolicy.ts"

describe("isPrivateAddress", () => {
  it("recognises loopback, private, link-local, CGNAT, unique-local and mapped addresses", () => {
    for (const a of ["127.0.0.1", "10.1.2.3", "172.16.0.1", "172.31.255.255", "192.168.1.1", "169.254.169.254", "100.64.0.1", "0.0.0.0", "::1", "::", "fd00::1", "fe80::1", "::ffff:127.0.0.1", "[::1]"]) {
      assert.isTrue(isPrivateAddress(a), a)
    }
  })
  it("lets public addresses and names through", () => {
    for (const a of ["8.8.8.8", "172.32.0.1", "93.184.216.34", "2606:4700::1111", "example.com"]) {
      assert.isFalse(isPrivateAddress(a), a)
    }
  })
})

describe("checkWebhookUrl", () => {
  it("wants an absolute http(s) URL", () => {
    assert.isDefined(checkWebhookUrl("not a url", false))
    assert.isDefined(checkWebhookUrl("ftp://example.com/x", false))
    assert.isDefined(checkWebhookUrl("javascript:alert(1)", false))
    assert.isUndefined(checkWebhookUrl("https://example.com/hook", true))
    assert.isUndefined(checkWebhookUrl("http://example.com:8080/hook?x=1", true))
  })
  it("allows loopback outside production and refuses it in production", () => {
    assert.isUndefined(checkWebhookUrl("http://127.0.0.1:9000/hook", false))
    assert.isUndefined(checkWebhookUrl("http://localhost:9000/hook", false))
    assert.match(checkWebhookUrl("http://127.0.0.1:9000/hook", true)!, /private/)
    assert.isDefined(checkWebhookUrl("http://localhost/hook", true))
    assert.isDefined(checkWebhookUrl("http://api.localhost/hook", true))
    assert.isDefined(checkWebhookUrl("http://[::1]/hook", true))
    assert.isDefined(checkWebhookUrl("http://10.0.0.5/hook", true))
    assert.isDefined(checkWebhookUrl("http://169.254.169.254/latest/meta-data", true))
  })
})
