// The rules of a structure definition (README "Properties"). `checkStructure` takes the body as sent
// (unknown: the validate endpoint may pass a body that did not even decode) and returns every problem at once,
// each with a path such as `properties[2].maxLength`. Relations between structures (reference targets, display
// fields, circular chains) are checked against the workspace through synchronous lookups the caller preloads.
//
// Decisions where the spec is silent:
// - Property names: a letter or underscore, then letters, digits, `_` or `-` (at most 64); `__proto__`,
//   `constructor`, `prototype` and `_expanded` are refused. Dots would make `data.a.b` paths ambiguous.
// - A structure referencing itself (a tree: category.parent) is allowed; it is not a circular chain. Only a
//   required non-nullable self-reference is refused: the first record could never be created.
// - Computed fields (string, number, boolean, datetime) live at the top level; their expressions read top-level
//   fields (dotted paths into objects allowed).
// - isUnique applies to top-level scalar and reference properties only; secrets cannot be unique (encrypted with
//   a random IV) and cannot sit inside array items.
// - At most 32 top-level properties may be `indexed` (each is an expression index every write of the structure's
//   records maintains); the properties past that are named.
// Size: over 500 lines, kept whole: every rule of a structure definition in one walk, so that all problems of a
// definition are reported at once. Filling defaults and applying updates live in StructureDefaults.ts.
import {
  type ArrayItems,
  ArrayItemType,
  ComputedMode,
  OnDelete,
  type PropertyDefinition,
  PropertyType,
  Relationship,
  RenderAs,
  SchemaDiscoveryMode,
  StringFormat,
  StructureStatus
} from "@troupe/api/structures/Structure"
import { Result } from "effect"
import { parseExpression, referencedFields } from "./Expression.ts"
import { parseDateTime } from "./Formats.ts"
import { compilePattern } from "./Pattern.ts"
import { searchSettingProblems } from "./SearchSettings.ts"
import { isMultipleOf, itemProblem, valueProblems } from "./Validator.ts"
import { isObject } from "../lib/JsonPath.ts"

export interface DefinitionProblem {
  readonly field: string
  readonly message: string
}

/** What the rules need to know about another structure of the workspace. */
export interface StructureLike {
  readonly recordSlug: string
  readonly properties: ReadonlyArray<unknown>
}

export interface RuleContext {
  /** A live structure of the same workspace by recordSlug (soft-deleted ones should not be found). */
  readonly findStructureBySlug: (slug: string) => StructureLike | undefined
  /** recordSlug of the structure being updated; on create it follows from the input. */
  readonly selfSlug?: string | undefined
}

// the literal lists of the contract's schemas (@troupe/api/structures/Structure), not copies of them
export const PROPERTY_TYPES = PropertyType.literals
const ITEM_TYPES = ArrayItemType.literals
const FORMATS = StringFormat.literals
const RENDER_AS = RenderAs.literals
const COMPUTED_MODES = ComputedMode.literals
const RELATIONSHIPS = Relationship.literals
const ON_DELETE = OnDelete.literals
const STATUSES = StructureStatus.literals
const MODES = SchemaDiscoveryMode.literals

export const MAX_PROPERTIES = 1000
/** Top-level properties one structure may mark `indexed: true`: each costs an index that every record write updates. */
export const MAX_INDEXED_PROPERTIES = 32
/** Levels of object / array-of-object nesting a definition may declare. */
export const MAX_DEFINITION_DEPTH = 8
const NAME_RE = /^[A-Za-z_][A-Za-z0-9_-]{0,63}$/
const RESERVED_NAMES = new Set(["__proto__", "constructor", "prototype", "_expanded"])
const SLUG_RE = /^[a-z0-9]+(?:-[a-z0-9]+)*$/
/** Record columns a reference may point at or display besides the target's own properties. */
const RECORD_COLUMNS = new Set(["id", "createdAt", "updatedAt", "version"])

type Raw = Record<string, unknown>

const quote = (values: ReadonlyArray<string>) => values.map((v) => `'${v}'`).join(", ")

const join = (at: string, key: string) => (at === "" ? key : `${at}.${key}`)

class Problems {
  readonly list: Array<DefinitionProblem> = []
  add(field: string, message: string): undefined {
    this.list.push({ field, message })
    return undefined
  }
  get size(): number {
    return this.list.length
  }

