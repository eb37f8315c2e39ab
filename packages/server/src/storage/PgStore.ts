// The PostgreSQL store: a file's bytes as 256 KiB `bytea` rows of storage_chunks in the node's own database, so a
// cluster needs nothing but its database to serve every file from every node. A put inserts each chunk as it fills
// (one statement each, never the whole file in memory); the chunks of an upload are invisible until its metadata
// row commits, and removed when the upload fails. Chunks left by a crashed node (no file or variant row, older
// than an hour) are swept at start and every TROUPE_STORAGE_SWEEP_SECONDS (default hourly).
import { Effect, Layer, Option, Schedule, Stream } from "effect"
import { SqlClient } from "effect/sql"
import { Readable } from "node:stream"
import { BlobStore, BlobStoreError, type ByteRange, metered } from "./BlobStore.ts"

export const CHUNK_BYTES = 256 * 1024
/** chunks read per query on download */
const READ_BATCH = 4

const fail = (reason: string) => (cause: unknown) => new BlobStoreError({ reason, cause })

export const makePgStore = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  const removeAll = (key: string) =>
    sql`DELETE FROM storage_chunks WHERE blob_key = ${key}`.pipe(Effect.asVoid, Effect.mapError(fail("delete failed")))

  const readRange = (key: string, range: ByteRange | undefined) => {
    const first = range === undefined ? 0 : Math.floor(range.start / CHUNK_BYTES)
    const last = range === undefined ? Number.MAX_SAFE_INTEGER : Math.floor(range.end / CHUNK_BYTES)
    return Stream.paginate(first, (seq) =>
      Effect.gen(function* () {
        const upTo = Math.min(last, seq + READ_BATCH - 1)
        const rows = yield* sql<{ seq: number; data: Uint8Array }>`SELECT seq, data FROM storage_chunks
          WHERE blob_key = ${key} AND seq >= ${seq} AND seq <= ${upTo} ORDER BY seq`.pipe(Effect.mapError(fail("read failed")))
        const out: Array<Uint8Array> = []
        for (const row of rows) {
          let data = row.data
          const offset = row.seq * CHUNK_BYTES
          if (range !== undefined) {
            const from = Math.max(0, range.start - offset)
            const to = Math.min(data.byteLength, range.end - offset + 1)
            data = data.subarray(from, to)
          }
          if (data.byteLength > 0) out.push(data)
        }
        const more = rows.length === upTo - seq + 1 && upTo < last
        return [out, more ? Option.some(upTo + 1) : Option.none()] as const
      })
    )
  }

  return BlobStore.of({
    kind: "postgres",
    put: (key, body, maxBytes) =>
      Effect.gen(function* () {
        let seq = 0
        let pending: Array<Uint8Array> = []
        let pendingBytes = 0
        const flush = (final: boolean) =>
          Effect.gen(function* () {
            while (pendingBytes >= CHUNK_BYTES || (final && pendingBytes > 0)) {
              const all = Buffer.concat(pending, pendingBytes)
              const take = Math.min(CHUNK_BYTES, all.byteLength)
              const chunk = all.subarray(0, take)
              const rest = all.subarray(take)
              pending = rest.byteLength > 0 ? [rest] : []
              pendingBytes = rest.byteLength
              yield* sql`INSERT INTO storage_chunks (blob_key, seq, data) VALUES (${key}, ${seq}, ${chunk})`.pipe(
                Effect.mapError(fail("write failed"))
              )
              seq++
            }
          })
        const result = yield* metered(body, maxBytes, (chunk) => {
          pending.push(chunk)
          pendingBytes += chunk.byteLength
          return pendingBytes >= CHUNK_BYTES ? flush(false) : Effect.void
        })
        yield* flush(true)
        return result
      }).pipe(Effect.onExit((exit) => (exit._tag === "Failure" ? Effect.ignore(removeAll(key)) : Effect.void))),
    get: readRange,
    // downloads: a Node stream the response pipes natively; the next four chunks are read while these are sent
    open: (key, range) =>
      Effect.sync(() => {
        const batch = (seq: number, upTo: number) => {
          const rows = Effect.runPromise(
            sql<{ seq: number; data: Uint8Array }>`SELECT seq, data FROM storage_chunks
              WHERE blob_key = ${key} AND seq >= ${seq} AND seq <= ${upTo} ORDER BY seq`
          )
          // a read ahead the client never waits for (it went away) must not be an unhandled rejection
          rows.catch(() => {})
          return rows
        }
        const last = Math.floor(range.end / CHUNK_BYTES)
        return Readable.from(
          (async function* () {
            let seq = Math.floor(range.start / CHUNK_BYTES)
            let upTo = Math.min(last, seq + READ_BATCH - 1)
            let pending = batch(seq, upTo)
            while (true) {
              const rows = await pending
              const complete = rows.length === upTo - seq + 1
              if (complete && upTo < last) {
                seq = upTo + 1
                upTo = Math.min(last, seq + READ_BATCH - 1)
                pending = batch(seq, upTo)
              }
              for (const row of rows) {
                const offset = row.seq * CHUNK_BYTES
                const from = Math.max(0, range.start - offset)
                const to = Math.min(row.data.byteLength, range.end - offset + 1)
                if (to > from) yield Buffer.from(row.data.buffer, row.data.byteOffset + from, to - from)
              }
              if (!complete || rows.length === 0 || rows[rows.length - 1]!.seq >= last) return
            }
          })(),
          { objectMode: false }
        )
      }),
    read: (key, range) =>
      sql<{ seq: number; data: Uint8Array }>`SELECT seq, data FROM storage_chunks
        WHERE blob_key = ${key} AND seq >= ${Math.floor(range.start / CHUNK_BYTES)} AND seq <= ${Math.floor(range.end / CHUNK_BYTES)}
        ORDER BY seq`.pipe(
        Effect.mapError(fail("read failed")),
        Effect.flatMap((rows) => {
          const pieces = rows.map((row) => {
            const offset = row.seq * CHUNK_BYTES
            return row.data.subarray(Math.max(0, range.start - offset), Math.min(row.data.byteLength, range.end - offset + 1))
          })
          const bytes = pieces.length === 1 ? pieces[0]! : Buffer.concat(pieces)
          const length = range.end - range.start + 1
          return bytes.byteLength === length
            ? Effect.succeed(bytes)
            : Effect.fail(new BlobStoreError({ reason: `read failed: ${bytes.byteLength} bytes of ${key} where ${length} were expected` }))
        })
      ),
    delete: removeAll,
    stat: (key) =>
      sql<{ n: number | string; bytes: number | string | null }>`SELECT count(*)::int AS n, sum(length(data))::bigint AS bytes
        FROM storage_chunks WHERE blob_key = ${key}`.pipe(
        Effect.map((rows) => (Number(rows[0]?.n ?? 0) === 0 ? undefined : { size: Number(rows[0]?.bytes ?? 0) })),
        Effect.mapError(fail("stat failed"))
      )
  })
})

/**
 * Drops chunks no file or variant row names: uploads and image variants whose node died before their row
 * committed. Only chunks older than an hour, so bytes of an upload still streaming are never touched.
 */
const sweep = (everySeconds: number) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    yield* sql`DELETE FROM storage_chunks c WHERE c.created_at < now() - interval '1 hour'
      AND NOT EXISTS (SELECT 1 FROM storage_files f WHERE f.blob_key = c.blob_key)
      AND NOT EXISTS (SELECT 1 FROM storage_variants v WHERE v.blob_key = c.blob_key)`
  }).pipe(
    Effect.catchCause((cause) => Effect.logWarning("storage: sweeping orphan chunks failed", cause)),
    Effect.repeat(Schedule.spaced(`${everySeconds} seconds`))
  )

/** The store, and its sweep at start and every `sweepSeconds` (TROUPE_STORAGE_SWEEP_SECONDS, default hourly). */
export const PgStoreLayer = (sweepSeconds: number) =>
  Layer.effect(BlobStore, makePgStore).pipe(Layer.merge(Layer.effectDiscard(Effect.forkScoped(sweep(sweepSeconds)))))
