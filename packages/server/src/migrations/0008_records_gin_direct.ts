// The GIN index on records.data writes its entries at once instead of through a pending list. With the list (GIN's
// default `fastupdate`), entries pile up until the list passes gin_pending_list_limit, and then the one write that
// tips it over merges the whole list into the index before it can commit: under steady writes about every few
// seconds one group-commit statement, and every caller waiting on it, stalled ~250 ms (the max latency of the
// create bench). Written directly, each write pays its own small share and none pays for the others. Entries already
// in the list are merged now.
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER INDEX records_data_gin SET (fastupdate = off)`
  yield* sql`SELECT gin_clean_pending_list('records_data_gin'::regclass)`
})