  // Typed optional fields: absent is fine, anything else must have the right type.
  bool(o: Raw, key: string, at: string): boolean | undefined {
    const v = o[key]
    if (v === undefined) return undefined
    if (typeof v !== "boolean") return this.add(join(at, key), "must be a boolean")
    return v
  }
  str(o: Raw, key: string, at: string): string | undefined {
    const v = o[key]
    if (v === undefined) return undefined
    if (typeof v !== "string") return this.add(join(at, key), "must be a string")
    return v
  }
  num(o: Raw, key: string, at: string, opts: { integer?: boolean; min?: number; positive?: boolean } = {}): number | undefined {
    const v = o[key]
    if (v === undefined) return undefined
    const field = join(at, key)
    if (typeof v !== "number" || !Number.isFinite(v)) return this.add(field, "must be a finite number")
    if (opts.integer === true && !Number.isInteger(v)) return this.add(field, "must be an integer")
    if (opts.positive === true && v <= 0) return this.add(field, "must be greater than 0")
    if (opts.min !== undefined && v < opts.min) return this.add(field, `must be at least ${opts.min}`)
    return v
  }
  oneOf<const T extends string>(o: Raw, key: string, at: string, values: ReadonlyArray<T>): T | undefined {
    const v = o[key]
    if (v === undefined) return undefined
    if (typeof v !== "string" || !(values as ReadonlyArray<string>).includes(v)) {
      return this.add(join(at, key), `must be one of ${quote(values)}`)
    }
    return v as T
  }
  array(o: Raw, key: string, at: string): ReadonlyArray<unknown> | undefined {
    const v = o[key]
    if (v === undefined) return undefined
    if (!Array.isArray(v)) return this.add(join(at, key), "must be an array")
    return v
  }
}

/** Lowercase, hyphen-separated slug of a name ("Blog Posts!" -> "blog-posts"); diacritics are dropped. */
export const slugify = (name: string): string =>
  name
    .normalize("NFKD")
    .replace(/[\u0300-\u036f]/g, "")
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, "-")
    .replace(/^-+|-+$/g, "")
    .slice(0, 100)
    .replace(/-+$/, "")

/** recordSlug of an input: the given one, or one derived from the name. */
const slugOf = (input: Raw): string | undefined =>
  typeof input.recordSlug === "string" ? input.recordSlug : typeof input.name === "string" ? slugify(input.name) : undefined

// ---------------------------------------------------------------------------------------------------------------
// References between structures

/**
 * Reference targets declared by raw properties, nested ones included, with the path of their `target` field. The walk
 * stops below MAX_DEFINITION_DEPTH levels (deeper nesting is reported by checkProperties), so it is bounded whatever
 * the input.
 */
const referencesOf = (properties: unknown, at: string, depth = 0): Array<{ target: string; field: string }> => {
  if (!Array.isArray(properties) || depth > MAX_DEFINITION_DEPTH) return []
  return properties.flatMap((p, i): Array<{ target: string; field: string }> => {
    if (!isObject(p)) return []
    const here = `${at}[${i}]`
    if (p.type === "reference") {
      const key = typeof p.target === "string" ? "target" : "referenceStructure"
      const target = p[key]
      return typeof target === "string" ? [{ target, field: `${here}.${key}` }] : []
    }
    if (p.type === "object") return referencesOf(p.properties, `${here}.properties`, depth + 1)
    if (p.type === "array") return referencesOf(p.itemSchema, `${here}.itemSchema`, depth + 1)
    return []
  })
}

/** A path of slugs from `from` back to `self`, following references through the workspace, or undefined. */
const findCycle = (from: string, self: string, selfTargets: ReadonlyArray<string>, ctx: RuleContext): Array<string> | undefined => {
  const parent = new Map<string, string | null>([[from, null]])
  const queue = [from]
  // Workspaces are small; the bound only guards against a lookup that keeps inventing slugs.
  while (queue.length > 0 && parent.size < 100_000) {
    const slug = queue.shift()!
    const targets = slug === self ? selfTargets : referencesOf(ctx.findStructureBySlug(slug)?.properties, "").map((r) => r.target)
    for (const t of targets) {
      if (t === slug) continue // self-references are not chains
      if (t === self) {
        const path = [t, slug]
        let cur = parent.get(slug)
        while (cur !== null && cur !== undefined) {
          path.push(cur)
          cur = parent.get(cur)
        }
        return [self, ...path.reverse()]
      }
      if (!parent.has(t)) {
        parent.set(t, slug)
        queue.push(t)
      }
    }
  }
  return undefined
}

