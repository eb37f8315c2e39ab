// References between structures: the reference targets a definition declares and the circular chains they would
// close through the workspace (a self-reference is a tree, not a chain). Split from rules.ts, which runs
// checkCycles once over a definition's top-level properties.
import { isObject } from "../lib/JsonPath.ts"
import { MAX_DEFINITION_DEPTH, type Problems, type RuleContext, type StructureLike } from "./RuleProblems.ts"

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

export const propertyNamesOf = (s: StructureLike): Set<string> =>
  new Set(s.properties.flatMap((p) => (isObject(p) && typeof p.name === "string" ? [p.name] : [])))

export const checkCycles = (problems: Problems, properties: ReadonlyArray<unknown>, self: string | undefined, ctx: RuleContext) => {
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
