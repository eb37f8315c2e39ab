// The container checks of the record validator (Validator.ts): objects (declared keys, then undeclared ones by the
// record mode), arrays (size, items, uniqueness) and free-form values (forbidden keys and depth only), reporting each
// problem with its full path. valueProblems and itemProblem run the same checks on a definition's default and enum
// values for PropertyRules.ts.
import { errorDetail } from "@troupe/api/Errors"
import type { ArrayItems, ArrayProperty, ObjectProperty, PropertyDefinition } from "@troupe/api/structures/Structure"
import { isObject } from "../lib/JsonPath.ts"
import { canonicalJson, forbiddenKeys, jsonEqual } from "./Formats.ts"
import { describe, fmt, itemScalar, type Scalar, scalarFor } from "./ScalarChecks.ts"
import { isComputed } from "./StructureFacts.ts"
import type { ValidationError } from "./Validator.ts"

/** Deepest nesting of objects and arrays accepted in record data. */
export const MAX_DEPTH = 32
/** A record failing many rules reports this many problems at most. */
export const MAX_ERRORS = 100

export type Errors = Array<ValidationError>

export const push = (errors: Errors, field: string, message: string): void => {
  if (errors.length < MAX_ERRORS) errors.push(errorDetail(field, message))
}

/** A container check reports at `path` (its own full path) and below. */
type Container = (v: unknown, path: string, errors: Errors) => void

interface Slot {
  readonly key: string
  /** `.key`, appended to the parent path on error. */
  readonly rel: string
  readonly required: boolean
  readonly nullable: boolean
  readonly computed: boolean
  readonly scalar: Scalar | undefined
  readonly container: Container | undefined
}

// ---------------------------------------------------------------------------------------------------------------
// Free-form values: whatever the structure does not describe is still walked for forbidden keys and depth.

