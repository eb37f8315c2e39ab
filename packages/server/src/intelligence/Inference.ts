// Schema suggestions from a field profile (Profile.ts) against a structure's current definition. Each suggestion
// has a signature (kind, field and what it proposes): stored unique per structure, so the same one is never offered
// twice, and a rejected one is remembered. Thresholds: a type or format is proposed when at least MIN_SHARE of the
// values agree (confidence = that share), from at least MIN_SAMPLES values; enums and `required` need more samples.
import type { ObjectProperty, PropertyDefinition, Structure } from "@troupe/api/structures/Structure"
import type { FieldProfile, Format, JsonType, Profile } from "./Profile.ts"

export const MIN_SAMPLES = 5
export const MIN_SHARE = 0.9
const ENUM_MIN_SAMPLES = 30
const ENUM_MAX_VALUES = 10
const REQUIRED_MIN_SAMPLES = 30

export interface Suggestion {
  readonly signature: string
  readonly kind: "add_property" | "change_type" | "add_format" | "add_enum" | "set_required"
  readonly property: Record<string, unknown>
  readonly confidence: number
  readonly sampleCount: number
  readonly examples: ReadonlyArray<unknown>
  readonly explanation: string
}

const plural: Record<string, string> = {
  string: "strings",
  number: "numbers",
  boolean: "booleans",
  object: "objects",
  array: "arrays",
  email: "emails",
  url: "URLs",
  uuid: "UUIDs",
  date: "dates",
  datetime: "date-times",
  phone: "phone numbers"
}

/** The non-null values' dominant JSON type and how many values have it. */
const dominantType = (f: FieldProfile): { type: JsonType; n: number; total: number } | undefined => {
  const entries = (Object.entries(f.types) as Array<[JsonType, number]>).filter(([t]) => t !== "null")
  const total = entries.reduce((s, [, n]) => s + n, 0)
  if (total === 0) return undefined
  const [type, n] = entries.sort((a, b) => b[1] - a[1])[0]!
  return { type, n, total }
}

/** The dominant format of the string values (phone numbers have no property format, so they are left out). */
const dominantFormat = (f: FieldProfile): { format: Exclude<Format, "phone">; n: number; total: number } | undefined => {
  const total = f.types.string ?? 0
  const entries = (Object.entries(f.formats) as Array<[Format, number]>).filter(([k]) => k !== "phone")
  if (total === 0 || entries.length === 0) return undefined
  const [format, n] = entries.sort((a, b) => b[1] - a[1])[0]!
  return { format: format as Exclude<Format, "phone">, n, total }
}

const round = (x: number) => Math.round(x * 1000) / 1000

const share = (n: number, total: number, what: string) =>
  n === total
    ? `all ${total} values are ${what}`
    : `${n} of ${total} values are ${what}; ${total - n} ${total - n === 1 ? "is" : "are"} not`

/** A property definition for values of this JSON type. */
const propertyFor = (name: string, f: FieldProfile, type: JsonType, nested: () => Array<Record<string, unknown>> = () => []) => {
  switch (type) {
    case "number":
      return f.integers === (f.types.number ?? 0) ? { name, type: "number", integer: true } : { name, type: "number" }
    case "boolean":
      return { name, type: "boolean" }
    case "object": {
      const properties = nested()
      return properties.length > 0 ? { name, type: "object", properties } : { name, type: "object" }
    }
    case "array": {
      // items of one type (90 % or more), else no proposal: a wrong item type would refuse the records
      const entries = (Object.entries(f.itemTypes ?? {}) as Array<[JsonType, number]>).sort((a, b) => b[1] - a[1])
      const total = entries.reduce((n, [, c]) => n + c, 0)
      const top = entries[0]
      if (top === undefined || top[1] / total < MIN_SHARE || !["string", "number", "boolean", "object"].includes(top[0])) return undefined
      return { name, type: "array", items: { type: top[0] } }
    }
    default: {
      const format = dominantFormat(f)
      return format !== undefined && format.n / format.total >= MIN_SHARE
        ? { name, type: "string", format: format.format }
        : { name, type: "string" }
    }
  }
}

/** The JSON type a declared property's values have. */
const jsonTypeOf = (p: PropertyDefinition): JsonType =>
  p.type === "number"
    ? "number"
    : p.type === "boolean"
      ? "boolean"
      : p.type === "object"
        ? "object"
        : p.type === "array"
          ? "array"
          : "string"

