// Checks of a structure definition that StructureService makes beside rules.ts: unique property ids per list, and
// the references other structures hold to one (a structure, a slug or a property they name cannot go: brokenReferences).
import { type ErrorDetail, errorDetail } from "@troupe/api/Errors"
import type { PropertyDefinition, Structure } from "@troupe/api/structures/Structure"
import { type DefinitionProblem, MAX_DEFINITION_DEPTH } from "./RuleProblems.ts"
import { isObject } from "../lib/JsonPath.ts"

/**
 * Property ids must be unique within one list (top level, object properties, item schema) to address them. The walk
 * stops below MAX_DEFINITION_DEPTH levels (deeper nesting is a problem checkStructure reports), so no definition can
 * make it recurse without bound.
 */
export const idProblems = (properties: unknown, at = "properties", depth = 0): Array<DefinitionProblem> => {
  if (!Array.isArray(properties) || depth > MAX_DEFINITION_DEPTH) return []
  const seen = new Map<string, number>()
  const out: Array<DefinitionProblem> = []
  properties.forEach((p, i) => {
    if (!isObject(p)) return
    if (typeof p.id === "string" && p.id !== "new" && p.id !== "") {
      const first = seen.get(p.id)
      if (first !== undefined) out.push({ field: `${at}[${i}].id`, message: `duplicates the id of ${at}[${first}]` })
      else seen.set(p.id, i)
    }
    if (p.type === "object") out.push(...idProblems(p.properties, `${at}[${i}].properties`, depth + 1))
    if (p.type === "array") out.push(...idProblems(p.itemSchema, `${at}[${i}].itemSchema`, depth + 1))
  })
  return out
}

export interface InboundReference {
  /** the referencing structure */
  readonly from: Structure
  /** path of the reference property in it, e.g. `properties[2]` */
  readonly at: string
  readonly targetField: string | undefined
  readonly displayField: string | undefined
}

/** Reference properties (nested ones included) of `from` that point at `slug`. */
export const referencesTo = (from: Structure, slug: string): Array<InboundReference> => {
  const walk = (props: ReadonlyArray<PropertyDefinition> | undefined, at: string): Array<InboundReference> =>
    (props ?? []).flatMap((p, i): Array<InboundReference> => {
      const here = `${at}[${i}]`
      if (p.type === "reference") {
        return (p.target ?? p.referenceStructure) === slug
          ? [{ from, at: here, targetField: p.targetField, displayField: p.displayField }]
          : []
      }
      if (p.type === "object") return walk(p.properties, `${here}.properties`)
      if (p.type === "array") return walk(p.itemSchema, `${here}.itemSchema`)
      return []
    })
  return walk(from.properties, "properties")
}

/** Columns every record has: a reference may name them whatever the target structure's properties are. */
const RECORD_COLUMNS = new Set(["id", "createdAt", "updatedAt", "version"])

/**
 * What other live structures would lose if `before` became `after` (undefined: deleted): references to its
 * slug, or to fields it no longer has.
 */
export const brokenReferences = (others: ReadonlyArray<Structure>, before: Structure, after: Structure | undefined) => {
  const inbound = others.flatMap((o) => referencesTo(o, before.recordSlug))
  if (inbound.length === 0) return []
  if (after === undefined || after.recordSlug !== before.recordSlug) {
    return inbound.map(
      (r): ErrorDetail => errorDetail(after === undefined ? "id" : "recordSlug", `referenced by ${r.from.recordSlug}.${r.at}`)
    )
  }
  const names = new Set(after.properties.map((p) => p.name))
  return inbound.flatMap((r) =>
    [r.targetField, r.displayField].flatMap(
      (f): Array<ErrorDetail> =>
        f === undefined || RECORD_COLUMNS.has(f) || names.has(f)
          ? []
          : [errorDetail("properties", `'${f}' is used by ${r.from.recordSlug}.${r.at}`)]
    )
  )
}