const propertyNamesOf = (s: StructureLike): Set<string> =>
  new Set(s.properties.flatMap((p) => (isObject(p) && typeof p.name === "string" ? [p.name] : [])))

// ---------------------------------------------------------------------------------------------------------------
// Properties

interface Scope {
  readonly depth: number
  readonly topLevel: boolean
  readonly inArray: boolean
}

interface Walk {
  readonly problems: Problems
  readonly ctx: RuleContext
  readonly self: string | undefined
  /** Top-level property names of the input: the fields a self-reference can point at. */
  readonly selfFields: ReadonlySet<string>
}

/** Checks a list of properties (top level, object properties or an item schema). */
const checkProperties = (w: Walk, list: ReadonlyArray<unknown>, at: string, scope: Scope): void => {
  const seen = new Map<string, number>()
  list.forEach((p, i) => {
    const here = `${at}[${i}]`
    checkProperty(w, p, here, scope)
    if (isObject(p) && typeof p.name === "string") {
      const first = seen.get(p.name)
      if (first !== undefined) w.problems.add(`${here}.name`, `duplicates the name of ${at}[${first}] ('${p.name}')`)
      else seen.set(p.name, i)
    }
  })
}

const checkProperty = (w: Walk, p: unknown, at: string, scope: Scope): void => {
  const problems = w.problems
  if (!isObject(p)) return problems.add(at, "must be an object")
  const before = problems.size

  const name = p.name
  if (name === undefined) problems.add(`${at}.name`, "is required")
  else if (typeof name !== "string") problems.add(`${at}.name`, "must be a string")
  else if (RESERVED_NAMES.has(name)) problems.add(`${at}.name`, `'${name}' is a reserved name`)
  else if (!NAME_RE.test(name)) {
    problems.add(`${at}.name`, "must start with a letter or _ and hold only letters, digits, _ and - (at most 64)")
  }

  const type = p.type
  if (type === undefined) return problems.add(`${at}.type`, "is required")
  if (typeof type !== "string" || !(PROPERTY_TYPES as ReadonlyArray<string>).includes(type)) {
    return problems.add(`${at}.type`, `must be one of ${quote(PROPERTY_TYPES)}`)
  }

  problems.str(p, "id", at)
  problems.str(p, "description", at)
  problems.bool(p, "required", at)
  const nullable = problems.bool(p, "nullable", at)
  const unique = problems.bool(p, "isUnique", at)
  problems.bool(p, "immutable", at)
  const enumValues = problems.array(p, "enum", at)
  if (enumValues !== undefined && enumValues.length === 0) problems.add(`${at}.enum`, "must list at least one value")

  if (unique === true) {
    if (type === "array" || type === "object") problems.add(`${at}.isUnique`, `is not supported on ${type} properties`)
    else if (!scope.topLevel) problems.add(`${at}.isUnique`, "is only supported on top-level properties")
  }

  // Computed fields.
  const expression = p.expression
  const computedMode = p.computedMode
  const scalar = type === "string" || type === "number" || type === "boolean" || type === "datetime"
  if (expression !== undefined) {
    if (!scalar) problems.add(`${at}.expression`, "computed fields must be string, number, boolean or datetime")
    else if (!scope.topLevel) problems.add(`${at}.expression`, "computed fields are only supported on top-level properties")
    else if (typeof expression !== "string") problems.add(`${at}.expression`, "must be a string")
    else {
      const parsed = parseExpression(expression)
      if (Result.isFailure(parsed)) {
        problems.add(`${at}.expression`, `${parsed.failure.message} (at position ${parsed.failure.position})`)
      }
    }
    if (p.default !== undefined) problems.add(`${at}.default`, "a computed field cannot have a default")
    if (computedMode === "virtual" && unique === true) problems.add(`${at}.isUnique`, "a virtual field is not stored and cannot be unique")
  }
  if (computedMode !== undefined) {
    if (problems.oneOf(p, "computedMode", at, COMPUTED_MODES) !== undefined && expression === undefined) {
      problems.add(`${at}.computedMode`, "requires an expression")
    }
  }

  const constraintsBefore = problems.size
  switch (type) {
    case "string":
      checkStringConstraints(problems, p, at)
      checkFileFormat(problems, p, at, scope, nullable === true)
      if (problems.bool(p, "isSecret", at) === true) {
        if (unique === true) problems.add(`${at}.isSecret`, "a secret field cannot be unique (values are encrypted)")
        if (scope.inArray) problems.add(`${at}.isSecret`, "secret fields are not supported inside array items")
      }
      problems.oneOf(p, "renderAs", at, RENDER_AS)
      checkNot(problems, p, at, "string")
      break
    case "number":
      checkNumberConstraints(problems, p, at)
      checkNot(problems, p, at, "number")
      checkAutoIncrement(problems, p, at, scope)
      break
    case "boolean":
      break
    case "datetime":
      checkDatetimeConstraints(problems, p, at)
      break
    case "array":
      checkArray(w, p, at, scope)
      break
    case "object":
      checkObject(w, p, at, scope)
      break
    case "reference":
      checkReference(w, p, at, nullable === true)
      break
  }

  // default and enum are checked against the property's own constraints, once those are themselves valid.
  if (problems.size !== constraintsBefore || problems.size !== before) return
  const def = p as unknown as PropertyDefinition
  const withoutLists = { ...def, enum: undefined, not: undefined } as unknown as PropertyDefinition
  if (enumValues !== undefined) {
    const seen: Array<unknown> = []
    enumValues.forEach((value, i) => {
      for (const problem of valueProblems(withoutLists, value)) problems.add(`${at}.enum[${i}]${problem.path}`, problem.message)
      if (seen.some((s) => JSON.stringify(s) === JSON.stringify(value))) problems.add(`${at}.enum[${i}]`, "is listed twice")
      seen.push(value)
    })
  }
  if (p.default !== undefined && expression === undefined) {
    const withoutNot = { ...def, not: undefined } as unknown as PropertyDefinition
    for (const problem of valueProblems(withoutNot, p.default)) {
      problems.add(`${at}.default${problem.path}`, problem.message === "is not an allowed value" ? "must be one of enum" : problem.message)
    }
  }
}

