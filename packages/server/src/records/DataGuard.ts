// What any JSON a client stores (record data, metadata, upsert match) must be, whatever the structure says: no keys
// that reach a prototype, no NUL characters or lone surrogates (PostgreSQL's jsonb refuses them, which would
// otherwise surface as a 500), bounded nesting, and no string longer than 1 MiB (1,048,576 UTF-16 code units)
// unless the property it fills declares a larger `maxLength`. The edge caps whole bodies at 10 MB; this keeps one
// field from taking all of it by accident. Schemaless and skipValidation writes get these checks too.
import { type ErrorDetail, errorDetail } from "@troupe/api/Errors"
import type { PropertyDefinition } from "@troupe/api/structures/Structure"
import { forbiddenKeys } from "../structures/Formats.ts"

/** Longest string value accepted where no property allows more. */
export const MAX_STRING_LENGTH = 1_048_576
/** Deepest nesting accepted (the validator enforces the same bound on declared data). */
export const MAX_NESTING = 32
const MAX_PROBLEMS = 20

/** What is known about the value at a position: the property it fills, or the items of an array. */
type Shape =
  | { readonly kind: "props"; readonly props: ReadonlyArray<PropertyDefinition> }
  | { readonly kind: "prop"; readonly prop: PropertyDefinition }
  | undefined

const childOf = (shape: Shape, key: string): Shape => {
  if (shape === undefined) return undefined
  if (shape.kind === "props") {
    const prop = shape.props.find((p) => p.name === key)
    return prop === undefined ? undefined : { kind: "prop", prop }
  }
  const p = shape.prop
  if (p.type !== "object" || p.properties === undefined) return undefined
  return childOf({ kind: "props", props: p.properties }, key)
}

const itemOf = (shape: Shape): Shape => {
  if (shape === undefined || shape.kind !== "prop" || shape.prop.type !== "array") return undefined
  const p = shape.prop
  if (p.items?.type === "object") return { kind: "props", props: p.itemSchema ?? [] }
  return p.items === undefined ? undefined : { kind: "prop", prop: p.items as unknown as PropertyDefinition }
}

const allowedLength = (shape: Shape): number => {
  const p = shape?.kind === "prop" ? (shape.prop as { maxLength?: number }) : undefined
  return p?.maxLength !== undefined && p.maxLength > MAX_STRING_LENGTH ? p.maxLength : MAX_STRING_LENGTH
}

const textProblem = (s: string): string | undefined =>
  s.includes("\u0000") ? "must not contain NUL characters" : s.isWellFormed() ? undefined : "must be valid Unicode (no lone surrogates)"

/**
 * Problems of a JSON value (paths start at `root`, e.g. `data`); empty when it may be stored. `props` are the
 * structure's properties, which can raise the string limit through `maxLength`.
 */
export const inspectJson = (value: unknown, root: string, props?: ReadonlyArray<PropertyDefinition>): Array<ErrorDetail> => {
  const problems: Array<ErrorDetail> = []
  const push = (field: string, message: string) => {
    if (problems.length < MAX_PROBLEMS) problems.push(errorDetail(field, message))
  }
  const walk = (v: unknown, path: string, shape: Shape, depth: number): void => {
    if (problems.length >= MAX_PROBLEMS) return
    if (typeof v === "string") {
      if (v.length > MAX_STRING_LENGTH && v.length > allowedLength(shape)) {
        const limit = allowedLength(shape)
        push(path, `must be at most ${limit} characters long (more needs a property maxLength that allows it)`)
      } else {
        const problem = textProblem(v)
        if (problem !== undefined) push(path, problem)
      }
      return
    }
    if (typeof v !== "object" || v === null) return
    if (depth > MAX_NESTING) return push(path, `is nested deeper than ${MAX_NESTING} levels`)
    if (Array.isArray(v)) {
      const item = itemOf(shape)
      for (let i = 0; i < v.length; i++) walk(v[i], `${path}[${i}]`, item, depth + 1)
      return
    }
    for (const k of Object.keys(v)) {
      const keyProblem = forbiddenKeys.has(k) ? "is a forbidden key" : textProblem(k)
      if (keyProblem !== undefined) {
        push(`${path}.${k.replace(/\u0000/g, "\\u0000")}`, keyProblem)
        continue
      }
      const child = (v as Record<string, unknown>)[k]
      // the common case costs no property lookup: short strings and other scalars
      if (typeof child === "string" && child.length <= MAX_STRING_LENGTH) {
        const problem = textProblem(child)
        if (problem !== undefined) push(`${path}.${k}`, problem)
      } else if (typeof child === "object" || typeof child === "string") {
        walk(child, `${path}.${k}`, childOf(shape, k), depth + 1)
      }
    }
  }
  walk(value, root, props === undefined ? undefined : { kind: "props", props }, 0)
  return problems
}
