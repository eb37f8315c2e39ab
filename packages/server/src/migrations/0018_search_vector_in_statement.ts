// A created record's search vector without the PL/pgSQL trigger. The trigger cost each created row a function call,
// a lookup of the structure's configuration and a loop of queries over its fields: on PGlite two thirds of the
// whole batch create statement's work. Now the batch create statement (records/RecordBatchSql.ts) computes each
// row's vector itself, from the structure's configuration, which it share-locks (a configuration being changed waits
// for the statement, or the statement reads the new one: no row keeps a vector of a configuration the re-indexer has
// passed). troupe_tsvector_agg is the `||` of tsvectors as an aggregate, so the fields' vectors concatenate in one
// query to what troupe_search_vector_of's loop makes (positions and weights alike). The insert trigger fires only for
// a row that comes without a vector (every other insert path); the update trigger is the one of before.
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`CREATE AGGREGATE troupe_tsvector_agg(tsvector) (SFUNC = tsvector_concat, STYPE = tsvector, INITCOND = '')`
  yield* sql`DROP TRIGGER records_search ON records`
  yield* sql`CREATE TRIGGER records_search_insert BEFORE INSERT ON records
    FOR EACH ROW WHEN (NEW.search_vector IS NULL) EXECUTE FUNCTION troupe_records_search()`
  yield* sql`CREATE TRIGGER records_search_update BEFORE UPDATE OF data, structure_id ON records
    FOR EACH ROW EXECUTE FUNCTION troupe_records_search()`
})
