// SQL of the workspaces' browser origins (table workspace_cors, migration 0014): each workspace's list as one jsonb
// array, read whole (every node holds them all) or for one workspace.
import { Context, Effect, Layer, Schema } from "effect"
import { SqlClient } from "effect/sql"

const Origins = Schema.fromJsonString(Schema.Array(Schema.String))
const Row = Schema.Struct({ workspace: Schema.String, origins: Origins })
const decodeRows = Schema.decodeUnknownEffect(Schema.Array(Row))

export class CorsRepo extends Context.Service<CorsRepo>()("@troupe/server/identity/CorsRepo", {
  make: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    // origins as text: one decoding whichever driver answers (PGlite parses jsonb, sql-pg may not)
    const all = sql`SELECT workspace, allowed_origins::text AS origins FROM workspace_cors`.pipe(Effect.flatMap(decodeRows), Effect.orDie)
    const of = (workspace: string) =>
      sql`SELECT workspace, allowed_origins::text AS origins FROM workspace_cors WHERE workspace = ${workspace}`.pipe(
        Effect.flatMap(decodeRows),
        Effect.map((rows) => rows[0]?.origins ?? []),
        Effect.orDie
      )
    const put = (workspace: string, origins: ReadonlyArray<string>, by: string) =>
      sql`INSERT INTO workspace_cors (workspace, allowed_origins, updated_by)
        VALUES (${workspace}, ${JSON.stringify(origins)}::jsonb, ${by})
        ON CONFLICT (workspace) DO UPDATE
        SET allowed_origins = EXCLUDED.allowed_origins, updated_at = now(), updated_by = EXCLUDED.updated_by`.pipe(
        Effect.asVoid,
        Effect.orDie
      )
    return { all, of, put }
  })
}) {
  static readonly layer = Layer.effect(CorsRepo, CorsRepo.make)
}
