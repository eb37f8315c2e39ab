/**
 * Structures → JSON Schema (draft 2020-12) → TypeScript, for app code (`troupe types`). The JSON Schema says what
 * a record's `data` holds as read back from the API; the TypeScript is derived from that schema alone, so the two
 * never disagree. Pure functions: no I/O here.
 *
 * @since 0.1.0
 */

/** A property as the API answers it (only the keys read here). @category models */
export interface PropertyLike {
  readonly name: string
  readonly type: string
  readonly description?: string | null
  readonly required?: boolean
  readonly nullable?: boolean
  readonly enum?: ReadonlyArray<unknown>
  readonly default?: unknown
  readonly format?: string
  readonly minLength?: number
  readonly maxLength?: number
  readonly pattern?: string
  readonly minimum?: number
  readonly maximum?: number
  readonly exclusiveMinimum?: boolean
  readonly exclusiveMaximum?: boolean
  readonly multipleOf?: number
  readonly integer?: boolean
  readonly items?: { readonly type: string; readonly enum?: ReadonlyArray<unknown>; readonly format?: string }
  readonly itemSchema?: ReadonlyArray<PropertyLike>
  readonly properties?: ReadonlyArray<PropertyLike>
  readonly requiredProperties?: ReadonlyArray<string>
  readonly isStrict?: boolean
  readonly minItems?: number
  readonly maxItems?: number
  readonly uniqueItems?: boolean
  readonly relationship?: string
  readonly target?: string
  readonly expression?: string
  readonly computedMode?: string
  readonly isSecret?: boolean
}

/** A structure as the API answers it (only the keys read here). @category models */
export interface StructureLike {
  readonly name: string
  readonly recordSlug: string
  readonly description?: string | null
  readonly properties: ReadonlyArray<PropertyLike>
  readonly schemaDiscoveryMode?: string
  readonly version?: number
}

/** @category models */
export type JsonSchema = { readonly [key: string]: unknown }

const formats: Record<string, string> = {
  email: "email",
  url: "uri",
  uuid: "uuid",
  date: "date",
  datetime: "date-time",
  // a file id of the workspace's storage
  file: "uuid"
}

const defined = (entries: Record<string, unknown>): JsonSchema =>
  Object.fromEntries(Object.entries(entries).filter(([, v]) => v !== undefined && v !== null))

const scalar = (type: string, p: Partial<PropertyLike>): JsonSchema => {
  switch (type) {
    case "string":
      return defined({
        type: "string",
        format: p.format === undefined ? undefined : formats[p.format],
        minLength: p.minLength,
        maxLength: p.maxLength,
        pattern: p.pattern,
        enum: p.enum
      })
    case "number":
      return defined({
        type: p.integer === true ? "integer" : "number",
        minimum: p.exclusiveMinimum === true ? undefined : p.minimum,
        exclusiveMinimum: p.exclusiveMinimum === true ? p.minimum : undefined,
        maximum: p.exclusiveMaximum === true ? undefined : p.maximum,
        exclusiveMaximum: p.exclusiveMaximum === true ? p.maximum : undefined,
        multipleOf: p.multipleOf,
        enum: p.enum
      })
    case "boolean":
      return defined({ type: "boolean", enum: p.enum })
    case "datetime":
      return defined({ type: "string", format: "date-time", enum: p.enum })
    default:
      return {}
  }
}

const objectSchema = (properties: ReadonlyArray<PropertyLike>, required: ReadonlyArray<string>, strict: boolean): JsonSchema => ({
  type: "object",
  properties: Object.fromEntries(properties.map((p) => [p.name, propertySchema(p)])),
  ...(required.length > 0 ? { required } : {}),
  additionalProperties: !strict
})

const requiredOf = (properties: ReadonlyArray<PropertyLike>, explicit?: ReadonlyArray<string>) => [
  ...new Set([...(explicit ?? []), ...properties.filter((p) => p.required === true).map((p) => p.name)])
]

/** The JSON Schema of one property's value. @category conversions */
const propertySchema = (p: PropertyLike): JsonSchema => {
  let schema: JsonSchema
  switch (p.type) {
    case "array": {
      const items =
        p.items?.type === "object" || (p.items === undefined && p.itemSchema !== undefined)
          ? objectSchema(p.itemSchema ?? [], requiredOf(p.itemSchema ?? []), p.isStrict !== false)
          : scalar(p.items?.type ?? "", p.items ?? {})
      schema = defined({ type: "array", items, minItems: p.minItems, maxItems: p.maxItems, uniqueItems: p.uniqueItems })
      break
    }
    case "object":
      schema = objectSchema(p.properties ?? [], requiredOf(p.properties ?? [], p.requiredProperties), p.isStrict === true)
      break
    case "reference": {
      const id = { type: "string", format: "uuid" }
      schema = {
        ...(p.relationship === "many-to-many" ? { type: "array", items: id } : id),
        ...(p.target === undefined ? {} : { "x-troupe-reference": p.target })
      }
      break
    }
    default:
      schema = scalar(p.type, p)
  }
  if (p.nullable === true) schema = { anyOf: [schema, { type: "null" }] }
  return defined({
    ...schema,
    description: p.description ?? undefined,
    default: p.default,
    readOnly: p.expression !== undefined ? true : undefined,
    "x-troupe-secret": p.isSecret === true ? true : undefined
  })
}

