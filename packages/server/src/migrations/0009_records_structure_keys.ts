// Records and unique claims lose their foreign keys to `structures`. A key is checked row by row: for a bulk of
// 1,000 creates, 1,000 look-ups and share-locks of the same structure row, about a seventh of PostgreSQL's time per
// created record. The create statement (RecordBatchSql.createRecords) now share-locks each structure it writes to
// once and fails as a key would when one is gone. What ON DELETE CASCADE did, a statement-level trigger on
// `structures` does: a structure deleted for good, or with its workspace, takes its records (and, through the
// records' own trigger, their history) and its unique claims with it.
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE records DROP CONSTRAINT IF EXISTS records_structure_id_fkey`
  yield* sql`ALTER TABLE record_unique_values DROP CONSTRAINT IF EXISTS record_unique_values_structure_id_fkey`
  yield* sql.unsafe(`CREATE OR REPLACE FUNCTION troupe_structure_records_gone() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      DELETE FROM records WHERE structure_id IN (SELECT id FROM gone);
      DELETE FROM record_unique_values WHERE structure_id IN (SELECT id FROM gone);
      RETURN NULL;
    END $$`)
  yield* sql`CREATE TRIGGER structures_records_gone AFTER DELETE ON structures
    REFERENCING OLD TABLE AS gone FOR EACH STATEMENT EXECUTE FUNCTION troupe_structure_records_gone()`
})
