// The settings of the three features, checked: every problem of a body named in one 400 (VALIDATION_ERROR with
// details). Discovery settings are the structure's own schemaDiscoveryMode / schemaDiscoveryConfig; anomaly and
// validation settings are stored per structure (intel_config), with defaults when never set.
import { badRequest, type BadRequest, details } from "@troupe/api/Errors"
import type {
  AiConfig,
  AiConfigInput,
  AnomalyConfig,
  AnomalyConfigInput,
  SchemaDiscoverySettingsInput
} from "@troupe/api/intelligence/Intelligence"
import type { Structure } from "@troupe/api/structures/Structure"
import { Effect } from "effect"

export const defaultAnomalyConfig: AnomalyConfig = { enabled: false, fields: [], sensitivity: 3.5 }
export const defaultAiConfig: AiConfig = { enabled: false, rules: [], fields: [] }

/** Ranges of schemaDiscoveryConfig. */
export const discoveryRanges = {
  batchSize: [1, 10_000],
  maxKeysPerRecord: [1, 1000],
  maxNestingDepth: [1, 10],
  maxStringLengthSampled: [1, 100_000]
} as const

const fail = (problems: Array<readonly [string, string]>): Effect.Effect<never, BadRequest> =>
  Effect.fail(
    badRequest({
      message: problems.map(([f, m]) => `${f}: ${m}`).join("; "),
      code: "VALIDATION_ERROR",
      details: details(problems)
    })
  )

export const checkDiscovery = (input: SchemaDiscoverySettingsInput): Effect.Effect<void, BadRequest> => {
  const problems: Array<readonly [string, string]> = []
  for (const [key, [min, max]] of Object.entries(discoveryRanges)) {
    const v = (input.config as Record<string, number | undefined> | undefined)?.[key]
    if (v !== undefined && (!Number.isInteger(v) || v < min || v > max)) {
      problems.push([`config.${key}`, `must be an integer from ${min} to ${max}`])
    }
  }
  return problems.length > 0 ? fail(problems) : Effect.void
}

/** Names a structure's records may be analysed by: its top-level properties (any name when schemaless). */
const unknownFields = (structure: Structure, fields: ReadonlyArray<string>, key: string): Array<readonly [string, string]> => {
  if (structure.schemaDiscoveryMode === "schemaless") return []
  const declared = new Set(structure.properties.map((p) => p.name))
  return fields.flatMap((f, i) =>
    declared.has(f) ? [] : [[`${key}[${i}]`, `\`${f}\` is not a property of ${structure.recordSlug}`] as const]
  )
}

export const mergeAnomaly = (
  structure: Structure,
  stored: AnomalyConfig,
  input: AnomalyConfigInput
): Effect.Effect<AnomalyConfig, BadRequest> => {
  const next = { ...stored, ...input }
  const problems: Array<readonly [string, string]> = []
  if (!(next.sensitivity >= 1 && next.sensitivity <= 10)) problems.push(["sensitivity", "must be a number from 1 to 10"])
  if (next.fields.length > 100) problems.push(["fields", "at most 100 fields"])
  problems.push(...unknownFields(structure, next.fields, "fields"))
  return problems.length > 0 ? fail(problems) : Effect.succeed(next)
}

export const mergeAi = (structure: Structure, stored: AiConfig, input: AiConfigInput): Effect.Effect<AiConfig, BadRequest> => {
  const next = { ...stored, ...input }
  const problems: Array<readonly [string, string]> = []
  if (next.rules.length > 20) problems.push(["rules", "at most 20 rules"])
  next.rules.forEach((r, i) => {
    if (r.trim().length === 0 || r.length > 500) problems.push([`rules[${i}]`, "must be 1 to 500 characters"])
  })
  if (next.fields.length > 100) problems.push(["fields", "at most 100 fields"])
  problems.push(...unknownFields(structure, next.fields, "fields"))
  return problems.length > 0 ? fail(problems) : Effect.succeed(next)
}

/** A stored config read back over its defaults (a partial or older one still answers every key). */
export const anomalyConfigOf = (stored: Record<string, unknown> | undefined): AnomalyConfig => ({
  ...defaultAnomalyConfig,
  ...(stored as object)
})
export const aiConfigOf = (stored: Record<string, unknown> | undefined): AiConfig => ({ ...defaultAiConfig, ...(stored as object) })
