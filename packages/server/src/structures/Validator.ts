// Record validator compiler: a structure becomes a tree of closures once (per structure id and version), so
// validating a record builds no schema, allocates almost nothing on success and computes error paths only when
// something is wrong. Scalars return their first problem as a message; containers report with full paths
// (`data.address.city`, `data.tags[3]`).
//
// Record modes. `schemaDiscoveryMode` is the newer, authoritative form: when a structure carries it, it decides.
// Only when it is absent does the older `isStrict` speak: `isStrict: false` sent explicitly means extra fields are
// allowed (auto-evolving), anything else is strict. `normalizeStructure` stores the resolved mode, so stored
// structures always carry `schemaDiscoveryMode`.
//   strict         unknown keys are errors
//   auto-evolving  unknown keys are kept (after the forbidden-key and depth checks)
//   schemaless     nothing is enforced but the record being an object, forbidden keys and depth
//
// Update semantics: `data` is a shallow patch. A null value unsets the field, except for a required field: a
// required nullable field is set to null, a required non-nullable one is an error. The merged result is validated
// as a full record (no defaults are applied on update) and returned.
//
// Computed fields cannot be written by clients; a value equal to the one already stored (a GET echoed back by
// PUT) is tolerated and ignored. Persisted ones are evaluated and stored; virtual ones are stripped from stored
// data and added on reads by `applyVirtual`.
// Size: over 500 lines, kept whole: compiles a structure into one validator (every property type, constraints, computed fields) whose parts share the compiled state; the structure facts that validate nothing are in StructureFacts.ts.
import { errorDetail } from "@troupe/api/Errors"
import type {
  ArrayItems,
  ArrayProperty,
  ObjectProperty,
  PropertyDefinition,
  ReferenceProperty,
  SchemaDiscoveryMode
} from "@troupe/api/structures/Structure"
import { Result } from "effect"
import { evaluate, type Expr, parseExpression, referencedFields, type Value } from "./Expression.ts"
import {
  canonicalJson,
  codePointLength,
  forbiddenKeys,
  formatCheckers,
  formatMessages,
  jsonEqual,
  parseDateTime,
  type StringFormat
} from "./Formats.ts"
import { compilePattern } from "./Pattern.ts"
import { isComputed } from "./StructureFacts.ts"
import { getAt, isObject } from "../lib/JsonPath.ts"

/** One problem with a record; `property` repeats `field` (both forms of the spec). */
export interface ValidationError {
  readonly field: string
  readonly property: string
  readonly message: string
}

export type ValidationResult =
  | { readonly ok: true; readonly data: Record<string, unknown> }
  | { readonly ok: false; readonly errors: Array<ValidationError> }

export interface ValidateOptions {
  readonly mode: "create" | "update" | "replace"
  /** The stored record data, for update (merge base) and for immutable / computed comparisons. */
  readonly previous?: Readonly<Record<string, unknown>> | undefined
  /** Clock for computed fields (`now()`); defaults to the current time. */
  readonly now?: Date | undefined
}

export interface Validator {
  readonly validate: (data: unknown, options: ValidateOptions) => ValidationResult
  /** Adds virtual computed fields to stored data, for reads. Returns a new object when there are any. */
  readonly applyVirtual: (data: Readonly<Record<string, unknown>>, now: Date) => Record<string, unknown>
  readonly mode: SchemaDiscoveryMode
}

/** What the compiler reads from a structure; `Structure` of `@troupe/api` fits. */
export interface ValidatorStructure {
  readonly id?: string | undefined
  readonly version?: number | undefined
  readonly properties: ReadonlyArray<PropertyDefinition>
  readonly schemaDiscoveryMode?: SchemaDiscoveryMode | undefined
  readonly isStrict?: boolean | undefined
}

/** Deepest nesting of objects and arrays accepted in record data. */
export const MAX_DEPTH = 32
/** A record failing many rules reports this many problems at most. */
export const MAX_ERRORS = 100

/** The record mode of a structure (see the header comment for the rule). */
export const recordMode = (s: {
  readonly schemaDiscoveryMode?: SchemaDiscoveryMode | undefined
  readonly isStrict?: boolean | undefined
}): SchemaDiscoveryMode => s.schemaDiscoveryMode ?? (s.isStrict === false ? "auto-evolving" : "strict")

type Errors = Array<ValidationError>

const push = (errors: Errors, field: string, message: string): void => {
  if (errors.length < MAX_ERRORS) errors.push(errorDetail(field, message))
}

