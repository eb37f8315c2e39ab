// The address a request came from, for the login throttle. Behind `hops` trusted proxies (TROUPE_TRUST_PROXY_HOPS),
// each appends the address it saw to X-Forwarded-For, so the client is the entry `hops` from the right of the
// chain "X-Forwarded-For entries, then the TCP peer"; whatever a client wrote further left is its own claim, never
// believed. With no proxy trusted (the default) only the TCP peer counts.
export const clientAddress = (peer: string | undefined, forwardedFor: string | undefined, hops: number): string | undefined => {
  if (hops === 0 || forwardedFor === undefined) return peer
  const chain = [
    ...forwardedFor
      .split(",")
      .map((s) => s.trim())
      .filter((s) => s.length > 0),
    ...(peer === undefined ? [] : [peer])
  ]
  return chain[Math.max(0, chain.length - 1 - hops)]
}