/** The JSON Schema of a structure's record `data`. @category conversions */
export const structureSchema = (s: StructureLike): JsonSchema => ({
  $schema: "https://json-schema.org/draft/2020-12/schema",
  title: s.name,
  ...(s.description ? { description: s.description } : {}),
  "x-troupe-structure": s.recordSlug,
  ...objectSchema(s.properties, requiredOf(s.properties), s.schemaDiscoveryMode === "strict")
})

/** `blog-posts` → `BlogPosts`; a name that would start with a digit gets an `S` in front. @category names */
export const typeName = (slug: string) => {
  const pascal = slug
    .split(/[^A-Za-z0-9]+/)
    .filter((w) => w.length > 0)
    .map((w) => w[0]!.toUpperCase() + w.slice(1))
    .join("")
  const name = pascal.length === 0 ? "Structure" : pascal
  return /^[0-9]/.test(name) ? `S${name}` : name
}

const identifier = /^[A-Za-z_$][A-Za-z0-9_$]*$/
const key = (name: string) => (identifier.test(name) ? name : JSON.stringify(name))

const indent = (text: string, by = "  ") =>
  text
    .split("\n")
    .map((l) => (l.length > 0 ? by + l : l))
    .join("\n")

const comment = (schema: JsonSchema): string | undefined => {
  const parts: Array<string> = []
  if (typeof schema.description === "string") parts.push(schema.description.replace(/\*\//g, "*\\/"))
  if (typeof schema.format === "string") parts.push(`format: ${schema.format}`)
  if (typeof schema["x-troupe-reference"] === "string") parts.push(`reference to ${schema["x-troupe-reference"]}`)
  if (schema.readOnly === true) parts.push("computed (read-only)")
  if (schema["x-troupe-secret"] === true) parts.push('secret: reads show "********" unless revealed')
  return parts.length === 0 ? undefined : `/** ${parts.join("; ")} */`
}

/** The TypeScript type of a JSON Schema (the subset `structureSchema` produces). @category conversions */
const schemaToType = (schema: JsonSchema): string => {
  if (Array.isArray(schema.anyOf)) return (schema.anyOf as Array<JsonSchema>).map(schemaToType).join(" | ")
  if (Array.isArray(schema.enum)) return (schema.enum as Array<unknown>).map((v) => JSON.stringify(v)).join(" | ")
  switch (schema.type) {
    case "string":
      return "string"
    case "number":
    case "integer":
      return "number"
    case "boolean":
      return "boolean"
    case "null":
      return "null"
    case "array": {
      const item = schemaToType((schema.items as JsonSchema | undefined) ?? {})
      return `Array<${item}>`
    }
    case "object": {
      const properties = (schema.properties ?? {}) as Record<string, JsonSchema>
      const required = new Set((schema.required ?? []) as Array<string>)
      const lines: Array<string> = []
      for (const [name, sub] of Object.entries(properties)) {
        const doc = comment(sub)
        if (doc !== undefined) lines.push(doc)
        lines.push(`${key(name)}${required.has(name) ? "" : "?"}: ${schemaToType(sub)}`)
      }
      if (schema.additionalProperties !== false) lines.push("[key: string]: unknown")
      return lines.length === 0 ? "{}" : `{\n${indent(lines.join("\n"))}\n}`
    }
    default:
      return "unknown"
  }
}

/** One TypeScript module declaring a type per structure, plus a map from slug to type. @category conversions */
export const structuresToTypeScript = (
  structures: ReadonlyArray<StructureLike>,
  source: { readonly url: string; readonly workspace: string }
): string => {
  const sorted = [...structures].sort((a, b) => a.recordSlug.localeCompare(b.recordSlug))
  const used = new Map<string, number>()
  const names = sorted.map((s) => {
    const base = typeName(s.recordSlug)
    const n = used.get(base) ?? 0
    used.set(base, n + 1)
    return n === 0 ? base : `${base}${n + 1}`
  })
  const out: Array<string> = [
    `// Generated by \`troupe types\` from workspace "${source.workspace}" at ${source.url}. Do not edit: run it again.`,
    "",
    "/** A record as the API answers it, with its structure's `data`. */",
    "export interface TroupeRecord<Data> {",
    "  id: string",
    "  structureId: string",
    "  data: Data",
    "  version: number",
    "  createdAt: string",
    "  updatedAt: string",
    "  [key: string]: unknown",
    "}",
    ""
  ]
  sorted.forEach((s, i) => {
    const schema = structureSchema(s)
    const doc = [`${s.name} (structure \`${s.recordSlug}\`${s.version === undefined ? "" : `, version ${s.version}`})`]
    if (s.description) doc.push(s.description)
    out.push(`/** ${doc.join(": ").replace(/\*\//g, "*\\/")} */`)
    out.push(`export interface ${names[i]} ${schemaToType(schema)}`)
    out.push("")
  })
  out.push("/** Every structure's data type, by record slug. */")
  out.push(`export interface TroupeStructures {`)
  sorted.forEach((s, i) => out.push(`  ${key(s.recordSlug)}: ${names[i]}`))
  out.push("}")
  out.push("")
  out.push("/** A record slug of this workspace. */")
  out.push("export type StructureSlug = keyof TroupeStructures")
  out.push("")
  return out.join("\n")
}
