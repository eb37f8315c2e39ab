// Webhook signatures. Two schemes on every delivery (README "Delivery"):
// - `x-troupe-signature: sha256=<hex>`: HMAC-SHA256 of the raw body, keyed with the secret string as given.
// - Standard Webhooks (`webhook-id`, `webhook-timestamp`, `webhook-signature: v1,<base64>`): HMAC-SHA256 of
//   `${id}.${timestamp}.${body}`. Its key follows that spec: for a `whsec_<base64>` secret (what we generate) the
//   decoded bytes, so the standard libraries verify it as is; for any other secret, the secret's UTF-8 bytes.
import * as Crypto from "node:crypto"

/** A new signing secret in the Standard Webhooks form. */
export const generateSecret = (): string => `whsec_${Crypto.randomBytes(32).toString("base64")}`

/** The Standard Webhooks signing key of a secret. */
export const standardKey = (secret: string): Buffer => {
  if (secret.startsWith("whsec_")) {
    const rest = secret.slice("whsec_".length)
    if (/^[A-Za-z0-9+/]+={0,2}$/.test(rest) && rest.length % 4 === 0) return Buffer.from(rest, "base64")
  }
  return Buffer.from(secret, "utf8")
}

export const troupeSignature = (secret: string, body: string): string =>
  `sha256=${Crypto.createHmac("sha256", secret).update(body).digest("hex")}`

export const standardSignature = (secret: string, id: string, timestampSeconds: number, body: string): string =>
  `v1,${Crypto.createHmac("sha256", standardKey(secret)).update(`${id}.${timestampSeconds}.${body}`).digest("base64")}`

/** Every header of a delivery attempt. `deliveryId` is the same on every retry of one event to one webhook. */
export const deliveryHeaders = (input: {
  readonly secret: string
  readonly deliveryId: string
  readonly event: string
  readonly body: string
  readonly timestampSeconds: number
}): Record<string, string> => ({
  "content-type": "application/json",
  "user-agent": "Troupe-Webhooks/1.0",
  "x-troupe-event": input.event,
  "x-troupe-delivery": input.deliveryId,
  "x-troupe-signature": troupeSignature(input.secret, input.body),
  "webhook-id": input.deliveryId,
  "webhook-timestamp": String(input.timestampSeconds),
  "webhook-signature": standardSignature(input.secret, input.deliveryId, input.timestampSeconds, input.body)
})
