/**
 * Record routes, both generations (README "Records"). Handlers answer with the exact bodies and status codes
 * documented there (201 vs 200 on upsert, etc.); the schemas here document them.
 *
 * Bulk routes (README, "Records"): at most 1,000 items (413), non-atomic by default: 201/200 when some item was
 * written (`success` false and per-item `errors` when others failed), the contract error body when all failed. `atomic: true`
 * runs the batch in one transaction and fails it entirely (the failing item's status) on the first bad item.
 *
 * @since 0.1.0
 */
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema } from "effect/http-api"
import { Authorization, RateClass, RequiredPermission } from "../Authorization.ts"
import {
  BadRequest,
  Conflict,
  Forbidden,
  Locked,
  NotFound,
  PayloadTooLarge,
  ServiceUnavailable,
  TooManyRequests,
  Unprocessable
} from "../Errors.ts"
import { workspaceBase, WorkspaceParams } from "../Workspace.ts"
import {
  BulkResult,
  ChangelogEntry,
  DataRecord,
  FlatRecord,
  FlatRecordList,
  RecordData,
  RecordList,
  RecordVersion,
  SlugRecordList
} from "./DataRecord.ts"

const errors = [
  BadRequest,
  Forbidden,
  NotFound,
  Conflict,
  PayloadTooLarge,
  Unprocessable,
  Locked,
  TooManyRequests,
  ServiceUnavailable
] as const
const Id = { ...WorkspaceParams, id: Schema.String }
const Slug = { ...WorkspaceParams, slug: Schema.String }
const str = Schema.optional(Schema.String)

// Annotations keep the endpoint's type; `any` only bridges annotate's generic signature.
const read = <E>(e: E): E => (e as any).annotate(RequiredPermission, "read:records").annotate(RateClass, "reads")
const write = <E>(e: E): E => (e as any).annotate(RequiredPermission, "write:records").annotate(RateClass, "writes")
const bulk = <E>(e: E): E => (e as any).annotate(RequiredPermission, "write:records").annotate(RateClass, "bulk")

/** Query of generation B lists. */
export const ListQuery = {
  structureId: str,
  filter: str,
  sort: str,
  limit: str,
  offset: str,
  cursor: str,
  includeCount: str,
  expand: str,
  includeDeleted: str,
  all: str,
  reveal: str,
  search: str,
  searchFields: str,
  fields: str
}

/** Query of slug lists and generation A lists (bracket filters such as `data.age[gte]=3` are read as well). */
export const SlugListQuery = {
  search: str,
  searchFields: str,
  page: str,
  pageSize: str,
  sort: str,
  fields: str,
  all: str,
  expand: str,
  populate: str,
  query: str,
  limit: str,
  offset: str,
  reveal: str,
  includeCount: str,
  cursor: str,
  filter: str
}

const RecordOrList = Schema.Union([DataRecord, SlugRecordList])

const created = <S extends Schema.Top>(schema: S) => schema.pipe(HttpApiSchema.status(201))
/** A bulk answer: 201 for creates, else 200, whenever some item was written (`success` tells whether all were). */
const bulkCreated = BulkResult.pipe(HttpApiSchema.status(201))
const bulkDone = BulkResult
const UpsertResult = Schema.Struct({ data: Schema.Json, operation: Schema.Literals(["created", "updated"]) })

