// AES-256-GCM encryption at rest for everything secret the server stores: signing keys, secret record properties,
// encrypted trigger params. Ciphertexts name the key that made them (`enc:v1:<keyId>:<base64url(iv|ct|tag)>`), so
// a new TROUPE_ENCRYPTION_KEY can be introduced while older values stay readable: the key ring holds the configured
// key and the key generated on an earlier boot (kept in `settings`), and encryption always uses the current one.
import { Context, Data, Effect, Layer, Option, Redacted } from "effect"
import { SqlClient } from "effect/sql"
import * as Crypto from "node:crypto"
import { AppConfig } from "./AppConfig.ts"

export class SecretDecryptError extends Data.TaggedError("SecretDecryptError")<{ readonly reason: string }> {
  override get message() {
    return `cannot decrypt secret: ${this.reason}`
  }
}

export interface SecretsShape {
  /** Encrypts with the current key. `context` (optional) is bound as associated data: decrypt must pass the same. */
  readonly encrypt: (plaintext: string, context?: string) => string
  /** Decrypts a value made by `encrypt` with any key of the ring. */
  readonly decrypt: (ciphertext: string, context?: string) => Effect.Effect<string, SecretDecryptError>
  /** True for strings in the ciphertext format (to tell stored secrets from legacy plaintext). */
  readonly isEncrypted: (value: string) => boolean
  /** The id of the key new ciphertexts use. */
  readonly currentKeyId: string
}

const prefix = "enc:v1:"

/** A key's id: derived from the key, never revealing it. */
export const keyIdOf = (key: Buffer) =>
  Crypto.createHash("sha256").update("troupe-encryption-key\u0000").update(key).digest("hex").slice(0, 12)

/** The pure cipher over a key ring; `current` must be one of `keys`. */
export const makeSecrets = (keys: ReadonlyArray<Buffer>, current: Buffer): SecretsShape => {
  // KeyObjects made once: a raw Buffer is turned into a new KeyObject by every createCipheriv (~10 % of a function
  // run's CPU on the node's thread went there, for its parameters)
  const ring = new Map(keys.map((k) => [keyIdOf(k), Crypto.createSecretKey(k)] as const))
  const currentKeyId = keyIdOf(current)
  const currentKey = Crypto.createSecretKey(current)
  ring.set(currentKeyId, currentKey)
  const encrypt = (plaintext: string, context?: string) => {
    const iv = Crypto.randomBytes(12)
    const cipher = Crypto.createCipheriv("aes-256-gcm", currentKey, iv)
    if (context !== undefined) cipher.setAAD(Buffer.from(context, "utf8"))
    const body = Buffer.concat([cipher.update(plaintext, "utf8"), cipher.final()])
    const tag = cipher.getAuthTag()
    return `${prefix}${currentKeyId}:${Buffer.concat([iv, body, tag]).toString("base64url")}`
  }
  const decrypt = (ciphertext: string, context?: string) =>
    Effect.suspend(() => {
      if (!ciphertext.startsWith(prefix)) {
        return Effect.fail(new SecretDecryptError({ reason: "not an encrypted value" }))
      }
      const rest = ciphertext.slice(prefix.length)
      const colon = rest.indexOf(":")
      const key = colon > 0 ? ring.get(rest.slice(0, colon)) : undefined
      if (key === undefined) return Effect.fail(new SecretDecryptError({ reason: "encrypted with an unknown key" }))
      const raw = Buffer.from(rest.slice(colon + 1), "base64url")
      if (raw.length < 28) return Effect.fail(new SecretDecryptError({ reason: "truncated value" }))
      try {
        const decipher = Crypto.createDecipheriv("aes-256-gcm", key, raw.subarray(0, 12))
        if (context !== undefined) decipher.setAAD(Buffer.from(context, "utf8"))
        decipher.setAuthTag(raw.subarray(raw.length - 16))
        const plain = Buffer.concat([decipher.update(raw.subarray(12, raw.length - 16)), decipher.final()])
        return Effect.succeed(plain.toString("utf8"))
      } catch {
        return Effect.fail(new SecretDecryptError({ reason: "authentication failed (wrong key, context or tampered value)" }))
      }
    })
  return { encrypt, decrypt, isEncrypted: (value) => value.startsWith(prefix), currentKeyId }
}

const storedKeySetting = "encryption_key"

/** Loads (or on first boot generates and stores) the key ring. */
const load = Effect.gen(function* () {
  const config = yield* AppConfig
  const sql = yield* SqlClient.SqlClient
  const readStored = sql<{ value: string }>`SELECT value FROM settings WHERE key = ${storedKeySetting}`.pipe(
    Effect.map((rows) => (rows[0] === undefined ? undefined : Buffer.from(rows[0].value, "base64")))
  )
  let stored = yield* readStored
  if (Option.isSome(config.encryptionKey)) {
    const keys = stored !== undefined && stored.length === 32 ? [stored] : []
    return makeSecrets(keys, Redacted.value(config.encryptionKey.value))
  }
  if (stored === undefined) {
    // Two nodes booting together race here: ON CONFLICT keeps the first key and both read it back.
    const fresh = Crypto.randomBytes(32).toString("base64")
    yield* sql`INSERT INTO settings (key, value) VALUES (${storedKeySetting}, ${fresh}) ON CONFLICT (key) DO NOTHING`
    stored = yield* readStored
    if (sql.driver !== "pglite") {
      yield* Effect.logWarning(
        "TROUPE_ENCRYPTION_KEY is not set: generated an encryption key and stored it in the database. " +
          "Set TROUPE_ENCRYPTION_KEY (32 bytes, base64) so that secrets at rest do not sit beside their key."
      )
    }
  }
  if (stored === undefined || stored.length !== 32) {
    return yield* Effect.die(new Error("stored encryption key is invalid"))
  }
  return makeSecrets([], stored)
})

export class Secrets extends Context.Service<Secrets, SecretsShape>()("@troupe/server/platform/Secrets") {
  /** The ring from TROUPE_ENCRYPTION_KEY and the stored key (generated on first boot when none is configured). */
  static readonly layer: Layer.Layer<Secrets, never, AppConfig | SqlClient.SqlClient> = Layer.effect(Secrets, Effect.orDie(load))
  /** A fixed ring (tests). */
  static readonly layerFromKeys = (current: Buffer, older: ReadonlyArray<Buffer> = []) =>
    Layer.succeed(Secrets, makeSecrets(older, current))
}

/** Encrypts with the node's current key. */
export const encrypt = (plaintext: string, context?: string): Effect.Effect<string, never, Secrets> =>
  Effect.map(Effect.service(Secrets), (s) => s.encrypt(plaintext, context))

/** Decrypts a value made by `encrypt` (with any key of the ring). */
export const decrypt = (ciphertext: string, context?: string): Effect.Effect<string, SecretDecryptError, Secrets> =>
  Effect.flatMap(Effect.service(Secrets), (s) => s.decrypt(ciphertext, context))
