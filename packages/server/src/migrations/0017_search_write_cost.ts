// What a record write pays for search, cut down (measured with records of 40 to 70 words):
// - The search index takes new entries through GIN's pending list instead of writing them one by one. Inserting each
//   of a record's few dozen words into the index directly cost PostgreSQL ~450 µs per record, three times the rest
//   of its insert; through the list, entries are appended, then merged in bulk, sorted and grouped by word, for a
//   fraction of that. The search domain merges the list every half second (platform/GinPendingLists.ts), so writes do not
//   wait on a merge; the list's limit (1 MB instead of 4) bounds what a write that finds it full merges itself, and
//   what a search scans besides the index. Searches see pending entries: a created record is searchable at once.
// - The lexicon's words are gathered in batches of seconds instead of per relay step: the relay queues the ids of
//   the records it relayed (`search_lexicon_queue`, one row per step) and the search domain drains the queue
//   (search/Lexicon.ts). Most of a batch's words are in the lexicon already; the larger the batch, the fewer times
//   each is looked up (measured: ~220 µs per record in batches of 64 records, ~80 in batches of 5,000).
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER INDEX records_search SET (fastupdate = on, gin_pending_list_limit = 1024)`
  yield* sql`CREATE TABLE search_lexicon_queue (id bigserial PRIMARY KEY, record_ids uuid[] NOT NULL)`
})
