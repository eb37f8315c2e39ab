// Browser origins a workspace allows (CONTRACT §9, GET/PUT /settings/cors): one row per workspace that has any,
// gone with its workspace. Every node keeps them all in memory (identity/CorsSettings.ts): preflights read no table.
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`CREATE TABLE workspace_cors (
    workspace text PRIMARY KEY REFERENCES workspaces(slug) ON DELETE CASCADE,
    allowed_origins jsonb NOT NULL,
    updated_at timestamptz NOT NULL DEFAULT now(),
    updated_by text
  )`
})
