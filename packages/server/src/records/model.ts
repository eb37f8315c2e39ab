// Records on the server: the row, who is writing, and the conversions to both wire generations. Secret
// properties are stored encrypted and masked on the way out unless the caller may and asks to reveal them.
import type { Structure } from "@troupe/api/structures/Structure"
import { Schema } from "effect"
import { iso, isoOrNull, json, num } from "../lib/rows.ts"
import { jsonEqual } from "../structures/Formats.ts"

export interface RecordRow {
  readonly id: string
  readonly workspace: string
  readonly structureId: string
  readonly data: Record<string, unknown>
  readonly metadata: Record<string, unknown>
  readonly version: number
  readonly status: string
  readonly createdBy: string | null
  readonly updatedBy: string | null
  readonly createdAt: string
  readonly updatedAt: string
  readonly deletedAt: string | null
  readonly expiresAt: string | null
}

export const fromRow = (row: any): RecordRow => ({
  id: row.id,
  workspace: row.workspace,
  structureId: row.structure_id,
  data: json(row.data),
  metadata: json(row.metadata ?? {}),
  version: num(row.version),
  status: row.status,
  createdBy: row.created_by ?? null,
  updatedBy: row.updated_by ?? null,
  createdAt: iso(row.created_at),
  updatedAt: iso(row.updated_at),
  deletedAt: isoOrNull(row.deleted_at),
  expiresAt: isoOrNull(row.expires_at)
})

/** Who writes, carried to whichever node runs the write (so it is a schema). */
export const Writer = Schema.Struct({
  workspace: Schema.String,
  userId: Schema.String,
  userName: Schema.String,
  source: Schema.String,
  clientAddress: Schema.optionalKey(Schema.String),
  userAgent: Schema.optionalKey(Schema.String),
  canSkipValidation: Schema.Boolean
})
export type Writer = typeof Writer.Type

export const MASK = "********"

/** Names of top-level secret properties. */
export const secretFields = (structure: Structure): ReadonlyArray<string> => {
  const cached = secretCache.get(structure)
  if (cached) return cached
  const fields = structure.properties.filter((p) => p.type === "string" && p.isSecret === true).map((p) => p.name)
  secretCache.set(structure, fields)
  return fields
}
const secretCache = new WeakMap<Structure, ReadonlyArray<string>>()

/** Stored data with secret values masked. */
export const maskData = (structure: Structure, data: Record<string, unknown>): Record<string, unknown> => {
  const secrets = secretFields(structure)
  if (secrets.length === 0) return data
  const out = { ...data }
  for (const f of secrets) if (out[f] !== undefined && out[f] !== null) out[f] = MASK
  return out
}

export type Changes = Record<string, { old: unknown; new: unknown }>

/** Top-level fields whose values differ; secrets masked. */
export const diff = (structure: Structure | undefined, before: Record<string, unknown>, after: Record<string, unknown>): Changes => {
  const changes: Changes = {}
  const secrets = structure ? secretFields(structure) : []
  for (const key of new Set([...Object.keys(before), ...Object.keys(after)])) {
    const a = before[key] ?? null
    const b = after[key] ?? null
    if (!jsonEqual(a, b)) {
      changes[key] = secrets.includes(key) ? { old: a === null ? null : MASK, new: b === null ? null : MASK } : { old: a, new: b }
    }
  }
  return changes
}

/** Changelog form of changes: `{field: {field, oldValue, newValue}}`. */
export const changelogChanges = (changes: Changes) =>
  Object.fromEntries(Object.entries(changes).map(([field, c]) => [field, { field, oldValue: c.old, newValue: c.new }]))

/** Generation B. */
export const toRecordB = (row: RecordRow, data: Record<string, unknown>, extra: Record<string, unknown> = {}) => ({
  id: row.id,
  structureId: row.structureId,
  workspaceId: row.workspace,
  data,
  metadata: row.metadata,
  version: row.version,
  status: row.status,
  createdAt: row.createdAt,
  updatedAt: row.updatedAt,
  createdBy: row.createdBy,
  updatedBy: row.updatedBy,
  expiresAt: row.expiresAt,
  ...(row.deletedAt !== null ? { deletedAt: row.deletedAt } : {}),
  ...extra
})

/** Generation A: fields at top level, the system fields win over same-named data fields. */
export const toRecordA = (row: RecordRow, data: Record<string, unknown>) => ({
  ...data,
  id: row.id,
  createdAt: row.createdAt,
  updatedAt: row.updatedAt,
  createdBy: row.createdBy,
  updatedBy: row.updatedBy,
  version: row.version,
  ...(row.expiresAt !== null ? { expiresAt: row.expiresAt } : {}),
  ...(row.deletedAt !== null ? { deletedAt: row.deletedAt } : {})
})

export const isUuid = (s: string) => /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(s)
