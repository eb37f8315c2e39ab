// The orphan sweep of the stores that keep bytes outside the database (disk, S3): blobs no storage_files or
// storage_variants row names are an upload or an image variant whose node died before its row committed. Only
// blobs older than an hour go, so the bytes of an upload still streaming (its row not yet written) are never touched.
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/** Blobs younger than this are never swept. */
export const SWEEP_MIN_AGE_MS = 60 * 60 * 1000

/** The shape of a blob key (a file's or a variant's id, with an optional extension). */
export const isBlobKey = (key: string) => /^[0-9a-f-]{36}(\.[a-z0-9]+)?$/.test(key)

/** Of `old` (keys of blobs past the minimum age), removes those no file or variant row names; the count removed. */
export const removeUnnamed = <E>(old: ReadonlyArray<string>, remove: (key: string) => Effect.Effect<void, E>) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    let removed = 0
    for (let i = 0; i < old.length; i += 500) {
      const batch = old.slice(i, i + 500)
      const named = yield* sql<{ blob_key: string }>`SELECT blob_key FROM storage_files WHERE ${sql.in("blob_key", batch)}
        UNION SELECT blob_key FROM storage_variants WHERE ${sql.in("blob_key", batch)}`
      const keep = new Set(named.map((r) => r.blob_key))
      for (const key of batch) {
        if (keep.has(key)) continue
        yield* remove(key)
        removed++
      }
    }
    return removed
  })
