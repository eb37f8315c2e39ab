// Webhook signing secrets at rest: sealed per webhook, and plaintext rows of older versions sealed in place.
import { expect, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import * as Crypto from "node:crypto"
import { Secrets } from "../platform/Secrets.ts"
import { encryptStoredSecrets, openSigningSecret, sealSigningSecret } from "./SigningSecret.ts"
import { TEST_WORKSPACE, TestDatabase } from "../../../../test/support/TestDatabase.ts"
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
    })
  )

layer(Env)("webhook signing secrets", (it) => {
  it.effect("a sealed secret opens only for its own webhook", () =>
    Effect.gen(function* () {
      const secrets = yield* Secrets
      // "~" is in neither the key id (hex) nor base64url: only the plaintext could show it
      const sealed = sealSigningSecret(secrets, "w-1", "whsec_~plain~")
      expect(sealed).toMatch(/^enc:v1:/)
      expect(sealed).not.toContain("~plain~")
      expect(yield* openSigningSecret(secrets, "w-1", sealed)).toBe("whsec_~plain~")
      const other = yield* Effect.flip(openSigningSecret(secrets, "w-2", sealed))
      expect(other._tag).toBe("SecretDecryptError")
      // rows older than encryption at rest hold plaintext: used as it is
      expect(yield* openSigningSecret(secrets, "w-1", "legacy")).toBe("legacy")
    })
  )

  it.effect("plaintext secrets stored by an older version are sealed in place, once", () =>
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const secrets = yield* Secrets
      const legacy = yield* hook("plain-secret")
      const modern = yield* hook("placeholder")
      const sealed = sealSigningSecret(secrets, modern.id, "whsec_new")
      yield* sql`UPDATE webhooks SET secret = ${sealed} WHERE id = ${modern.id}::uuid`
      expect(yield* encryptStoredSecrets(secrets)).toBe(1)
      const rows = yield* sql<{ id: string; secret: string }>`SELECT id::text AS id, secret FROM webhooks`
      const stored = new Map(rows.map((r) => [r.id, r.secret]))
      expect(stored.get(legacy.id)!).toMatch(/^enc:v1:/)
      expect(yield* openSigningSecret(secrets, legacy.id, stored.get(legacy.id)!)).toBe("plain-secret")
      expect(stored.get(modern.id)).toBe(sealed)
      expect(yield* encryptStoredSecrets(secrets)).toBe(0)
    })
  )
})