export const scanFree = (v: unknown, path: string, errors: Errors, budget: number): void => {
  if (typeof v !== "object" || v === null) return
  if (budget <= 0) return push(errors, path, `is nested deeper than ${MAX_DEPTH} levels`)
  if (Array.isArray(v)) {
    for (let i = 0; i < v.length; i++) {
      const item = v[i]
      if (typeof item === "object" && item !== null) scanFree(item, `${path}[${i}]`, errors, budget - 1)
    }
    return
  }
  for (const k in v) {
    if (forbiddenKeys.has(k)) {
      push(errors, `${path}.${k}`, "is a forbidden key")
      continue
    }
    const item = (v as Record<string, unknown>)[k]
    if (typeof item === "object" && item !== null) scanFree(item, `${path}.${k}`, errors, budget - 1)
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Objects and arrays

interface ObjectShape {
  readonly slots: ReadonlyArray<Slot>
  readonly byKey: ReadonlyMap<string, Slot>
  readonly strict: boolean
  /** Levels of nesting above this object (0 for the record itself). */
  readonly depth: number
}

/** Validates the declared keys of `o`, then its undeclared ones. */
export const checkShape = (shape: ObjectShape, o: Record<string, unknown>, path: string, errors: Errors): void => {
  const slots = shape.slots
  let present = 0
  for (let i = 0; i < slots.length; i++) {
    const s = slots[i]!
    let v = o[s.key]
    if (typeof v === "function") v = undefined // an inherited Object.prototype member, not data
    if (v === undefined) {
      if (s.required) push(errors, path + s.rel, "is required")
      continue
    }
    present++
    if (s.computed) continue
    if (v === null) {
      if (!s.nullable) push(errors, path + s.rel, "must not be null")
      continue
    }
    if (s.scalar !== undefined) {
      const message = s.scalar(v)
      if (message !== undefined) push(errors, path + s.rel, message)
    } else {
      s.container!(v, path + s.rel, errors)
    }
  }
  // Undeclared keys exist only when the key count differs from the declared keys found.
  let count = 0
  for (const _ in o) count++ // faster than Object.keys(o).length: no array
  if (count === present) return
  const budget = MAX_DEPTH - shape.depth - 1
  for (const k in o) {
    if (shape.byKey.has(k)) continue
    if (forbiddenKeys.has(k)) push(errors, `${path}.${k}`, "is a forbidden key")
    else if (shape.strict) push(errors, `${path}.${k}`, "is not a declared field")
    else scanFree(o[k], `${path}.${k}`, errors, budget)
  }
}
export const compileShape = (
  props: ReadonlyArray<PropertyDefinition>,
  strict: boolean,
  depth: number,
  extraRequired: ReadonlyArray<string> = []
): ObjectShape => {
  const slots = props.map((p) => compileSlot(p, depth, extraRequired.includes(p.name)))
  return { slots, byKey: new Map(slots.map((s) => [s.key, s])), strict, depth }
}

const isAutoIncrement = (p: PropertyDefinition): boolean => p.type === "number" && p.autoIncrement !== undefined

const compileSlot = (p: PropertyDefinition, depth: number, requiredByParent: boolean): Slot => {
  const computed = isComputed(p)
  return {
    key: p.name,
    rel: `.${p.name}`,
    // The records layer fills auto-increment fields; computed ones are filled here after validation.
    required: (p.required === true || requiredByParent) && !computed && !isAutoIncrement(p),
    nullable: p.nullable === true,
    computed,
    scalar: scalarFor(p),
    container: p.type === "object" ? objectContainer(p, depth + 1) : p.type === "array" ? arrayContainer(p, depth + 1) : undefined
  }
}

const objectContainer = (p: ObjectProperty, depth: number): Container => {
  const props = p.properties ?? []
  const shape = compileShape(props, p.isStrict === true, depth, p.requiredProperties)
  const freeForm = props.length === 0 && p.isStrict !== true
  const allowed = p.enum === undefined ? undefined : p.enum
  return (v, path, errors) => {
    if (!isObject(v)) return push(errors, path, `must be an object, got ${describe(v)}`)
    if (depth >= MAX_DEPTH) return push(errors, path, `is nested deeper than ${MAX_DEPTH} levels`)
    if (freeForm) scanFree(v, path, errors, MAX_DEPTH - depth)
    else checkShape(shape, v, path, errors)
    if (allowed !== undefined && !allowed.some((a) => jsonEqual(a, v))) push(errors, path, "must be one of the allowed values")
  }
}

const arrayContainer = (p: ArrayProperty, depth: number): Container => {
  const items = p.items
  const scalar = items === undefined ? undefined : itemScalar(items)
  const itemShape = items?.type === "object" ? compileShape(p.itemSchema ?? [], p.isStrict !== false, depth + 1) : undefined
  const { minItems, maxItems } = p
  const unique = p.uniqueItems === true
  const allowed = p.enum
  return (v, path, errors) => {
    if (!Array.isArray(v)) return push(errors, path, `must be an array, got ${describe(v)}`)
    if (depth >= MAX_DEPTH) return push(errors, path, `is nested deeper than ${MAX_DEPTH} levels`)
    if (minItems !== undefined && v.length < minItems) push(errors, path, `must have at least ${fmt(minItems)} items`)
    if (maxItems !== undefined && v.length > maxItems) push(errors, path, `must have at most ${fmt(maxItems)} items`)
    if (scalar !== undefined) {
      for (let i = 0; i < v.length; i++) {
        const item = v[i]
        const message = item === null ? "must not be null" : scalar(item)
        if (message !== undefined) push(errors, `${path}[${i}]`, message)
      }
    } else if (itemShape !== undefined) {
      for (let i = 0; i < v.length; i++) {
        const item = v[i]
        if (!isObject(item)) push(errors, `${path}[${i}]`, `must be an object, got ${describe(item)}`)
        else checkShape(itemShape, item, `${path}[${i}]`, errors)
      }
    } else {
      scanFree(v, path, errors, MAX_DEPTH - depth)
    }
    if (unique && v.length > 1) {
      const seen = new Map<unknown, number>()
      for (let i = 0; i < v.length; i++) {
        const item = v[i]
        const key = typeof item === "object" && item !== null ? canonicalJson(item) : item
        const first = seen.get(key)
        if (first !== undefined) push(errors, `${path}[${i}]`, `duplicates item ${first}`)
        else seen.set(key, i)
      }
    }
    if (allowed !== undefined && !allowed.some((a) => jsonEqual(a, v))) push(errors, path, "must be one of the allowed values")
  }
}

/**
 * Problems of one value against one property (a definition's `default` or `enum` entries), paths relative to the
 * value: "" for the value itself, "[3]" or ".city" below it. The property must have valid constraints.
 */
export const valueProblems = (p: PropertyDefinition, value: unknown): Array<{ path: string; message: string }> => {
  if (value === null) return p.nullable === true ? [] : [{ path: "", message: "must not be null" }]
  const slot = compileSlot(p, 0, false)
  if (slot.scalar !== undefined) {
    const message = slot.scalar(value)
    return message === undefined ? [] : [{ path: "", message }]
  }
  const errors: Errors = []
  slot.container!(value, "", errors)
  return errors.map((e) => ({ path: e.field, message: e.message }))
}

/** The problem of one array item against an array's `items` (constraints assumed valid), or undefined. */
export const itemProblem = (items: ArrayItems, value: unknown): string | undefined => {
  if (value === null) return "must not be null"
  const scalar = itemScalar(items)
  return scalar === undefined ? (isObject(value) ? undefined : `must be an object, got ${describe(value)}`) : scalar(value)
}
