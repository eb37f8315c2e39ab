/**
 * Data intelligence models on the wire (CONTRACT §8.4, docs/intelligence.md): schema discovery settings and
 * suggestions, anomaly config and insights, validation config, batches and suggestions, and the jobs behind them.
 * Ranges and field names are checked by the server, which names the offending field in a 400.
 *
 * @since 0.1.0
 */
import { Schema } from "effect"
import { SchemaDiscoveryConfig, SchemaDiscoveryMode } from "../structures/Structure.ts"

const optional = Schema.optionalKey
const Timestamp = Schema.String.annotate({ description: "ISO-8601 timestamp" })
const JsonObject = Schema.Record(Schema.String, Schema.Json)

// ---------------------------------------------------------------------------------------------------------------
// Schema discovery

/** `GET /collections/{slug}/schema-discovery`. @category models */
export const SchemaDiscoverySettings = Schema.Struct({
  mode: SchemaDiscoveryMode,
  config: SchemaDiscoveryConfig,
  autoApply: Schema.Boolean.annotate({
    description: "auto-evolving only: new properties inferred with confidence ≥ 0.95 are added at once (default false)"
  })
}).annotate({ identifier: "SchemaDiscoverySettings" })
/** @category models */
export type SchemaDiscoverySettings = typeof SchemaDiscoverySettings.Type

/** `PUT /collections/{slug}/schema-discovery`: what is left out is kept. @category models */
export const SchemaDiscoverySettingsInput = Schema.Struct({
  mode: optional(SchemaDiscoveryMode),
  autoApply: optional(Schema.Boolean),
  config: optional(
    Schema.Struct({
      batchSize: optional(Schema.Finite.annotate({ description: "1 to 10000 records per profiled batch (default 10)" })),
      maxKeysPerRecord: optional(Schema.Finite.annotate({ description: "1 to 1000 field paths one record contributes (default 100)" })),
      maxNestingDepth: optional(Schema.Finite.annotate({ description: "1 to 10 levels of nesting profiled (default 3)" })),
      maxStringLengthSampled: optional(Schema.Finite.annotate({ description: "1 to 100000 characters of a string sampled (default 1000)" }))
    })
  )
}).annotate({ identifier: "SchemaDiscoverySettingsInput" })
/** @category models */
export type SchemaDiscoverySettingsInput = typeof SchemaDiscoverySettingsInput.Type

/** @category models */
export const SchemaSuggestionKind = Schema.Literals(["add_property", "change_type", "add_format", "add_enum", "set_required"])
/** @category models */
export type SchemaSuggestionKind = typeof SchemaSuggestionKind.Type

/** @category models */
export const SuggestionStatus = Schema.Literals(["pending", "accepted", "rejected"])
/** @category models */
export type SuggestionStatus = typeof SuggestionStatus.Type

/** @category models */
export const SchemaSuggestion = Schema.Struct({
  id: Schema.String,
  structureId: Schema.String,
  kind: SchemaSuggestionKind,
  property: JsonObject.annotate({
    description:
      "The property definition as accepting it would leave it; a new key inside a declared object is named by its path (`address.zip`)"
  }),
  confidence: Schema.Number.annotate({ description: "0 to 1: the share of samples that agree" }),
  sampleCount: Schema.Int,
  examples: Schema.Array(Schema.Json),
  explanation: Schema.String.annotate({ description: "Why, in one sentence" }),
  status: SuggestionStatus,
  createdAt: Timestamp
}).annotate({ identifier: "SchemaSuggestion" })
/** @category models */
export type SchemaSuggestion = typeof SchemaSuggestion.Type

/** @category models */
export const SchemaSuggestionList = Schema.Struct({
  data: Schema.Array(SchemaSuggestion),
  total: Schema.Int,
  page: Schema.Int,
  limit: Schema.Int
}).annotate({ identifier: "SchemaSuggestionList" })

/** Accepting a schema suggestion: the suggestion and the structure's new version. @category models */
export const AcceptedSchemaSuggestion = Schema.Struct({
  suggestion: SchemaSuggestion,
  structure: Schema.Json
}).annotate({ identifier: "AcceptedSchemaSuggestion" })

/**
 * `GET /collections/{slug}/field-profiles`: per field path, what the last scan of stored records found (count, JSON
 * type histogram, numeric range, string lengths, formats, distinct values up to 20), and the same for the writes
 * observed since. @category models
 */
export const FieldProfiles = Schema.Struct({
  scan: Schema.Struct({ records: Schema.Int, fields: Schema.Record(Schema.String, Schema.Json) }),
  observed: Schema.Struct({ records: Schema.Int, fields: Schema.Record(Schema.String, Schema.Json) })
}).annotate({ identifier: "FieldProfiles" })

// ---------------------------------------------------------------------------------------------------------------
// Anomalies

/** @category models */
export const AnomalyConfig = Schema.Struct({
  enabled: Schema.Boolean,
  fields: Schema.Array(Schema.String),
  sensitivity: Schema.Number
}).annotate({ identifier: "AnomalyConfig" })
/** @category models */
export type AnomalyConfig = typeof AnomalyConfig.Type

/** `PUT /collections/{slug}/anomaly-config`: what is left out is kept. @category models */
export const AnomalyConfigInput = Schema.Struct({
  enabled: optional(Schema.Boolean),
  fields: optional(Schema.Array(Schema.String).annotate({ description: "Top-level properties to analyse" })),
  sensitivity: optional(Schema.Finite.annotate({ description: "Robust z-score threshold, 1 to 10 (default 3.5)" }))
}).annotate({ identifier: "AnomalyConfigInput" })
/** @category models */
export type AnomalyConfigInput = typeof AnomalyConfigInput.Type

