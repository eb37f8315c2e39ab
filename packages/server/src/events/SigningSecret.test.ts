// Webhook signing secrets at rest: sealed per webhook, and plaintext rows of older versions sealed in place.
import { assert, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import * as Crypto from "node:crypto"
import { Secrets } from "../platform/Secrets.ts"
import { encryptStoredSecrets, openSigningSecret, sealSigningSecret } from "./SigningSecret.ts"
import { TEST_WORKSPACE, TestDatabase } from "./TestDatabase.ts"
import { WebhookRepo } from "./WebhookRepo.ts"

const Env = WebhookRepo.layer.pipe(Layer.provideMerge(Secrets.layer), Layer.provideMerge(TestDatabase()))

const hook = (secret: string) =>
  Effect.flatMap(Effect.service(WebhookRepo), (repo) =>
    repo.insert({
      id: Crypto.randomUUID(),
      workspace: TEST_WORKSPACE,
      name: "h",
      url: "http://127.0.0.1:9/x",
      events: ["*"],
      filters: {},
      secret,
      enabled: true,
      status: "active",
      createdBy: null
    }))

layer(Env)("webhook signing secrets", (it) => {
  it.effect("a sealed secret opens only for its own webhook", () =>
    Effect.gen(function*() {
      const secrets = yield* Secrets
      const sealed = sealSigningSecret(secrets, "w-1", "whsec_abc")
      assert.match(sealed, /^enc:v1:/)
      assert.notInclude(sealed, "abc")
      assert.strictEqual(yield* openSigningSecret(secrets, "w-1", sealed), "whsec_abc")
      const other = yield* Effect.flip(openSigningSecret(secrets, "w-2", sealed))
      assert.strictEqual(other._tag, "SecretDecryptError")
      // rows older than encryption at rest hold plaintext: used as it is
      assert.strictEqual(yield* openSigningSecret(secrets, "w-1", "legacy"), "legacy")
    }))

  it.effect("plaintext secrets stored by an older version are sealed in place, once", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const secrets = yield* Secrets
      const legacy = yield* hook("plain-secret")
      const modern = yield* hook("placeholder")
      const sealed = sealSigningSecret(secrets, modern.id, "whsec_new")
      yield* sql`UPDATE webhooks SET secret = ${sealed} WHERE id = ${modern.id}::uuid`
      assert.strictEqual(yield* encryptStoredSecrets(secrets), 1)
      const rows = yield* sql<{ id: string; secret: string }>`SELECT id::text AS id, secret FROM webhooks`
      const stored = new Map(rows.map((r) => [r.id, r.secret]))
      assert.match(stored.get(legacy.id)!, /^enc:v1:/)
      assert.strictEqual(yield* openSigningSecret(secrets, legacy.id, stored.get(legacy.id)!), "plain-secret")
      assert.strictEqual(stored.get(modern.id), sealed)
      assert.strictEqual(yield* encryptStoredSecrets(secrets), 0)
    }))
})
