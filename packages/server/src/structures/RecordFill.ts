// What the record validator (Validator.ts) writes into a valid record: the defaults filled on create and replace,
// and the computed fields, ordered so that each is evaluated after the computed fields it reads, with the coercion
// of an expression's value to the field's type.
import type { PropertyDefinition } from "@troupe/api/structures/Structure"
import { Result } from "effect"
import { isObject } from "../lib/JsonPath.ts"
import { type Expr, parseExpression, referencedFields, type Value } from "./Expression.ts"
import { parseDateTime } from "./Formats.ts"
import { isComputed } from "./StructureFacts.ts"

// ---------------------------------------------------------------------------------------------------------------
// Defaults (create and replace)

type Defaulter = (o: Record<string, unknown>) => Record<string, unknown>

const cloneJson = (v: unknown): unknown => (typeof v === "object" && v !== null ? structuredClone(v) : v)

/** Returns undefined when no property below has a default, so records without defaults are never copied. */
export const compileDefaults = (props: ReadonlyArray<PropertyDefinition>): Defaulter | undefined => {
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
export const compileComputed = (props: ReadonlyArray<PropertyDefinition>): Array<ComputedField> => {
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
export const coerce = (type: ComputedField["type"], v: Value): unknown => {
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
