// SQL of triggers and their versions. The derived columns (event, record_slug, http_path, next_run_at) are what the
// relay, the HTTP trigger route and the scheduler look triggers up by; metadata keeps the full, stored form.
import { Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import type { SqlError } from "effect/sql/SqlError"
import { iso, json, num } from "../lib/rows.ts"
import { listRows, type ListSpec } from "./Listing.ts"
import { type TriggerRow, triggerRow } from "./model.ts"

export const triggerSortFields: ReadonlyMap<string, string> = new Map([
  ["name", "name"],
  ["createdAt", "created_at"],
  ["updatedAt", "updated_at"],
  ["executionType", "execution_type"],
  ["id", "id"]
])

/** What a create or update stores. */
export interface TriggerFields {
  readonly name: string
  readonly description: string | null
  readonly functionId: string | null
  readonly metadata: Record<string, unknown>
  readonly httpPath: string | null
  readonly event: string | null
  readonly recordSlug: string | null
  /** ISO; scheduled triggers only */
  readonly nextRunAt: string | null
}

export interface NewTrigger extends TriggerFields {
  readonly id: string
  readonly workspace: string
  readonly executionType: string
  readonly by: string | null
  readonly byKind: "user" | "service"
}

export class TriggerRepo extends Context.Service<
  TriggerRepo,
  {
    readonly insert: (t: NewTrigger) => Effect.Effect<TriggerRow, SqlError>
    readonly get: (workspace: string, id: string) => Effect.Effect<TriggerRow | undefined, SqlError>
    readonly byName: (workspace: string, name: string) => Effect.Effect<TriggerRow | undefined, SqlError>
    readonly byPath: (workspace: string, path: string) => Effect.Effect<TriggerRow | undefined, SqlError>
    readonly list: (workspace: string, spec: ListSpec) => Effect.Effect<{ rows: ReadonlyArray<TriggerRow>; total: number }, SqlError>
    readonly update: (
      workspace: string,
      id: string,
      fields: TriggerFields,
      by: string | null
    ) => Effect.Effect<TriggerRow | undefined, SqlError>
    readonly setPaused: (
      workspace: string,
      id: string,
      paused: boolean,
      nextRunAt: string | null
    ) => Effect.Effect<TriggerRow | undefined, SqlError>
    readonly delete: (workspace: string, id: string) => Effect.Effect<boolean, SqlError>
    readonly versions: (id: string) => Effect.Effect<ReadonlyArray<Record<string, unknown>>, SqlError>
    /** Event-driven triggers of these workspaces whose function exists (the relay's consumer). */
    readonly eventDriven: (workspaces: ReadonlyArray<string>) => Effect.Effect<ReadonlyArray<TriggerRow>, SqlError>
  }
>()("@troupe/server/compute/TriggerRepo") {
  static readonly layer = Layer.effect(
    TriggerRepo,
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient

      const storeVersion = (t: TriggerRow, by: string | null) =>
        sql`INSERT INTO trigger_versions (trigger_id, version, workspace, name, description, function_id, metadata, created_by)
        VALUES (${t.id}, ${t.version}, ${t.workspace}, ${t.name}, ${t.description}, ${t.functionId},
          ${JSON.stringify(t.metadata)}::jsonb, ${by})`

      const insert = (t: NewTrigger) =>
        sql.withTransaction(
          Effect.gen(function* () {
            const rows = yield* sql`INSERT INTO triggers (id, workspace, name, description, function_id, execution_type, metadata,
            http_path, event, record_slug, next_run_at, created_by, created_by_kind, updated_by)
          VALUES (${t.id}, ${t.workspace}, ${t.name}, ${t.description}, ${t.functionId}, ${t.executionType},
            ${JSON.stringify(t.metadata)}::jsonb, ${t.httpPath}, ${t.event}, ${t.recordSlug}, ${t.nextRunAt}::timestamptz,
            ${t.by}, ${t.byKind}, ${t.by})
          RETURNING *`
            const row = triggerRow(rows[0])
            yield* storeVersion(row, t.by)
            return row
          })
        )

      const one = (rows: ReadonlyArray<unknown>) => (rows[0] === undefined ? undefined : triggerRow(rows[0]))

      const list = (workspace: string, spec: ListSpec) =>
        Effect.map(listRows(sql, "triggers", "*", triggerSortFields, workspace, spec), ({ rows, total }) => ({
          rows: rows.map(triggerRow),
          total
        }))

      const update = (workspace: string, id: string, f: TriggerFields, by: string | null) =>
        sql.withTransaction(
          Effect.gen(function* () {
            const rows = yield* sql`UPDATE triggers SET name = ${f.name}, description = ${f.description},
            function_id = ${f.functionId}, metadata = ${JSON.stringify(f.metadata)}::jsonb, http_path = ${f.httpPath},
            event = ${f.event}, record_slug = ${f.recordSlug},
            next_run_at = CASE WHEN paused THEN NULL ELSE ${f.nextRunAt}::timestamptz END,
            version = version + 1, updated_by = ${by}, updated_at = now()
          WHERE workspace = ${workspace} AND id = ${id} AND NOT is_system
          RETURNING *`
            const row = one(rows)
            if (row !== undefined) yield* storeVersion(row, by)
            return row
          })
        )

      return TriggerRepo.of({
        insert,
        get: (workspace, id) => Effect.map(sql`SELECT * FROM triggers WHERE workspace = ${workspace} AND id = ${id}`, one),
        byName: (workspace, name) => Effect.map(sql`SELECT * FROM triggers WHERE workspace = ${workspace} AND name = ${name}`, one),
        byPath: (workspace, path) => Effect.map(sql`SELECT * FROM triggers WHERE workspace = ${workspace} AND http_path = ${path}`, one),
        list,
        update,
        setPaused: (workspace, id, paused, nextRunAt) =>
          Effect.map(
            sql`UPDATE triggers SET paused = ${paused}, next_run_at = ${nextRunAt}::timestamptz, updated_at = now()
          WHERE workspace = ${workspace} AND id = ${id} RETURNING *`,
            one
          ),
        delete: (workspace, id) =>
          Effect.map(
            sql`DELETE FROM triggers WHERE workspace = ${workspace} AND id = ${id} AND NOT is_system RETURNING id`,
            (rows) => rows.length > 0
          ),
        versions: (id) =>
          Effect.map(sql`SELECT * FROM trigger_versions WHERE trigger_id = ${id} ORDER BY version DESC`, (rows) =>
            rows.map((r: any) => ({
              triggerId: String(r.trigger_id),
              version: num(r.version),
              name: r.name,
              description: r.description ?? null,
              functionId: r.function_id === null ? null : String(r.function_id),
              triggerMetadata: json<Record<string, unknown>>(r.metadata) ?? {},
              createdBy: r.created_by ?? null,
              createdAt: iso(r.created_at)
            }))
          ),
        eventDriven: (workspaces) =>
          workspaces.length === 0
            ? Effect.succeed([])
            : Effect.map(
                sql`SELECT t.* FROM triggers t JOIN functions f ON f.id = t.function_id
            WHERE t.execution_type = 'event-driven' AND ${sql.in("t.workspace", workspaces)}`,
                (rows) => rows.map(triggerRow)
              )
      })
    })
  )
}
