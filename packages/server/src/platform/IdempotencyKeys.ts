// Idempotency-Key claims (README "Idempotency"): a request with a key claims it in the same transaction as its
// write, so a key maps to exactly one committed outcome, replayed for 24 hours; the same key with another request
// (its hash differs) is refused by the caller. Shared by record upserts and notification sends.
import { Effect } from "effect"
import type { SqlClient } from "effect/sql"
import type { SqlError } from "effect/sql/SqlError"
import { json, num } from "../lib/rows.ts"

/** What a claimed key answered. */
export interface StoredOutcome {
  readonly requestHash: string
  readonly status: number
  readonly body: unknown
}

/**
 * Claims `key` for a request (a claim older than 24 hours is taken over); false when it is held, the stored outcome
 * then being `storedOutcome`'s. Run it inside the write's transaction.
 */
export const claimIdempotencyKey = (
  sql: SqlClient.SqlClient,
  workspace: string,
  key: string,
  requestHash: string
): Effect.Effect<boolean, SqlError> =>
  Effect.map(
    sql`INSERT INTO idempotency_keys (workspace, key, request_hash, status, body)
      VALUES (${workspace}, ${key}, ${requestHash}, 0, 'null'::jsonb)
      ON CONFLICT (workspace, key) DO UPDATE SET request_hash = EXCLUDED.request_hash, status = 0, body = 'null'::jsonb, created_at = now()
        WHERE idempotency_keys.created_at <= now() - interval '24 hours'
      RETURNING key`,
    (rows) => rows.length > 0
  )

export const storedOutcome = (
  sql: SqlClient.SqlClient,
  workspace: string,
  key: string
): Effect.Effect<StoredOutcome | undefined, SqlError> =>
  Effect.map(sql`SELECT * FROM idempotency_keys WHERE workspace = ${workspace} AND key = ${key}`, (rows) =>
    rows[0] === undefined ? undefined : { requestHash: String(rows[0].request_hash), status: num(rows[0].status), body: json(rows[0].body) }
  )

export const storeOutcome = (
  sql: SqlClient.SqlClient,
  workspace: string,
  key: string,
  status: number,
  body: unknown
): Effect.Effect<void, SqlError> =>
  Effect.asVoid(sql`UPDATE idempotency_keys SET status = ${status}, body = ${JSON.stringify(body)}::jsonb
      WHERE workspace = ${workspace} AND key = ${key}`)