// String, number and datetime constraints also apply to array `items`, hence the separate functions.

const checkStringConstraints = (problems: Problems, p: Raw, at: string): void => {
  const min = problems.num(p, "minLength", at, { integer: true, min: 0 })
  const max = problems.num(p, "maxLength", at, { integer: true, min: 0 })
  if (min !== undefined && max !== undefined && min > max) {
    problems.add(`${at}.minLength`, `must be less than or equal to maxLength (${min} > ${max})`)
  }
  const pattern = problems.str(p, "pattern", at)
  if (pattern !== undefined) {
    const compiled = compilePattern(pattern)
    if ("error" in compiled) problems.add(`${at}.pattern`, compiled.error)
  }
  problems.oneOf(p, "format", at, FORMATS)
}

const checkNumberConstraints = (problems: Problems, p: Raw, at: string): void => {
  const min = problems.num(p, "minimum", at)
  const max = problems.num(p, "maximum", at)
  const exMin = problems.bool(p, "exclusiveMinimum", at)
  const exMax = problems.bool(p, "exclusiveMaximum", at)
  if (min !== undefined && max !== undefined) {
    if (min > max) problems.add(`${at}.minimum`, `must be less than or equal to maximum (${min} > ${max})`)
    else if (min === max && (exMin === true || exMax === true)) {
      problems.add(`${at}.minimum`, "with an exclusive bound, minimum must be less than maximum")
    }
  }
  const multipleOf = problems.num(p, "multipleOf", at, { positive: true })
  const integer = problems.bool(p, "integer", at)
  if (integer === true && multipleOf !== undefined && min !== undefined && max !== undefined && min <= max) {
    // A range holding no allowed value is a definition mistake worth naming.
    const first = Math.ceil(min / multipleOf) * multipleOf
    if (first > max) problems.add(`${at}.multipleOf`, `no multiple of ${multipleOf} lies between minimum and maximum`)
  }
}

const checkDatetimeConstraints = (problems: Problems, p: Raw, at: string): void => {
  const earliestRaw = problems.str(p, "earliestDate", at)
  const latestRaw = problems.str(p, "latestDate", at)
  const earliest = earliestRaw === undefined ? undefined : parseDateTime(earliestRaw)
  const latest = latestRaw === undefined ? undefined : parseDateTime(latestRaw)
  if (earliestRaw !== undefined && earliest === undefined) problems.add(`${at}.earliestDate`, "must be an ISO 8601 date-time")
  if (latestRaw !== undefined && latest === undefined) problems.add(`${at}.latestDate`, "must be an ISO 8601 date-time")
  if (earliest !== undefined && latest !== undefined && earliest >= latest) {
    problems.add(`${at}.earliestDate`, "must be before latestDate")
  }
  problems.bool(p, "exclusiveEarliest", at)
  problems.bool(p, "exclusiveLatest", at)
}

