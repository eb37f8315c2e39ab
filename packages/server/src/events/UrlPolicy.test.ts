import { describe, expect, it } from "@effect/vitest"
import { checkWebhookUrl, isPrivateAddress } from "./UrlPolicy.ts"

describe("isPrivateAddress", () => {
  it("recognises loopback, private, link-local, CGNAT, unique-local and mapped addresses", () => {
    for (const a of [
      "127.0.0.1",
      "10.1.2.3",
      "172.16.0.1",
      "172.31.255.255",
      "192.168.1.1",
      "169.254.169.254",
      "100.64.0.1",
      "0.0.0.0",
      "::1",
      "::",
      "fd00::1",
      "fe80::1",
      "::ffff:127.0.0.1",
      "[::1]"
    ]) {
      expect(isPrivateAddress(a), a).toBe(true)
    }
  })
  it("refuses IPv6 prefixes that embed an IPv4 address (NAT64, 6to4), whatever address they carry", () => {
    for (const a of [
      "64:ff9b::7f00:1",
      "64:ff9b::127.0.0.1",
      "64:ff9b::808:808",
      "64:ff9b:1::a00:1",
      "2002:7f00:1::1",
      "2002:808:808::1",
      "[2002::1]",
      "::ffff:7f00:1"
    ]) {
      expect(isPrivateAddress(a), a).toBe(true)
    }
    // neighbours of those prefixes stay public
    for (const a of ["64:ff9c::1", "2003::1", "2001:db9::1"]) expect(isPrivateAddress(a), a).toBe(false)
  })
  it("lets public addresses and names through", () => {
    for (const a of ["8.8.8.8", "172.32.0.1", "93.184.216.34", "2606:4700::1111", "example.com"]) {
      expect(isPrivateAddress(a), a).toBe(false)
    }
  })
})

describe("checkWebhookUrl", () => {
  it("wants an absolute http(s) URL", () => {
    expect(checkWebhookUrl("not a url", false)).toBeDefined()
    expect(checkWebhookUrl("ftp://example.com/x", false)).toBeDefined()
    expect(checkWebhookUrl("javascript:alert(1)", false)).toBeDefined()
    expect(checkWebhookUrl("https://example.com/hook", true)).toBeUndefined()
    expect(checkWebhookUrl("http://example.com:8080/hook?x=1", true)).toBeUndefined()
  })
  it("allows loopback outside production and refuses it in production", () => {
    expect(checkWebhookUrl("http://127.0.0.1:9000/hook", false)).toBeUndefined()
    expect(checkWebhookUrl("http://localhost:9000/hook", false)).toBeUndefined()
    expect(checkWebhookUrl("http://127.0.0.1:9000/hook", true)!).toMatch(/private/)
    expect(checkWebhookUrl("http://localhost/hook", true)).toBeDefined()
    expect(checkWebhookUrl("http://api.localhost/hook", true)).toBeDefined()
    expect(checkWebhookUrl("http://[::1]/hook", true)).toBeDefined()
    expect(checkWebhookUrl("http://10.0.0.5/hook", true)).toBeDefined()
    expect(checkWebhookUrl("http://169.254.169.254/latest/meta-data", true)).toBeDefined()
    expect(checkWebhookUrl("http://[64:ff9b::a9fe:a9fe]/latest/meta-data", true)).toBeDefined()
    expect(checkWebhookUrl("http://[64:ff9b::127.0.0.1]/hook", true)).toBeDefined()
    expect(checkWebhookUrl("http://[2002:7f00:1::1]/hook", true)).toBeDefined()
    expect(checkWebhookUrl("http://[::ffff:127.0.0.1]/hook", true)).toBeDefined()
  })
})
