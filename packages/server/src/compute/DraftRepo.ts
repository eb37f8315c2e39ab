// SQL of drafts: functions and triggers held for review before they are published.
import type { Draft, DraftResourceType } from "@troupe/api/compute/Compute"
import { Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import type { SqlError } from "effect/sql/SqlError"
import { toDraft } from "./model.ts"

export class DraftRepo extends Context.Service<
  DraftRepo,
  {
    readonly insert: (d: {
      id: string
      workspace: string
      resourceType: DraftResourceType
      data: unknown
      by: string | null
    }) => Effect.Effect<Draft, SqlError>
    readonly get: (workspace: string, id: string) => Effect.Effect<Draft | undefined, SqlError>
    readonly list: (
      workspace: string,
      types: ReadonlyArray<DraftResourceType>,
      limit: number,
      offset: number
    ) => Effect.Effect<{ rows: ReadonlyArray<Draft>; total: number }, SqlError>
    readonly update: (workspace: string, id: string, data: unknown) => Effect.Effect<Draft | undefined, SqlError>
    readonly delete: (workspace: string, id: string) => Effect.Effect<boolean, SqlError>
  }
>()("@troupe/server/compute/DraftRepo") {
  static readonly layer = Layer.effect(
    DraftRepo,
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      return DraftRepo.of({
        insert: (d) =>
          Effect.map(
            sql`INSERT INTO drafts (id, workspace, resource_type, data, created_by)
          VALUES (${d.id}, ${d.workspace}, ${d.resourceType}, ${JSON.stringify(d.data)}::jsonb, ${d.by}) RETURNING *`,
            (rows) => toDraft(rows[0])
          ),
        get: (workspace, id) =>
          Effect.map(sql`SELECT * FROM drafts WHERE workspace = ${workspace} AND id = ${id}`, (rows) =>
            rows[0] === undefined ? undefined : toDraft(rows[0])
          ),
        list: (workspace, types, limit, offset) =>
          Effect.gen(function* () {
            if (types.length === 0) return { rows: [], total: 0 }
            const where = sql.and([sql`workspace = ${workspace}`, sql.in("resource_type", types)])
            const rows = yield* sql`SELECT * FROM drafts WHERE ${where} ORDER BY created_at DESC, id LIMIT ${limit} OFFSET ${offset}`
            const total = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM drafts WHERE ${where}`
            return { rows: rows.map(toDraft), total: Number(total[0]?.n ?? 0) }
          }),
        update: (workspace, id, data) =>
          Effect.map(
            sql`UPDATE drafts SET data = ${JSON.stringify(data)}::jsonb, updated_at = now()
          WHERE workspace = ${workspace} AND id = ${id} RETURNING *`,
            (rows) => (rows[0] === undefined ? undefined : toDraft(rows[0]))
          ),
        delete: (workspace, id) =>
          Effect.map(sql`DELETE FROM drafts WHERE workspace = ${workspace} AND id = ${id} RETURNING id`, (rows) => rows.length > 0)
      })
    })
  )
}
