// Webhook signing secrets at rest: AES-256-GCM through the node's Secrets ring, bound to the webhook id, so a stored
// secret is readable only where a delivery is signed (the dispatcher, test sends). Rows written before secrets were
// encrypted hold plaintext: they still sign, and `encryptStoredSecrets` (run at start) seals them in place.
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import type { SecretDecryptError, SecretsShape } from "../platform/Secrets.ts"

const contextOf = (webhookId: string) => `webhook:${webhookId}`

/** The stored form of a new signing secret. */
export const sealSigningSecret = (secrets: SecretsShape, webhookId: string, secret: string): string =>
  secrets.encrypt(secret, contextOf(webhookId))

/** The secret to sign with (legacy plaintext rows as they are). */
export const openSigningSecret = (secrets: SecretsShape, webhookId: string, stored: string): Effect.Effect<string, SecretDecryptError> =>
  secrets.isEncrypted(stored) ? secrets.decrypt(stored, contextOf(webhookId)) : Effect.succeed(stored)

/**
 * Seals every plaintext secret still stored (webhooks created before encryption at rest). Each row is replaced only
 * if it still holds the plaintext just read, so nodes starting together cannot seal one twice.
 */
export const encryptStoredSecrets = (secrets: SecretsShape) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const rows = yield* sql<{ id: string; secret: string }>`SELECT id::text AS id, secret FROM webhooks
      WHERE secret NOT LIKE 'enc:v1:%'`
    for (const row of rows) {
      yield* sql`UPDATE webhooks SET secret = ${sealSigningSecret(secrets, row.id, row.secret)}
        WHERE id = ${row.id}::uuid AND secret = ${row.secret}`
    }
    return rows.length
  })