/** Properties for the direct children of `path` (90 % or more of one type), nested objects included. */
const childrenOf = (profile: Profile, path: string): Array<Record<string, unknown>> =>
  Object.entries(profile.fields).flatMap(([p, f]) => {
    if (!p.startsWith(`${path}.`) || p.slice(path.length + 1).includes(".")) return []
    const dominant = dominantType(f)
    if (dominant === undefined || dominant.n / dominant.total < MIN_SHARE) return []
    const property = propertyFor(p.slice(path.length + 1), f, dominant.type, () => childrenOf(profile, p))
    return property === undefined ? [] : [property]
  })

/**
 * The declared object property that `parents` (a path, outermost first) names, when each step is an object that
 * declares its properties; a free-form object (none declared) takes any key, so nothing is proposed inside it.
 */
const declaredObject = (properties: ReadonlyArray<PropertyDefinition>, parents: ReadonlyArray<string>): ObjectProperty | undefined => {
  let list = properties
  let found: ObjectProperty | undefined
  for (const name of parents) {
    const p = list.find((q) => q.name === name)
    if (p === undefined || p.type !== "object" || (p.properties ?? []).length === 0) return undefined
    found = p
    list = p.properties!
  }
  return found
}

/** `add_property` for an undeclared field at `path`; a nested one (inside a declared object) is named by its path. */
const addition = (profile: Profile, path: string, f: FieldProfile): Suggestion | undefined => {
  const dominant = dominantType(f)
  if (dominant === undefined || dominant.total < MIN_SAMPLES || dominant.n / dominant.total < MIN_SHARE) return undefined
  const proposed = propertyFor(path, f, dominant.type, () => childrenOf(profile, path))
  if (proposed === undefined) return undefined
  const format = typeof proposed.format === "string" ? ` (${share(dominantFormat(f)!.n, dominant.n, plural[proposed.format]!)})` : ""
  return {
    signature: `add_property:${path}:${proposed.type}${"format" in proposed ? `:${proposed.format}` : ""}`,
    kind: "add_property",
    property: proposed,
    confidence: round(dominant.n / dominant.total),
    sampleCount: dominant.total,
    examples: f.examples,
    explanation: `\`${path}\` appears in ${f.count} of ${profile.records} records and ${share(dominant.n, dominant.total, plural[dominant.type]!)}${format}.`
  }
}

/**
 * Every suggestion the profile supports for the structure as it is now: top-level fields (objects with their
 * children), and new keys inside declared objects (`address.zip` beside the declared `address.street`).
 */
export const infer = (structure: Structure, profile: Profile): Array<Suggestion> => {
  const out: Array<Suggestion> = []
  const declared = new Map(structure.properties.map((p) => [p.name, p]))
  for (const [path, f] of Object.entries(profile.fields)) {
    if (path.includes(".")) {
      const parents = path.split(".")
      const name = parents.pop()!
      const parent = declaredObject(structure.properties, parents)
      if (parent === undefined || parent.properties!.some((p) => p.name === name)) continue
      const added = addition(profile, path, f)
      if (added !== undefined) out.push(added)
      continue
    }
    const dominant = dominantType(f)
    if (dominant === undefined || dominant.total < MIN_SAMPLES) continue
    const typeShare = dominant.n / dominant.total
    const property = declared.get(path)
    if (property === undefined) {
      const added = addition(profile, path, f)
      if (added !== undefined) out.push(added)
      continue
    }
    if (property.type === "reference" || property.type === "datetime") continue
    if (dominant.type !== jsonTypeOf(property) && typeShare >= MIN_SHARE) {
      const typed = propertyFor(path, f, dominant.type, () => childrenOf(profile, path))
      if (typed === undefined) continue
      const proposed: Record<string, unknown> = { ...typed, ...(property.id ? { id: property.id } : {}) }
      out.push({
        signature: `change_type:${path}:${property.type}->${proposed.type}`,
        kind: "change_type",
        property: proposed,
        confidence: round(typeShare),
        sampleCount: dominant.total,
        examples: f.examples,
        explanation: `\`${path}\` is declared ${property.type}, but ${share(dominant.n, dominant.total, plural[dominant.type]!)}.`
      })
      continue
    }
    if (property.type === "string") {
      const format = dominantFormat(f)
      if (property.format === undefined && format !== undefined && format.total >= MIN_SAMPLES && format.n / format.total >= MIN_SHARE) {
        out.push({
          signature: `add_format:${path}:${format.format}`,
          kind: "add_format",
          property: { ...property, format: format.format },
          confidence: round(format.n / format.total),
          sampleCount: format.total,
          examples: f.examples,
          explanation: `${cap(share(format.n, format.total, plural[format.format]!))}: \`${path}\` could require the ${format.format} format.`
        })
      }
      const values = f.distinct === null ? [] : Object.keys(f.distinct).map((k) => JSON.parse(k) as unknown)
      if (
        property.enum === undefined &&
        f.distinct !== null &&
        (f.types.string ?? 0) >= ENUM_MIN_SAMPLES &&
        values.length >= 2 &&
        values.length <= ENUM_MAX_VALUES &&
        values.every((v) => typeof v === "string")
      ) {
        const sorted = (values as Array<string>).sort()
        out.push({
          signature: `add_enum:${path}:${JSON.stringify(sorted)}`,
          kind: "add_enum",
          property: { ...property, enum: sorted },
          confidence: 1,
          sampleCount: f.types.string ?? 0,
          examples: sorted.slice(0, 3),
          explanation: `${f.types.string} values of \`${path}\` take only ${sorted.length} distinct values, so it could be a list of choices.`
        })
      }
    }
    if (property.required !== true && profile.records >= REQUIRED_MIN_SAMPLES && f.count - (f.types.null ?? 0) === profile.records) {
      out.push({
        signature: `set_required:${path}`,
        kind: "set_required",
        property: { ...property, required: true },
        confidence: 1,
        sampleCount: profile.records,
        examples: f.examples,
        explanation: `Every one of the ${profile.records} records has a value for \`${path}\`, so it could be required.`
      })
    }
  }
  return out
}