const checkNot = (problems: Problems, p: Raw, at: string, type: "string" | "number"): void => {
  const not = problems.array(p, "not", at)
  if (not === undefined) return
  not.forEach((v, i) => {
    if (type === "string" ? typeof v !== "string" : typeof v !== "number" || !Number.isFinite(v)) {
      problems.add(`${at}.not[${i}]`, `must be a ${type}`)
    }
  })
  if (Array.isArray(p.enum)) {
    p.enum.forEach((v, i) => {
      if (not.includes(v)) problems.add(`${at}.enum[${i}]`, `${JSON.stringify(v)} is also listed in not`)
    })
  }
  if (p.default !== undefined && not.includes(p.default)) {
    problems.add(`${at}.default`, `${JSON.stringify(p.default)} is listed in not`)
  }
}

const checkAutoIncrement = (problems: Problems, p: Raw, at: string, scope: Scope): void => {
  const auto = p.autoIncrement
  if (auto === undefined) return
  const here = `${at}.autoIncrement`
  if (!isObject(auto)) return problems.add(here, "must be an object {startAt, incrementBy}")
  const startAt = problems.num(auto, "startAt", here, { integer: true })
  problems.num(auto, "incrementBy", here, { integer: true, positive: true })
  if (!scope.topLevel) problems.add(here, "is only supported on top-level properties")
  if (p.expression !== undefined) problems.add(here, "a field cannot be both computed and auto-incremented")
  if (p.default !== undefined) problems.add(`${at}.default`, "an auto-incremented field cannot have a default")
  if (startAt !== undefined) {
    const min = typeof p.minimum === "number" ? p.minimum : undefined
    const max = typeof p.maximum === "number" ? p.maximum : undefined
    if ((min !== undefined && startAt < min) || (max !== undefined && startAt > max)) {
      problems.add(`${here}.startAt`, "must lie between minimum and maximum")
    }
    if (typeof p.multipleOf === "number" && p.multipleOf > 0 && !isMultipleOf(startAt, p.multipleOf)) {
      problems.add(`${here}.startAt`, `must be a multiple of ${p.multipleOf}`)
    }
  }
}

const checkArray = (w: Walk, p: Raw, at: string, scope: Scope): void => {
  const problems = w.problems
  const items = p.items
  let itemType: string | undefined
  if (items === undefined) problems.add(`${at}.items`, "is required for array properties")
  else if (!isObject(items)) problems.add(`${at}.items`, "must be an object with a type")
  else {
    const t = items.type
    if (t === undefined) problems.add(`${at}.items.type`, "is required")
    else if (t === "array") problems.add(`${at}.items.type`, "arrays of arrays are not supported")
    else if (t === "reference") problems.add(`${at}.items.type`, "use a many-to-many reference property instead")
    else if (typeof t !== "string" || !(ITEM_TYPES as ReadonlyArray<string>).includes(t)) {
      problems.add(`${at}.items.type`, `must be one of ${quote(ITEM_TYPES)}`)
    } else itemType = t
    if (itemType !== undefined) checkItems(problems, items, `${at}.items`, itemType)
  }

  const itemSchema = problems.array(p, "itemSchema", at)
  if (itemType === "object") {
    if (itemSchema === undefined) problems.add(`${at}.itemSchema`, "is required when items.type is 'object'")
    else if (itemSchema.length === 0) problems.add(`${at}.itemSchema`, "must declare at least one property")
    else if (scope.depth + 1 >= MAX_DEFINITION_DEPTH) problems.add(`${at}.itemSchema`, `nests deeper than ${MAX_DEFINITION_DEPTH} levels`)
    else checkProperties(w, itemSchema, `${at}.itemSchema`, { depth: scope.depth + 1, topLevel: false, inArray: true })
  } else if (itemSchema !== undefined && itemType !== undefined) {
    problems.add(`${at}.itemSchema`, "is only allowed when items.type is 'object'")
  }

  problems.bool(p, "isStrict", at)
  problems.bool(p, "uniqueItems", at)
  const min = problems.num(p, "minItems", at, { integer: true, min: 0 })
  const max = problems.num(p, "maxItems", at, { integer: true, min: 0 })
  if (min !== undefined && max !== undefined && min > max) {
    problems.add(`${at}.minItems`, `must be less than or equal to maxItems (${min} > ${max})`)
  }
}

