import { describe, expect, it, layer } from "@effect/vitest"
import { Deferred, Effect, Fiber, Layer, Option } from "effect"
import { TestClock } from "effect/testing"
import { SqlClient } from "effect/sql"
import * as Jose from "jose"
import * as Crypto from "node:crypto"
import { MigratedPglite } from "../../../../test/support/TestDatabase.ts"
import { AppConfig } from "../platform/AppConfig.ts"
import { Secrets } from "../platform/Secrets.ts"
import { singleFlight, SigningKeys } from "./SigningKeys.ts"

const keyA = Crypto.randomBytes(32)
const keyB = Crypto.randomBytes(32)

const Db = MigratedPglite().pipe(
  Layer.provideMerge(AppConfig.layerWith({ publicUrl: "http://troupe.test", configuredPublicUrl: Option.some("http://troupe.test") }))
)

/** A fresh SigningKeys over the shared database, with the given encryption key. */
const keysWith =
  (key: Buffer) =>
  <A, E, R>(use: (keys: SigningKeys["Service"]) => Effect.Effect<A, E, R>) =>
    Effect.flatMap(Effect.service(SigningKeys), use).pipe(
      Effect.provide(Layer.fresh(SigningKeys.layer).pipe(Layer.provide(Secrets.layerFromKeys(key))))
    )

const sample = { sub: "ci_1", workspace: "ws", isServiceAccount: "true", groups: [] as Array<string> }

layer(Db, { excludeTestServices: true })("SigningKeys", (it) => {
  it.effect("signs ES256 tokens that verify here and with the published JWKS only", () =>
    keysWith(keyA)((keys) =>
      Effect.gen(function* () {
        const token = yield* keys.sign(sample)
        const payload = yield* keys.verify(token)
        expect(payload.sub).toBe("ci_1")
        expect(payload.iss).toBe("http://troupe.test")
        expect(payload.aud).toBe("http://troupe.test")
        expect(payload.exp! - payload.iat!).toBe(25200)
        const jwks = yield* keys.jwks
        expect(jwks.keys.length).toBe(1)
        expect((jwks.keys[0] as any).d).toBeUndefined()
        const verified = yield* Effect.promise(() => Jose.jwtVerify(token, Jose.createLocalJWKSet(jwks)))
        expect(verified.protectedHeader.alg).toBe("ES256")
        // the private key is stored encrypted
        const sql = yield* SqlClient.SqlClient
        const rows = yield* sql<{ privateEnc: string }>`SELECT private_enc AS "privateEnc" FROM signing_keys`
        expect(rows[0]!.privateEnc.startsWith("enc:v1:")).toBe(true)
        expect(rows[0]!.privateEnc).not.toContain('"d"')
        // tampering, another issuer's key, garbage
        const [h, p, s] = token.split(".")
        const forgedBody = Buffer.from(JSON.stringify({ ...payload, workspace: "other" })).toString("base64url")
        const altered = `${h}.${forgedBody}.${s}`
        expect((yield* Effect.flip(keys.verify(altered))).statusCode).toBe(401)
        expect((yield* Effect.flip(keys.verify("garbage"))).statusCode).toBe(401)
        expect((yield* Effect.flip(keys.verify(`${h}.${p}`))).statusCode).toBe(401)
        const stranger = yield* Effect.promise(() => Jose.generateKeyPair("ES256"))
        const foreign = yield* Effect.promise(() =>
          new Jose.SignJWT(sample)
            .setProtectedHeader({ alg: "ES256", kid: Jose.decodeProtectedHeader(token).kid! })
            .setIssuer("http://troupe.test")
            .setAudience("http://troupe.test")
            .setIssuedAt()
            .setExpirationTime("1h")
            .sign(stranger.privateKey)
        )
        expect((yield* Effect.flip(keys.verify(foreign))).statusCode).toBe(401)
        const expired = yield* Effect.promise(() =>
          new Jose.SignJWT(sample)
            .setProtectedHeader({ alg: "ES256", kid: "x" })
            .setIssuer("http://troupe.test")
            .setAudience("http://troupe.test")
            .setIssuedAt(1)
            .setExpirationTime(2)
            .sign(stranger.privateKey)
        )
        expect((yield* Effect.flip(keys.verify(expired))).statusCode).toBe(401)
      }).pipe(Effect.orDie)
    )
  )

  it.effect("a key another node just added verifies at once; unknown kids reload the keys at most once a second", () =>
    keysWith(keyA)((keys) =>
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        // another node's key: published (retired, so it only verifies), its private half elsewhere
        const foreignKey = Effect.gen(function* () {
          const pair = yield* Effect.promise(() => Jose.generateKeyPair("ES256", { extractable: true }))
          const jwk = yield* Effect.promise(() => Jose.exportJWK(pair.publicKey))
          const kid = yield* Effect.promise(() => Jose.calculateJwkThumbprint(jwk))
          yield* sql`INSERT INTO signing_keys (kid, alg, public_jwk, private_enc, active, retired_at)
            VALUES (${kid}, 'ES256', ${JSON.stringify(jwk)}::jsonb, 'elsewhere', false, now())`
          return yield* Effect.promise(() =>
            new Jose.SignJWT(sample)
              .setProtectedHeader({ alg: "ES256", kid })
              .setIssuer("http://troupe.test")
              .setAudience("http://troupe.test")
              .setIssuedAt()
              .setExpirationTime("1h")
              .sign(pair.privateKey)
          )
        })
        const first = yield* foreignKey
        expect((yield* keys.verify(first)).sub).toBe("ci_1")
        // a burst of junk kids right after: no reload, so a second new key is not seen yet...
        const stranger = yield* Effect.promise(() => Jose.generateKeyPair("ES256"))
        const junk = yield* Effect.promise(() =>
          new Jose.SignJWT(sample)
            .setProtectedHeader({ alg: "ES256", kid: "junk" })
            .setIssuer("http://troupe.test")
            .setAudience("http://troupe.test")
            .setIssuedAt()
            .setExpirationTime("1h")
            .sign(stranger.privateKey)
        )
        const answers = yield* Effect.forEach(
          Array.from({ length: 20 }, (_, i) => i),
          () => Effect.flip(keys.verify(junk)),
          { concurrency: "unbounded" }
        )
        expect(answers.every((e) => e.statusCode === 401)).toBe(true)
        const second = yield* foreignKey
        expect((yield* Effect.flip(keys.verify(second))).statusCode).toBe(401)
        // ...until a second has passed
        yield* Effect.sleep("1100 millis")
        expect((yield* keys.verify(second)).sub).toBe("ci_1")
      }).pipe(Effect.orDie)
    )
  )

  it.effect("rotation keeps old tokens verifying; a changed encryption key rotates at start", () =>
    Effect.gen(function* () {
      const old = yield* keysWith(keyA)((keys) => keys.sign(sample))
      const oldKid = Jose.decodeProtectedHeader(old).kid
      const rotated = yield* keysWith(keyA)((keys) =>
        Effect.gen(function* () {
          const info = yield* keys.rotate
          expect(info.kid).not.toBe(oldKid)
          yield* keys.verify(old)
          const fresh = yield* keys.sign(sample)
          expect(Jose.decodeProtectedHeader(fresh).kid).toBe(info.kid)
          expect((yield* keys.jwks).keys.map((k) => k.kid)).toEqual(expect.arrayContaining([oldKid, info.kid]))
          return info.kid
        })
      )
      // another node started with a different TROUPE_ENCRYPTION_KEY cannot use the stored private key
      yield* keysWith(keyB)((keys) =>
        Effect.gen(function* () {
          yield* keys.verify(old)
          const fresh = yield* keys.sign(sample)
          const kid = Jose.decodeProtectedHeader(fresh).kid
          expect(kid).not.toBe(rotated)
          expect(kid).not.toBe(oldKid)
          yield* keys.verify(fresh)
        })
      )
    }).pipe(Effect.orDie)
  )
})

