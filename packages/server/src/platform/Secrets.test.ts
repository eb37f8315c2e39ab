import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as Crypto from "node:crypto"
import { keyIdOf, makeSecrets } from "./Secrets.ts"

const keyA = Crypto.randomBytes(32)
const keyB = Crypto.randomBytes(32)

describe("Secrets", () => {
  it.effect("round-trips and never shows the plaintext", () =>
    Effect.gen(function* () {
      const secrets = makeSecrets([], keyA)
      const c = secrets.encrypt("hunter2-very-secret")
      expect(c.startsWith(`enc:v1:${keyIdOf(keyA)}:`)).toBe(true)
      expect(c).not.toContain("hunter2")
      expect(secrets.isEncrypted(c)).toBe(true)
      expect(secrets.isEncrypted("hunter2")).toBe(false)
      expect(yield* secrets.decrypt(c)).toBe("hunter2-very-secret")
      // a fresh IV every time
      expect(secrets.encrypt("x")).not.toBe(secrets.encrypt("x"))
    })
  )

  it.effect("binds the context: another context cannot decrypt", () =>
    Effect.gen(function* () {
      const secrets = makeSecrets([], keyA)
      const c = secrets.encrypt("payload", "signing-key:k1")
      expect(yield* secrets.decrypt(c, "signing-key:k1")).toBe("payload")
      const wrong = yield* Effect.flip(secrets.decrypt(c, "signing-key:k2"))
      expect(wrong._tag).toBe("SecretDecryptError")
    })
  )

  it.effect("keeps older keys for decryption after the current key changes", () =>
    Effect.gen(function* () {
      const old = makeSecrets([], keyA)
      const c = old.encrypt("kept")
      const rotated = makeSecrets([keyA], keyB)
      expect(yield* rotated.decrypt(c)).toBe("kept")
      expect(rotated.encrypt("new").startsWith(`enc:v1:${keyIdOf(keyB)}:`)).toBe(true)
      // without the old key in the ring it is unreadable
      const error = yield* Effect.flip(makeSecrets([], keyB).decrypt(c))
      expect(error.reason).toContain("unknown key")
    })
  )

  it.effect("rejects tampered, truncated and foreign values", () =>
    Effect.gen(function* () {
      const secrets = makeSecrets([], keyA)
      const c = secrets.encrypt("integrity")
      const raw = Buffer.from(c.split(":")[3]!, "base64url")
      raw[14] = raw[14]! ^ 1
      const tampered = `enc:v1:${keyIdOf(keyA)}:${raw.toString("base64url")}`
      expect((yield* Effect.flip(secrets.decrypt(tampered))).reason).toContain("authentication failed")
      expect((yield* Effect.flip(secrets.decrypt(`enc:v1:${keyIdOf(keyA)}:AAAA`))).reason).toContain("truncated")
      expect((yield* Effect.flip(secrets.decrypt("plain text"))).reason).toContain("not an encrypted value")
    })
  )
})
