// Facts of a structure that validate nothing: which fields the records layer assigns (auto-increment), checks
// against other records (references, unique claims), encrypts (secrets) or computes. The validator and the records
// layer both read them here.
import type { PropertyDefinition } from "@troupe/api/structures/Structure"
import { canonicalJson } from "./Formats.ts"
import type { ValidatorStructure } from "./Validator.ts"

/** A computed property: a scalar with an expression. */
export const isComputed = (p: PropertyDefinition): boolean =>
  (p.type === "string" || p.type === "number" || p.type === "boolean" || p.type === "datetime") &&
  p.expression !== undefined &&
  p.expression !== ""

export interface AutoIncrementField {
  readonly field: string
  readonly startAt: number
  readonly incrementBy: number
}

/** Top-level auto-increment fields; the records layer assigns them (the validator does not require them). */
export const autoIncrementFields = (structure: ValidatorStructure): Array<AutoIncrementField> =>
  structure.properties.flatMap((p) =>
    p.type === "number" && p.autoIncrement !== undefined
      ? [{ field: p.name, startAt: p.autoIncrement.startAt ?? 1, incrementBy: p.autoIncrement.incrementBy ?? 1 }]
      : []
  )

export interface ReferenceField {
  readonly field: string
  readonly target: string
  readonly targetField: string
  readonly displayField: string | undefined
  readonly relationship: "many-to-one" | "one-to-one" | "many-to-many"
  readonly onDelete: "restrict" | "cascade" | "set_null"
  readonly required: boolean
  readonly nullable: boolean
}

/** Top-level reference fields: existence, one-to-one uniqueness and onDelete are the records layer's job. */
export const referenceFields = (structure: ValidatorStructure): Array<ReferenceField> =>
  structure.properties.flatMap((p) => {
    if (p.type !== "reference") return []
    const target = p.target ?? p.referenceStructure
    if (target === undefined) return []
    return [
      {
        field: p.name,
        target,
        targetField: p.targetField ?? "id",
        displayField: p.displayField,
        relationship: p.relationship ?? "many-to-one",
        onDelete: p.onDelete ?? "restrict",
        required: p.required === true,
        nullable: p.nullable === true
      }
    ]
  })

export interface FileField {
  readonly field: string
  readonly onDelete: "restrict" | "cascade" | "set_null"
}

/** Top-level `format: "file"` strings: the file's existence, expansion and onDelete are the records layer's job. */
export const fileFields = (structure: ValidatorStructure): Array<FileField> =>
  structure.properties.flatMap((p) =>
    p.type === "string" && p.format === "file" ? [{ field: p.name, onDelete: p.onDelete ?? "restrict" }] : []
  )

/** Top-level fields with `isUnique` (one-to-one references included: two records may not point at one target). */
export const uniqueFields = (structure: ValidatorStructure): Array<string> =>
  structure.properties.flatMap((p) => (p.isUnique === true || (p.type === "reference" && p.relationship === "one-to-one") ? [p.name] : []))

/**
 * The key under which a property claims its values in `record_unique_values`: its name for an isUnique property,
 * `ref:<name>` for a one-to-one reference (one referrer per target), undefined when it claims nothing.
 */
export const claimKeyOf = (p: PropertyDefinition): string | undefined =>
  p.type === "reference" && p.relationship === "one-to-one"
    ? (p.target ?? p.referenceStructure) !== undefined
      ? `ref:${p.name}`
      : undefined
    : p.isUnique === true
      ? p.name
      : undefined

/** The claims a record's data makes: `[key, value]` (canonical JSON; a one-to-one reference's target id). */
export const claimsOf = (structure: ValidatorStructure, data: Readonly<Record<string, unknown>>): Array<[string, string]> =>
  structure.properties.flatMap((p): Array<[string, string]> => {
    const key = claimKeyOf(p)
    const v = data[p.name]
    if (key === undefined || v === undefined || v === null) return []
    if (key.startsWith("ref:")) return typeof v === "string" ? [[key, v]] : []
    return [[key, canonicalJson(v)]]
  })

/** Paths (dotted, below `data`) of secret strings, top level and inside objects; the records layer encrypts them. */
export const secretFields = (structure: ValidatorStructure): Array<string> => {
  const walk = (props: ReadonlyArray<PropertyDefinition>, prefix: string): Array<string> =>
    props.flatMap((p) =>
      p.type === "string" && p.isSecret === true
        ? [prefix + p.name]
        : p.type === "object"
          ? walk(p.properties ?? [], `${prefix}${p.name}.`)
          : []
    )
  return walk(structure.properties, "")
}

/** Names of top-level computed fields by mode. */
export const computedFields = (structure: ValidatorStructure): Array<{ field: string; mode: "persisted" | "virtual" }> =>
  structure.properties.flatMap((p) =>
    isComputed(p) && p.type !== "array" && p.type !== "object" && p.type !== "reference"
      ? [{ field: p.name, mode: p.computedMode ?? "persisted" }]
      : []
  )
