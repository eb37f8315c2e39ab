import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as Crypto from "node:crypto"
import { keyIdOf, makeSecrets } from "./Secrets.ts"

const keyA = Crypto.randomBytes(32)
const keyB = Crypto.randomBytes(32)

describe("Secrets", () => {
  it.effect("round-trips and never shows the plaintext", () =>
    Effect.gen(function*() {
      const secrets = makeSecrets([], keyA)
      const c = secrets.encrypt("hunter2-very-secret")
      assert.isTrue(c.startsWith(`enc:v1:${keyIdOf(keyA)}:`))
      assert.notInclude(c, "hunter2")
      assert.isTrue(secrets.isEncrypted(c))
      assert.isFalse(secrets.isEncrypted("hunter2"))
      assert.strictEqual(yield* secrets.decrypt(c), "hunter2-very-secret")
      // a fresh IV every time
      assert.notStrictEqual(secrets.encrypt("x"), secrets.encrypt("x"))
    }))

  it.effect("binds the context: another context cannot decrypt", () =>
    Effect.gen(function*() {
      const secrets = makeSecrets([], keyA)
      const c = secrets.encrypt("payload", "signing-key:k1")
      assert.strictEqual(yield* secrets.decrypt(c, "signing-key:k1"), "payload")
      const wrong = yield* Effect.flip(secrets.decrypt(c, "signing-key:k2"))
      assert.strictEqual(wrong._tag, "SecretDecryptError")
    }))

  it.effect("keeps older keys for decryption after the current key changes", () =>
    Effect.gen(function*() {
      const old = makeSecrets([], keyA)
      const c = old.encrypt("kept")
      const rotated = makeSecrets([keyA], keyB)
      assert.strictEqual(yield* rotated.decrypt(c), "kept")
      assert.isTrue(rotated.encrypt("new").startsWith(`enc:v1:${keyIdOf(keyB)}:`))
      // without the old key in the ring it is unreadable
      const error = yield* Effect.flip(makeSecrets([], keyB).decrypt(c))
      assert.include(error.reason, "unknown key")
    }))

  it.effect("rejects tampered, truncated and foreign values", () =>
    Effect.gen(function*() {
      const secrets = makeSecrets([], keyA)
      const c = secrets.encrypt("integrity")
      const raw = Buffer.from(c.split(":")[3]!, "base64url")
      raw[14] = raw[14]! ^ 1
      const tampered = `enc:v1:${keyIdOf(keyA)}:${raw.toString("base64url")}`
      assert.include((yield* Effect.flip(secrets.decrypt(tampered))).reason, "authentication failed")
      assert.include((yield* Effect.flip(secrets.decrypt(`enc:v1:${keyIdOf(keyA)}:AAAA`))).reason, "truncated")
      assert.include((yield* Effect.flip(secrets.decrypt("plain text"))).reason, "not an encrypted value")
    }))
})