/** @category groups */
export class RecordsApi extends HttpApiGroup.make("records")
  .add(
    // generation B
    write(
      HttpApiEndpoint.post("create", "/records", {
        params: WorkspaceParams,
        query: { ttlSeconds: str, expiresAt: str, reveal: str },
        payload: Schema.Struct({ structureId: Schema.String, data: RecordData, metadata: Schema.optionalKey(RecordData) }),
        success: created(DataRecord),
        error: errors
      })
    ),
    bulk(
      HttpApiEndpoint.post("bulkCreate", "/records/bulk", {
        params: WorkspaceParams,
        payload: Schema.Struct({
          structureId: Schema.String,
          records: Schema.Array(Schema.Struct({ data: RecordData, metadata: Schema.optionalKey(RecordData) })),
          options: Schema.optionalKey(
            Schema.Struct({
              skipValidation: Schema.optionalKey(Schema.Boolean),
              returnRecords: Schema.optionalKey(Schema.Boolean),
              atomic: Schema.optionalKey(Schema.Boolean)
            })
          )
        }),
        success: bulkCreated,
        error: errors
      })
    ),
    bulk(
      HttpApiEndpoint.patch("bulkUpdate", "/records/bulk", {
        params: WorkspaceParams,
        payload: Schema.Struct({
          updates: Schema.Array(Schema.Struct({ id: Schema.String, data: RecordData, expectedVersion: Schema.optionalKey(Schema.Number) })),
          options: Schema.optionalKey(
            Schema.Struct({
              skipValidation: Schema.optionalKey(Schema.Boolean),
              createVersions: Schema.optionalKey(Schema.Boolean),
              atomic: Schema.optionalKey(Schema.Boolean)
            })
          )
        }),
        success: bulkDone,
        error: errors
      })
    ),
    bulk(
      HttpApiEndpoint.delete("bulkDelete", "/records/bulk", {
        params: WorkspaceParams,
        payload: Schema.Struct({
          ids: Schema.Array(Schema.String),
          permanent: Schema.optionalKey(Schema.Boolean),
          atomic: Schema.optionalKey(Schema.Boolean)
        }),
        success: bulkDone,
        error: errors
      })
    ),
    read(HttpApiEndpoint.get("list", "/records", { params: WorkspaceParams, query: ListQuery, success: RecordList, error: errors })),
    write(
      HttpApiEndpoint.post("upsert", "/records/slug/:slug/upsert", {
        params: Slug,
        payload: Schema.Struct({
          match: Schema.Record(Schema.String, Schema.NullOr(Schema.Union([Schema.String, Schema.Number, Schema.Boolean]))),
          data: RecordData
        }),
        success: [UpsertResult, created(UpsertResult)],
        error: errors
      })
    ),
    read(
      HttpApiEndpoint.get("listBySlug", "/records/slug/:slug", {
        params: Slug,
        query: SlugListQuery,
        success: SlugRecordList,
        error: errors
      })
    ),
    read(
      HttpApiEndpoint.get("get", "/records/:id", {
        params: Id,
        query: { ...SlugListQuery, includeHistory: str, includeChangelog: str, version: str, includeDeleted: str },
        success: RecordOrList,
        error: errors
      })
    ),
    write(
      HttpApiEndpoint.patch("update", "/records/:id", {
        params: Id,
        query: { ttlSeconds: str, expiresAt: str, clearTtl: str, reveal: str },
        payload: Schema.Struct({
          data: Schema.Record(Schema.String, Schema.Json),
          metadata: Schema.optionalKey(RecordData),
          expectedVersion: Schema.optionalKey(Schema.Number),
          reason: Schema.optionalKey(Schema.String),
          options: Schema.optionalKey(
            Schema.Struct({
              createVersion: Schema.optionalKey(Schema.Boolean),
              skipValidation: Schema.optionalKey(Schema.Boolean)
            })
          )
        }),
        success: DataRecord,
        error: errors
      })
    ),
    write(
      HttpApiEndpoint.put("replace", "/records/:id", {
        params: Id,
        query: { reveal: str },
        payload: Schema.Struct({
          data: RecordData,
          metadata: Schema.optionalKey(RecordData),
          expectedVersion: Schema.optionalKey(Schema.Number),
          reason: Schema.optionalKey(Schema.String)
        }),
        success: DataRecord,
        error: errors
      })
    ),
    write(
      HttpApiEndpoint.delete("delete", "/records/:id", {
        params: Id,
        query: { permanent: str, reason: str },
        success: Schema.Struct({ success: Schema.Boolean, id: Schema.String, deletedAt: Schema.String }),
        error: errors
      })
    ),
    read(
      HttpApiEndpoint.get("history", "/records/:id/history", {
        params: Id,
        success: Schema.Struct({ versions: Schema.Array(RecordVersion) }),
        error: errors
      })
    ),
    read(
      HttpApiEndpoint.get("changelog", "/records/:id/changelog", {
        params: Id,
        query: { limit: str, startDate: str, endDate: str },
        success: Schema.Struct({ entries: Schema.Array(ChangelogEntry) }),
        error: errors
      })
    ),
    write(
      HttpApiEndpoint.post("restore", "/records/:id/restore", {
        params: Id,
        // every field is optional, and so is the body itself (an empty body decodes as the Null payload)
        payload: [Schema.Struct({ version: Schema.optionalKey(Schema.Number), reason: Schema.optionalKey(Schema.String) }), Schema.Null],
        success: Schema.Struct({ id: Schema.String, version: Schema.Number, restoredFrom: Schema.NullOr(Schema.Number), data: RecordData }),
        error: errors
      })
    ),
    write(
      HttpApiEndpoint.post("revert", "/records/:id/revert", {
        params: Id,
        payload: [Schema.Struct({ reason: Schema.optionalKey(Schema.String) }), Schema.Null],
        success: DataRecord,
        error: errors
      })
    ),
    // generation A
    write(
      HttpApiEndpoint.post("createA", "/structures/:slug/records", {
        params: Slug,
        query: { ttlSeconds: str, expiresAt: str },
        payload: FlatRecord,
        success: created(FlatRecord),
        error: errors
      })
    ),
    bulk(
      HttpApiEndpoint.post("bulkCreateA", "/structures/:slug/records/bulk", {
        params: Slug,
        payload: Schema.Struct({ records: Schema.Array(FlatRecord), atomic: Schema.optionalKey(Schema.Boolean) }),
        success: bulkCreated,
        error: errors
      })
    ),
    bulk(
      HttpApiEndpoint.patch("bulkUpdateA", "/structures/:slug/records/bulk", {
        params: Slug,
        payload: Schema.Struct({
          query: Schema.String.annotate({ description: 'filter expression; "*" matches every record' }),
          updates: FlatRecord,
          atomic: Schema.optionalKey(Schema.Boolean)
        }),
        success: bulkDone,
        error: errors
      })
    ),
    bulk(
      HttpApiEndpoint.post("bulkDeleteA", "/structures/:slug/records/bulk-delete", {
        params: Slug,
        payload: Schema.Struct({
          query: Schema.String.annotate({ description: 'filter expression; "*" matches every record' }),
          permanent: Schema.optionalKey(Schema.Boolean),
          atomic: Schema.optionalKey(Schema.Boolean)
        }),
        success: bulkDone,
        error: errors
      })
    ),
    read(
      HttpApiEndpoint.get("listA", "/structures/:slug/records", {
        params: Slug,
        query: SlugListQuery,
        success: FlatRecordList,
        error: errors
      })
    ),
    read(
      HttpApiEndpoint.get("getA", "/structures/:slug/records/:id", {
        params: { ...Slug, id: Schema.String },
        query: { populate: str, reveal: str },
        success: FlatRecord,
        error: errors
      })
    ),
    write(
      HttpApiEndpoint.patch("updateA", "/structures/:slug/records/:id", {
        params: { ...Slug, id: Schema.String },
        payload: FlatRecord,
        success: FlatRecord,
        error: errors
      })
    ),
    write(
      HttpApiEndpoint.put("replaceA", "/structures/:slug/records/:id", {
        params: { ...Slug, id: Schema.String },
        payload: FlatRecord,
        success: FlatRecord,
        error: errors
      })
    ),
    write(
      HttpApiEndpoint.delete("deleteA", "/structures/:slug/records/:id", {
        params: { ...Slug, id: Schema.String },
        query: { permanent: str, reason: str },
        success: Schema.Struct({ success: Schema.Boolean, id: Schema.String, deletedAt: Schema.String }),
        error: errors
      })
    ),
    read(
      HttpApiEndpoint.get("historyA", "/structures/:slug/records/:id/history", {
        params: { ...Slug, id: Schema.String },
        success: Schema.Struct({
          history: Schema.Array(
            Schema.Struct({
              version: Schema.Number,
              changes: Schema.Json,
              changedBy: Schema.NullOr(Schema.String),
              changedAt: Schema.String
            })
          )
        }),
        error: errors
      })
    )
  )
  .middleware(Authorization)
  .prefix(workspaceBase) {}
