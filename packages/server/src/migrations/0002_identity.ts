// Identity additions on top of 0001_core: key retirement, lookup indexes, the identity change counter.
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  // A rotated signing key stays published (and verifiable) until every token it signed has expired.
  yield* sql`ALTER TABLE signing_keys ADD COLUMN retired_at timestamptz`
  yield* sql`CREATE INDEX service_accounts_workspace ON service_accounts (workspace, id)`
  yield* sql`CREATE INDEX memberships_user ON memberships (user_id)`
  yield* sql`CREATE INDEX group_members_member ON group_members (member_type, member_id)`
  yield* sql`CREATE INDEX policies_group ON policies (group_id)`
  yield* sql`CREATE INDEX rate_counters_window ON rate_counters (window_start)`
  // Bumped in the same transaction as every identity change; nodes poll it (and LISTEN) to refresh their caches.
  yield* sql`INSERT INTO settings (key, value) VALUES ('identity_version', '0') ON CONFLICT (key) DO NOTHING`
})
