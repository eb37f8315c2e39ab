// The rows one record write adds beside the record itself (version, changelog entry, outbox event), and the
// statements that insert any number of them at once: a single write inserts one of each, a group commit or a bulk
// request one statement per table for the whole batch.
import type { Structure } from "@troupe/api/structures/Structure"
import { Effect } from "effect"
import type { SqlClient } from "effect/sql"
import type { SqlError } from "effect/sql/SqlError"
import * as Crypto from "node:crypto"
import type { OutboxEvent } from "../events/Outbox.ts"
import { type Changes, changelogChanges, fromRow, maskData, type RecordRow, type Writer } from "./model.ts"

/** The event of one record write, as webhooks, SSE and triggers receive it (secrets masked). */
export const eventOf = (
  type: string,
  structure: Structure,
  row: RecordRow,
  previous: Record<string, unknown> | null,
  changes: Changes,
  writer: Writer
): OutboxEvent => ({
  workspace: structure.workspaceSlug,
  type,
  structureId: structure.id,
  recordSlug: structure.recordSlug,
  recordId: row.id,
  payload: {
    event: type,
    timestamp: new Date().toISOString(),
    workspace: structure.workspaceSlug,
    structure: structure.recordSlug,
    data: {
      record: { id: row.id, structureId: structure.id, data: maskData(structure, row.data), version: row.version },
      previous: previous === null ? null : { data: maskData(structure, previous) },
      changes,
      metadata: {
        userId: writer.userId,
        source: writer.source,
        ...(writer.runId !== undefined ? { runId: writer.runId, depth: writer.depth ?? 0 } : {})
      }
    }
  }
})

const changelogMeta = (writer: Writer, extra: Record<string, unknown>) => ({
  ...(writer.clientAddress ? { clientAddress: writer.clientAddress } : {}),
  ...(writer.userAgent ? { userAgent: writer.userAgent } : {}),
  source: writer.source,
  ...extra
})

export const changelogRow = (row: RecordRow, action: string, changes: Changes, writer: Writer, meta: Record<string, unknown> = {}) => ({
  id: Crypto.randomUUID(),
  record_id: row.id,
  workspace: row.workspace,
  action,
  user_id: writer.userId,
  user_name: writer.userName,
  changes: changelogChanges(changes),
  metadata: changelogMeta(writer, meta)
})
export type ChangelogRow = ReturnType<typeof changelogRow>

export const versionRow = (row: RecordRow, changes: Changes, writer: Writer, restoredFrom: number | null = null) => ({
  record_id: row.id,
  version: row.version,
  data: row.data,
  changes,
  restored_from: restoredFrom,
  created_by: writer.userId
})
export type VersionRow = ReturnType<typeof versionRow>

/** Changelog rows in one statement. */
export const insertChangelog = (sql: SqlClient.SqlClient, rows: ReadonlyArray<ChangelogRow>) =>
  rows.length === 1
    ? sql`INSERT INTO record_changelog (id, record_id, workspace, action, user_id, user_name, changes, metadata)
      VALUES (${rows[0]!.id}, ${rows[0]!.record_id}, ${rows[0]!.workspace}, ${rows[0]!.action}, ${rows[0]!.user_id},
        ${rows[0]!.user_name}, ${JSON.stringify(rows[0]!.changes)}::jsonb, ${JSON.stringify(rows[0]!.metadata)}::jsonb)`
    // a transaction's entries share now(): a microsecond apart (after any single entry of the same transaction),
    // they keep their order in the changelog
    : sql`INSERT INTO record_changelog (id, record_id, workspace, action, user_id, user_name, changes, metadata, created_at)
      SELECT id, record_id, workspace, action, user_id, user_name, changes, metadata, now() + i * interval '1 microsecond'
      FROM jsonb_to_recordset(${JSON.stringify(rows.map((r, i) => ({ ...r, i: i + 1 })))}::jsonb) AS v(i int, id uuid,
        record_id uuid, workspace text, action text, user_id text, user_name text, changes jsonb, metadata jsonb)`

/** Version rows in one statement. */
export const insertVersions = (sql: SqlClient.SqlClient, rows: ReadonlyArray<VersionRow>) =>
  rows.length === 1
    ? sql`INSERT INTO record_versions (record_id, version, data, changes, restored_from, created_by)
      VALUES (${rows[0]!.record_id}, ${rows[0]!.version}, ${JSON.stringify(rows[0]!.data)}::jsonb,
        ${JSON.stringify(rows[0]!.changes)}::jsonb, ${rows[0]!.restored_from}, ${rows[0]!.created_by})`
    : sql`INSERT INTO record_versions (record_id, version, data, changes, restored_from, created_by)
      SELECT record_id, version, data, changes, restored_from, created_by
      FROM jsonb_to_recordset(${JSON.stringify(rows)}::jsonb) AS v(record_id uuid, version int, data jsonb,
        changes jsonb, restored_from int, created_by text)`

/** A new record row, before it is inserted. */
export interface NewRecord {
  readonly id: string
  readonly workspace: string
  readonly structure_id: string
  readonly data: Record<string, unknown>
  readonly metadata: Record<string, unknown>
  readonly created_by: string
  readonly expires_at: string | null
}

/**
 * New record rows in one statement, returned in the order given. Rows of one statement share now(): a microsecond
 * apart, they keep their arrival order in `createdAt` (lists break ties by id in any case).
 */
export const insertRecords = (sql: SqlClient.SqlClient, rows: ReadonlyArray<NewRecord>): Effect.Effect<Array<RecordRow>, SqlError> =>
  sql`INSERT INTO records (id, workspace, structure_id, data, metadata, created_by, updated_by, expires_at, created_at, updated_at)
    SELECT id, workspace, structure_id, data, metadata, created_by, created_by, expires_at,
      now() + i * interval '1 microsecond', now() + i * interval '1 microsecond'
    FROM jsonb_to_recordset(${JSON.stringify(rows.map((r, i) => ({ ...r, i })))}::jsonb) AS v(i int, id uuid,
      workspace text, structure_id uuid, data jsonb, metadata jsonb, created_by text, expires_at timestamptz)
    ORDER BY i
    RETURNING *`.pipe(Effect.map((returned) => {
    // RETURNING promises no order: put the rows back in the order given
    const byId = new Map(returned.map((r: any) => [String(r.id), fromRow(r)]))
    return rows.map((r) => byId.get(r.id)!)
  }))
