/**
 * Structure routes (data-service.md §4.1) and their `/collections` alias with the simplified `fields` map body.
 *
 * @since 0.1.0
 */
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup } from "effect/http-api"
import { Authorization, RateClass, RequiredPermission } from "../Authorization.ts"
import { BadRequest, Conflict, Forbidden, Locked, NotFound, TooManyRequests } from "../Errors.ts"
import { workspaceBase, WorkspaceParams } from "../Workspace.ts"
import {
  PropertyDefinition,
  Structure,
  StructureInput,
  StructureList,
  StructureUpdate,
  StructureValidation
} from "./Structure.ts"

const Id = { ...WorkspaceParams, id: Schema.String }
const errors = [BadRequest, Forbidden, NotFound, Conflict, Locked, TooManyRequests] as const

/** `true` / `false` in a query string. */
export const QueryBoolean = Schema.Literals(["true", "false", "1", "0"])

/** Query of `GET /structures`. @category models */
export const StructureListQuery = {
  page: Schema.optional(Schema.NumberFromString),
  limit: Schema.optional(Schema.NumberFromString),
  search: Schema.optional(Schema.String),
  searchField: Schema.optional(Schema.String),
  "sort[field]": Schema.optional(Schema.String),
  "sort[direction]": Schema.optional(Schema.Literals(["asc", "desc", "ASC", "DESC"])),
  "filter[status]": Schema.optional(Schema.Literals(["active", "inactive"])),
  "filter[isDeleted]": Schema.optional(QueryBoolean)
}

/** One structure version (when `enableVersioning` is on). @category models */
export const StructureVersion = Schema.Struct({
  structureId: Schema.String,
  version: Schema.Number,
  definition: Structure,
  createdAt: Schema.String,
  createdBy: Schema.NullOr(Schema.String)
}).annotate({ identifier: "StructureVersion" })

/** The simplified body of `/collections`: a `fields` map of name to `{type, required, ...}`. @category models */
export const CollectionInput = Schema.Struct({
  name: Schema.String,
  fields: Schema.optionalKey(Schema.Record(Schema.String, Schema.Record(Schema.String, Schema.Json))),
  properties: Schema.optionalKey(Schema.Array(PropertyDefinition)),
  recordSlug: Schema.optionalKey(Schema.String),
  description: Schema.optionalKey(Schema.String)
}).annotate({ identifier: "CollectionInput" })

/** Update body of `/collections/{id}`. @category models */
export const CollectionUpdate = Schema.Struct({
  name: Schema.optionalKey(Schema.String),
  fields: Schema.optionalKey(Schema.Record(Schema.String, Schema.Record(Schema.String, Schema.Json))),
  properties: Schema.optionalKey(Schema.Array(PropertyDefinition)),
  recordSlug: Schema.optionalKey(Schema.String),
  description: Schema.optionalKey(Schema.String)
}).annotate({ identifier: "CollectionUpdate" })

// Annotations keep the endpoint's type; `any` only bridges annotate's generic signature.
const read = <E>(e: E): E => (e as any).annotate(RequiredPermission, "read:structures").annotate(RateClass, "reads")
const write = <E>(e: E): E => (e as any).annotate(RequiredPermission, "write:structures").annotate(RateClass, "writes")

/** @category groups */
export class StructuresApi extends HttpApiGroup.make("structures")
  .add(
    read(HttpApiEndpoint.get("list", "/structures", { params: WorkspaceParams, query: StructureListQuery, success: StructureList, error: errors })),
    write(HttpApiEndpoint.post("create", "/structures", { params: WorkspaceParams, payload: StructureInput, success: Structure, error: errors })),
    read(HttpApiEndpoint.post("validate", "/structures/validate", {
      params: WorkspaceParams,
      payload: Schema.Record(Schema.String, Schema.Json),
      success: StructureValidation,
      error: errors
    })),
    read(HttpApiEndpoint.get("getBySlug", "/structures/slug/:recordSlug", {
      params: { ...WorkspaceParams, recordSlug: Schema.String },
      success: Structure,
      error: errors
    })),
    read(HttpApiEndpoint.get("get", "/structures/:id", { params: Id, success: Structure, error: errors })),
    write(HttpApiEndpoint.put("update", "/structures/:id", { params: Id, payload: StructureUpdate, success: Structure, error: errors })),
    write(HttpApiEndpoint.patch("patch", "/structures/:id", { params: Id, payload: StructureUpdate, success: Structure, error: errors })),
    write(HttpApiEndpoint.delete("delete", "/structures/:id", {
      params: Id,
      query: { hard: Schema.optional(QueryBoolean) },
      success: Structure,
      error: errors
    })),
    write(HttpApiEndpoint.delete("deleteProperties", "/structures/:id/properties", {
      params: Id,
      payload: Schema.Struct({ ids: Schema.Array(Schema.String) }),
      success: Structure,
      error: errors
    })),
    read(HttpApiEndpoint.get("versions", "/structures/:id/versions", {
      params: Id,
      success: Schema.Struct({ versions: Schema.Array(StructureVersion) }),
      error: errors
    })),
    read(HttpApiEndpoint.get("version", "/structures/:id/versions/:version", {
      params: { ...Id, version: Schema.NumberFromString },
      success: StructureVersion,
      error: errors
    })),
    // The simplified `/collections` listing of the same resource.
    read(HttpApiEndpoint.get("listCollections", "/collections", { params: WorkspaceParams, query: StructureListQuery, success: StructureList, error: errors })),
    write(HttpApiEndpoint.post("createCollection", "/collections", { params: WorkspaceParams, payload: CollectionInput, success: Structure, error: errors })),
    read(HttpApiEndpoint.get("getCollection", "/collections/:id", { params: Id, success: Structure, error: errors })),
    write(HttpApiEndpoint.put("updateCollection", "/collections/:id", { params: Id, payload: CollectionUpdate, success: Structure, error: errors })),
    write(HttpApiEndpoint.delete("deleteCollection", "/collections/:id", {
      params: Id,
      query: { hard: Schema.optional(QueryBoolean) },
      success: Structure,
      error: errors
    }))
  )
  .middleware(Authorization)
  .prefix(workspaceBase)
{}
