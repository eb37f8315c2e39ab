// A map that keeps its most recently set entries within a count and a size budget (the size of each entry measured
// by `sizeOf` when it is set), dropping the oldest first; an entry larger than `maxEntryBytes` is not kept at all.
// The record engine (records/write/Update.ts) keeps the rows its update batches wrote in one.

export interface Recent<V> {
  readonly get: (key: string) => V | undefined
  readonly has: (key: string) => boolean
  readonly set: (key: string, value: V) => void
  readonly delete: (key: string) => void
  readonly size: () => number
  readonly bytes: () => number
}

export const make = <V>(options: {
  readonly maxEntries: number
  readonly maxBytes: number
  readonly maxEntryBytes: number
  readonly sizeOf: (value: V) => number
}): Recent<V> => {
  const entries = new Map<string, { readonly value: V; readonly bytes: number }>()
  let total = 0
  const remove = (key: string) => {
    const gone = entries.get(key)
    if (gone === undefined) return
    entries.delete(key)
    total -= gone.bytes
  }
  return {
    get: (key) => entries.get(key)?.value,
    has: (key) => entries.has(key),
    set: (key, value) => {
      remove(key)
      const bytes = options.sizeOf(value)
      if (bytes > options.maxEntryBytes) return
      entries.set(key, { value, bytes })
      total += bytes
      while (entries.size > options.maxEntries || total > options.maxBytes) remove(entries.keys().next().value!)
    },
    delete: remove,
    size: () => entries.size,
    bytes: () => total
  }
}
