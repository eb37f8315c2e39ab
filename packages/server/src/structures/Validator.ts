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
// Its parts live beside it: the scalar checks in ScalarChecks.ts, objects and arrays in ShapeChecks.ts, defaults and
// computed fields in RecordFill.ts; the structure facts that validate nothing are in StructureFacts.ts.
import { errorDetail } from "@troupe/api/Errors"
import type { PropertyDefinition, SchemaDiscoveryMode } from "@troupe/api/structures/Structure"
import { getAt, isObject } from "../lib/JsonPath.ts"
import { evaluate } from "./Expression.ts"
import { forbiddenKeys, jsonEqual } from "./Formats.ts"
import { coerce, compileComputed, compileDefaults } from "./RecordFill.ts"
import { describe } from "./ScalarChecks.ts"
import { checkShape, compileShape, type Errors, MAX_DEPTH, push, scanFree } from "./ShapeChecks.ts"

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
/** The record mode of a structure (see the header comment for the rule). */
export const recordMode = (s: {
  readonly schemaDiscoveryMode?: SchemaDiscoveryMode | undefined
  readonly isStrict?: boolean | undefined
}): SchemaDiscoveryMode => s.schemaDiscoveryMode ?? (s.isStrict === false ? "auto-evolving" : "strict")

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
