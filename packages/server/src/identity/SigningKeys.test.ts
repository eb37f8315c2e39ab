import { assert, describe, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import * as Jose from "jose"
import * as Crypto from "node:crypto"
import { AppConfig } from "../platform/AppConfig.ts"
import * as PgliteClient from "../platform/PgliteClient.ts"
import { Secrets } from "../platform/Secrets.ts"
import { SigningKeys } from "./SigningKeys.ts"

const keyA = Crypto.randomBytes(32)
const keyB = Crypto.randomBytes(32)

const Db = Layer.effectDiscard(Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`CREATE TABLE signing_keys (
    kid text PRIMARY KEY, alg text NOT NULL, public_jwk jsonb NOT NULL, private_enc text NOT NULL,
    active boolean NOT NULL DEFAULT true, created_at timestamptz NOT NULL DEFAULT now(), retired_at timestamptz)`
})).pipe(
  Layer.provideMerge(PgliteClient.layer("memory://")),
  Layer.provideMerge(AppConfig.layerWith({ publicUrl: "http://troupe.test" }))
)

/** A fresh SigningKeys over the shared database, with the given encryption key. */
const keysWith = (key: Buffer) => <A, E, R>(use: (keys: SigningKeys["Service"]) => Effect.Effect<A, E, R>) =>
  Effect.flatMap(Effect.service(SigningKeys), use).pipe(
    Effect.provide(Layer.fresh(SigningKeys.layer).pipe(Layer.provide(Secrets.layerFromKeys(key))))
  )

const sample = { sub: "ci_1", workspace: "ws", isServiceAccount: "true", groups: [] as Array<string> }

layer(Db, { excludeTestServices: true })("SigningKeys", (it) => {
  it.effect("signs ES256 tokens that verify here and with the published JWKS only", () =>
    keysWith(keyA)((keys) =>
      Effect.gen(function*() {
        const token = yield* keys.sign(sample)
        const payload = yield* keys.verify(token)
        assert.strictEqual(payload.sub, "ci_1")
        assert.strictEqual(payload.iss, "http://troupe.test")
        assert.strictEqual(payload.aud, "http://troupe.test")
        assert.strictEqual(payload.exp! - payload.iat!, 25200)
        const jwks = yield* keys.jwks
        assert.strictEqual(jwks.keys.length, 1)
        assert.isUndefined((jwks.keys[0] as any).d)
        const verified = yield* Effect.promise(() => Jose.jwtVerify(token, Jose.createLocalJWKSet(jwks)))
        assert.strictEqual(verified.protectedHeader.alg, "ES256")
        // the private key is stored encrypted
        const sql = yield* SqlClient.SqlClient
        const rows = yield* sql<{ privateEnc: string }>`SELECT private_enc AS "privateEnc" FROM signing_keys`
        assert.isTrue(rows[0]!.privateEnc.startsWith("enc:v1:"))
        assert.notInclude(rows[0]!.privateEnc, "\"d\"")
        // tampering, another issuer's key, garbage
        const [h, p, s] = token.split(".")
        const forgedBody = Buffer.from(JSON.stringify({ ...payload, workspace: "other" })).toString("base64url")
        const altered = `${h}.${forgedBody}.${s}`
        assert.strictEqual((yield* Effect.flip(keys.verify(altered))).statusCode, 401)
        assert.strictEqual((yield* Effect.flip(keys.verify("garbage"))).statusCode, 401)
        assert.strictEqual((yield* Effect.flip(keys.verify(`${h}.${p}`))).statusCode, 401)
        const stranger = yield* Effect.promise(() => Jose.generateKeyPair("ES256"))
        const foreign = yield* Effect.promise(() =>
          new Jose.SignJWT(sample).setProtectedHeader({ alg: "ES256", kid: Jose.decodeProtectedHeader(token).kid! })
            .setIssuer("http://troupe.test").setAudience("http://troupe.test").setIssuedAt().setExpirationTime("1h")
            .sign(stranger.privateKey)
        )
        assert.strictEqual((yield* Effect.flip(keys.verify(foreign))).statusCode, 401)
        const expired = yield* Effect.promise(() =>
          new Jose.SignJWT(sample).setProtectedHeader({ alg: "ES256", kid: "x" }).setIssuer("http://troupe.test")
            .setAudience("http://troupe.test").setIssuedAt(1).setExpirationTime(2).sign(stranger.privateKey)
        )
        assert.strictEqual((yield* Effect.flip(keys.verify(expired))).statusCode, 401)
      }).pipe(Effect.orDie)
    ))

  it.effect("rotation keeps old tokens verifying; a changed encryption key rotates at start", () =>
    Effect.gen(function*() {
      const old = yield* keysWith(keyA)((keys) => keys.sign(sample))
      const oldKid = Jose.decodeProtectedHeader(old).kid
      const rotated = yield* keysWith(keyA)((keys) =>
        Effect.gen(function*() {
          const info = yield* keys.rotate
          assert.notStrictEqual(info.kid, oldKid)
          yield* keys.verify(old)
          const fresh = yield* keys.sign(sample)
          assert.strictEqual(Jose.decodeProtectedHeader(fresh).kid, info.kid)
          assert.includeMembers((yield* keys.jwks).keys.map((k) => k.kid), [oldKid, info.kid])
          return info.kid
        })
      )
      // another node started with a different TROUPE_ENCRYPTION_KEY cannot use the stored private key
      yield* keysWith(keyB)((keys) =>
        Effect.gen(function*() {
          yield* keys.verify(old)
          const fresh = yield* keys.sign(sample)
          const kid = Jose.decodeProtectedHeader(fresh).kid
          assert.notStrictEqual(kid, rotated)
          assert.notStrictEqual(kid, oldKid)
          yield* keys.verify(fresh)
        })
      )
    }).pipe(Effect.orDie))
})