/** @category models */
export const InsightKind = Schema.Literals(["outlier", "rare_value", "type_mismatch", "missing_spike", "volume"])
/** @category models */
export const InsightStatus = Schema.Literals(["open", "acknowledged", "dismissed"])
/** @category models */
export const Severity = Schema.Literals(["low", "medium", "high"])

/** @category models */
export const AnomalyInsight = Schema.Struct({
  id: Schema.String,
  structureId: Schema.String,
  recordId: Schema.NullOr(Schema.String),
  field: Schema.NullOr(Schema.String),
  kind: InsightKind,
  severity: Severity,
  score: Schema.Number,
  message: Schema.String,
  observed: Schema.Json,
  expected: Schema.Json,
  status: InsightStatus,
  createdAt: Timestamp
}).annotate({ identifier: "AnomalyInsight" })
/** @category models */
export type AnomalyInsight = typeof AnomalyInsight.Type

/** @category models */
export const AnomalyInsightList = Schema.Struct({
  data: Schema.Array(AnomalyInsight),
  total: Schema.Int,
  page: Schema.Int,
  limit: Schema.Int
}).annotate({ identifier: "AnomalyInsightList" })

// ---------------------------------------------------------------------------------------------------------------
// Validation suggestions

/** @category models */
export const AiConfig = Schema.Struct({
  enabled: Schema.Boolean,
  rules: Schema.Array(Schema.String),
  fields: Schema.Array(Schema.String)
}).annotate({ identifier: "AiValidationConfig" })
/** @category models */
export type AiConfig = typeof AiConfig.Type

/** @category models */
export const AiConfigInput = Schema.Struct({
  enabled: optional(Schema.Boolean),
  rules: optional(Schema.Array(Schema.String).annotate({ description: "Plain-language rules the model checks (at most 20)" })),
  fields: optional(Schema.Array(Schema.String).annotate({ description: "Top-level properties to check (empty: every string and number)" }))
}).annotate({ identifier: "AiValidationConfigInput" })
/** @category models */
export type AiConfigInput = typeof AiConfigInput.Type

/** @category models */
export const JobStatus = Schema.Literals(["queued", "running", "completed", "failed"])

/** @category models */
export const ValidationBatch = Schema.Struct({
  id: Schema.String,
  structureId: Schema.String,
  status: JobStatus,
  scanned: Schema.Int,
  suggestions: Schema.Int,
  error: Schema.NullOr(Schema.String),
  createdAt: Timestamp,
  finishedAt: Schema.NullOr(Timestamp)
}).annotate({ identifier: "AiValidationBatch" })

/** @category models */
export const ValidationSuggestion = Schema.Struct({
  id: Schema.String,
  structureId: Schema.String,
  recordId: Schema.String,
  field: Schema.String,
  currentValue: Schema.Json,
  suggestedValue: Schema.Json,
  reason: Schema.String,
  source: Schema.Literals(["check", "model"]),
  status: SuggestionStatus,
  batchId: Schema.NullOr(Schema.String),
  createdAt: Timestamp
}).annotate({ identifier: "AiValidationSuggestion" })
/** @category models */
export type ValidationSuggestion = typeof ValidationSuggestion.Type

/** @category models */
export const ValidationSuggestionList = Schema.Struct({
  data: Schema.Array(ValidationSuggestion),
  total: Schema.Int,
  page: Schema.Int,
  limit: Schema.Int
}).annotate({ identifier: "AiValidationSuggestionList" })

// ---------------------------------------------------------------------------------------------------------------
// Jobs

/** 202 of a scan, trigger or analysis. @category models */
export const JobAccepted = Schema.Struct({ jobId: Schema.String }).annotate({ identifier: "IntelligenceJobAccepted" })
/** 202 of a validation scan. @category models */
export const BatchAccepted = Schema.Struct({ batchId: Schema.String }).annotate({ identifier: "AiValidationBatchAccepted" })

/** `GET /intelligence-jobs/{id}`: any job of this service (a validation batch too). @category models */
export const IntelligenceJob = Schema.Struct({
  id: Schema.String,
  kind: Schema.Literals(["discovery_scan", "discovery_trigger", "anomaly_analysis", "validation_scan"]),
  structureId: Schema.String,
  status: JobStatus,
  scanned: Schema.Int,
  produced: Schema.Int.annotate({ description: "Suggestions or insights this job raised" }),
  error: Schema.NullOr(Schema.String),
  createdAt: Timestamp,
  finishedAt: Schema.NullOr(Timestamp)
}).annotate({ identifier: "IntelligenceJob" })
/** @category models */
export type IntelligenceJob = typeof IntelligenceJob.Type

const pageField = (maximum: number, description: string) =>
  optional(Schema.FiniteFromString.check(Schema.isInt(), Schema.isBetween({ minimum: 1, maximum })).annotate({ description }))

/** Newest first. @category models */
export const ListQuery = {
  page: pageField(1_000_000, "1-based page (default 1)"),
  limit: pageField(1000, "Page size (default 50, at most 1000)"),
  status: optional(Schema.String.annotate({ description: "Only suggestions or insights in this status" }))
}

/** Lists across a workspace. @category models */
export const WorkspaceListQuery = {
  ...ListQuery,
  collection: optional(Schema.String.annotate({ description: "Only this structure (slug or id)" }))
}
