// Differences shown by the console: between two JSON values (structure versions, record versions) and between two
// texts (function versions).

export interface JsonChange {
  readonly path: string
  readonly kind: "added" | "removed" | "changed"
  readonly before?: unknown
  readonly after?: unknown
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v)

/** Objects of an array that all carry an `id` (or else a `name`) are matched by it, not by position. */
const keyOf = (items: ReadonlyArray<unknown>): "id" | "name" | undefined => {
  if (items.length === 0 || !items.every(isObject)) return undefined
  for (const key of ["id", "name"] as const) {
    const values = items.map((i) => (i as Record<string, unknown>)[key])
    if (values.every((v) => typeof v === "string") && new Set(values).size === values.length) return key
  }
  return undefined
}

const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b)

/** Every leaf that differs between `before` and `after`; `ignore` names keys to skip at any depth. */
export const jsonDiff = (before: unknown, after: unknown, ignore: ReadonlyArray<string> = []): Array<JsonChange> => {
  const out: Array<JsonChange> = []
  const walk = (a: unknown, b: unknown, path: string) => {
    if (same(a, b)) return
    if (a === undefined) return void out.push({ path, kind: "added", after: b })
    if (b === undefined) return void out.push({ path, kind: "removed", before: a })
    if (isObject(a) && isObject(b)) {
      for (const key of new Set([...Object.keys(a), ...Object.keys(b)])) {
        if (ignore.includes(key)) continue
        walk(a[key], b[key], path === "" ? key : `${path}.${key}`)
      }
      return
    }
    if (Array.isArray(a) && Array.isArray(b)) {
      const key = keyOf(a) ?? keyOf(b)
      if (key !== undefined && (a.length === 0 || keyOf(a) === key) && (b.length === 0 || keyOf(b) === key)) {
        const left = new Map(a.map((i) => [(i as Record<string, string>)[key]!, i]))
        const right = new Map(b.map((i) => [(i as Record<string, string>)[key]!, i]))
        for (const k of new Set([...left.keys(), ...right.keys()])) {
          const item = (right.get(k) ?? left.get(k)) as Record<string, unknown>
          const label = typeof item.name === "string" ? item.name : k
          walk(left.get(k), right.get(k), `${path}[${label}]`)
        }
        return
      }
      for (let i = 0; i < Math.max(a.length, b.length); i++) walk(a[i], b[i], `${path}[${i}]`)
      return
    }
    out.push({ path, kind: "changed", before: a, after: b })
  }
  walk(before, after, "")
  return out
}

export interface LineChange {
  readonly kind: "same" | "added" | "removed"
  readonly text: string
}

/** A line diff (longest common subsequence); texts past 4,000 lines each are compared as wholes. */
export const lineDiff = (before: string, after: string): Array<LineChange> => {
  const a = before.split("\n")
  const b = after.split("\n")
  if (a.length * b.length > 16_000_000) {
    return [...a.map((text) => ({ kind: "removed" as const, text })), ...b.map((text) => ({ kind: "added" as const, text }))]
  }
  // trim the common head and tail, then LCS on the middle
  let head = 0
  while (head < a.length && head < b.length && a[head] === b[head]) head++
  let tail = 0
  while (tail < a.length - head && tail < b.length - head && a[a.length - 1 - tail] === b[b.length - 1 - tail]) tail++
  const x = a.slice(head, a.length - tail)
  const y = b.slice(head, b.length - tail)
  const n = x.length
  const m = y.length
  const table = Array.from({ length: n + 1 }, () => new Uint32Array(m + 1))
  for (let i = n - 1; i >= 0; i--) {
    for (let j = m - 1; j >= 0; j--) {
      table[i]![j] = x[i] === y[j] ? table[i + 1]![j + 1]! + 1 : Math.max(table[i + 1]![j]!, table[i]![j + 1]!)
    }
  }
  const middle: Array<LineChange> = []
  let i = 0
  let j = 0
  while (i < n && j < m) {
    if (x[i] === y[j]) {
      middle.push({ kind: "same", text: x[i]! })
      i++
      j++
    } else if (table[i + 1]![j]! >= table[i]![j + 1]!) middle.push({ kind: "removed", text: x[i++]! })
    else middle.push({ kind: "added", text: y[j++]! })
  }
  while (i < n) middle.push({ kind: "removed", text: x[i++]! })
  while (j < m) middle.push({ kind: "added", text: y[j++]! })
  return [
    ...a.slice(0, head).map((text) => ({ kind: "same" as const, text })),
    ...middle,
    ...a.slice(a.length - tail).map((text) => ({ kind: "same" as const, text }))
  ]
}