const checkItems = (problems: Problems, items: Raw, at: string, type: string): void => {
  const before = problems.size
  if (items.format === "file") problems.add(`${at}.format`, "'file' is only supported on top-level string properties")
  if (type === "string") checkStringConstraints(problems, items, at)
  if (type === "number") checkNumberConstraints(problems, items, at)
  if (type === "datetime") checkDatetimeConstraints(problems, items, at)
  const values = problems.array(items, "enum", at)
  if (values === undefined || problems.size !== before) return
  if (values.length === 0) return problems.add(`${at}.enum`, "must list at least one value")
  const typed = { ...items, enum: undefined } as unknown as ArrayItems
  values.forEach((v, i) => {
    const message = itemProblem(typed, v)
    if (message !== undefined) problems.add(`${at}.enum[${i}]`, message)
  })
}

const checkObject = (w: Walk, p: Raw, at: string, scope: Scope): void => {
  const problems = w.problems
  const props = problems.array(p, "properties", at)
  problems.bool(p, "isStrict", at)
  if (props !== undefined) {
    if (scope.depth + 1 >= MAX_DEFINITION_DEPTH) problems.add(`${at}.properties`, `nests deeper than ${MAX_DEFINITION_DEPTH} levels`)
    else checkProperties(w, props, `${at}.properties`, { depth: scope.depth + 1, topLevel: false, inArray: scope.inArray })
  }
  const required = problems.array(p, "requiredProperties", at)
  if (required === undefined) return
  const names = new Set((props ?? []).flatMap((q) => (isObject(q) && typeof q.name === "string" ? [q.name] : [])))
  required.forEach((r, i) => {
    if (typeof r !== "string") problems.add(`${at}.requiredProperties[${i}]`, "must be a string")
    else if (!names.has(r)) problems.add(`${at}.requiredProperties[${i}]`, `'${r}' is not one of the object's properties`)
  })
}

/** `format: "file"` (a file id of the workspace) on top-level strings only, with its own onDelete (default restrict). */
const checkFileFormat = (problems: Problems, p: Raw, at: string, scope: Scope, nullable: boolean): void => {
  const onDelete = problems.oneOf(p, "onDelete", at, ON_DELETE)
  if (p.format !== "file") {
    if (p.onDelete !== undefined) problems.add(`${at}.onDelete`, "is only allowed on references and format 'file' strings")
    return
  }
  if (!scope.topLevel) problems.add(`${at}.format`, "'file' is only supported on top-level string properties")
  if (onDelete === "set_null" && !nullable) problems.add(`${at}.onDelete`, "'set_null' requires nullable: true")
  if (p.isSecret === true) problems.add(`${at}.isSecret`, "a file id cannot be secret")
}

