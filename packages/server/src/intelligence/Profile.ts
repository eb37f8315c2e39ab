// Field profiles: what the records of a structure hold, per field path. A profile is plain JSON (stored in
// intel_profiles) and two profiles merge by adding up, so batches profiled on any node combine in the database.
// What one record contributes is bounded by the structure's schemaDiscoveryConfig: at most maxKeysPerRecord paths,
// nesting to maxNestingDepth, strings cut to maxStringLengthSampled before formats and lengths are read.
import { formatCheckers, forbiddenKeys } from "../structures/Formats.ts"

export type JsonType = "string" | "number" | "boolean" | "object" | "array" | "null"
export type Format = "email" | "url" | "uuid" | "date" | "datetime" | "phone"

/** Distinct values kept per field (enum candidates); past it the field is not an enum. */
export const DISTINCT_BOUND = 20
const EXAMPLES = 3

export interface FieldProfile {
  /** records where the path is present */
  count: number
  types: Partial<Record<JsonType, number>>
  integers: number
  min: number | null
  max: number | null
  minLength: number | null
  maxLength: number | null
  formats: Partial<Record<Format, number>>
  /** value (as JSON) -> count; null once more than DISTINCT_BOUND distinct values were seen */
  distinct: Record<string, number> | null
  examples: Array<unknown>
  /** JSON types of array items (the first 100 items of each array) */
  itemTypes?: Partial<Record<JsonType, number>>
}

export interface Profile {
  records: number
  fields: Record<string, FieldProfile>
}

export interface Limits {
  readonly maxKeysPerRecord: number
  readonly maxNestingDepth: number
  readonly maxStringLengthSampled: number
}

export const emptyProfile = (): Profile => ({ records: 0, fields: {} })

const phoneRe = /^\+?[0-9][0-9 ().-]{5,18}[0-9]$/
const isPhone = (s: string) => s.length <= 22 && phoneRe.test(s) && s.replace(/\D/g, "").length >= 7

const checks: ReadonlyArray<readonly [Format, (s: string) => boolean]> = [
  ["email", formatCheckers.email],
  ["url", formatCheckers.url],
  ["uuid", formatCheckers.uuid],
  ["date", formatCheckers.date],
  ["datetime", formatCheckers.datetime],
  ["phone", isPhone]
]

/** The formats a string has (a date is not also a datetime here: the first that matches wins). */
export const formatOf = (s: string): Format | undefined => {
  for (const [f, ok] of checks) if (ok(s)) return f
  return undefined
}

export const jsonType = (v: unknown): JsonType =>
  v === null ? "null" : Array.isArray(v) ? "array" : typeof v === "object" ? "object" : (typeof v as JsonType)

const emptyField = (): FieldProfile => ({
  count: 0,
  types: {},
  integers: 0,
  min: null,
  max: null,
  minLength: null,
  maxLength: null,
  formats: {},
  distinct: {},
  examples: []
})

const lower = (a: number | null, b: number | null) => (a === null ? b : b === null ? a : Math.min(a, b))
const upper = (a: number | null, b: number | null) => (a === null ? b : b === null ? a : Math.max(a, b))

const observe = (f: FieldProfile, value: unknown, limits: Limits) => {
  const type = jsonType(value)
  f.count++
  f.types[type] = (f.types[type] ?? 0) + 1
  let key: string | undefined
  if (type === "number") {
    const n = value as number
    if (Number.isInteger(n)) f.integers++
    f.min = lower(f.min, n)
    f.max = upper(f.max, n)
    key = JSON.stringify(n)
  } else if (type === "string") {
    const s = (value as string).slice(0, limits.maxStringLengthSampled)
    f.minLength = lower(f.minLength, s.length)
    f.maxLength = upper(f.maxLength, s.length)
    const format = formatOf(s)
    if (format !== undefined) f.formats[format] = (f.formats[format] ?? 0) + 1
    if (s.length <= 100) key = JSON.stringify(s)
    if (f.examples.length < EXAMPLES && !f.examples.includes(s)) f.examples.push(s)
  } else if (type === "boolean") key = JSON.stringify(value)
  else if (type === "array") {
    const items = f.itemTypes ?? (f.itemTypes = {})
    for (const item of (value as Array<unknown>).slice(0, 100)) items[jsonType(item)] = (items[jsonType(item)] ?? 0) + 1
  }
  if (type !== "string" && type !== "object" && type !== "array" && f.examples.length < EXAMPLES && !f.examples.includes(value)) {
    f.examples.push(value)
  }
  if (f.distinct !== null) {
    if (key === undefined) f.distinct = type === "null" ? f.distinct : null
    else {
      f.distinct[key] = (f.distinct[key] ?? 0) + 1
      if (Object.keys(f.distinct).length > DISTINCT_BOUND) f.distinct = null
    }
  }
}

/** Adds one record's data to `profile`, within `limits`. */
export const profileRecord = (profile: Profile, data: Record<string, unknown>, limits: Limits): void => {
  profile.records++
  let keys = 0
  const walk = (obj: Record<string, unknown>, prefix: string, depth: number) => {
    for (const [k, v] of Object.entries(obj)) {
      if (keys >= limits.maxKeysPerRecord) return
      if (forbiddenKeys.has(k)) continue
      keys++
      const path = prefix === "" ? k : `${prefix}.${k}`
      const field = profile.fields[path] ?? (profile.fields[path] = emptyField())
      observe(field, v, limits)
      if (v !== null && typeof v === "object" && !Array.isArray(v) && depth < limits.maxNestingDepth) {
        walk(v as Record<string, unknown>, path, depth + 1)
      }
    }
  }
  walk(data, "", 1)
}

const addCounts = <K extends string>(a: Partial<Record<K, number>>, b: Partial<Record<K, number>>) => {
  const out: Partial<Record<K, number>> = { ...a }
  for (const [k, n] of Object.entries(b) as Array<[K, number]>) out[k] = (out[k] ?? 0) + n
  return out
}

/** Two profiles as one (the database keeps the sum of every batch). */
export const mergeProfiles = (a: Profile, b: Profile): Profile => {
  const fields: Record<string, FieldProfile> = { ...a.fields }
  for (const [path, f] of Object.entries(b.fields)) {
    const g = fields[path]
    if (g === undefined) {
      fields[path] = f
      continue
    }
    let distinct: Record<string, number> | null = null
    if (g.distinct !== null && f.distinct !== null) {
      distinct = addCounts(g.distinct, f.distinct) as Record<string, number>
      if (Object.keys(distinct).length > DISTINCT_BOUND) distinct = null
    }
    fields[path] = {
      count: g.count + f.count,
      types: addCounts(g.types, f.types),
      integers: g.integers + f.integers,
      min: lower(g.min, f.min),
      max: upper(g.max, f.max),
      minLength: lower(g.minLength, f.minLength),
      maxLength: upper(g.maxLength, f.maxLength),
      formats: addCounts(g.formats, f.formats),
      distinct,
      examples: [...g.examples, ...f.examples.filter((e) => !g.examples.includes(e))].slice(0, EXAMPLES),
      itemTypes: addCounts(g.itemTypes ?? {}, f.itemTypes ?? {})
    }
  }
  return { records: a.records + b.records, fields }
}
