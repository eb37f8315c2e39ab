/**
 * Data intelligence routes (CONTRACT §8.4) on the data base: schema discovery settings, scans, inference and
 * suggestions; anomaly config, analysis and insights; validation config, scans, batches and suggestions. Reading
 * needs `read:structures`; configuring, scanning and resolving `write:structures` (accepting a validation
 * suggestion also `write:records`, checked by the record update it makes).
 *
 * @since 0.1.0
 */
import { Schema } from "effect"
import { HttpApi, HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import { Authorization, RateClass, RequiredPermission } from "../Authorization.ts"
import { BadRequest, Conflict, Forbidden, Locked, NotFound, Unprocessable } from "../Errors.ts"
import { workspaceBase, WorkspaceParams } from "../Workspace.ts"
import {
  AcceptedSchemaSuggestion,
  AiConfig,
  AiConfigInput,
  AnomalyConfig,
  AnomalyConfigInput,
  AnomalyInsight,
  AnomalyInsightList,
  BatchAccepted,
  FieldProfiles,
  IntelligenceJob,
  JobAccepted,
  ListQuery,
  SchemaDiscoverySettings,
  SchemaDiscoverySettingsInput,
  SchemaSuggestion,
  SchemaSuggestionList,
  ValidationBatch,
  ValidationSuggestion,
  ValidationSuggestionList,
  WorkspaceListQuery
} from "./Intelligence.ts"

// `:id` is the collection's slug (or id): the same parameter name as the `/collections/:id` routes beside them.
const Collection = { ...WorkspaceParams, id: Schema.String }
const CollectionItem = { ...WorkspaceParams, id: Schema.String, suggestionId: Schema.String }
const Id = { ...WorkspaceParams, id: Schema.String }
const errors = [BadRequest, NotFound, Conflict, Forbidden, Locked, Unprocessable] as const

// Annotations keep the endpoint's type; `any` only bridges annotate's generic signature.
const read = <E>(e: E): E => (e as any).annotate(RequiredPermission, "read:structures").annotate(RateClass, "reads")
const write = <E>(e: E): E => (e as any).annotate(RequiredPermission, "write:structures").annotate(RateClass, "writes")

const accepted = <S extends Schema.Top>(s: S) => s.pipe(HttpApiSchema.status(202))

/** @category groups */
export class IntelligenceApi extends HttpApiGroup.make("intelligence")
  .add(
    read(
      HttpApiEndpoint.get("getSchemaDiscovery", "/collections/:id/schema-discovery", {
        params: Collection,
        success: SchemaDiscoverySettings,
        error: errors
      })
    ),
    write(
      HttpApiEndpoint.put("putSchemaDiscovery", "/collections/:id/schema-discovery", {
        params: Collection,
        payload: SchemaDiscoverySettingsInput,
        success: SchemaDiscoverySettings,
        error: errors
      })
    ),
    write(
      HttpApiEndpoint.post("scanSchema", "/collections/:id/schema-discovery/scan", {
        params: Collection,
        success: accepted(JobAccepted),
        error: errors
      })
    ),
    write(
      HttpApiEndpoint.post("triggerSchema", "/collections/:id/schema-discovery/trigger", {
        params: Collection,
        success: accepted(JobAccepted),
        error: errors
      })
    ),
    read(
      HttpApiEndpoint.get("fieldProfiles", "/collections/:id/field-profiles", {
        params: Collection,
        success: FieldProfiles,
        error: errors
      })
    ),
    read(
      HttpApiEndpoint.get("listSchemaSuggestions", "/collections/:id/schema-suggestions", {
        params: Collection,
        query: ListQuery,
        success: SchemaSuggestionList,
        error: errors
      })
    ),
    write(
      HttpApiEndpoint.post("acceptSchemaSuggestion", "/collections/:id/schema-suggestions/:suggestionId/accept", {
        params: CollectionItem,
        success: AcceptedSchemaSuggestion,
        error: errors
      })
    ),
    write(
      HttpApiEndpoint.post("rejectSchemaSuggestion", "/collections/:id/schema-suggestions/:suggestionId/reject", {
        params: CollectionItem,
        success: SchemaSuggestion,
        error: errors
      })
    ),
    read(
      HttpApiEndpoint.get("getAnomalyConfig", "/collections/:id/anomaly-config", {
        params: Collection,
        success: AnomalyConfig,
        error: errors
      })
    ),
    write(
      HttpApiEndpoint.put("putAnomalyConfig", "/collections/:id/anomaly-config", {
        params: Collection,
        payload: AnomalyConfigInput,
        success: AnomalyConfig,
        error: errors
      })
    ),
    write(
      HttpApiEndpoint.post("analyseAnomalies", "/collections/:id/anomaly-analysis", {
        params: Collection,
        success: accepted(JobAccepted),
        error: errors
      })
    ),
    read(
      HttpApiEndpoint.get("listInsights", "/anomaly-insights", {
        params: WorkspaceParams,
        query: WorkspaceListQuery,
        success: AnomalyInsightList,
        error: errors
      })
    ),
    read(HttpApiEndpoint.get("getInsight", "/anomaly-insights/:id", { params: Id, success: AnomalyInsight, error: errors })),
    write(
      HttpApiEndpoint.post("acknowledgeInsight", "/anomaly-insights/:id/acknowledge", {
        params: Id,
        success: AnomalyInsight,
        error: errors
      })
    ),
    write(HttpApiEndpoint.post("dismissInsight", "/anomaly-insights/:id/dismiss", { params: Id, success: AnomalyInsight, error: errors })),
    read(HttpApiEndpoint.get("getAiConfig", "/collections/:id/ai-config", { params: Collection, success: AiConfig, error: errors })),
    write(
      HttpApiEndpoint.put("putAiConfig", "/collections/:id/ai-config", {
        params: Collection,
        payload: AiConfigInput,
        success: AiConfig,
        error: errors
      })
    ),
    write(
      HttpApiEndpoint.post("scanValidation", "/collections/:id/ai-validation/scan", {
        params: Collection,
        success: accepted(BatchAccepted),
        error: errors
      })
    ),
    read(HttpApiEndpoint.get("getValidationBatch", "/ai-validation/batch/:id", { params: Id, success: ValidationBatch, error: errors })),
    read(
      HttpApiEndpoint.get("listValidationSuggestions", "/ai-validation/suggestions", {
        params: WorkspaceParams,
        query: WorkspaceListQuery,
        success: ValidationSuggestionList,
        error: errors
      })
    ),
    write(
      HttpApiEndpoint.post("acceptValidationSuggestion", "/ai-validation/suggestions/:id/accept", {
        params: Id,
        success: ValidationSuggestion,
        error: errors
      })
    ),
    write(
      HttpApiEndpoint.post("rejectValidationSuggestion", "/ai-validation/suggestions/:id/reject", {
        params: Id,
        success: ValidationSuggestion,
        error: errors
      })
    ),
    read(HttpApiEndpoint.get("getIntelligenceJob", "/intelligence-jobs/:id", { params: Id, success: IntelligenceJob, error: errors }))
  )
  .middleware(Authorization)
  .prefix(workspaceBase)
  .annotate(HttpApi.PayloadParseOptions, { errors: "all" })
  .annotate(HttpApi.QueryParseOptions, { errors: "all" })
  .annotateMerge(
    OpenApi.annotations({
      title: "Data intelligence",
      description:
        "Schema discovery (profiles of stored and written records, suggestions to accept or reject), anomaly insights " +
        "(robust z-scores, rare values, type mismatches) and validation suggestions (format, whitespace, casing and " +
        "near-miss checks; optionally a model through TROUPE_AI_URL). Scans run as jobs on any node: a 202 with the job id."
    })
  ) {}