/** A scalar check returns its first problem, or undefined. */
type Scalar = (v: unknown) => string | undefined
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

const describe = (v: unknown): string => (v === null ? "null" : Array.isArray(v) ? "an array" : typeof v)

const fmt = (n: number): string => String(n)

// ---------------------------------------------------------------------------------------------------------------
// Scalars

interface StringConstraints {
  readonly minLength?: number | undefined
  readonly maxLength?: number | undefined
  readonly pattern?: string | undefined
  readonly format?: StringFormat | undefined
  readonly enum?: ReadonlyArray<unknown> | undefined
  readonly not?: ReadonlyArray<unknown> | undefined
}

const stringCheck = (p: StringConstraints): Scalar => {
  const min = p.minLength
  const max = p.maxLength
  const compiled = p.pattern === undefined ? undefined : compilePattern(p.pattern)
  if (compiled !== undefined && "error" in compiled) throw new Error(compiled.error)
  const pattern = compiled
  const format = p.format === undefined ? undefined : formatCheckers[p.format]
  const formatMessage = p.format === undefined ? "" : formatMessages[p.format]
  const allowed = p.enum === undefined ? undefined : new Set(p.enum)
  const allowedMessage = allowed === undefined ? "" : `must be one of ${listOf(p.enum!)}`
  const denied = p.not === undefined || p.not.length === 0 ? undefined : new Set(p.not)
  return (v) => {
    if (typeof v !== "string") return `must be a string, got ${describe(v)}`
    if (min !== undefined || max !== undefined) {
      // Code points only matter near a bound: UTF-16 length is an upper bound, half of it a lower bound.
      const n = v.length
      const exact = (min !== undefined && n >> 1 < min) || (max !== undefined && n > max) ? codePointLength(v) : n
      if (min !== undefined && exact < min) return `must be at least ${fmt(min)} characters long`
      if (max !== undefined && exact > max) return `must be at most ${fmt(max)} characters long`
    }
    if (format !== undefined && !format(v)) return formatMessage
    if (pattern !== undefined && !pattern.test(v)) return `must match the pattern ${p.pattern}`
    if (allowed !== undefined && !allowed.has(v)) return allowedMessage
    if (denied?.has(v)) return "is not an allowed value"
    return undefined
  }
}

interface NumberConstraints {
  readonly minimum?: number | undefined
  readonly maximum?: number | undefined
  readonly exclusiveMinimum?: boolean | undefined
  readonly exclusiveMaximum?: boolean | undefined
  readonly multipleOf?: number | undefined
  readonly integer?: boolean | undefined
  readonly enum?: ReadonlyArray<unknown> | undefined
  readonly not?: ReadonlyArray<unknown> | undefined
}

/** multipleOf with a relative tolerance, so 0.3 is a multiple of 0.1 as people expect. */
export const isMultipleOf = (v: number, m: number): boolean => {
  const q = v / m
  return Math.abs(q - Math.round(q)) <= 1e-9 * Math.max(1, Math.abs(q))
}

const numberCheck = (p: NumberConstraints): Scalar => {
  const { minimum: min, maximum: max, multipleOf } = p
  const exMin = p.exclusiveMinimum === true
  const exMax = p.exclusiveMaximum === true
  const integer = p.integer === true
  const allowed = p.enum === undefined ? undefined : new Set(p.enum)
  const allowedMessage = allowed === undefined ? "" : `must be one of ${listOf(p.enum!)}`
  const denied = p.not === undefined || p.not.length === 0 ? undefined : new Set(p.not)
  return (v) => {
    if (typeof v !== "number" || !Number.isFinite(v)) return `must be a number, got ${describe(v)}`
    if (integer && !Number.isInteger(v)) return "must be an integer"
    if (min !== undefined && (exMin ? v <= min : v < min)) {
      return exMin ? `must be greater than ${fmt(min)}` : `must be at least ${fmt(min)}`
    }
    if (max !== undefined && (exMax ? v >= max : v > max)) {
      return exMax ? `must be less than ${fmt(max)}` : `must be at most ${fmt(max)}`
    }
    if (multipleOf !== undefined && !isMultipleOf(v, multipleOf)) return `must be a multiple of ${fmt(multipleOf)}`
    if (allowed !== undefined && !allowed.has(v)) return allowedMessage
    if (denied?.has(v)) return "is not an allowed value"
    return undefined
  }
}

