// Which identity version each live node has loaded (AccessCache): a node that changes identity data waits until
// every node seen in the last few seconds has loaded the change, so a revoked token is refused everywhere from the
// moment the change is answered.
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`CREATE TABLE identity_acks (
    node text PRIMARY KEY,
    version bigint NOT NULL,
    seen_at timestamptz NOT NULL DEFAULT now()
  )`
})
