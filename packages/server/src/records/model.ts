// Records on the server: who is writing, the stored versions and changelog entries, and what changed between two
// versions (secrets masked). The row itself and its wire forms are query/RecordRow.ts; secret masking is
// structures/SecretPaths.ts.
import type { Structure } from "@troupe/api/structures/Structure"
import { Schema } from "effect"
import { Count, JsonObject, JsonValue, Timestamp } from "../query/RecordRow.ts"
import { jsonEqual } from "../structures/Formats.ts"
import { maskData, secretPaths } from "../structures/SecretPaths.ts"

/** A row of `record_versions`. */
export const VersionRowDb = Schema.Struct({
  record_id: Schema.String,
  version: Count,
  data: JsonObject,
  changes: JsonValue,
  restored_from: Schema.NullOr(Count),
  created_by: Schema.NullOr(Schema.String),
  created_at: Timestamp
})
export const decodeVersionRow = Schema.decodeUnknownSync(VersionRowDb)
export type StoredVersion = typeof VersionRowDb.Type

/** A row of `record_changelog`. */
export const ChangelogRowDb = Schema.Struct({
  id: Schema.String,
  record_id: Schema.String,
  action: Schema.String,
  user_id: Schema.NullOr(Schema.String),
  user_name: Schema.NullOr(Schema.String),
  changes: JsonValue,
  metadata: JsonValue,
  created_at: Timestamp
})
export const decodeChangelogRow = Schema.decodeUnknownSync(ChangelogRowDb)
export type StoredChangelogEntry = typeof ChangelogRowDb.Type

/** Who writes, carried to whichever node runs the write (so it is a schema). */
export const Writer = Schema.Struct({
  workspace: Schema.String,
  userId: Schema.String,
  userName: Schema.String,
  source: Schema.String,
  clientAddress: Schema.optionalKey(Schema.String),
  userAgent: Schema.optionalKey(Schema.String),
  canSkipValidation: Schema.Boolean,
  /** writes made by a function run: its id and trigger depth (event-driven triggers stop at a depth limit) */
  runId: Schema.optionalKey(Schema.String),
  depth: Schema.optionalKey(Schema.Int)
})
export type Writer = typeof Writer.Type

export type Changes = Record<string, { old: unknown; new: unknown }>

/** Top-level fields whose values differ; secrets (at any depth) masked. */
export const diff = (structure: Structure | undefined, before: Record<string, unknown>, after: Record<string, unknown>): Changes => {
  const changes: Changes = {}
  const masked = structure !== undefined && secretPaths(structure).length > 0
  const shownBefore = masked ? maskData(structure, before) : before
  const shownAfter = masked ? maskData(structure, after) : after
  for (const key of new Set([...Object.keys(before), ...Object.keys(after)])) {
    const a = before[key] ?? null
    const b = after[key] ?? null
    if (!jsonEqual(a, b)) changes[key] = { old: shownBefore[key] ?? null, new: shownAfter[key] ?? null }
  }
  return changes
}

/**
 * Changelog form of stored changes: `{field: {field, oldValue, newValue}}`. A changelog entry stores its changes as
 * a version does (`{old, new}`: no JSON to rebuild per row on the write path); entries written before keep this
 * form and pass unchanged.
 */
export const changelogChanges = (changes: unknown): unknown => {
  if (typeof changes !== "object" || changes === null || Array.isArray(changes)) return changes
  const out: Record<string, unknown> = {}
  for (const [field, c] of Object.entries(changes)) {
    out[field] =
      typeof c === "object" && c !== null && !("oldValue" in c) && ("old" in c || "new" in c)
        ? { field, oldValue: (c as { old?: unknown }).old ?? null, newValue: (c as { new?: unknown }).new ?? null }
        : c
  }
  return out
}
