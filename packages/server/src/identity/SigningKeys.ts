// Token signing keys (ES256). The first node to boot on an empty database creates one; private keys are stored
// only encrypted (platform/Secrets, bound to their kid). Rotation makes a new active key and retires the old one,
// which stays published in the JWKS and keeps verifying until every token it signed has expired.
// Verification uses keys cached in memory plus a small cache of already-verified tokens, so the hot path does no
// query and, for a token seen before, no signature check.
import { type Unauthorized, unauthorized } from "@troupe/api/Errors"
import { Clock, Context, Deferred, Effect, Layer, Option } from "effect"
import { SqlClient } from "effect/sql"
import * as Jose from "jose"
import * as Crypto from "node:crypto"
import { AppConfig } from "../platform/AppConfig.ts"
import { Secrets } from "../platform/Secrets.ts"

export const alg = "ES256"
/** Token lifetime: 7 hours, with no refresh token (README "Tokens"). */
export const tokenLifetimeSeconds = 25200
/** A retired key stays published this long: one token lifetime plus a margin. */
const retiredKeyGraceHours = 8

export interface SigningKeyInfo {
  readonly kid: string
  readonly alg: string
  readonly createdAt: string
}

export interface SigningKeysShape {
  /** Signs the claims with the active key; adds iss, aud, iat, exp (lifetime), jti and the kid header. */
  readonly sign: (claims: Jose.JWTPayload & { readonly sub: string }) => Effect.Effect<string>
  /** Signature (cached keys), exp, iss, aud, algorithm; returns the payload. */
  readonly verify: (token: string) => Effect.Effect<Jose.JWTPayload, Unauthorized>
  /** The public keys, current and recently retired, as a JWK Set. */
  readonly jwks: Effect.Effect<{ keys: Array<Jose.JWK> }>
  /** New active key; the previous one is retired (still verifies). */
  readonly rotate: Effect.Effect<SigningKeyInfo>
  readonly issuer: string
  readonly audience: string
}

interface KeyRow {
  readonly kid: string
  readonly alg: string
  readonly publicJwk: unknown
  readonly privateEnc: string
  readonly active: boolean
  readonly createdAt: Date
}

const parseJson = (u: unknown) => (typeof u === "string" ? JSON.parse(u) : u) as Jose.JWK

const verifiedCacheSize = 10_000

const importKey = (jwk: Jose.JWK) => Effect.promise(() => Jose.importJWK(jwk, alg) as Promise<Jose.CryptoKey>)

/** Keys of a token with an unknown kid are reloaded at most this often (tokens with junk kids cost no queries). */
export const unknownKidReloadIntervalMs = 1000

/**
 * `reload` as something many callers may ask for at once: one run at a time (callers arriving meanwhile wait for
 * that run), and at most one start per `minIntervalMs` (callers in between return at once; the last run stands).
 */
export const singleFlight = (reload: Effect.Effect<void>, minIntervalMs: number): Effect.Effect<void> => {
  let running: Deferred.Deferred<void> | undefined
  let lastStart = Number.NEGATIVE_INFINITY
  return Effect.clockWith((clock) =>
    Effect.suspend(() => {
      if (running !== undefined) return Deferred.await(running)
      const now = clock.currentTimeMillisUnsafe()
      if (now - lastStart < minIntervalMs) return Effect.void
      lastStart = now
      const done = Deferred.makeUnsafe<void>()
      running = done
      // uninterruptible: a caller that gives up must not cut short the run the others wait for
      return Effect.ensuring(
        Effect.uninterruptible(reload),
        Effect.sync(() => {
          running = undefined
          Deferred.doneUnsafe(done, Effect.void)
        })
      )
    })
  )
}

