// The scalar checks of the record validator (Validator.ts): string, number, boolean, datetime and reference values,
// and array items of those types, each compiled once from its property's constraints into a closure that returns the
// value's first problem as a message, or undefined.
import type { ArrayItems, PropertyDefinition, ReferenceProperty } from "@troupe/api/structures/Structure"
import { codePointLength, formatCheckers, formatMessages, parseDateTime, type StringFormat } from "./Formats.ts"
import { compilePattern } from "./Pattern.ts"

/** A scalar check returns its first problem, or undefined. */
export type Scalar = (v: unknown) => string | undefined

export const describe = (v: unknown): string => (v === null ? "null" : Array.isArray(v) ? "an array" : typeof v)

export const fmt = (n: number): string => String(n)

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
export const scalarFor = (p: PropertyDefinition): Scalar | undefined => {
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
export const itemScalar = (items: ArrayItems): Scalar | undefined => {
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
