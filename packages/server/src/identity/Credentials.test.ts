import { describe, expect, it } from "@effect/vitest"
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
    Effect.gen(function* () {
      const hash = yield* hashPassword("correct horse battery")
      // OWASP's scrypt parameters: N = 2^17, r = 8, p = 1, stored with the hash
      expect(hash).toMatch(/^scrypt\$131072\$8\$1\$[A-Za-z0-9+/=]+\$[A-Za-z0-9+/=]+$/)
      expect(hash).not.toContain("correct horse")
      expect(yield* verifyPassword("correct horse battery", hash)).toBe(true)
      expect(yield* verifyPassword("correct horse batterY", hash)).toBe(false)
      expect(yield* verifyPassword("", hash)).toBe(false)
      // salted: the same password hashes differently
      expect(hash).not.toBe(yield* hashPassword("correct horse battery"))
    })
  )

  it.effect("hashes made with the former parameters (N = 2^15) keep verifying", () =>
    Effect.gen(function* () {
      const salt = Crypto.randomBytes(16)
      const key = Crypto.scryptSync("old password here", salt, 32, { N: 32768, r: 8, p: 1, maxmem: 64 * 1024 * 1024 })
      const old = `scrypt$32768$8$1$${salt.toString("base64")}$${key.toString("base64")}`
      expect(yield* verifyPassword("old password here", old)).toBe(true)
      expect(yield* verifyPassword("old password hers", old)).toBe(false)
    })
  )

  it.effect("an unknown user (no hash) and a malformed hash never verify", () =>
    Effect.gen(function* () {
      expect(yield* verifyPassword("anything", undefined)).toBe(false)
      expect(yield* verifyPassword("anything", "plain")).toBe(false)
      expect(yield* verifyPassword("anything", "scrypt$99999999$8$1$AAAA$AAAA")).toBe(false)
      // parameters beyond the memory bound, or not a power of two, are refused without hashing
      expect(yield* verifyPassword("anything", "scrypt$1048576$8$1$AAAA$AAAA")).toBe(false)
      expect(yield* verifyPassword("anything", "scrypt$100000$8$1$AAAA$AAAA")).toBe(false)
    })
  )

  it("generated passwords are long and random", () => {
    const a = newPassword()
    expect(a.length).toBeGreaterThanOrEqual(24)
    expect(a).not.toBe(newPassword())
  })
})

describe("client credentials", () => {
  it("have the documented formats", () => {
    expect(newClientId()).toMatch(/^ci_[0-9a-f]{24}$/)
    expect(newClientSecret()).toMatch(/^sk_[0-9a-f]{64}$/)
    expect(newClientSecret()).not.toBe(newClientSecret())
  })

  it("only a digest is kept, compared in constant time", () => {
    const secret = newClientSecret()
    const stored = hashClientSecret(secret)
    expect(stored).toMatch(/^[0-9a-f]{64}$/)
    expect(stored).not.toContain(secret.slice(3))
    expect(clientSecretMatches(secret, stored)).toBe(true)
    expect(clientSecretMatches(`${secret}0`, stored)).toBe(false)
    expect(clientSecretMatches(secret, "abcd")).toBe(false)
  })
})