const cap = (s: string) => s.charAt(0).toUpperCase() + s.slice(1)

/**
 * The structure's properties with the suggestion applied, or the conflict that prevents it (the definition changed
 * since the suggestion was made).
 */
export const applySuggestion = (
  structure: Structure,
  s: { readonly kind: string; readonly property: Record<string, unknown> }
): { readonly properties: Array<PropertyDefinition> } | { readonly conflict: string } => {
  const name = String(s.property.name)
  if (s.kind === "add_property") return added(structure.properties, name, name.split("."), s.property)
  const current = structure.properties.find((p) => p.name === name)
  if (current === undefined) return { conflict: `property \`${name}\` no longer exists` }
  const conflict =
    s.kind === "change_type"
      ? current.type === s.property.type
        ? `property \`${name}\` is already of type ${current.type}`
        : undefined
      : s.kind === "add_format"
        ? current.type !== "string"
          ? `property \`${name}\` is now of type ${current.type}`
          : current.format !== undefined
            ? `property \`${name}\` already has the format ${current.format}`
            : undefined
        : s.kind === "add_enum"
          ? current.enum !== undefined
            ? `property \`${name}\` already has an enum`
            : current.type !== "string"
              ? `property \`${name}\` is now of type ${current.type}`
              : undefined
          : current.required === true
            ? `property \`${name}\` is already required`
            : undefined
  if (conflict !== undefined) return { conflict }
  const next =
    s.kind === "change_type"
      ? ({ ...s.property, id: current.id } as unknown as PropertyDefinition)
      : s.kind === "add_format"
        ? ({ ...current, format: s.property.format } as PropertyDefinition)
        : s.kind === "add_enum"
          ? ({ ...current, enum: s.property.enum } as PropertyDefinition)
          : ({ ...current, required: true } as PropertyDefinition)
  return { properties: structure.properties.map((p) => (p.name === name ? next : p)) }
}

/** `properties` with `property` added at `parts` (a nested one inside its declared objects, under its last name). */
const added = (
  properties: ReadonlyArray<PropertyDefinition>,
  path: string,
  parts: ReadonlyArray<string>,
  property: Record<string, unknown>
): { readonly properties: Array<PropertyDefinition> } | { readonly conflict: string } => {
  const [name, ...rest] = parts as [string, ...Array<string>]
  const current = properties.find((p) => p.name === name)
  if (rest.length === 0) {
    if (current !== undefined) return { conflict: `property \`${path}\` already exists (type ${current.type})` }
    return { properties: [...properties, { ...property, name } as unknown as PropertyDefinition] }
  }
  if (current?.type !== "object")
    return { conflict: `property \`${path.slice(0, path.length - rest.join(".").length - 1)}\` is no longer an object` }
  const inner = added(current.properties ?? [], path, rest, property)
  if ("conflict" in inner) return inner
  return { properties: properties.map((p) => (p === current ? ({ ...current, properties: inner.properties } as PropertyDefinition) : p)) }
}
