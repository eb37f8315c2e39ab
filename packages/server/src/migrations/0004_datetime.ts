// `troupe_datetime(text)`: an ISO 8601 date-time as an instant, what the query compiler compares datetime properties
// with. A value without an offset is UTC (as the validator reads it), never the session's TimeZone, so the result
// depends on the text alone: that is what lets the function be IMMUTABLE, and so appear in the expression index of
// an `indexed` datetime property (query/QueryIndexes.ts). Text that is no date-time is NULL.
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql.unsafe(`CREATE OR REPLACE FUNCTION troupe_datetime(value text) RETURNS timestamptz
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
      SELECT CASE
        WHEN value !~ '^[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])([Tt ]([01][0-9]|2[0-3]):[0-5][0-9](:[0-5][0-9]([.][0-9]+)?)?([Zz]|[+-][0-9]{2}(:?[0-9]{2})?)?)?$' THEN NULL
        WHEN value ~ '([Zz]|[+-][0-9]{2}(:?[0-9]{2})?)$' AND length(value) > 10 THEN value::timestamptz
        ELSE value::timestamp AT TIME ZONE 'UTC'
      END
    $$`)
})
