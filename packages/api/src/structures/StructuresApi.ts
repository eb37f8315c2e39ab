/**
 * Structure routes (README "Structures"), their version history, pinning, bulk property deletion, the
 * platform-admin metadata route, and the `/collections` alias with the simplified `fields` map body.
 *
 * A create body is checked in one pass (types and rules together), so one 400 names every problem. Other payloads
 * are decoded with `errors: "all"`: an update with several type mistakes gets one 400 naming each of them, and
 * once it decodes, every rule problem at once. `POST /structures/validate` accepts any JSON body, answers 200.
 *
 * @since 0.1.0
 */
import { Schema } from "effect"
import { HttpApi, HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import { Authorization, RateClass, RequiredPermission } from "../Authorization.ts"
import { BadRequest, Conflict, Forbidden, Locked, NotFound, TooManyRequests } from "../Errors.ts"
import { workspaceBase, WorkspaceParams } from "../Workspace.ts"
import {
  PropertyDefinition,
  Structure,
  StructureInput,
  StructureList,
  StructureMetadataUpdate,
  StructureUpdate,
  StructureValidation
} from "./Structure.ts"

const Id = { ...WorkspaceParams, id: Schema.String }
const errors = [BadRequest, Forbidden, NotFound, Conflict, Locked, TooManyRequests] as const

/** `true` / `false` in a query string. */
export const QueryBoolean = Schema.Literals(["true", "false", "1", "0"])

/** Query of `GET /structures`. @category models */
export const StructureListQuery = {
  page: Schema.optional(Schema.FiniteFromString.annotate({ description: "1-based page (default 1)" })),
  limit: Schema.optional(Schema.FiniteFromString.annotate({ description: "Page size (default 500, at most 500)" })),
  search: Schema.optional(Schema.String.annotate({ description: "Case-insensitive substring of `searchField`" })),
  searchField: Schema.optional(Schema.Literals(["name", "recordSlug", "description", "id"])),
  "sort[field]": Schema.optional(Schema.Literals(["name", "recordSlug", "createdAt", "updatedAt", "version", "status"])),
  "sort[direction]": Schema.optional(Schema.Literals(["asc", "desc", "ASC", "DESC"])),
  "filter[status]": Schema.optional(Schema.Literals(["active", "inactive"])),
  "filter[isDeleted]": Schema.optional(QueryBoolean.annotate({ description: "true lists soft-deleted structures only (default false)" }))
}

/** One stored structure version (kept while `enableVersioning` is on). @category models */
export const StructureVersion = Schema.Struct({
  structureId: Schema.String,
  version: Schema.Finite,
  definition: Structure,
  pinned: Schema.Boolean.annotate({
    description: "Pinned versions survive retention while pinnedVersionsRetained is on"
  }),
  createdAt: Schema.String,
  createdBy: Schema.NullOr(Schema.String)
}).annotate({ identifier: "StructureVersion" })
/** @category models */
export type StructureVersion = typeof StructureVersion.Type

/** Answer of `GET /structures/{id}/versions`, newest first. @category models */
export const StructureVersionList = Schema.Struct({ versions: Schema.Array(StructureVersion) }).annotate({
  identifier: "StructureVersionList"
})

/** Body of `DELETE /structures/{id}/properties`. @category models */
export const PropertyIds = Schema.Struct({ ids: Schema.Array(Schema.String) }).annotate({ identifier: "PropertyIds" })

/** One entry of a collection's `fields` map: `{type, required, ...}` plus any property field. @category models */
export const CollectionField = Schema.Record(Schema.String, Schema.Json)

/** The simplified body of `POST /collections`: a `fields` map of name to `{type, required, ...}`. @category models */
export const CollectionInput = Schema.Struct({
  name: Schema.String,
  fields: Schema.optionalKey(Schema.Record(Schema.String, CollectionField)),
  properties: Schema.optionalKey(Schema.Array(PropertyDefinition)),
  recordSlug: Schema.optionalKey(Schema.String),
  description: Schema.optionalKey(Schema.String)
}).annotate({ identifier: "CollectionInput" })
/** @category models */
export type CollectionInput = typeof CollectionInput.Type

/**
 * Update body of `PUT /collections/{id}`: a field named like an existing property replaces it (keeping its id),
 * a new name adds one, and fields left out are kept. @category models
 */
export const CollectionUpdate = Schema.Struct({
  name: Schema.optionalKey(Schema.String),
  fields: Schema.optionalKey(Schema.Record(Schema.String, CollectionField)),
  properties: Schema.optionalKey(Schema.Array(PropertyDefinition)),
  recordSlug: Schema.optionalKey(Schema.String),
  description: Schema.optionalKey(Schema.String)
}).annotate({ identifier: "CollectionUpdate" })
/** @category models */
export type CollectionUpdate = typeof CollectionUpdate.Type

/** A structure as the `/collections` routes answer it: the full structure plus its `fields` map. @category models */
export const Collection = Schema.Struct({
  ...Structure.fields,
  fields: Schema.Record(Schema.String, CollectionField)
}).annotate({ identifier: "Collection" })
/** @category models */
export type Collection = typeof Collection.Type

/** Answer of `GET /collections`. @category models */
export const CollectionList = Schema.Struct({
  data: Schema.Array(Collection),
  meta: Schema.Struct({ total: Schema.Finite, page: Schema.Finite, pageSize: Schema.Finite })
}).annotate({ identifier: "CollectionList" })

/**
 * Body of `POST /structures`: a StructureInput. Decoding falls back to the raw body when it is not one, so the server
 * can check types and rules in one pass and name every problem in one 400; the OpenAPI document shows StructureInput.
 * @category models
 */
export const CreateBody = Schema.Union([StructureInput, Schema.Any])

/** Documents an endpoint's JSON body as `StructureInput` (its payload schema is a lenient union). */
const documentBodyAsStructureInput = (op: Record<string, any>): Record<string, any> => {
  const content = op.requestBody?.content?.["application/json"]
  if (content !== undefined) content.schema = { $ref: "#/components/schemas/StructureInput" }
  return op
}

/**
 * Body of `POST /structures/validate`: a create body, but anything is accepted (a body that is not even an object
 * is answered `{valid: false}`), so the answer can name every problem. @category models
 */
export const ValidateBody = Schema.Union([StructureInput, Schema.Any])

// Annotations keep the endpoint's type; `any` only bridges annotate's generic signature.
const read = <E>(e: E): E => (e as any).annotate(RequiredPermission, "read:structures").annotate(RateClass, "reads")
const write = <E>(e: E): E => (e as any).annotate(RequiredPermission, "write:structures").annotate(RateClass, "writes")
const admin = <E>(e: E): E => (e as any).annotate(RequiredPermission, "platform:admin").annotate(RateClass, "writes")

const VersionParams = { ...Id, version: Schema.FiniteFromString.check(Schema.isInt()) }

/** @category groups */
export class StructuresApi extends HttpApiGroup.make("structures")
  .add(
    read(
      HttpApiEndpoint.get("list", "/structures", {
        params: WorkspaceParams,
        query: StructureListQuery,
        success: StructureList,
        error: errors
      })
    ),
    write(
      HttpApiEndpoint.post("create", "/structures", {
        params: WorkspaceParams,
        payload: CreateBody,
        success: Structure,
        error: errors
      })
    ).annotate(OpenApi.Transform, documentBodyAsStructureInput),
    read(
      HttpApiEndpoint.post("validate", "/structures/validate", {
        params: WorkspaceParams,
        payload: ValidateBody,
        success: StructureValidation,
        error: errors
      })
    ).annotate(OpenApi.Transform, documentBodyAsStructureInput),
    read(
      HttpApiEndpoint.get("getBySlug", "/structures/slug/:recordSlug", {
        params: { ...WorkspaceParams, recordSlug: Schema.String },
        success: Structure,
        error: errors
      })
    ),
    read(HttpApiEndpoint.get("get", "/structures/:id", { params: Id, success: Structure, error: errors })),
    write(
      HttpApiEndpoint.put("update", "/structures/:id", {
        params: Id,
        payload: StructureUpdate,
        success: Structure,
        error: errors
      })
    ),
    write(
      HttpApiEndpoint.patch("patch", "/structures/:id", {
        params: Id,
        payload: StructureUpdate,
        success: Structure,
        error: errors
      })
    ),
    write(
      HttpApiEndpoint.delete("delete", "/structures/:id", {
        params: Id,
        query: { hard: Schema.optional(QueryBoolean) },
        success: Structure,
        error: errors
      })
    ),
    write(
      HttpApiEndpoint.delete("deleteProperties", "/structures/:id/properties", {
        params: Id,
        payload: PropertyIds,
        success: Structure,
        error: errors
      })
    ),
    admin(
      HttpApiEndpoint.put("setMetadata", "/structures/:id/metadata", {
        params: Id,
        payload: StructureMetadataUpdate,
        success: Structure,
        error: errors
      })
    ),
    read(
      HttpApiEndpoint.get("versions", "/structures/:id/versions", {
        params: Id,
        success: StructureVersionList,
        error: errors
      })
    ),
    read(
      HttpApiEndpoint.get("version", "/structures/:id/versions/:version", {
        params: VersionParams,
        success: StructureVersion,
        error: errors
      })
    ),
    write(
      HttpApiEndpoint.post("pinVersion", "/structures/:id/versions/:version/pin", {
        params: VersionParams,
        success: StructureVersion,
        error: errors
      })
    ),
    write(
      HttpApiEndpoint.post("unpinVersion", "/structures/:id/versions/:version/unpin", {
        params: VersionParams,
        success: StructureVersion,
        error: errors
      })
    ),
    // The simplified `/collections` listing of the same resource.
    read(
      HttpApiEndpoint.get("listCollections", "/collections", {
        params: WorkspaceParams,
        query: StructureListQuery,
        success: CollectionList,
        error: errors
      })
    ),
    write(
      HttpApiEndpoint.post("createCollection", "/collections", {
        params: WorkspaceParams,
        payload: CollectionInput,
        success: Collection,
        error: errors
      })
    ),
    read(HttpApiEndpoint.get("getCollection", "/collections/:id", { params: Id, success: Collection, error: errors })),
    write(
      HttpApiEndpoint.put("updateCollection", "/collections/:id", {
        params: Id,
        payload: CollectionUpdate,
        success: Collection,
        error: errors
      })
    ),
    write(
      HttpApiEndpoint.delete("deleteCollection", "/collections/:id", {
        params: Id,
        query: { hard: Schema.optional(QueryBoolean) },
        success: Collection,
        error: errors
      })
    )
  )
  .middleware(Authorization)
  .prefix(workspaceBase)
  // One 400 names every decode problem of a body or query, not only the first.
  .annotate(HttpApi.PayloadParseOptions, { errors: "all" })
  .annotate(HttpApi.QueryParseOptions, { errors: "all" }) {}
