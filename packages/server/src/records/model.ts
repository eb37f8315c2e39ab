// Records on the server: the row, who is writing, and the conversions to both wire generations. Secret
// properties are stored encrypted and masked on the way out unless the caller may and asks to reveal them.
import type { Structure } from "@troupe/api/structures/Structure"
import { Schema } from "effect"
import { iso, isoOrNull, json, num } from "../lib/rows.ts"
import { jsonEqual } from "../structures/Formats.ts"
import { secretFields as validatorSecretFields } from "../structures/Validator.ts"

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
  canSkipValidation: Schema.Boolean,
  /** writes made by a function run: its id and trigger depth (event-driven triggers stop at a depth limit) */
  runId: Schema.optionalKey(Schema.String),
  depth: Schema.optionalKey(Schema.Int)
})
export type Writer = typeof Writer.Type

export const MASK = "********"

/** Secret string properties as paths below `data` (top level and inside objects), e.g. `["creds", "token"]`. */
export const secretPaths = (structure: Structure): ReadonlyArray<ReadonlyArray<string>> => {
  const cached = secretCache.get(structure)
  if (cached) return cached
  const paths = validatorSecretFields(structure).map((f) => f.split("."))
  secretCache.set(structure, paths)
  return paths
}
const secretCache = new WeakMap<Structure, ReadonlyArray<ReadonlyArray<string>>>()

/** Dotted names of the secret paths (the encryption context of each). */
export const secretFields = (structure: Structure): ReadonlyArray<string> =>
  secretPaths(structure).map((p) => p.join("."))

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v)

/** The value at a path, or undefined. */
export const getAt = (data: unknown, path: ReadonlyArray<string>): unknown => {
  let cur = data
  for (const key of path) {
    if (!isObject(cur) || !Object.hasOwn(cur, key)) return undefined
    cur = cur[key]
  }
  return cur
}

/** A copy of `data` with the value at `path` replaced (copy on write along the path); the path must exist. */
export const setAt = (
  data: Record<string, unknown>,
  path: ReadonlyArray<string>,
  value: unknown
): Record<string, unknown> => {
  const [head, ...rest] = path
  if (head === undefined) return data
  if (rest.length === 0) return { ...data, [head]: value }
  const child = data[head]
  return isObject(child) ? { ...data, [head]: setAt(child, rest, value) } : data
}

/** Stored data with secret values masked. */
export const maskData = (structure: Structure, data: Record<string, unknown>): Record<string, unknown> => {
  const paths = secretPaths(structure)
  if (paths.length === 0) return data
  let out = data
  for (const path of paths) {
    const v = getAt(out, path)
    if (v !== undefined && v !== null) out = setAt(out, path, MASK)
  }
  return out
}

/** The values a stored change holds: `{old, new}` in versions, `{field, oldValue, newValue}` in the changelog. */
const changeValueKeys = ["old", "new", "oldValue", "newValue"] as const

/**
 * Stored `changes` (of a version or a changelog entry) with the values at `paths` masked. Changes are masked when
 * written, under the definition of that moment: this masks again, under another one (read time, or the structure
 * update that makes a field secret), so values written before a field became secret never show.
 */
export const maskChangesAt = (changes: unknown, paths: ReadonlyArray<ReadonlyArray<string>>): unknown => {
  if (paths.length === 0 || !isObject(changes)) return changes
  let out = changes
  for (const [root, ...rest] of paths) {
    const change = root === undefined ? undefined : out[root]
    if (!isObject(change)) continue
    let masked = change
    for (const key of changeValueKeys) {
      const v = masked[key]
      if (v === undefined || v === null) continue
      if (rest.length === 0) masked = { ...masked, [key]: MASK }
      else if (isObject(v)) {
        const inner = getAt(v, rest)
        if (inner !== undefined && inner !== null && inner !== MASK) masked = { ...masked, [key]: setAt(v, rest, MASK) }
      }
    }
    if (masked !== change) out = { ...out, [root!]: masked }
  }
  return out
}

/** Stored `changes` with the structure's secret fields masked (history and changelog answers). */
export const maskChanges = (structure: Structure, changes: unknown): unknown => maskChangesAt(changes, secretPaths(structure))

export type Changes = Record<string, { old: unknown; new: unknown }>

/** Top-level fields whose values differ; secrets (at any depth) masked. */
export const diff = (
  structure: Structure | undefined,
  before: Record<string, unknown>,
  after: Record<string, unknown>
): Changes => {
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
