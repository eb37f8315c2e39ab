// Paths into JSON objects (`["creds", "token"]`): read one value, or copy an object with one value replaced.
import { Predicate } from "effect"

/** Effect's plain-object predicate (non-null, not an array), typed for JSON objects. */
export const isObject: (v: unknown) => v is Record<string, unknown> = Predicate.isObject

/** The value at a path, or undefined. */
export const getAt = (data: unknown, path: ReadonlyArray<string>): unknown => {
  let cur = data
  for (const key of path) {
    if (!isObject(cur) || !Object.hasOwn(cur, key)) return undefined
    cur = cur[key]
  }
  return cur
}

/** A copy of `data` with the value at `path` replaced (copy on write along the path); the path must exist. */
export const setAt = (data: Record<string, unknown>, path: ReadonlyArray<string>, value: unknown): Record<string, unknown> => {
  const [head, ...rest] = path
  if (head === undefined) return data
  if (rest.length === 0) return { ...data, [head]: value }
  const child = data[head]
  return isObject(child) ? { ...data, [head]: setAt(child, rest, value) } : data
}
