// A structure definition as stored (README "Properties"): a checked create body with every default filled in
// (normalizeStructure, normalizeProperty), and an update body applied onto a stored definition (mergeStructureUpdate),
// which StructureService then checks (rules.ts: checkStructure) and normalizes.
import type {
  PropertyDefinition,
  SchemaDiscoveryConfig,
  SchemaDiscoveryMode,
  StructureInput,
  StructureUpdate
} from "@troupe/api/structures/Structure"
import * as Crypto from "node:crypto"
import { slugify } from "./rules.ts"
import { recordMode } from "./Validator.ts"

/** A structure definition with every default filled in, ready to store. */
export type NormalizedStructure = {
  readonly name: string
  readonly recordSlug: string
  readonly description?: string
  readonly properties: ReadonlyArray<PropertyDefinition>
  readonly status: "active" | "inactive"
  readonly schemaDiscoveryMode: SchemaDiscoveryMode
  readonly isStrict: boolean
  readonly enableVersioning: boolean
  readonly retentionPolicy?: StructureInput["retentionPolicy"]
  readonly defaultSearchField?: string
  readonly searchFields?: StructureInput["searchFields"]
  readonly searchLanguage?: string
  readonly schemaDiscoveryConfig: SchemaDiscoveryConfig
  readonly defaultTtlSeconds?: number
  readonly tags: ReadonlyArray<string>
}

export const defaultSchemaDiscoveryConfig: SchemaDiscoveryConfig = {
  batchSize: 10,
  maxKeysPerRecord: 100,
  maxNestingDepth: 3,
  maxStringLengthSampled: 1000
}

const newId = (id: string | undefined): string => (id === undefined || id === "" || id === "new" ? Crypto.randomUUID() : id)

/** Fills a property's defaults (recursively): flags false, ids generated, `target` from `referenceStructure`. */
export const normalizeProperty = (p: PropertyDefinition): PropertyDefinition => {
  const base = {
    ...p,
    id: newId(p.id),
    required: p.required ?? false,
    nullable: p.nullable ?? false,
    isUnique: p.isUnique ?? false,
    immutable: p.immutable ?? false
  }
  const computedMode = "expression" in p && p.expression !== undefined ? { computedMode: p.computedMode ?? "persisted" } : {}
  switch (p.type) {
    case "string":
      return { ...base, type: "string", isSecret: p.isSecret ?? false, ...computedMode }
    case "number": {
      const auto =
        p.autoIncrement === undefined
          ? {}
          : { autoIncrement: { startAt: p.autoIncrement.startAt ?? 1, incrementBy: p.autoIncrement.incrementBy ?? 1 } }
      return {
        ...base,
        type: "number",
        exclusiveMinimum: p.exclusiveMinimum ?? false,
        exclusiveMaximum: p.exclusiveMaximum ?? false,
        ...auto,
        ...computedMode
      }
    }
    case "boolean":
      return { ...base, type: "boolean", ...computedMode }
    case "datetime":
      return {
        ...base,
        type: "datetime",
        exclusiveEarliest: p.exclusiveEarliest ?? false,
        exclusiveLatest: p.exclusiveLatest ?? false,
        ...computedMode
      }
    case "array": {
      const itemSchema = p.itemSchema === undefined ? {} : { itemSchema: p.itemSchema.map(normalizeProperty) }
      return { ...base, type: "array", items: p.items, isStrict: p.isStrict ?? true, uniqueItems: p.uniqueItems ?? false, ...itemSchema }
    }
    case "object":
      return { ...base, type: "object", isStrict: p.isStrict ?? false, properties: (p.properties ?? []).map(normalizeProperty) }
    case "reference": {
      const target = p.target ?? p.referenceStructure
      const out: Record<string, unknown> = { ...base, type: "reference", targetField: p.targetField ?? "id" }
      delete out.referenceStructure
      if (target !== undefined) out.target = target
      return out as unknown as PropertyDefinition
    }
  }
}

/**
 * Fills the defaults of a (checked) create body: status active, the record mode (see Validator.ts: an explicit
 * `isStrict: false` without schemaDiscoveryMode means auto-evolving), isStrict false, versioning off, discovery
 * config defaults, recordSlug from the name, and every property's defaults.
 */
