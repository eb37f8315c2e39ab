/**
 * Structures: typed schemas for one kind of record (README "Structures"). The wire shapes are lenient on
 * purpose: relations between fields (minLength <= maxLength, enum values meeting the constraints, reference
 * targets existing, ...) are rules checked by the server's `structures/rules.ts`, which reports every problem at
 * once with a path such as `properties[2].maxLength`. Unknown keys inside a property are ignored.
 *
 * @since 0.1.0
 */
import { Schema } from "effect"

/** @category ids */
export const StructureId = Schema.String.pipe(Schema.brand("StructureId"))
/** @category ids */
export type StructureId = typeof StructureId.Type

/** @category models */
export const PropertyType = Schema.Literals(["string", "number", "boolean", "datetime", "array", "object", "reference"])
/** @category models */
export type PropertyType = typeof PropertyType.Type

/** Item types an array may hold (`array` inside `array` is not supported). @category models */
export const ArrayItemType = Schema.Literals(["string", "number", "boolean", "datetime", "object"])
/** @category models */
export type ArrayItemType = typeof ArrayItemType.Type

/** @category models */
/** `file`: the id of a file of the workspace's storage (CONTRACT §8.1), checked on every write. @category models */
export const StringFormat = Schema.Literals(["email", "url", "uuid", "date", "datetime", "file"])
/** @category models */
export const RenderAs = Schema.Literals(["textarea", "secret", "color", "code", "html", "markdown"])
/** @category models */
export const ComputedMode = Schema.Literals(["persisted", "virtual"])
/** @category models */
export const Relationship = Schema.Literals(["many-to-one", "one-to-one", "many-to-many"])
/** @category models */
export const OnDelete = Schema.Literals(["restrict", "cascade", "set_null"])

const optional = Schema.optionalKey

/** Fields every property carries. */
const common = {
  id: optional(Schema.String.annotate({ description: "Generated; the literal `new` marks a new property on update" })),
  name: Schema.String,
  description: optional(Schema.String),
  required: optional(Schema.Boolean),
  nullable: optional(Schema.Boolean),
  default: optional(Schema.Json.annotate({ description: "Must satisfy the property's own constraints" })),
  enum: optional(Schema.Array(Schema.Json)),
  isUnique: optional(Schema.Boolean),
  immutable: optional(Schema.Boolean),
  indexed: optional(
    Schema.Boolean.annotate({
      description: "Top-level number, string or reference: keep a database index so filters and sorts on it stay fast"
    })
  )
}

const computed = {
  expression: optional(
    Schema.String.annotate({
      description:
        "Computed value: arithmetic, string concatenation, comparisons, && || !, ?:, and the functions " +
        "now, concat, round, floor, ceil, abs, min, max, lower, upper, length, coalesce"
    })
  ),
  computedMode: optional(ComputedMode)
}

const stringConstraints = {
  minLength: optional(Schema.Finite),
  maxLength: optional(Schema.Finite),
  pattern: optional(Schema.String.annotate({ description: "RE2 syntax (linear-time matching), unanchored" })),
  format: optional(StringFormat)
}

const numberConstraints = {
  minimum: optional(Schema.Finite),
  maximum: optional(Schema.Finite),
  exclusiveMinimum: optional(Schema.Boolean),
  exclusiveMaximum: optional(Schema.Boolean),
  multipleOf: optional(Schema.Finite),
  integer: optional(Schema.Boolean)
}

const datetimeConstraints = {
  earliestDate: optional(Schema.String),
  latestDate: optional(Schema.String),
  exclusiveEarliest: optional(Schema.Boolean),
  exclusiveLatest: optional(Schema.Boolean)
}

/** @category models */
export const StringProperty = Schema.Struct({
  ...common,
  type: Schema.Literal("string"),
  ...stringConstraints,
  renderAs: optional(RenderAs),
  isSecret: optional(Schema.Boolean),
  not: optional(Schema.Array(Schema.Json)),
  onDelete: optional(
    OnDelete.annotate({ description: "format 'file' only: what deleting the file does to this record (default restrict)" })
  ),
  ...computed
}).annotate({ identifier: "StringProperty" })
/** @category models */
export type StringProperty = typeof StringProperty.Type

