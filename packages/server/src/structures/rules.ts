// The rules of a structure definition (README "Properties"). `checkStructure` takes the body as sent
// (unknown: the validate endpoint may pass a body that did not even decode) and returns every problem at once,
// each with a path such as `properties[2].maxLength`. Relations between structures (reference targets, display
// fields, circular chains) are checked against the workspace through synchronous lookups the caller preloads.
//
// Decisions where the spec is silent:
// - Property names: a letter or underscore, then letters, digits, `_` or `-` (at most 64); `__proto__`,
//   `constructor`, `prototype` and `_expanded` are refused. Dots would make `data.a.b` paths ambiguous.
// - A structure referencing itself (a tree: category.parent) is allowed; it is not a circular chain. Only a
//   required non-nullable self-reference is refused: the first record could never be created.
// - Computed fields (string, number, boolean, datetime) live at the top level; their expressions read top-level
//   fields (dotted paths into objects allowed).
// - isUnique applies to top-level scalar and reference properties only; secrets cannot be unique (encrypted with
//   a random IV) and cannot sit inside array items.
// - At most 32 top-level properties may be `indexed` (each is an expression index every write of the structure's
//   records maintains); the properties past that are named.
// Size: the rules run as one walk so that all problems of a definition are reported at once. This file holds the
// structure-level checks; one property's rules live in PropertyRules.ts, reference chains in StructureReferences.ts,
// the problem list in RuleProblems.ts, and filling defaults and applying updates in StructureDefaults.ts.
import { SchemaDiscoveryMode, StructureStatus } from "@troupe/api/structures/Structure"
import { Result } from "effect"
import { isObject } from "../lib/JsonPath.ts"
import { parseExpression, referencedFields } from "./Expression.ts"
import { checkProperties } from "./PropertyRules.ts"
import { type DefinitionProblem, Problems, type Raw, type RuleContext } from "./RuleProblems.ts"
import { searchSettingProblems } from "./SearchSettings.ts"
import { checkCycles } from "./StructureReferences.ts"

const STATUSES = StructureStatus.literals
const MODES = SchemaDiscoveryMode.literals

export const MAX_PROPERTIES = 1000
/** Top-level properties one structure may mark `indexed: true`: each costs an index that every record write updates. */
export const MAX_INDEXED_PROPERTIES = 32
const SLUG_RE = /^[a-z0-9]+(?:-[a-z0-9]+)*$/

/** Lowercase, hyphen-separated slug of a name ("Blog Posts!" -> "blog-posts"); diacritics are dropped. */
export const slugify = (name: string): string =>
  name
    .normalize("NFKD")
    .replace(/[\u0300-\u036f]/g, "")
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, "-")
    .replace(/^-+|-+$/g, "")
    .slice(0, 100)
    .replace(/-+$/, "")

/** recordSlug of an input: the given one, or one derived from the name. */
const slugOf = (input: Raw): string | undefined =>
  typeof input.recordSlug === "string" ? input.recordSlug : typeof input.name === "string" ? slugify(input.name) : undefined

// ---------------------------------------------------------------------------------------------------------------
// Whole structure

/**
 * Every problem of a structure definition (create body, or the merged result of an update), each with the path
 * of the offending field. An empty array means the definition is valid.
 */
export const checkStructure = (input: unknown, ctx: RuleContext): Array<DefinitionProblem> => {
  const problems = new Problems()
  if (!isObject(input)) {
    problems.add("body", "must be an object")
    return problems.list
  }

  const name = input.name
  if (name === undefined) problems.add("name", "is required")
  else if (typeof name !== "string") problems.add("name", "must be a string")
  else if (name.trim() === "") problems.add("name", "must not be empty")
  else if (name.length > 200) problems.add("name", "must be at most 200 characters long")

  const recordSlug = problems.str(input, "recordSlug", "")
  if (recordSlug !== undefined) {
    if (!SLUG_RE.test(recordSlug) || recordSlug.length > 100) {
      problems.add("recordSlug", "must be lowercase letters and digits separated by single hyphens (at most 100)")
    }
  } else if (typeof name === "string" && name.trim() !== "" && slugify(name) === "") {
    problems.add("name", "holds no letters or digits to derive a recordSlug from; send recordSlug")
  }

  problems.str(input, "description", "")
  problems.oneOf(input, "status", "", STATUSES)
  problems.oneOf(input, "schemaDiscoveryMode", "", MODES)
  problems.bool(input, "isStrict", "")
  problems.bool(input, "enableVersioning", "")
  problems.num(input, "defaultTtlSeconds", "", { integer: true, positive: true })
  const tags = problems.array(input, "tags", "")
  tags?.forEach((t, i) => {
    if (typeof t !== "string") problems.add(`tags[${i}]`, "must be a string")
  })

  const retention = input.retentionPolicy
  if (retention !== undefined && retention !== null) {
    if (!isObject(retention)) problems.add("retentionPolicy", "must be an object")
    else {
      problems.num(retention, "maxVersions", "retentionPolicy", { integer: true, positive: true })
      problems.num(retention, "maxAgeDays", "retentionPolicy", { positive: true })
      problems.num(retention, "cleanupIntervalHours", "retentionPolicy", { positive: true })
      problems.bool(retention, "pinnedVersionsRetained", "retentionPolicy")
    }
  }
  const discovery = input.schemaDiscoveryConfig
  if (discovery !== undefined) {
    if (!isObject(discovery)) problems.add("schemaDiscoveryConfig", "must be an object")
    else {
      for (const key of ["batchSize", "maxKeysPerRecord", "maxNestingDepth", "maxStringLengthSampled"]) {
        problems.num(discovery, key, "schemaDiscoveryConfig", { integer: true, positive: true })
      }
    }
  }

  const properties = input.properties
  const self = ctx.selfSlug ?? slugOf(input)
  if (properties === undefined) problems.add("properties", "is required (it may be empty)")
  else if (!Array.isArray(properties)) problems.add("properties", "must be an array")
  else if (properties.length > MAX_PROPERTIES) problems.add("properties", `must declare at most ${MAX_PROPERTIES} properties`)
  else {
    const selfFields = new Set(properties.flatMap((p) => (isObject(p) && typeof p.name === "string" ? [p.name] : [])))
    checkProperties({ problems, ctx, self, selfFields }, properties, "properties", { depth: 0, topLevel: true, inArray: false })
    checkComputedReferences(problems, properties)
    checkCycles(problems, properties, self, ctx)
    checkIndexedCount(problems, properties)
  }

  const search = input.defaultSearchField
  if (search !== undefined && search !== null) {
    if (typeof search !== "string") problems.add("defaultSearchField", "must be a string")
    else {
      const p = Array.isArray(properties) ? properties.find((q) => isObject(q) && q.name === search) : undefined
      if (p === undefined) problems.add("defaultSearchField", `'${search}' is not a property of this structure`)
      else if (isObject(p) && p.type !== "string") problems.add("defaultSearchField", `'${search}' is not a string property`)
    }
  }
  for (const p of searchSettingProblems(input)) problems.add(p.field, p.message)

  return problems.list
}

