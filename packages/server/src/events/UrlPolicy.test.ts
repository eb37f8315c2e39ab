import { assert, describe, it } from "@effect/vitest"
import { checkWebhookUrl, isPrivateAddress } from "./UrlPolicy.ts"

describe("isPrivateAddress", () => {
  it("recognises loopback, private, link-local, CGNAT, unique-local and mapped addresses", () => {
    for (const a of ["127.0.0.1", "10.1.2.3", "172.16.0.1", "172.31.255.255", "192.168.1.1", "169.254.169.254", "100.64.0.1", "0.0.0.0", "::1", "::", "fd00::1", "fe80::1", "::ffff:127.0.0.1", "[::1]"]) {
      assert.isTrue(isPrivateAddress(a), a)
    }
  })
  it("refuses IPv6 prefixes that embed an IPv4 address (NAT64, 6to4), whatever address they carry", () => {
    for (const a of ["64:ff9b::7f00:1", "64:ff9b::127.0.0.1", "64:ff9b::808:808", "64:ff9b:1::a00:1", "2002:7f00:1::1", "2002:808:808::1", "[2002::1]", "::ffff:7f00:1"]) {
      assert.isTrue(isPrivateAddress(a), a)
    }
    // neighbours of those prefixes stay public
    for (const a of ["64:ff9c::1", "2003::1", "2001:db9::1"]) assert.isFalse(isPrivateAddress(a), a)
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
    assert.isDefined(checkWebhookUrl("http://[64:ff9b::a9fe:a9fe]/latest/meta-data", true))
    assert.isDefined(checkWebhookUrl("http://[64:ff9b::127.0.0.1]/hook", true))
    assert.isDefined(checkWebhookUrl("http://[2002:7f00:1::1]/hook", true))
    assert.isDefined(checkWebhookUrl("http://[::ffff:127.0.0.1]/hook", true))
  })
})