/** @category models */
export const NumberProperty = Schema.Struct({
  ...common,
  type: Schema.Literal("number"),
  ...numberConstraints,
  not: optional(Schema.Array(Schema.Json)),
  autoIncrement: optional(Schema.Struct({ startAt: optional(Schema.Finite), incrementBy: optional(Schema.Finite) })),
  ...computed
}).annotate({ identifier: "NumberProperty" })
/** @category models */
export type NumberProperty = typeof NumberProperty.Type

/** @category models */
export const BooleanProperty = Schema.Struct({
  ...common,
  type: Schema.Literal("boolean"),
  ...computed
}).annotate({ identifier: "BooleanProperty" })
/** @category models */
export type BooleanProperty = typeof BooleanProperty.Type

/** @category models */
export const DatetimeProperty = Schema.Struct({
  ...common,
  type: Schema.Literal("datetime"),
  ...datetimeConstraints,
  ...computed
}).annotate({ identifier: "DatetimeProperty" })
/** @category models */
export type DatetimeProperty = typeof DatetimeProperty.Type

/** @category models */
export const ReferenceProperty = Schema.Struct({
  ...common,
  type: Schema.Literal("reference"),
  target: optional(Schema.String.annotate({ description: "recordSlug of a structure of the same workspace" })),
  referenceStructure: optional(Schema.String.annotate({ description: "Older name of `target`" })),
  targetField: optional(Schema.String),
  displayField: optional(Schema.String),
  relationship: Relationship,
  onDelete: OnDelete
}).annotate({ identifier: "ReferenceProperty" })
/** @category models */
export type ReferenceProperty = typeof ReferenceProperty.Type

/** Item description of an array: the type plus the scalar constraints each item must meet. @category models */
export const ArrayItems = Schema.Struct({
  type: ArrayItemType,
  ...stringConstraints,
  ...numberConstraints,
  ...datetimeConstraints,
  enum: optional(Schema.Array(Schema.Json))
}).annotate({ identifier: "ArrayItems" })
/** @category models */
export type ArrayItems = typeof ArrayItems.Type

const CommonFields = Schema.Struct(common)
type Common = typeof CommonFields.Type

/** @category models */
export interface ArrayProperty extends Common {
  readonly type: "array"
  readonly items: ArrayItems
  readonly itemSchema?: ReadonlyArray<PropertyDefinition>
  readonly isStrict?: boolean
  readonly minItems?: number
  readonly maxItems?: number
  readonly uniqueItems?: boolean
}

/** @category models */
export interface ObjectProperty extends Common {
  readonly type: "object"
  readonly properties?: ReadonlyArray<PropertyDefinition>
  readonly requiredProperties?: ReadonlyArray<string>
  readonly isStrict?: boolean
}

/** @category models */
export type PropertyDefinition =
  | StringProperty
  | NumberProperty
  | BooleanProperty
  | DatetimeProperty
  | ArrayProperty
  | ObjectProperty
  | ReferenceProperty

const nested = Schema.Array(Schema.suspend((): Schema.Codec<PropertyDefinition> => PropertyDefinition))

/** @category models */
export const ArrayProperty: Schema.Codec<ArrayProperty> = Schema.Struct({
  ...common,
  type: Schema.Literal("array"),
  items: ArrayItems,
  itemSchema: optional(nested),
  isStrict: optional(Schema.Boolean.annotate({ description: "Default true: object items reject undeclared keys" })),
  minItems: optional(Schema.Finite),
  maxItems: optional(Schema.Finite),
  uniqueItems: optional(Schema.Boolean)
}).annotate({ identifier: "ArrayProperty" })

/** @category models */
export const ObjectProperty: Schema.Codec<ObjectProperty> = Schema.Struct({
  ...common,
  type: Schema.Literal("object"),
  properties: optional(nested),
  requiredProperties: optional(Schema.Array(Schema.String)),
  isStrict: optional(Schema.Boolean)
}).annotate({ identifier: "ObjectProperty" })

/**
 * One property of a structure, discriminated by `type`; `object` properties and `array` item schemas nest.
 *
 * @category models
 */
export const PropertyDefinition: Schema.Codec<PropertyDefinition> = Schema.Union([
  StringProperty,
  NumberProperty,
  BooleanProperty,
  DatetimeProperty,
  ArrayProperty,
  ObjectProperty,
  ReferenceProperty
]).annotate({ identifier: "PropertyDefinition" })

