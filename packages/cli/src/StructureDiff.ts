/**
 * Structures as files (`structures pull` / `push`): the definition a file holds, and what pushing it would change.
 *
 * A file holds what a create body takes (no server-managed fields: id, dates, version, metadata), with each
 * property's `id`, so that a push updates properties in place (the server matches properties by id). Pushing
 * sends the file as a `PUT` body: keys the file leaves out keep their value on the server, and properties the file
 * leaves out are kept (a push never deletes; `DELETE /structures/{id}/properties` does). The diff follows the same
 * rules, so it shows exactly what the PUT changes. Pure functions: no I/O here.
 *
 * @since 0.1.0
 */

type Json = unknown
type Obj = Record<string, Json>

/** The keys of a structure a file holds, in this order. */
const definitionKeys = [
  "name",
  "recordSlug",
  "description",
  "status",
  "schemaDiscoveryMode",
  "isStrict",
  "enableVersioning",
  "retentionPolicy",
  "defaultSearchField",
  "searchFields",
  "searchLanguage",
  "schemaDiscoveryConfig",
  "defaultTtlSeconds",
  "tags",
  "properties"
] as const

const isObj = (u: unknown): u is Obj => typeof u === "object" && u !== null && !Array.isArray(u)

/** What `structures pull` writes for a structure the API answered. @category files */
export const toFile = (structure: Obj): Obj => {
  const out: Obj = {}
  for (const key of definitionKeys) {
    const value = structure[key]
    if (value !== undefined && value !== null) out[key] = value
  }
  return out
}

/** Structural equality of JSON values (key order ignored). */
const same = (a: Json, b: Json): boolean => {
  if (a === b) return true
  if (Array.isArray(a) && Array.isArray(b)) return a.length === b.length && a.every((x, i) => same(x, b[i]))
  if (isObj(a) && isObj(b)) {
    const keys = new Set([...Object.keys(a), ...Object.keys(b)])
    for (const k of keys) if (!same(a[k], b[k])) return false
    return true
  }
  return false
}

// What the server stores for a property key the file leaves out (a PUT replaces a property whole).
const isDefault = (value: Json) =>
  value === undefined ||
  value === null ||
  value === false ||
  (Array.isArray(value) && value.length === 0) ||
  (isObj(value) && Object.keys(value).length === 0)

const show = (value: Json) => {
  const text = value === undefined || value === null ? "(none)" : JSON.stringify(value)
  return text.length > 70 ? `${text.slice(0, 67)}...` : text
}

/** One structure's planned change. @category models */
export interface Plan {
  readonly recordSlug: string
  readonly file: string
  readonly action: "create" | "update" | "unchanged"
  /** the structure's id on the server (updates) */
  readonly id?: string
  /** human-readable lines: `+` added, `~` changed, `=` kept although absent from the file */
  readonly changes: ReadonlyArray<string>
  /** what to send: the POST body (create) or the PUT body (update) */
  readonly body: Obj
}

const propertyName = (p: Obj) => (typeof p.name === "string" ? p.name : "?")

/** The plan for one file against the server's structure of that slug (or none). @category diff */
export const plan = (file: string, local: Obj, remote: Obj | undefined): Plan => {
  const recordSlug = typeof local.recordSlug === "string" ? local.recordSlug : ""
  const localProps = (Array.isArray(local.properties) ? local.properties : []).filter(isObj)
  if (remote === undefined) {
    return {
      recordSlug,
      file,
      action: "create",
      changes: [`+ structure ${recordSlug} (${localProps.length} properties)`],
      body: local
    }
  }
  const changes: Array<string> = []
  for (const key of definitionKeys) {
    if (key === "properties" || !(key in local)) continue
    if (!same(local[key], remote[key] ?? undefined)) changes.push(`~ ${key}: ${show(remote[key])} -> ${show(local[key])}`)
  }
  const remoteProps = (Array.isArray(remote.properties) ? remote.properties : []).filter(isObj)
  const matched = new Set<Obj>()
  const sent: Array<Obj> = []
  for (const p of localProps) {
    const match =
      remoteProps.find((r) => p.id !== undefined && r.id === p.id) ?? remoteProps.find((r) => r.name === p.name && !matched.has(r))
    if (match === undefined) {
      changes.push(`+ property ${propertyName(p)} (${String(p.type)})`)
      sent.push(p)
      continue
    }
    matched.add(match)
    const withId = { ...p, id: match.id }
    sent.push(withId)
    const label = match.name === p.name ? propertyName(p) : `${String(match.name)} -> ${propertyName(p)}`
    if (match.name !== p.name) changes.push(`~ property ${label}: renamed`)
    const keys = new Set([...Object.keys(p), ...Object.keys(match)])
    for (const k of keys) {
      if (k === "id" || k === "name") continue
      const mine = p[k]
      const theirs = match[k]
      if (mine === undefined ? isDefault(theirs) : same(mine, theirs)) continue
      changes.push(`~ property ${label}.${k}: ${show(theirs)} -> ${show(mine)}`)
    }
  }
  for (const r of remoteProps) {
    if (!matched.has(r)) changes.push(`= property ${propertyName(r)} is on the server only: kept (push never deletes)`)
  }
  const real = changes.filter((c) => !c.startsWith("="))
  return {
    recordSlug,
    file,
    action: real.length === 0 ? "unchanged" : "update",
    ...(typeof remote.id === "string" ? { id: remote.id } : {}),
    changes,
    body: { ...local, properties: sent }
  }
}

const targets = (properties: ReadonlyArray<Json>): Array<string> =>
  properties
    .filter(isObj)
    .flatMap((p) => [
      ...(p.type === "reference" && typeof p.target === "string" ? [p.target] : []),
      ...(p.type === "reference" && typeof p.referenceStructure === "string" ? [p.referenceStructure] : []),
      ...(Array.isArray(p.properties) ? targets(p.properties) : []),
      ...(Array.isArray(p.itemSchema) ? targets(p.itemSchema) : [])
    ])

/** Orders plans so a structure comes after the structures it references (cycles keep their file order). @category diff */
export const inDependencyOrder = (plans: ReadonlyArray<Plan>): Array<Plan> => {
  const bySlug = new Map(plans.map((p) => [p.recordSlug, p]))
  const out: Array<Plan> = []
  const state = new Map<string, "visiting" | "done">()
  const visit = (p: Plan) => {
    if (state.get(p.recordSlug) !== undefined) return
    state.set(p.recordSlug, "visiting")
    const props = Array.isArray(p.body.properties) ? p.body.properties : []
    for (const t of targets(props)) {
      const dep = bySlug.get(t)
      if (dep !== undefined && t !== p.recordSlug) visit(dep)
    }
    state.set(p.recordSlug, "done")
    out.push(p)
  }
  plans.forEach(visit)
  return out
}
