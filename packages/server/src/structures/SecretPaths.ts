// Secret properties of a structure as paths below a record's `data`, and masking them (in data and in stored
// changes) for callers who may not see them.
import type { Structure } from "@troupe/api/structures/Structure"
import { getAt, isObject, setAt } from "../lib/JsonPath.ts"
import { secretFields } from "./StructureFacts.ts"

export const MASK = "********"

/** Secret string properties as paths below `data` (top level and inside objects), e.g. `["creds", "token"]`. */
export const secretPaths = (structure: Structure): ReadonlyArray<ReadonlyArray<string>> => {
  const cached = secretCache.get(structure)
  if (cached) return cached
  const paths = secretFields(structure).map((f) => f.split("."))
  secretCache.set(structure, paths)
  return paths
}
const secretCache = new WeakMap<Structure, ReadonlyArray<ReadonlyArray<string>>>()

/** Stored data with secret values masked. */
export const maskData = (structure: Structure, data: Record<string, unknown>): Record<string, unknown> => {
  const paths = secretPaths(structure)
  if (paths.length === 0) return data
  let out = data
  for (const path of paths) {
    const v = getAt(out, path)
    if (v !== undefined && v !== null) out = setAt(out, path, MASK)
  }
  return out
}

/** The values a stored change holds: `{old, new}` (versions, changelog entries), `{field, oldValue, newValue}` (older changelog entries). */
const changeValueKeys = ["old", "new", "oldValue", "newValue"] as const

/**
 * Stored `changes` (of a version or a changelog entry) with the values at `paths` masked. Changes are masked when
 * written, under the definition of that moment: this masks again, under another one (read time, or the structure
 * update that makes a field secret), so values written before a field became secret never show.
 */
export const maskChangesAt = (changes: unknown, paths: ReadonlyArray<ReadonlyArray<string>>): unknown => {
  if (paths.length === 0 || !isObject(changes)) return changes
  let out = changes
  for (const [root, ...rest] of paths) {
    const change = root === undefined ? undefined : out[root]
    if (!isObject(change)) continue
    let masked = change
    for (const key of changeValueKeys) {
      const v = masked[key]
      if (v === undefined || v === null) continue
      if (rest.length === 0) masked = { ...masked, [key]: MASK }
      else if (isObject(v)) {
        const inner = getAt(v, rest)
        if (inner !== undefined && inner !== null && inner !== MASK) masked = { ...masked, [key]: setAt(v, rest, MASK) }
      }
    }
    if (masked !== change) out = { ...out, [root!]: masked }
  }
  return out
}

/** Stored `changes` with the structure's secret fields masked (history and changelog answers). */
export const maskChanges = (structure: Structure, changes: unknown): unknown => maskChangesAt(changes, secretPaths(structure))