describe("singleFlight", () => {
  it.effect("one run at a time for concurrent callers, and at most one start per interval", () =>
    Effect.gen(function* () {
      let runs = 0
      let gate = yield* Deferred.make<void>()
      const run = Effect.andThen(
        Effect.sync(() => void runs++),
        Effect.suspend(() => Deferred.await(gate))
      )
      const reload = singleFlight(run, 1000)
      const callers = yield* Effect.forEach(
        Array.from({ length: 50 }, (_, i) => i),
        () => Effect.forkChild(reload)
      )
      yield* Effect.yieldNow
      expect(runs, "50 callers at once: one run").toBe(1)
      yield* Deferred.succeed(gate, undefined)
      yield* Fiber.joinAll(callers)
      // within the interval: nothing runs, callers return at once
      gate = yield* Deferred.make<void>()
      yield* reload
      yield* TestClock.adjust("999 millis")
      yield* reload
      expect(runs).toBe(1)
      // past it: one more run
      yield* TestClock.adjust("1 millis")
      const again = yield* Effect.forkChild(reload)
      yield* Effect.yieldNow
      expect(runs).toBe(2)
      yield* Deferred.succeed(gate, undefined)
      yield* Fiber.join(again)
    })
  )

  it.effect("a caller that gives up does not cut short the run others wait for", () =>
    Effect.gen(function* () {
      let finished = 0
      const gate = yield* Deferred.make<void>()
      const reload = singleFlight(
        Effect.andThen(
          Deferred.await(gate),
          Effect.sync(() => void finished++)
        ),
        1000
      )
      const first = yield* Effect.forkChild(reload)
      yield* Effect.yieldNow
      const second = yield* Effect.forkChild(reload)
      yield* Effect.yieldNow
      const interrupting = yield* Effect.forkChild(Fiber.interrupt(first))
      yield* Effect.yieldNow
      yield* Deferred.succeed(gate, undefined)
      yield* Fiber.join(interrupting)
      yield* Fiber.join(second)
      expect(finished).toBe(1)
    })
  )
})
