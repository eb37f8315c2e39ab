// Events, webhooks and realtime on top of 0001's outbox and webhook tables.
// - events.seq: the order in which the relay handed events on (commit order, not id order: a transaction that took a
//   smaller id can commit later). Realtime hubs follow it, and SSE resume looks it up from the event id.
// - webhook_deliveries.seq: queue order per webhook; redelivery_of links a manual redelivery to its original;
//   payload becomes json (not jsonb) so the body keeps the relay's key order byte for byte.
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`CREATE SEQUENCE events_seq`
  yield* sql`ALTER TABLE events ADD COLUMN seq bigint`
  yield* sql`CREATE UNIQUE INDEX events_seq_uq ON events (seq) WHERE seq IS NOT NULL`
  yield* sql`CREATE INDEX events_workspace_seq ON events (workspace, seq) WHERE seq IS NOT NULL`
  yield* sql`CREATE INDEX events_processed_at ON events (processed_at) WHERE processed_at IS NOT NULL`
  yield* sql`CREATE INDEX webhooks_workspace ON webhooks (workspace, created_at)`
  yield* sql`ALTER TABLE webhook_deliveries ALTER COLUMN payload TYPE json USING payload::json`
  yield* sql`ALTER TABLE webhook_deliveries ADD COLUMN seq bigserial`
  yield* sql`ALTER TABLE webhook_deliveries ADD COLUMN redelivery_of uuid`
  yield* sql`ALTER TABLE webhook_deliveries ADD COLUMN delivered_at timestamptz`
  yield* sql`CREATE INDEX webhook_deliveries_queue ON webhook_deliveries (webhook_id, seq)
    WHERE status IN ('pending', 'retrying')`
  yield* sql`CREATE INDEX webhook_deliveries_log ON webhook_deliveries (webhook_id, seq DESC)`
})