export class SigningKeys extends Context.Service<SigningKeys, SigningKeysShape>()("@troupe/server/identity/SigningKeys") {
  static readonly layer: Layer.Layer<SigningKeys, never, AppConfig | SqlClient.SqlClient | Secrets> = Layer.effect(
    SigningKeys,
    Effect.gen(function* () {
      const config = yield* AppConfig
      const sql = yield* SqlClient.SqlClient
      const secrets = yield* Secrets
      // One issuer for the whole cluster: TROUPE_PUBLIC_URL when set, else the value the first node stored at its
      // first boot, so nodes given only the same DATABASE_URL accept each other's tokens.
      const issuer = Option.isSome(config.configuredPublicUrl)
        ? config.configuredPublicUrl.value
        : yield* Effect.orDie(
            Effect.gen(function* () {
              yield* sql`INSERT INTO settings (key, value) VALUES ('public_url', ${config.publicUrl}) ON CONFLICT (key) DO NOTHING`
              const rows = yield* sql<{ value: string }>`SELECT value FROM settings WHERE key = 'public_url'`
              return rows[0]?.value ?? config.publicUrl
            })
          )
      const audience = issuer
      const verifyOptions = { issuer, audience, algorithms: [alg], requiredClaims: ["exp", "iat", "sub"] }

      const lockKeys = sql.driver === "pglite" ? Effect.void : Effect.asVoid(sql`SELECT pg_advisory_xact_lock(7412002)`)

      const insertKey = Effect.gen(function* () {
        const pair = yield* Effect.promise(() => Jose.generateKeyPair(alg, { extractable: true }))
        const publicJwk = yield* Effect.promise(() => Jose.exportJWK(pair.publicKey))
        const privateJwk = yield* Effect.promise(() => Jose.exportJWK(pair.privateKey))
        const kid = yield* Effect.promise(() => Jose.calculateJwkThumbprint(publicJwk))
        const privateEnc = secrets.encrypt(JSON.stringify(privateJwk), `signing-key:${kid}`)
        const rows = yield* sql<{ createdAt: Date }>`
          INSERT INTO signing_keys (kid, alg, public_jwk, private_enc, active)
          VALUES (${kid}, ${alg}, ${JSON.stringify(publicJwk)}::jsonb, ${privateEnc}, true)
          RETURNING created_at AS "createdAt"`
        return { kid, alg, createdAt: new Date(rows[0]!.createdAt).toISOString() }
      })

      const selectKeys = sql<KeyRow>`
        SELECT kid, alg, public_jwk AS "publicJwk", private_enc AS "privateEnc", active, created_at AS "createdAt"
        FROM signing_keys
        WHERE active OR retired_at > now() - make_interval(hours => ${retiredKeyGraceHours})
        ORDER BY active DESC, created_at DESC`

      // First boot: exactly one node creates the key (advisory lock on PostgreSQL; PGlite is one process).
      yield* sql
        .withTransaction(
          Effect.gen(function* () {
            yield* lockKeys
            const active = yield* sql`SELECT kid FROM signing_keys WHERE active`
            if (active.length === 0) yield* insertKey
          })
        )
        .pipe(Effect.orDie)

      let signer: { kid: string; key: Jose.CryptoKey } | undefined
      let verifiers = new Map<string, Jose.CryptoKey>()

      const rotateUnloaded = sql
        .withTransaction(
          Effect.gen(function* () {
            yield* lockKeys
            const created = yield* insertKey
            yield* sql`UPDATE signing_keys SET active = false, retired_at = now() WHERE active AND kid <> ${created.kid}`
            return created
          })
        )
        .pipe(Effect.orDie)

      const load: Effect.Effect<void> = Effect.gen(function* () {
        const rows = yield* Effect.orDie(selectKeys)
        const next = new Map<string, Jose.CryptoKey>()
        for (const row of rows) {
          next.set(row.kid, yield* importKey(parseJson(row.publicJwk)))
        }
        verifiers = next
        const active = rows.find((r) => r.active)
        if (active !== undefined && active.kid !== signer?.kid) {
          const jwk = yield* Effect.result(secrets.decrypt(active.privateEnc, `signing-key:${active.kid}`))
          if (jwk._tag === "Failure") {
            // TROUPE_ENCRYPTION_KEY changed: the key can still verify, but signing needs a new one.
            yield* Effect.logWarning("the active signing key cannot be decrypted with the current key; rotating")
            return yield* Effect.andThen(rotateUnloaded, load)
          }
          const key = yield* importKey(JSON.parse(jwk.success) as Jose.JWK)
          signer = { kid: active.kid, key }
        }
      })
      yield* load
      // Unknown kid: perhaps rotated on another node. One reload at a time, at most one a second.
      const reloadForUnknownKid = singleFlight(
        Effect.catchCause(load, (cause) => Effect.logWarning("signing keys: reload failed", cause)),
        unknownKidReloadIntervalMs
      )
      // Another node may rotate: pick its key up for signing within a minute (its tokens verify at once, below).
      yield* Effect.forkScoped(
        Effect.forever(
          Effect.delay(
            Effect.catchCause(load, () => Effect.void),
            "60 seconds"
          )
        )
      )

      const verified = new Map<string, number>()
      const payloads = new Map<string, Jose.JWTPayload>()

      const keyFor = (token: string) =>
        Effect.gen(function* () {
          let header: Jose.ProtectedHeaderParameters
          try {
            header = Jose.decodeProtectedHeader(token)
          } catch {
            return yield* Effect.fail(unauthorized("Invalid token"))
          }
          if (header.alg !== alg || typeof header.kid !== "string") {
            return yield* Effect.fail(unauthorized("Invalid token"))
          }
          const known = verifiers.get(header.kid)
          if (known !== undefined) return known
          yield* reloadForUnknownKid
          const reloaded = verifiers.get(header.kid)
          return reloaded === undefined ? yield* Effect.fail(unauthorized("Invalid token")) : reloaded
        })

      const verify = (token: string) =>
        Effect.gen(function* () {
          const now = yield* Clock.currentTimeMillis
          const expMs = verified.get(token)
          if (expMs !== undefined) {
            if (expMs > now) return payloads.get(token)!
            verified.delete(token)
            payloads.delete(token)
            return yield* Effect.fail(unauthorized("Token expired"))
          }
          const key = yield* keyFor(token)
          const result = yield* Effect.tryPromise({
            try: () => Jose.jwtVerify(token, key, verifyOptions),
            catch: (e) => unauthorized(e instanceof Jose.errors.JWTExpired ? "Token expired" : "Invalid token")
          })
          const payload = result.payload
          if (verified.size >= verifiedCacheSize) {
            const oldest = verified.keys().next().value
            if (oldest !== undefined) {
              verified.delete(oldest)
              payloads.delete(oldest)
            }
          }
          verified.set(token, payload.exp! * 1000)
          payloads.set(token, payload)
          return payload
        })

      const sign = (claims: Jose.JWTPayload & { readonly sub: string }) =>
        Effect.promise(() =>
          new Jose.SignJWT(claims)
            .setProtectedHeader({ alg, kid: signer!.kid, typ: "JWT" })
            .setIssuer(issuer)
            .setAudience(audience)
            .setIssuedAt()
            .setExpirationTime(`${tokenLifetimeSeconds}s`)
            .setJti(Crypto.randomUUID())
            .sign(signer!.key)
        )

      const jwks = Effect.gen(function* () {
        const rows = yield* Effect.orDie(selectKeys)
        return {
          keys: rows.map((r) => ({ ...parseJson(r.publicJwk), kid: r.kid, alg: r.alg, use: "sig" }))
        }
      })

      const rotate = Effect.gen(function* () {
        const info = yield* rotateUnloaded
        yield* load
        return info
      })

      return SigningKeys.of({ sign, verify, jwks, rotate, issuer, audience })
    })
  )
}
