// Secrets people and machines present: passwords (scrypt, memory-hard, salted) and service-account client secrets
// (high-entropy, so a SHA-256 digest is enough). Every comparison is constant-time, and the hashes never leave
// this module's callers' SQL rows.
import { Effect } from "effect"
import * as Crypto from "node:crypto"

// OWASP's scrypt minimum (Password Storage Cheat Sheet): N = 2^17, r = 8, p = 1. That is 128 MiB per hash
// (128 * N * r) and ~0.4-0.7 s on this machine kind, run on libuv's thread pool (4 at once by default, so at most
// ~512 MiB). Each hash stores its parameters, so hashes made with the former N = 2^15 keep verifying.
const N = 131072
const r = 8
const p = 1
const keyLength = 32

const scrypt = (password: string, salt: Buffer, n: number, rr: number, pp: number, length: number) =>
  Effect.callback<Buffer, Error>((resume) => {
    // Node refuses more than 32 MiB by default: allow what these parameters need, with room for p lanes.
    const options = { N: n, r: rr, p: pp, maxmem: 128 * n * rr * (pp + 1) }
    Crypto.scrypt(password.normalize("NFKC"), salt, length, options, (err, key) => resume(err ? Effect.fail(err) : Effect.succeed(key)))
  })

/** `scrypt$N$r$p$salt$hash` (base64). */
export const hashPassword = (password: string): Effect.Effect<string> =>
  Effect.gen(function* () {
    const salt = Crypto.randomBytes(16)
    const key = yield* Effect.orDie(scrypt(password, salt, N, r, p, keyLength))
    return `scrypt$${N}$${r}$${p}$${salt.toString("base64")}$${key.toString("base64")}`
  })

// A well-formed hash nobody knows the password of: unknown users cost as much as known ones (no timing oracle).
const decoy = ["scrypt", N, r, p, Crypto.randomBytes(16).toString("base64"), Crypto.randomBytes(keyLength).toString("base64")].join("$")

/** Constant-time check of a password against a stored hash; `undefined` hash = unknown user (still hashes). */
export const verifyPassword = (password: string, stored: string | undefined): Effect.Effect<boolean> =>
  Effect.gen(function* () {
    const parts = (stored ?? decoy).split("$")
    if (parts.length !== 6 || parts[0] !== "scrypt") return false
    const [n, rr, pp] = [Number(parts[1]), Number(parts[2]), Number(parts[3])]
    const salt = Buffer.from(parts[4]!, "base64")
    const expected = Buffer.from(parts[5]!, "base64")
    // parameters from the database, yet bounded: at most twice today's memory (a tampered row cannot exhaust it)
    const sane =
      Number.isInteger(n) &&
      Number.isInteger(rr) &&
      Number.isInteger(pp) &&
      n > 1 &&
      (n & (n - 1)) === 0 &&
      rr > 0 &&
      pp > 0 &&
      pp <= 4 &&
      128 * n * rr <= 2 * 128 * N * r
    if (!sane || expected.length === 0) return false
    const actual = yield* Effect.orDie(scrypt(password, salt, n, rr, pp, expected.length))
    return Crypto.timingSafeEqual(actual, expected) && stored !== undefined
  })

/** `ci_` + 24 hex characters from the CSPRNG. */
export const newClientId = () => `ci_${Crypto.randomBytes(12).toString("hex")}`

/** `sk_` + 64 hex characters from the CSPRNG. */
export const newClientSecret = () => `sk_${Crypto.randomBytes(32).toString("hex")}`

/** What is stored for a client secret: its SHA-256 (hex). */
export const hashClientSecret = (secret: string) => Crypto.createHash("sha256").update(secret, "utf8").digest("hex")

/** Constant-time comparison of a presented secret with a stored digest. */
export const clientSecretMatches = (presented: string, storedHash: string): boolean => {
  const a = Crypto.createHash("sha256").update(presented, "utf8").digest()
  const b = Buffer.from(storedHash, "hex")
  return b.length === a.length && Crypto.timingSafeEqual(a, b)
}

/** A random password for the bootstrap admin: 24 characters, ~143 bits. */
export const newPassword = () => Crypto.randomBytes(18).toString("base64url")
