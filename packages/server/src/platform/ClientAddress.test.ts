import { describe, expect, it } from "@effect/vitest"
import { clientAddress } from "./ClientAddress.ts"

describe("clientAddress", () => {
  it("trusts no proxy by default: the TCP peer, whatever X-Forwarded-For says", () => {
    expect(clientAddress("10.0.0.5", "203.0.113.7", 0)).toBe("10.0.0.5")
    expect(clientAddress("10.0.0.5", undefined, 1)).toBe("10.0.0.5")
  })

  it("behind n trusted proxies: the entry n from the right of X-Forwarded-For + peer, never a client's own claim", () => {
    // client 198.51.100.9 -> load balancer 10.0.0.5 -> node
    expect(clientAddress("10.0.0.5", "198.51.100.9", 1)).toBe("198.51.100.9")
    // a client that forges an X-Forwarded-For entry: the balancer appends the real one, which is what counts
    expect(clientAddress("10.0.0.5", "1.2.3.4, 198.51.100.9", 1)).toBe("198.51.100.9")
    // two proxies: CDN 10.1.1.1 appended the client, the balancer appended the CDN
    expect(clientAddress("10.0.0.5", "198.51.100.9, 10.1.1.1", 2)).toBe("198.51.100.9")
    // a chain shorter than the hops configured: the leftmost there is
    expect(clientAddress("10.0.0.5", "198.51.100.9", 3)).toBe("198.51.100.9")
    expect(clientAddress("10.0.0.5", " , ", 1)).toBe("10.0.0.5")
  })
})
