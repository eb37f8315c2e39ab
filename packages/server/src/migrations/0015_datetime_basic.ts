// `troupe_datetime(text)` (migration 0004) reads the ISO 8601 basic form as well (`20250101T120000Z`,
// `20250101T1200+0100`, `20250101`), as the validator and the query compiler do (structures/Formats.ts
// `extendedDateTime`); PostgreSQL's own cast reads both forms. Text the function read as NULL before may now be an
// instant, so the expression indexes built on it are rebuilt.
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

const extended =
  "^[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])([Tt ]([01][0-9]|2[0-3]):[0-5][0-9](:[0-5][0-9]([.][0-9]+)?)?([Zz]|[+-][0-9]{2}(:?[0-9]{2})?)?)?$"
const basic =
  "^[0-9]{4}(0[1-9]|1[0-2])(0[1-9]|[12][0-9]|3[01])([Tt]([01][0-9]|2[0-3])[0-5][0-9]([0-5][0-9]([.][0-9]+)?)?([Zz]|[+-][0-9]{2}([0-9]{2})?)?)?$"

export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql.unsafe(`CREATE OR REPLACE FUNCTION troupe_datetime(value text) RETURNS timestamptz
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
      SELECT CASE
        WHEN value !~ '${extended}' AND value !~ '${basic}' THEN NULL
        WHEN value ~ '([Zz]|[+-][0-9]{2}(:?[0-9]{2})?)$' AND length(value) > 10 THEN value::timestamptz
        ELSE value::timestamp AT TIME ZONE 'UTC'
      END
    $$`)
  const indexes = yield* sql<{ name: string }>`SELECT indexrelid::regclass::text AS name FROM pg_index
    WHERE pg_get_indexdef(indexrelid) LIKE '%troupe_datetime%'`
  for (const { name } of indexes) yield* sql.unsafe(`REINDEX INDEX ${name}`)
})