/** @category models */
export const StructureStatus = Schema.Literals(["active", "inactive"])
/** @category models */
export const SchemaDiscoveryMode = Schema.Literals(["strict", "auto-evolving", "schemaless"])
/** @category models */
export type SchemaDiscoveryMode = typeof SchemaDiscoveryMode.Type

/** @category models */
export const RetentionPolicy = Schema.Struct({
  maxVersions: optional(Schema.Finite),
  maxAgeDays: optional(Schema.Finite),
  cleanupIntervalHours: optional(Schema.Finite),
  pinnedVersionsRetained: optional(Schema.Boolean)
}).annotate({ identifier: "RetentionPolicy" })
/** @category models */
export type RetentionPolicy = typeof RetentionPolicy.Type

/** As sent: every key optional (defaults batchSize 10, maxKeysPerRecord 100, maxNestingDepth 3, maxStringLengthSampled 1000). @category models */
export const SchemaDiscoveryConfigInput = Schema.Struct({
  batchSize: optional(Schema.Finite),
  maxKeysPerRecord: optional(Schema.Finite),
  maxNestingDepth: optional(Schema.Finite),
  maxStringLengthSampled: optional(Schema.Finite)
})

/** As stored and answered: defaults filled in. @category models */
export const SchemaDiscoveryConfig = Schema.Struct({
  batchSize: Schema.Finite,
  maxKeysPerRecord: Schema.Finite,
  maxNestingDepth: Schema.Finite,
  maxStringLengthSampled: Schema.Finite
}).annotate({ identifier: "SchemaDiscoveryConfig" })
/** @category models */
export type SchemaDiscoveryConfig = typeof SchemaDiscoveryConfig.Type

/** Read-only migration state. @category models */
export const StructureMetadata = Schema.Struct({
  recordWritesLocked: Schema.Boolean,
  structureWritesLocked: Schema.Boolean,
  migrationInProgress: Schema.Boolean,
  migrationJobId: optional(Schema.NullOr(Schema.String)),
  lastMigrationId: optional(Schema.NullOr(Schema.String))
}).annotate({ identifier: "StructureMetadata" })
/** @category models */
export type StructureMetadata = typeof StructureMetadata.Type

/**
 * Body of the platform-admin route `PUT /structures/{id}/metadata`: the keys sent replace the stored ones, `null`
 * clears the id fields. Migration tooling sets the locks here; ordinary create and update bodies cannot.
 *
 * @category models
 */
export const StructureMetadataUpdate = Schema.Struct({
  recordWritesLocked: optional(Schema.Boolean),
  structureWritesLocked: optional(Schema.Boolean),
  migrationInProgress: optional(Schema.Boolean),
  migrationJobId: optional(Schema.NullOr(Schema.String)),
  lastMigrationId: optional(Schema.NullOr(Schema.String))
}).annotate({ identifier: "StructureMetadataUpdate" })
/** @category models */
export type StructureMetadataUpdate = typeof StructureMetadataUpdate.Type

/**
 * One searched field of a structure (`searchFields`): a top-level string property that is not secret and its weight,
 * 1 (lowest) to 4 (highest); results matching in heavier fields rank first (docs/search.md).
 *
 * @category models
 */
export const SearchField = Schema.Struct({
  name: Schema.String,
  weight: optional(Schema.Finite.annotate({ description: "1 (lowest, the default) to 4 (highest)" }))
}).annotate({ identifier: "SearchField" })
/** @category models */
export type SearchField = typeof SearchField.Type

const searchLanguageDoc = {
  description: "Text-search configuration: `simple` (the default: no stemming) or a built-in one such as `english`"
}

/**
 * Create body (and body of `POST /structures/validate`): `name` and `properties` required.
 *
 * @category models
 */
export const StructureInput = Schema.Struct({
  name: Schema.String,
  properties: Schema.Array(PropertyDefinition),
  recordSlug: optional(Schema.String.annotate({ description: "Lowercase, hyphenated; generated from name when omitted" })),
  description: optional(Schema.String),
  status: optional(StructureStatus),
  schemaDiscoveryMode: optional(SchemaDiscoveryMode),
  isStrict: optional(
    Schema.Boolean.annotate({
      description: "Older form: true rejects undeclared record fields. schemaDiscoveryMode wins when both are sent"
    })
  ),
  enableVersioning: optional(Schema.Boolean),
  retentionPolicy: optional(RetentionPolicy),
  defaultSearchField: optional(Schema.String),
  searchFields: optional(Schema.Array(SearchField)),
  searchLanguage: optional(Schema.String.annotate(searchLanguageDoc)),
  schemaDiscoveryConfig: optional(SchemaDiscoveryConfigInput),
  defaultTtlSeconds: optional(Schema.Finite),
  tags: optional(Schema.Array(Schema.String))
}).annotate({ identifier: "StructureInput" })
/** @category models */
export type StructureInput = typeof StructureInput.Type

