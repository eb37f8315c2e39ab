// Where webhooks may point. Always http(s) with a host. With NODE_ENV=production, loopback, private, link-local,
// carrier-grade NAT, unique-local, unspecified and IPv4-embedding (NAT64 64:ff9b::/96, 6to4 2002::/16) addresses
// are refused: literal addresses and `localhost` names when the webhook is saved, and every resolved address again
// when a delivery connects (so a name that later resolves inward is refused too).
import * as Net from "node:net"

const blocked = new Net.BlockList()
for (const [net, prefix] of [
  ["0.0.0.0", 8],
  ["10.0.0.0", 8],
  ["100.64.0.0", 10],
  ["127.0.0.0", 8],
  ["169.254.0.0", 16],
  ["172.16.0.0", 12],
  ["192.0.0.0", 24],
  ["192.168.0.0", 16],
  ["198.18.0.0", 15],
  ["224.0.0.0", 4],
  ["240.0.0.0", 4]
] as const)
  blocked.addSubnet(net, prefix, "ipv4")
for (const [net, prefix] of [
  ["::", 128],
  ["::1", 128],
  ["fc00::", 7],
  ["fe80::", 10],
  ["ff00::", 8],
  // IPv4 embedded in IPv6: NAT64 (well-known and local-use prefixes) and 6to4 reach whatever IPv4 address they
  // carry, private ones included, through a translator or relay
  ["64:ff9b::", 96],
  ["64:ff9b:1::", 48],
  ["2002::", 16]
] as const)
  blocked.addSubnet(net, prefix, "ipv6")

/** True for an address webhooks must not reach in production. */
export const isPrivateAddress = (address: string): boolean => {
  const bare = address.startsWith("[") && address.endsWith("]") ? address.slice(1, -1) : address
  const family = Net.isIP(bare)
  if (family === 4) return blocked.check(bare, "ipv4")
  if (family === 6) {
    const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(bare)
    if (mapped) return blocked.check(mapped[1]!, "ipv4")
    return blocked.check(bare, "ipv6")
  }
  return false
}

const localNames = (host: string) => host === "localhost" || host.endsWith(".localhost") || host === "localhost.localdomain"

/** Checks a webhook URL; returns the reason it is refused, or undefined when it is acceptable. */
export const checkWebhookUrl = (raw: string, production: boolean): string | undefined => {
  let url: URL
  try {
    url = new URL(raw)
  } catch {
    return "url must be an absolute http or https URL"
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") return "url must use http or https"
  if (url.hostname.length === 0) return "url must name a host"
  if (production) {
    const host = url.hostname.toLowerCase()
    if (localNames(host) || isPrivateAddress(host)) {
      return "url points to a loopback or private address, which is refused in production"
    }
  }
  return undefined
}
