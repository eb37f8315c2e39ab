// The rules of one property definition (README "Properties"): its name, type, flags, computed expression and the
// constraints of its type (string, number, datetime, array items, nested objects, references, file ids), then its
// default and enum checked against those constraints. The walk descends into objects and item schemas; rules.ts runs
// it over a structure's top-level properties and adds the checks that need the whole structure.
import {
  type ArrayItems,
  ArrayItemType,
  ComputedMode,
  OnDelete,
  type PropertyDefinition,
  PropertyType,
  Relationship,
  RenderAs,
  StringFormat
} from "@troupe/api/structures/Structure"
import { Result } from "effect"
import { isObject } from "../lib/JsonPath.ts"
import { parseExpression } from "./Expression.ts"
import { parseDateTime } from "./Formats.ts"
import { compilePattern } from "./Pattern.ts"
import { MAX_DEFINITION_DEPTH, type Problems, quote, type Raw, type RuleContext } from "./RuleProblems.ts"
import { propertyNamesOf } from "./StructureReferences.ts"
import { isMultipleOf } from "./ScalarChecks.ts"
import { itemProblem, valueProblems } from "./ShapeChecks.ts"

// the literal lists of the contract's schemas (@troupe/api/structures/Structure), not copies of them
const PROPERTY_TYPES = PropertyType.literals
const ITEM_TYPES = ArrayItemType.literals
const FORMATS = StringFormat.literals
const RENDER_AS = RenderAs.literals
const COMPUTED_MODES = ComputedMode.literals
const RELATIONSHIPS = Relationship.literals
const ON_DELETE = OnDelete.literals
const NAME_RE = /^[A-Za-z_][A-Za-z0-9_-]{0,63}$/
const RESERVED_NAMES = new Set(["__proto__", "constructor", "prototype", "_expanded"])
/** Record columns a reference may point at or display besides the target's own properties. */
const RECORD_COLUMNS = new Set(["id", "createdAt", "updatedAt", "version"])

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
export const checkProperties = (w: Walk, list: ReadonlyArray<unknown>, at: string, scope: Scope): void => {
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
