/**
 * Records as they travel (README "Records"): generation B wraps fields in `data`; generation A is flat.
 *
 * @since 0.1.0
 */
import { Schema } from "effect"

/** Record fields: any JSON object. @category models */
export const RecordData = Schema.Record(Schema.String, Schema.Json)

/** A generation B record. @category models */
export const DataRecord = Schema.Struct({
  id: Schema.String,
  structureId: Schema.String,
  workspaceId: Schema.String,
  data: RecordData,
  metadata: RecordData,
  version: Schema.Number,
  status: Schema.String,
  createdAt: Schema.String,
  updatedAt: Schema.String,
  createdBy: Schema.NullOr(Schema.String),
  updatedBy: Schema.NullOr(Schema.String),
  expiresAt: Schema.NullOr(Schema.String),
  deletedAt: Schema.optionalKey(Schema.NullOr(Schema.String)),
  previousVersion: Schema.optionalKey(Schema.Number),
  restoredFrom: Schema.optionalKey(Schema.Number)
}).annotate({ identifier: "DataRecord" })
/** @category models */
export type DataRecord = typeof DataRecord.Type

/** A generation A record: the structure's fields at top level beside `id`, timestamps, `version`. @category models */
export const FlatRecord = Schema.Record(Schema.String, Schema.Json).annotate({ identifier: "FlatRecord" })

/** Generation B list. @category models */
export const RecordList = Schema.Struct({
  results: Schema.Array(DataRecord),
  pagination: Schema.Struct({
    limit: Schema.Number,
    offset: Schema.Number,
    /** counted with `includeCount=true`; otherwise known only on the last page of an offset listing, else null */
    total: Schema.NullOr(Schema.Number),
    hasMore: Schema.Boolean,
    nextCursor: Schema.NullOr(Schema.String)
  })
}).annotate({ identifier: "RecordList" })

/** Slug list (`GET /records/slug/{slug}`, `GET /records/{slug}`). @category models */
export const SlugRecordList = Schema.Struct({
  data: Schema.Array(DataRecord),
  meta: Schema.Struct({ total: Schema.Number, page: Schema.Number, pageSize: Schema.Number })
}).annotate({ identifier: "SlugRecordList" })

/** Generation A list. @category models */
export const FlatRecordList = Schema.Struct({
  records: Schema.Array(FlatRecord),
  total: Schema.Number,
  limit: Schema.Number,
  offset: Schema.Number
}).annotate({ identifier: "FlatRecordList" })

/** A version of a record, generation B. @category models */
export const RecordVersion = Schema.Struct({
  version: Schema.Number,
  data: RecordData,
  updatedAt: Schema.String,
  updatedBy: Schema.NullOr(Schema.String),
  changes: Schema.Record(Schema.String, Schema.Struct({ old: Schema.Json, new: Schema.Json })),
  createdAt: Schema.optionalKey(Schema.String),
  restoredFrom: Schema.optionalKey(Schema.NullOr(Schema.Number))
}).annotate({ identifier: "RecordVersion" })

/** A changelog entry. @category models */
export const ChangelogEntry = Schema.Struct({
  id: Schema.String,
  recordId: Schema.String,
  action: Schema.String,
  userId: Schema.NullOr(Schema.String),
  userName: Schema.NullOr(Schema.String),
  timestamp: Schema.String,
  changes: Schema.Record(Schema.String, Schema.Struct({ field: Schema.String, oldValue: Schema.Json, newValue: Schema.Json })),
  metadata: RecordData
}).annotate({ identifier: "ChangelogEntry" })

/** Per-item outcome of a bulk request. @category models */
export const BulkResult = Schema.Struct({
  success: Schema.Boolean,
  created: Schema.optionalKey(Schema.Number),
  updated: Schema.optionalKey(Schema.Number),
  deleted: Schema.optionalKey(Schema.Number),
  failed: Schema.Number,
  records: Schema.optionalKey(Schema.Array(DataRecord)),
  results: Schema.optionalKey(Schema.Array(Schema.Json)),
  errors: Schema.Array(
    Schema.Struct({
      index: Schema.Number,
      id: Schema.optionalKey(Schema.String),
      code: Schema.String,
      message: Schema.String,
      details: Schema.optionalKey(Schema.Json)
    })
  )
}).annotate({ identifier: "BulkResult" })
