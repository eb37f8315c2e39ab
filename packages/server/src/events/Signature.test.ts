import { describe, expect, it } from "@effect/vitest"
import * as Crypto from "node:crypto"
import { deliveryHeaders, generateSecret, standardKey, standardSignature, troupeSignature } from "./Signature.ts"

// An independent Standard Webhooks verifier, as the reference libraries implement it.
const verifyStandard = (secret: string, headers: Record<string, string>, body: string) => {
  const key = Buffer.from(secret.startsWith("whsec_") ? secret.slice(6) : secret, "base64")
  const signed = `${headers["webhook-id"]}.${headers["webhook-timestamp"]}.${body}`
  const expected = Crypto.createHmac("sha256", key).update(signed).digest("base64")
  return headers["webhook-signature"]!.split(" ").some((s) => s === `v1,${expected}`)
}

describe("webhook signatures", () => {
  const body = JSON.stringify({ event: "record.created", data: { recordId: "r1", record: { title: "é ü" } } })

  it("x-troupe-signature is sha256=<hex HMAC of the raw body> keyed with the secret", () => {
    const expected = Crypto.createHmac("sha256", "my-secret").update(body).digest("hex")
    expect(troupeSignature("my-secret", body)).toBe(`sha256=${expected}`)
  })

  it("generated secrets are whsec_ + 32 random bytes, and the standard signature verifies like the reference libraries", () => {
    const secret = generateSecret()
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/)
    expect(generateSecret()).not.toBe(secret)
    expect(standardKey(secret)).toHaveLength(32)
    const headers = deliveryHeaders({ secret, deliveryId: "d-1", event: "record.created", body, timestampSeconds: 1700000000 })
    expect(verifyStandard(secret, headers, body)).toBe(true)
    expect(verifyStandard(secret, headers, `${body} `)).toBe(false)
  })

  it("a secret that is not whsec_ keys the standard signature with its UTF-8 bytes", () => {
    const sig = standardSignature("plain", "d-2", 1700000001, body)
    const expected = Crypto.createHmac("sha256", "plain").update(`d-2.1700000001.${body}`).digest("base64")
    expect(sig).toBe(`v1,${expected}`)
  })

  it("carries every header, the delivery id under both names", () => {
    const h = deliveryHeaders({ secret: "s", deliveryId: "d-3", event: "record.updated", body, timestampSeconds: 42 })
    expect(h["content-type"]).toBe("application/json")
    expect(h["x-troupe-event"]).toBe("record.updated")
    expect(h["x-troupe-delivery"]).toBe("d-3")
    expect(h["webhook-id"]).toBe("d-3")
    expect(h["webhook-timestamp"]).toBe("42")
    expect(h["webhook-signature"]!).toMatch(/^v1,[A-Za-z0-9+/]+=*$/)
    expect(h["x-troupe-signature"]!).toMatch(/^sha256=[0-9a-f]{64}$/)
  })
})