/** At most MAX_INDEXED_PROPERTIES indexed properties: each one past the limit is named. */
const checkIndexedCount = (problems: Problems, properties: ReadonlyArray<unknown>) => {
  let count = 0
  properties.forEach((p, i) => {
    if (!isObject(p) || p.indexed !== true) return
    if (++count > MAX_INDEXED_PROPERTIES) {
      const name = typeof p.name === "string" ? `'${p.name}'` : "this property"
      problems.add(
        `properties[${i}].indexed`,
        `${name} cannot be indexed: a structure may have at most ${MAX_INDEXED_PROPERTIES} indexed properties`
      )
    }
  })
}

/** Expressions read existing fields, and computed fields do not depend on each other in a cycle. */
const checkComputedReferences = (problems: Problems, properties: ReadonlyArray<unknown>): void => {
  const byName = new Map<string, Raw>()
  properties.forEach((p) => {
    if (isObject(p) && typeof p.name === "string" && !byName.has(p.name)) byName.set(p.name, p)
  })
  const deps = new Map<string, { at: string; reads: Array<string> }>()
  properties.forEach((p, i) => {
    if (!isObject(p) || typeof p.expression !== "string" || typeof p.name !== "string") return
    const parsed = parseExpression(p.expression)
    if (Result.isFailure(parsed)) return // reported by checkProperty
    const at = `properties[${i}].expression`
    const reads: Array<string> = []
    for (const field of referencedFields(parsed.success)) {
      const [head, ...rest] = field.split(".")
      const target = byName.get(head!)
      if (target === undefined) {
        problems.add(at, `reads '${field}', which is not a property of this structure`)
        continue
      }
      if (rest.length > 0 && !pathExists(target, rest)) {
        problems.add(at, `reads '${field}', which is not a field of this structure`)
        continue
      }
      if (typeof target.expression === "string") reads.push(head!)
    }
    deps.set(p.name, { at, reads })
  })
  // Cycles among computed fields (a field reading itself included).
  const state = new Map<string, "visiting" | "done">()
  const stack: Array<string> = []
  const reported = new Set<string>()
  const visit = (name: string): void => {
    const node = deps.get(name)
    if (node === undefined || state.get(name) === "done") return
    if (state.get(name) === "visiting") {
      const cycle = [...stack.slice(stack.indexOf(name)), name]
      for (const member of new Set(cycle)) {
        if (reported.has(member)) continue
        reported.add(member)
        problems.add(deps.get(member)!.at, `computed fields form a cycle: ${cycle.join(" -> ")}`)
      }
      return
    }
    state.set(name, "visiting")
    stack.push(name)
    node.reads.forEach(visit)
    stack.pop()
    state.set(name, "done")
  }
  for (const name of deps.keys()) visit(name)
}

/** Whether `rest` names a field under the object property `p`; free-form objects accept any path. */
const pathExists = (p: Raw, rest: ReadonlyArray<string>): boolean => {
  if (rest.length === 0) return true
  if (p.type !== "object") return false
  const props = Array.isArray(p.properties) ? p.properties : []
  const next = props.find((q) => isObject(q) && q.name === rest[0])
  if (next === undefined) return p.isStrict !== true && props.length === 0
  return pathExists(next as Raw, rest.slice(1))
}