/**
 * Update body: every key optional. `properties`, when sent, lists properties by `id` (`new` for a new one);
 * a property left out is kept. `null` clears an optional field.
 *
 * @category models
 */
export const StructureUpdate = Schema.Struct({
  name: optional(Schema.String),
  properties: optional(Schema.Array(PropertyDefinition)),
  recordSlug: optional(Schema.String),
  description: optional(Schema.NullOr(Schema.String)),
  status: optional(StructureStatus),
  schemaDiscoveryMode: optional(SchemaDiscoveryMode),
  isStrict: optional(Schema.Boolean),
  enableVersioning: optional(Schema.Boolean),
  retentionPolicy: optional(Schema.NullOr(RetentionPolicy)),
  defaultSearchField: optional(Schema.NullOr(Schema.String)),
  searchFields: optional(Schema.NullOr(Schema.Array(SearchField))),
  searchLanguage: optional(Schema.NullOr(Schema.String.annotate(searchLanguageDoc))),
  schemaDiscoveryConfig: optional(SchemaDiscoveryConfigInput),
  defaultTtlSeconds: optional(Schema.NullOr(Schema.Finite)),
  tags: optional(Schema.Array(Schema.String))
}).annotate({ identifier: "StructureUpdate" })
/** @category models */
export type StructureUpdate = typeof StructureUpdate.Type

/** A structure as answered by every structure endpoint. @category models */
export const Structure = Schema.Struct({
  id: StructureId,
  workspaceSlug: Schema.String,
  recordSlug: Schema.String,
  name: Schema.String,
  description: optional(Schema.NullOr(Schema.String)),
  properties: Schema.Array(PropertyDefinition),
  status: StructureStatus,
  schemaDiscoveryMode: SchemaDiscoveryMode,
  isStrict: Schema.Boolean,
  enableVersioning: Schema.Boolean,
  retentionPolicy: optional(Schema.NullOr(RetentionPolicy)),
  defaultSearchField: optional(Schema.NullOr(Schema.String)),
  searchFields: optional(Schema.NullOr(Schema.Array(SearchField))),
  searchLanguage: optional(Schema.NullOr(Schema.String)),
  schemaDiscoveryConfig: SchemaDiscoveryConfig,
  defaultTtlSeconds: optional(Schema.NullOr(Schema.Finite)),
  metadata: StructureMetadata,
  tags: Schema.Array(Schema.String),
  createdBy: Schema.NullOr(Schema.String),
  lastUpdatedBy: Schema.NullOr(Schema.String),
  createdAt: Schema.String.annotate({ description: "ISO 8601" }),
  updatedAt: Schema.String.annotate({ description: "ISO 8601" }),
  isDeleted: Schema.Boolean,
  version: Schema.Finite
}).annotate({ identifier: "Structure" })
/** @category models */
export type Structure = typeof Structure.Type

/** One problem found in a structure definition. @category models */
export const DefinitionProblem = Schema.Struct({ field: Schema.String, message: Schema.String })
/** @category models */
export type DefinitionProblem = typeof DefinitionProblem.Type

/** Answer of `POST /structures/validate`. @category models */
export const StructureValidation = Schema.Struct({
  valid: Schema.Boolean,
  errors: Schema.Array(DefinitionProblem)
}).annotate({ identifier: "StructureValidation" })
/** @category models */
export type StructureValidation = typeof StructureValidation.Type

/** Answer of `GET /structures`. @category models */
export const StructureList = Schema.Struct({
  data: Schema.Array(Structure),
  meta: Schema.Struct({ total: Schema.Finite, page: Schema.Finite, pageSize: Schema.Finite })
}).annotate({ identifier: "StructureList" })
/** @category models */
export type StructureList = typeof StructureList.Type