const booleanCheck = (p: { readonly enum?: ReadonlyArray<unknown> | undefined }): Scalar => {
  const allowed = p.enum === undefined ? undefined : new Set(p.enum)
  const allowedMessage = allowed === undefined ? "" : `must be one of ${listOf(p.enum!)}`
  return (v) => {
    if (typeof v !== "boolean") return `must be a boolean, got ${describe(v)}`
    if (allowed !== undefined && !allowed.has(v)) return allowedMessage
    return undefined
  }
}

interface DatetimeConstraints {
  readonly earliestDate?: string | undefined
  readonly latestDate?: string | undefined
  readonly exclusiveEarliest?: boolean | undefined
  readonly exclusiveLatest?: boolean | undefined
  readonly enum?: ReadonlyArray<unknown> | undefined
}

const datetimeCheck = (p: DatetimeConstraints): Scalar => {
  const earliest = p.earliestDate === undefined ? undefined : parseDateTime(p.earliestDate)
  const latest = p.latestDate === undefined ? undefined : parseDateTime(p.latestDate)
  const exE = p.exclusiveEarliest === true
  const exL = p.exclusiveLatest === true
  const allowed = p.enum === undefined ? undefined : new Set(p.enum.map((e) => (typeof e === "string" ? parseDateTime(e) : undefined)))
  const allowedMessage = allowed === undefined ? "" : `must be one of ${listOf(p.enum!)}`
  return (v) => {
    if (typeof v !== "string") return `must be an ISO 8601 date-time string, got ${describe(v)}`
    const t = parseDateTime(v)
    if (t === undefined) return "must be an ISO 8601 date-time"
    if (earliest !== undefined && (exE ? t <= earliest : t < earliest)) {
      return exE ? `must be after ${p.earliestDate}` : `must not be before ${p.earliestDate}`
    }
    if (latest !== undefined && (exL ? t >= latest : t > latest)) {
      return exL ? `must be before ${p.latestDate}` : `must not be after ${p.latestDate}`
    }
    if (allowed !== undefined && !allowed.has(t)) return allowedMessage
    return undefined
  }
}

const referenceCheck = (p: ReferenceProperty): Scalar => {
  if (p.relationship === "many-to-many") {
    return (v) => {
      if (!Array.isArray(v)) return `must be an array of record ids, got ${describe(v)}`
      for (let i = 0; i < v.length; i++) {
        const id = v[i]
        if (typeof id !== "string" || id.length === 0) return `item ${i} must be a record id (non-empty string)`
      }
      if (new Set(v).size !== v.length) return "must not list the same record twice"
      return undefined
    }
  }
  return (v) => (typeof v === "string" && v.length > 0 ? undefined : `must be a record id (non-empty string), got ${describe(v)}`)
}

const listOf = (values: ReadonlyArray<unknown>): string => {
  const shown = values
    .slice(0, 20)
    .map((v) => JSON.stringify(v))
    .join(", ")
  return values.length > 20 ? `${shown}, ...` : shown
}

const scalarFor = (p: PropertyDefinition): Scalar | undefined => {
  switch (p.type) {
    case "string":
      return stringCheck(p)
    case "number":
      return numberCheck(p)
    case "boolean":
      return booleanCheck(p)
    case "datetime":
      return datetimeCheck(p)
    case "reference":
      return referenceCheck(p)
    case "array":
    case "object":
      return undefined
  }
}