const checkReference = (w: Walk, p: Raw, at: string, nullable: boolean): void => {
  const problems = w.problems
  const target = problems.str(p, "target", at)
  const legacy = problems.str(p, "referenceStructure", at)
  const targetField = problems.str(p, "targetField", at)
  const displayField = problems.str(p, "displayField", at)
  const relationship = problems.oneOf(p, "relationship", at, RELATIONSHIPS)
  const onDelete = problems.oneOf(p, "onDelete", at, ON_DELETE)
  if (p.relationship === undefined) problems.add(`${at}.relationship`, `is required: ${quote(RELATIONSHIPS)}`)
  if (p.onDelete === undefined) problems.add(`${at}.onDelete`, `is required: ${quote(ON_DELETE)}`)
  if (onDelete === "set_null" && !nullable) problems.add(`${at}.onDelete`, "'set_null' requires nullable: true")
  if (relationship === "many-to-many" && p.isUnique === true) problems.add(`${at}.isUnique`, "is not supported on many-to-many references")

  if (target !== undefined && legacy !== undefined && target !== legacy) {
    problems.add(`${at}.referenceStructure`, "disagrees with target; send only target")
  }
  const slug = target ?? legacy
  const targetKey = target !== undefined ? "target" : "referenceStructure"
  if (slug === undefined) {
    if (p.target === undefined && p.referenceStructure === undefined) problems.add(`${at}.target`, "is required for reference properties")
    return
  }
  const self = w.self !== undefined && slug === w.self
  const found = self ? undefined : w.ctx.findStructureBySlug(slug)
  if (!self && found === undefined) {
    return problems.add(`${at}.${targetKey}`, `no structure with recordSlug '${slug}' exists in this workspace`)
  }
  if (self && p.required === true && !nullable) {
    problems.add(`${at}.required`, "a required, non-nullable reference to its own structure makes the first record impossible to create")
  }
  // On a self-reference, the target's fields are the input's own top-level properties.
  const fields = found !== undefined ? propertyNamesOf(found) : w.selfFields
  const has = (f: string) => RECORD_COLUMNS.has(f) || fields.has(f)
  if (targetField !== undefined && !has(targetField)) {
    problems.add(`${at}.targetField`, `'${targetField}' is not a field of '${slug}'`)
  }
  if (displayField !== undefined && !has(displayField)) {
    problems.add(`${at}.displayField`, `'${displayField}' is not a field of '${slug}'`)
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Whole structure

/**
 * Every problem of a structure definition (create body, or the merged result of an update), each with the path
 * of the offending field. An empty array means the definition is valid.
 */
export const checkStructure = (input: unknown, ctx: RuleContext): Array<DefinitionProblem> => {
  const problems = new Problems()
  if (!isObject(input)) {
    problems.add("body", "must be an object")
    return problems.list
  }

  const name = input.name
  if (name === undefined) problems.add("name", "is required")
  else if (typeof name !== "string") problems.add("name", "must be a string")
  else if (name.trim() === "") problems.add("name", "must not be empty")
  else if (name.length > 200) problems.add("name", "must be at most 200 characters long")

  const recordSlug = problems.str(input, "recordSlug", "")
  if (recordSlug !== undefined) {
    if (!SLUG_RE.test(recordSlug) || recordSlug.length > 100) {
      problems.add("recordSlug", "must be lowercase letters and digits separated by single hyphens (at most 100)")
    }
  } else if (typeof name === "string" && name.trim() !== "" && slugify(name) === "") {
    problems.add("name", "holds no letters or digits to derive a recordSlug from; send recordSlug")
  }

  problems.str(input, "description", "")
  problems.oneOf(input, "status", "", STATUSES)
  problems.oneOf(input, "schemaDiscoveryMode", "", MODES)
  problems.bool(input, "isStrict", "")
  problems.bool(input, "enableVersioning", "")
  problems.num(input, "defaultTtlSeconds", "", { integer: true, positive: true })
  const tags = problems.array(input, "tags", "")
  tags?.forEach((t, i) => {
    if (typeof t !== "string") problems.add(`tags[${i}]`, "must be a string")
  })

  const retention = input.retentionPolicy
  if (retention !== undefined && retention !== null) {
    if (!isObject(retention)) problems.add("retentionPolicy", "must be an object")
    else {
      problems.num(retention, "maxVersions", "retentionPolicy", { integer: true, positive: true })
      problems.num(retention, "maxAgeDays", "retentionPolicy", { positive: true })
      problems.num(retention, "cleanupIntervalHours", "retentionPolicy", { positive: true })
      problems.bool(retention, "pinnedVersionsRetained", "retentionPolicy")
    }
  }
  const discovery = input.schemaDiscoveryConfig
  if (discovery !== undefined) {
    if (!isObject(discovery)) problems.add("schemaDiscoveryConfig", "must be an object")
    else {
      for (const key of ["batchSize", "maxKeysPerRecord", "maxNestingDepth", "maxStringLengthSampled"]) {
        problems.num(discovery, key, "schemaDiscoveryConfig", { integer: true, positive: true })
      }
    }
  }

  const properties = input.properties
  const self = ctx.selfSlug ?? slugOf(input)
  if (properties === undefined) problems.add("properties", "is required (it may be empty)")
  else if (!Array.isArray(properties)) problems.add("properties", "must be an array")
  else if (properties.length > MAX_PROPERTIES) problems.add("properties", `must declare at most ${MAX_PROPERTIES} properties`)
  else {
    const selfFields = new Set(properties.flatMap((p) => (isObject(p) && typeof p.name === "string" ? [p.name] : [])))
    checkProperties({ problems, ctx, self, selfFields }, properties, "properties", { depth: 0, topLevel: true, inArray: false })
    checkComputedReferences(problems, properties)
    checkCycles(problems, properties, self, ctx)
    checkIndexedCount(problems, properties)
  }

  const search = input.defaultSearchField
  if (search !== undefined && search !== null) {
    if (typeof search !== "string") problems.add("defaultSearchField", "must be a string")
    else {
      const p = Array.isArray(properties) ? properties.find((q) => isObject(q) && q.name === search) : undefined
      if (p === undefined) problems.add("defaultSearchField", `'${search}' is not a property of this structure`)
      else if (isObject(p) && p.type !== "string") problems.add("defaultSearchField", `'${search}' is not a string property`)
    }
  }
  for (const p of searchSettingProblems(input)) problems.add(p.field, p.message)

  return problems.list
}

/** At most MAX_INDEXED_PROPERTIES indexed properties: each one past the limit is named. */
const checkIndexedCount = (problems: Problems, properties: ReadonlyArray<unknown>) => {
  let count = 0
  properties.forEach((p, i) => {
    if (!isObject(p) || p.indexed !== true) return
    if (++count > MAX_INDEXED_PROPERTIES) {
      const name = typeof p.name === "string" ? `'${p.name}'` : "this property"
      problems.add(
        `properties[${i}].indexed`,
        `${name} cannot be indexed: a structure may have at most ${MAX_INDEXED_PROPERTIES} indexed properties`
      )
    }
  })
}

/** Expressions read existing fields, and computed fields do not depend on each other in a cycle. */
const checkComputedReferences = (problems: Problems, properties: ReadonlyArray<unknown>): void => {
  const byName = new Map<string, Raw>()
  properties.forEach((p) => {
    if (isObject(p) && typeof p.name === "string" && !byName.has(p.name)) byName.set(p.name, p)
  })
  const deps = new Map<string, { at: string; reads: Array<string> }>()
  properties.forEach((p, i) => {
    if (!isObject(p) || typeof p.expression !== "string" || typeof p.name !== "string") return
    const parsed = parseExpression(p.expression)
    if (Result.isFailure(parsed)) return // reported by checkProperty
    const at = `properties[${i}].expression`
    const reads: Array<string> = []
    for (const field of referencedFields(parsed.success)) {
      const [head, ...rest] = field.split(".")
      const target = byName.get(head!)
      if (target === undefined) {
        problems.add(at, `reads '${field}', which is not a property of this structure`)
        continue
      }
      if (rest.length > 0 && !pathExists(target, rest)) {
        problems.add(at, `reads '${field}', which is not a field of this structure`)
        continue
      }
      if (typeof target.expression === "string") reads.push(head!)
    }
    deps.set(p.name, { at, reads })
  })
  // Cycles among computed fields (a field reading itself included).
  const state = new Map<string, "visiting" | "done">()
  const stack: Array<string> = []
  const reported = new Set<string>()
  const visit = (name: string): void => {
    const node = deps.get(name)
    if (node === undefined || state.get(name) === "done") return
    if (state.get(name) === "visiting") {
      const cycle = [...stack.slice(stack.indexOf(name)), name]
      for (const member of new Set(cycle)) {
        if (reported.has(member)) continue
        reported.add(member)
        problems.add(deps.get(member)!.at, `computed fields form a cycle: ${cycle.join(" -> ")}`)
      }
      return
    }
    state.set(name, "visiting")
    stack.push(name)
    node.reads.forEach(visit)
    stack.pop()
    state.set(name, "done")
  }
  for (const name of deps.keys()) visit(name)
}

/** Whether `rest` names a field under the object property `p`; free-form objects accept any path. */
const pathExists = (p: Raw, rest: ReadonlyArray<string>): boolean => {
  if (rest.length === 0) return true
  if (p.type !== "object") return false
  const props = Array.isArray(p.properties) ? p.properties : []
  const next = props.find((q) => isObject(q) && q.name === rest[0])
  if (next === undefined) return p.isStrict !== true && props.length === 0
  return pathExists(next as Raw, rest.slice(1))
}

const checkCycles = (problems: Problems, properties: ReadonlyArray<unknown>, self: string | undefined, ctx: RuleContext) => {
  if (self === undefined) return
  const refs = referencesOf(properties, "properties")
  const selfTargets = refs.map((r) => r.target)
  const reported = new Set<string>()
  for (const ref of refs) {
    if (ref.target === self || reported.has(ref.target)) continue
    if (ctx.findStructureBySlug(ref.target) === undefined) continue // reported as a missing target
    const cycle = findCycle(ref.target, self, selfTargets, ctx)
    if (cycle !== undefined) {
      reported.add(ref.target)
      problems.add(ref.field, `circular reference: ${cycle.join(" -> ")}`)
    }
  }
}