export const normalizeStructure = (input: StructureInput): NormalizedStructure => ({
  name: input.name.trim(),
  recordSlug: input.recordSlug ?? slugify(input.name),
  ...(input.description === undefined ? {} : { description: input.description }),
  properties: input.properties.map(normalizeProperty),
  status: input.status ?? "active",
  schemaDiscoveryMode: recordMode(input),
  isStrict: input.isStrict ?? false,
  enableVersioning: input.enableVersioning ?? false,
  ...(input.retentionPolicy === undefined ? {} : { retentionPolicy: input.retentionPolicy }),
  ...(input.defaultSearchField === undefined ? {} : { defaultSearchField: input.defaultSearchField }),
  ...(input.searchFields === undefined ? {} : { searchFields: input.searchFields.map((f) => ({ name: f.name, weight: f.weight ?? 1 })) }),
  ...(input.searchLanguage === undefined ? {} : { searchLanguage: input.searchLanguage }),
  schemaDiscoveryConfig: { ...defaultSchemaDiscoveryConfig, ...input.schemaDiscoveryConfig },
  ...(input.defaultTtlSeconds === undefined ? {} : { defaultTtlSeconds: input.defaultTtlSeconds }),
  tags: input.tags ?? []
})

/** What a stored structure offers to `mergeStructureUpdate`: the definition part of `Structure`. */
export interface StoredDefinition {
  readonly name: string
  readonly recordSlug: string
  readonly description?: string | null | undefined
  readonly properties: ReadonlyArray<PropertyDefinition>
  readonly status: "active" | "inactive"
  readonly schemaDiscoveryMode: SchemaDiscoveryMode
  readonly isStrict: boolean
  readonly enableVersioning: boolean
  readonly retentionPolicy?: StructureInput["retentionPolicy"] | null | undefined
  readonly defaultSearchField?: string | null | undefined
  readonly searchFields?: StructureInput["searchFields"] | null | undefined
  readonly searchLanguage?: string | null | undefined
  readonly schemaDiscoveryConfig: SchemaDiscoveryConfig
  readonly defaultTtlSeconds?: number | null | undefined
  readonly tags: ReadonlyArray<string>
}

/**
 * Applies an update body to a stored definition and returns a full create-shaped body, ready for
 * `checkStructure` (with `selfSlug`) and `normalizeStructure`. `properties`, when sent, updates properties by id:
 * a sent property with a stored id replaces it in place, one with id `new` (or an unknown / missing id) is added,
 * and stored properties not sent are kept. `null` clears an optional field. Schema discovery config merges key by
 * key.
 */
export const mergeStructureUpdate = (stored: StoredDefinition, patch: StructureUpdate): StructureInput => {
  let properties = stored.properties
  if (patch.properties !== undefined) {
    const sent = new Map<string, PropertyDefinition>()
    const added: Array<PropertyDefinition> = []
    const storedIds = new Set(stored.properties.map((p) => p.id))
    for (const p of patch.properties) {
      if (p.id !== undefined && p.id !== "new" && storedIds.has(p.id)) sent.set(p.id, p)
      else added.push(p)
    }
    properties = [...stored.properties.map((p) => (p.id !== undefined ? (sent.get(p.id) ?? p) : p)), ...added]
  }
  const pick = <
    K extends "description" | "retentionPolicy" | "defaultSearchField" | "searchFields" | "searchLanguage" | "defaultTtlSeconds"
  >(
    key: K
  ) => {
    const v = patch[key] !== undefined ? patch[key] : stored[key]
    return v === undefined || v === null ? {} : { [key]: v }
  }
  return {
    name: patch.name ?? stored.name,
    recordSlug: patch.recordSlug ?? stored.recordSlug,
    properties,
    status: patch.status ?? stored.status,
    schemaDiscoveryMode: patch.schemaDiscoveryMode ?? stored.schemaDiscoveryMode,
    isStrict: patch.isStrict ?? stored.isStrict,
    enableVersioning: patch.enableVersioning ?? stored.enableVersioning,
    schemaDiscoveryConfig: { ...stored.schemaDiscoveryConfig, ...patch.schemaDiscoveryConfig },
    tags: patch.tags ?? stored.tags,
    ...pick("description"),
    ...pick("retentionPolicy"),
    ...pick("defaultSearchField"),
    ...pick("searchFields"),
    ...pick("searchLanguage"),
    ...pick("defaultTtlSeconds")
  } as StructureInput
}