const itemScalar = (items: ArrayItems): Scalar | undefined => {
  switch (items.type) {
    case "string":
      return stringCheck(items)
    case "number":
      return numberCheck(items)
    case "boolean":
      return booleanCheck(items)
    case "datetime":
      return datetimeCheck(items)
    case "object":
      return undefined
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Free-form values: whatever the structure does not describe is still walked for forbidden keys and depth.

const scanFree = (v: unknown, path: string, errors: Errors, budget: number): void => {
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
const checkShape = (shape: ObjectShape, o: Record<string, unknown>, path: string, errors: Errors): void => {
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

const compileShape = (
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

// ---------------------------------------------------------------------------------------------------------------
// Defaults (create and replace)

type Defaulter = (o: Record<string, unknown>) => Record<string, unknown>

const cloneJson = (v: unknown): unknown => (typeof v === "object" && v !== null ? structuredClone(v) : v)

/** Returns undefined when no property below has a default, so records without defaults are never copied. */
const compileDefaults = (props: ReadonlyArray<PropertyDefinition>): Defaulter | undefined => {
  const entries: Array<{ key: string; has: boolean; value: unknown; nested: ((v: unknown) => unknown) | undefined }> = []
  for (const p of props) {
    let nested: ((v: unknown) => unknown) | undefined
    if (p.type === "object") {
      const inner = compileDefaults(p.properties ?? [])
      if (inner !== undefined) nested = (v) => (isObject(v) ? inner(v) : v)
    } else if (p.type === "array" && p.items?.type === "object") {
      const inner = compileDefaults(p.itemSchema ?? [])
      if (inner !== undefined) {
        nested = (v) => {
          if (!Array.isArray(v)) return v
          let out = v
          for (let i = 0; i < v.length; i++) {
            const item = v[i]
            if (!isObject(item)) continue
            const next = inner(item)
            if (next !== item) {
              if (out === v) out = v.slice()
              out[i] = next
            }
          }
          return out
        }
      }
    }
    const has = p.default !== undefined && !isComputed(p)
    if (has || nested !== undefined) entries.push({ key: p.name, has, value: p.default, nested })
  }
  if (entries.length === 0) return undefined
  return (o) => {
    let out = o
    for (const e of entries) {
      const v = o[e.key]
      let next: unknown = v
      if (v === undefined) {
        if (e.has) next = cloneJson(e.value)
      } else if (e.nested !== undefined) {
        next = e.nested(v)
      }
      if (next !== v) {
        if (out === o) out = { ...o }
        out[e.key] = next
      }
    }
    return out
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Computed fields

interface ComputedField {
  readonly key: string
  readonly type: "string" | "number" | "boolean" | "datetime"
  readonly mode: "persisted" | "virtual"
  readonly ast: Expr | undefined
}

/** Top-level computed fields in dependency order (a field after every computed field it reads). */
const compileComputed = (props: ReadonlyArray<PropertyDefinition>): Array<ComputedField> => {
  const fields = new Map<string, { field: ComputedField; deps: Array<string> }>()
  for (const p of props) {
    if (!isComputed(p) || p.type === "array" || p.type === "object" || p.type === "reference") continue
    const parsed = parseExpression(p.expression!)
    const ast = Result.isSuccess(parsed) ? parsed.success : undefined
    const deps = ast === undefined ? [] : referencedFields(ast).map((f) => f.split(".")[0]!)
    fields.set(p.name, { field: { key: p.name, type: p.type, mode: p.computedMode ?? "persisted", ast }, deps })
  }
  const ordered: Array<ComputedField> = []
  const state = new Map<string, "visiting" | "done">()
  const visit = (name: string): void => {
    const entry = fields.get(name)
    if (entry === undefined || state.get(name) !== undefined) return // a cycle is a rules error; stop quietly
    state.set(name, "visiting")
    entry.deps.forEach(visit)
    state.set(name, "done")
    ordered.push(entry.field)
  }
  for (const name of fields.keys()) visit(name)
  return ordered
}

const coerce = (type: ComputedField["type"], v: Value): unknown => {
  if (v === null) return null
  switch (type) {
    case "number":
      return typeof v === "number" && Number.isFinite(v) ? v : null
    case "string":
      return String(v)
    case "boolean":
      return typeof v === "boolean" ? v : v !== 0 && v !== ""
    case "datetime": {
      const t = typeof v === "number" ? v : typeof v === "string" ? parseDateTime(v) : undefined
      return t === undefined || !Number.isFinite(t) ? null : new Date(t).toISOString()
    }
  }
}

// ---------------------------------------------------------------------------------------------------------------
// The validator

interface Path {
  readonly segments: ReadonlyArray<string>
  readonly field: string
}

const immutablePaths = (props: ReadonlyArray<PropertyDefinition>, prefix: ReadonlyArray<string> = []): Array<Path> =>
  props.flatMap((p) => {
    const segments = [...prefix, p.name]
    const own = p.immutable === true ? [{ segments, field: `data.${segments.join(".")}` }] : []
    return p.type === "object" ? [...own, ...immutablePaths(p.properties ?? [], segments)] : own
  })

/** Compiles a structure into a validator. The structure is assumed to pass `checkStructure`. */
export const compileValidator = (structure: ValidatorStructure): Validator => {
  const mode = recordMode(structure)
  const props = structure.properties
  const shape = compileShape(props, mode === "strict", 0)
  const defaults = compileDefaults(props)
  const computed = compileComputed(props)
  const hasComputed = computed.length > 0
  const hasVirtual = computed.some((c) => c.mode === "virtual")
  const immutables = immutablePaths(props)
  const topSlots = shape.byKey

  const fail = (errors: Errors): ValidationResult => ({ ok: false, errors })

  const validate = (input: unknown, options: ValidateOptions): ValidationResult => {
    const errors: Errors = []
    if (!isObject(input)) return fail([errorDetail("data", `must be an object, got ${describe(input)}`)])
    const previous = options.previous
    let data: Record<string, unknown>

    if (options.mode === "update") {
      data = previous === undefined ? {} : { ...previous }
      for (const k in input) {
        if (forbiddenKeys.has(k)) {
          push(errors, `data.${k}`, "is a forbidden key")
          continue
        }
        const v = input[k]
        if (v === null) {
          const slot = topSlots.get(k)
          if (slot?.required) {
            if (slot.nullable) data[k] = null
            else push(errors, `data.${k}`, "is required and cannot be unset")
          } else {
            delete data[k]
          }
        } else if (v !== undefined) {
          data[k] = v
        }
      }
    } else {
      data = input
      if (mode !== "schemaless" && defaults !== undefined) data = defaults(data)
    }

    if (mode === "schemaless") {
      scanFree(data, "data", errors, MAX_DEPTH)
      return errors.length > 0 ? fail(errors) : { ok: true, data }
    }

    // Clients do not write computed fields; an unchanged echo of the stored value is tolerated.
    if (hasComputed) {
      for (const c of computed) {
        const v = input[c.key]
        if (v === undefined || (options.mode === "update" && v === null)) continue
        if (previous !== undefined && jsonEqual(previous[c.key], v)) continue
        push(errors, `data.${c.key}`, "is computed and cannot be written")
      }
    }

    checkShape(shape, data, "data", errors)

    if (previous !== undefined && options.mode !== "create") {
      for (const path of immutables) {
        const before = getAt(previous, path.segments)
        if (before === undefined) continue
        if (!jsonEqual(before, getAt(data, path.segments))) push(errors, path.field, "is immutable and cannot be changed")
      }
    }

    if (errors.length > 0) return fail(errors)

    if (hasComputed) {
      if (data === input) data = { ...data }
      const now = options.now ?? new Date()
      for (const c of computed) {
        const value = c.ast === undefined ? null : coerce(c.type, evaluate(c.ast, data, now))
        data[c.key] = value
      }
      if (hasVirtual) for (const c of computed) if (c.mode === "virtual") delete data[c.key]
    }
    return { ok: true, data }
  }

  const applyVirtual = (stored: Readonly<Record<string, unknown>>, now: Date): Record<string, unknown> => {
    if (!hasVirtual) return stored as Record<string, unknown>
    const out: Record<string, unknown> = { ...stored }
    for (const c of computed) {
      if (c.mode === "virtual") out[c.key] = c.ast === undefined ? null : coerce(c.type, evaluate(c.ast, out, now))
    }
    return out
  }

  return { validate, applyVirtual, mode }
}

// ---------------------------------------------------------------------------------------------------------------
// Cache

const CACHE_SIZE = 1000
const cache = new Map<string, Validator>()
const uncached = new WeakMap<object, Validator>()

/**
 * The compiled validator of a structure, cached per `${id}:${version}` (a changed structure has a new version,
 * so it compiles afresh). Structures without id or version are cached by object identity.
 */
export const validatorFor = (structure: ValidatorStructure): Validator => {
  if (structure.id === undefined || structure.version === undefined) {
    let v = uncached.get(structure)
    if (v === undefined) {
      v = compileValidator(structure)
      uncached.set(structure, v)
    }
    return v
  }
  const key = `${structure.id}:${structure.version}`
  let v = cache.get(key)
  if (v === undefined) {
    v = compileValidator(structure)
    if (cache.size >= CACHE_SIZE) cache.delete(cache.keys().next().value!)
    cache.set(key, v)
  }
  return v
}

/** Drops cached validators of one structure (every version), or all of them. */
export const clearValidatorCache = (structureId?: string): void => {
  if (structureId === undefined) return cache.clear()
  for (const key of [...cache.keys()]) if (key.startsWith(`${structureId}:`)) cache.delete(key)
}

/** Stored data plus the virtual computed fields, for reads. */
export const applyVirtual = (structure: ValidatorStructure, data: Readonly<Record<string, unknown>>, now: Date): Record<string, unknown> =>
  validatorFor(structure).applyVirtual(data, now)

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
