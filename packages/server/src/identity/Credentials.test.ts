import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as Crypto from "node:crypto"
import {
  clientSecretMatches,
  hashClientSecret,
  hashPassword,
  newClientId,
  newClientSecret,
  newPassword,
  verifyPassword
} from "./Credentials.ts"

describe("passwords", () => {
  it.effect("scrypt hashes verify the right password only", () =>
    Effect.gen(function*() {
      const hash = yield* hashPassword("correct horse battery")
      // OWASP's scrypt parameters: N = 2^17, r = 8, p = 1, stored with the hash
      assert.match(hash, /^scrypt\$131072\$8\$1\$[A-Za-z0-9+/=]+\$[A-Za-z0-9+/=]+$/)
      assert.notInclude(hash, "correct horse")
      assert.isTrue(yield* verifyPassword("correct horse battery", hash))
      assert.isFalse(yield* verifyPassword("correct horse batterY", hash))
      assert.isFalse(yield* verifyPassword("", hash))
      // salted: the same password hashes differently
      assert.notStrictEqual(hash, yield* hashPassword("correct horse battery"))
    }))

  it.effect("hashes made with the former parameters (N = 2^15) keep verifying", () =>
    Effect.gen(function*() {
      const salt = Crypto.randomBytes(16)
      const key = Crypto.scryptSync("old password here", salt, 32, { N: 32768, r: 8, p: 1, maxmem: 64 * 1024 * 1024 })
      const old = `scrypt$32768$8$1$${salt.toString("base64")}$${key.toString("base64")}`
      assert.isTrue(yield* verifyPassword("old password here", old))
      assert.isFalse(yield* verifyPassword("old password hers", old))
    }))

  it.effect("an unknown user (no hash) and a malformed hash never verify", () =>
    Effect.gen(function*() {
      assert.isFalse(yield* verifyPassword("anything", undefined))
      assert.isFalse(yield* verifyPassword("anything", "plain"))
      assert.isFalse(yield* verifyPassword("anything", "scrypt$99999999$8$1$AAAA$AAAA"))
      // parameters beyond the memory bound, or not a power of two, are refused without hashing
      assert.isFalse(yield* verifyPassword("anything", "scrypt$1048576$8$1$AAAA$AAAA"))
      assert.isFalse(yield* verifyPassword("anything", "scrypt$100000$8$1$AAAA$AAAA"))
    }))

  it("generated passwords are long and random", () => {
    const a = newPassword()
    assert.isAtLeast(a.length, 24)
    assert.notStrictEqual(a, newPassword())
  })
})

describe("client credentials", () => {
  it("have the documented formats", () => {
    assert.match(newClientId(), /^ci_[0-9a-f]{24}$/)
    assert.match(newClientSecret(), /^sk_[0-9a-f]{64}$/)
    assert.notStrictEqual(newClientSecret(), newClientSecret())
  })

  it("only a digest is kept, compared in constant time", () => {
    const secret = newClientSecret()
    const stored = hashClientSecret(secret)
    assert.match(stored, /^[0-9a-f]{64}$/)
    assert.notInclude(stored, secret.slice(3))
    assert.isTrue(clientSecretMatches(secret, stored))
    assert.isFalse(clientSecretMatches(secret + "0", stored))
    assert.isFalse(clientSecretMatches(secret, "abcd"))
  })
})
