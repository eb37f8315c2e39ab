// A record's versions, changelog entries and unique claims lose their foreign keys to `records`. Every write inserts
// them in the statement (or transaction) that writes the record itself, so the per-row key checks only re-read rows
// the same statement wrote: about a sixth of a create statement's time. What the keys did on delete (ON DELETE
// CASCADE) a statement-level trigger does instead, for every way a record row goes: permanent deletes, the TTL sweep,
// and the cascades from a deleted structure or workspace.
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE record_versions DROP CONSTRAINT IF EXISTS record_versions_record_id_fkey`
  yield* sql`ALTER TABLE record_changelog DROP CONSTRAINT IF EXISTS record_changelog_record_id_fkey`
  yield* sql`ALTER TABLE record_unique_values DROP CONSTRAINT IF EXISTS record_unique_values_record_id_fkey`
  yield* sql.unsafe(`CREATE OR REPLACE FUNCTION troupe_record_history_gone() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      DELETE FROM record_versions WHERE record_id IN (SELECT id FROM gone);
      DELETE FROM record_changelog WHERE record_id IN (SELECT id FROM gone);
      DELETE FROM record_unique_values WHERE record_id IN (SELECT id FROM gone);
      RETURN NULL;
    END $$`)
  yield* sql`CREATE TRIGGER records_history_gone AFTER DELETE ON records
    REFERENCING OLD TABLE AS gone FOR EACH STATEMENT EXECUTE FUNCTION troupe_record_history_gone()`
})
