// The rows one record write adds beside the record itself (version, changelog entry, outbox event), built in
// memory; RecordRepo inserts any number of each in one statement.
import type { Structure } from "@troupe/api/structures/Structure"
import { uuidv7 } from "../lib/Uuid.ts"
import type { OutboxEvent } from "../events/Outbox.ts"
import type { RecordRow } from "../query/RecordRow.ts"
import type { Changes, Writer } from "./model.ts"
import { maskData } from "../structures/SecretPaths.ts"

/** The event of one record write at `timestamp` (ISO), as webhooks, SSE and triggers receive it (secrets masked). */
export const eventOf = (
  type: string,
  structure: Structure,
  row: Pick<RecordRow, "id" | "data" | "version">,
  previous: Record<string, unknown> | null,
  changes: Changes,
  writer: Writer,
  timestamp: string
): OutboxEvent => ({
  workspace: structure.workspaceSlug,
  type,
  structureId: structure.id,
  recordSlug: structure.recordSlug,
  recordId: row.id,
  payload: {
    event: type,
    timestamp,
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

export const changelogRow = (
  row: Pick<RecordRow, "id" | "workspace">,
  action: string,
  changes: Changes,
  writer: Writer,
  meta: Record<string, unknown> = {}
) => ({
  id: uuidv7(),
  record_id: row.id,
  workspace: row.workspace,
  action,
  user_id: writer.userId,
  user_name: writer.userName,
  changes,
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
