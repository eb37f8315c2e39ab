// A stored record as every reader sees it: the `records` row decoded (both drivers), and its two wire generations.
// Records (writes), query (lists, /query) and compute (the function api) all read records through this module.
import { Schema, SchemaTransformation } from "effect"
import { iso, isoOrNull, json, num } from "../lib/rows.ts"
import { isObject } from "../lib/JsonPath.ts"

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

/** A column decoded by `decode` (the drivers differ: PGlite gives Dates and parsed jsonb, sql-pg may give text). */
export const column = <From extends Schema.Top, To>(from: From, to: Schema.Codec<To>, decode: (value: From["Type"]) => To) =>
  from.pipe(Schema.decodeTo(to, SchemaTransformation.transform<To, From["Type"]>({ decode, encode: (value) => value as From["Type"] })))

export const Timestamp = column(Schema.Unknown, Schema.String, iso)
export const TimestampOrNull = column(Schema.Unknown, Schema.NullOr(Schema.String), isoOrNull)
export const JsonObject = column(Schema.Unknown, Schema.Record(Schema.String, Schema.Unknown), (v) =>
  json<Record<string, unknown>>(v ?? {})
)
export const JsonValue = column(Schema.Unknown, Schema.Unknown, (v) => json(v))
export const Count = column(Schema.Union([Schema.Number, Schema.BigInt, Schema.String]), Schema.Number, num)

/** A row of `records` as either driver returns it (extra columns, such as a query's cursor, are dropped). */
export const RecordRowDb = Schema.Struct({
  id: Schema.String,
  workspace: Schema.String,
  structure_id: Schema.String,
  data: JsonObject,
  metadata: JsonObject,
  version: Count,
  status: Schema.String,
  created_by: Schema.NullOr(Schema.String),
  updated_by: Schema.NullOr(Schema.String),
  created_at: Timestamp,
  updated_at: Timestamp,
  deleted_at: TimestampOrNull,
  expires_at: TimestampOrNull
})
const decodeRecordRowDb = Schema.decodeUnknownSync(RecordRowDb)

const isText = (v: unknown): v is string => typeof v === "string"
const isTextOrNull = (v: unknown): v is string | null => v === null || typeof v === "string"
const isInstant = (v: unknown) => v instanceof Date || typeof v === "string"
const isInstantOrNull = (v: unknown) => v === null || isInstant(v)
/** The columns of a row under their record names, its timestamps given as ISO text. */
const renamed = (
  r: Omit<typeof RecordRowDb.Type, "created_at" | "updated_at" | "deleted_at" | "expires_at">,
  createdAt: string,
  updatedAt: string,
  deletedAt: string | null,
  expiresAt: string | null
): RecordRow => ({
  id: r.id,
  workspace: r.workspace,
  structureId: r.structure_id,
  data: r.data,
  metadata: r.metadata,
  version: r.version,
  status: r.status,
  createdBy: r.created_by,
  updatedBy: r.updated_by,
  createdAt,
  updatedAt,
  deletedAt,
  expiresAt
})

/**
 * The row as both drivers give it on the hot path (text, Dates, parsed jsonb objects, a number), checked field by
 * field; `undefined` for anything else, which `RecordRowDb` then decodes or refuses.
 */
const nativeRow = (row: unknown): RecordRow | undefined => {
  if (!isObject(row)) return undefined
  const r = row
  if (
    !isText(r.id) ||
    !isText(r.workspace) ||
    !isText(r.structure_id) ||
    !isObject(r.data) ||
    !isObject(r.metadata) ||
    typeof r.version !== "number" ||
    !isText(r.status) ||
    !isTextOrNull(r.created_by) ||
    !isTextOrNull(r.updated_by) ||
    !isInstant(r.created_at) ||
    !isInstant(r.updated_at) ||
    !isInstantOrNull(r.deleted_at) ||
    !isInstantOrNull(r.expires_at)
  )
    return undefined
  return renamed(r as typeof RecordRowDb.Type, iso(r.created_at), iso(r.updated_at), isoOrNull(r.deleted_at), isoOrNull(r.expires_at))
}

/**
 * A `records` row, decoded. `RecordRowDb` is the definition; the rows both drivers return on the read path are
 * checked and converted directly (the generic decode costs six times as much, and every read and every row of every
 * page goes through here), anything else goes through the schema. A row that does not decode is a defect (the
 * schema and the table disagree). Field renames are done by hand: Schema.encodeKeys costs four times the decode.
 */
export const decodeRecordRow = (row: unknown): RecordRow => {
  const native = nativeRow(row)
  if (native !== undefined) return native
  const r = decodeRecordRowDb(row)
  return renamed(r, r.created_at, r.updated_at, r.deleted_at, r.expires_at)
}

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

export { isUuid } from "../lib/Uuid.ts"
