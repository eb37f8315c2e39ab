// The embedded node's store: one file per key under <TROUPE_DATA_DIR>/storage/blobs (or a temporary directory when
// the database is in memory). A put writes `tmp/<random>`, fsyncs it, then renames it onto `blobs/<key>` (rename is
// atomic on one file system), so a crash never leaves a half file under a live key; leftovers in `tmp/` are removed
// when the store opens (one process owns an embedded data directory). Blobs no file or variant row names (a
// variant whose node died before its row committed) are swept at start and every TROUPE_STORAGE_SWEEP_SECONDS.
import { Effect, Layer, Schedule, Stream } from "effect"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { AppConfig } from "../platform/AppConfig.ts"
import { BlobStore, BlobStoreError, metered } from "./BlobStore.ts"
import { makePool } from "./BufferPool.ts"
import { FileRange } from "./FileRange.ts"
import { isBlobKey, removeUnnamed, SWEEP_MIN_AGE_MS } from "./Sweep.ts"

/** Bytes gathered before one write: a 1 MB upload is one write, a large one holds 1 MiB at a time. */
const WRITE_BATCH_BYTES = 1024 * 1024

/** Write batches kept for reuse: one per upload in flight, for 16 at once. */
const writes = makePool(WRITE_BATCH_BYTES, 16)

const fail = (reason: string) => (cause: unknown) => new BlobStoreError({ reason, cause })

/** A key is a uuid (the file id, or id + variant): never a path. */
export const makeDiskStore = (root: string) =>
  Effect.gen(function* () {
    const blobs = Path.join(root, "blobs")
    const tmp = Path.join(root, "tmp")
    yield* Effect.tryPromise({
      try: async () => {
        await Fs.promises.rm(tmp, { recursive: true, force: true })
        await Fs.promises.mkdir(blobs, { recursive: true })
        await Fs.promises.mkdir(tmp, { recursive: true })
      },
      catch: fail(`cannot prepare ${root}`)
    })
    const pathOf = (key: string) => {
      if (!isBlobKey(key)) throw new Error(`bad blob key ${key}`)
      return Path.join(blobs, key)
    }
    return BlobStore.of({
      kind: "disk",
      put: (key, body, maxBytes) =>
        Effect.gen(function* () {
          const target = pathOf(key)
          const temp = Path.join(tmp, key)
          const handle = yield* Effect.acquireRelease(
            Effect.tryPromise({ try: () => Fs.promises.open(temp, "wx"), catch: fail("cannot create a temporary file") }),
            (h) => Effect.promise(() => h.close()).pipe(Effect.ignore)
          )
          // The body's chunks (about 30-64 KB each, each a fresh buffer of Node's) are copied into a pooled buffer
          // and written by one write per WRITE_BATCH_BYTES: each write is a trip through libuv's thread pool, whose
          // hand-offs cost the main thread more than the copy, and a chunk no longer held until its batch is written
          // dies young, so a scavenge frees it (lib/Scavenge.ts) where a held one would be promoted.
          let batch: Buffer | undefined
          let filled = 0
          const flush = Effect.suspend(() => {
            if (batch === undefined || filled === 0) return Effect.void
            const full = batch
            const bytes = filled
            batch = undefined
            filled = 0
            return Effect.tryPromise({
              try: () =>
                handle
                  .write(full, 0, bytes)
                  .then(({ bytesWritten }) => {
                    if (bytesWritten !== bytes) throw new Error(`wrote ${bytesWritten} of ${bytes} bytes`)
                  })
                  // the buffer is the pool's again only once the write has read it (not when an interrupt ends the wait)
                  .finally(() => writes.give(full)),
              catch: fail("write failed")
            })
          })
          const add = (chunk: Uint8Array): Effect.Effect<void, BlobStoreError> => {
            if (chunk.byteLength === 0) return Effect.void
            batch ??= writes.take()
            const n = Math.min(chunk.byteLength, batch.length - filled)
            batch.set(n === chunk.byteLength ? chunk : chunk.subarray(0, n), filled)
            filled += n
            return filled < batch.length
              ? Effect.void
              : Effect.andThen(
                  flush,
                  Effect.suspend(() => add(chunk.subarray(n)))
                )
          }
          const result = yield* metered(body, maxBytes, add)
          yield* flush
          yield* Effect.tryPromise({ try: () => handle.sync(), catch: fail("fsync failed") })
          yield* Effect.tryPromise({ try: () => Fs.promises.rename(temp, target), catch: fail("rename failed") })
          return result
        }).pipe(
          Effect.scoped,
          // failed, cut off or interrupted: the temporary file goes (the handle is closed by then)
          Effect.onExit((exit) =>
            exit._tag === "Failure"
              ? Effect.promise(() => Fs.promises.rm(Path.join(tmp, key), { force: true })).pipe(Effect.ignore)
              : Effect.void
          )
        ),
      get: (key, range) =>
        Stream.suspend(() =>
          Stream.fromAsyncIterable(
            Fs.createReadStream(
              pathOf(key),
              range === undefined ? { highWaterMark: 256 * 1024 } : { start: range.start, end: range.end, highWaterMark: 256 * 1024 }
            ) as AsyncIterable<Uint8Array>,
            fail("read failed")
          )
        ),
      open: (key, range) =>
        Effect.try({
          try: () => new FileRange(pathOf(key), range.start, range.end),
          catch: fail("read failed")
        }),
      read: (key, range) =>
        Effect.tryPromise({
          try: async () => {
            const handle = await Fs.promises.open(pathOf(key), "r")
            try {
              const length = range.end - range.start + 1
              const { buffer, bytesRead } = await handle.read(Buffer.allocUnsafe(length), 0, length, range.start)
              if (bytesRead !== length) throw new Error(`${key}: ${bytesRead} bytes where ${length} were expected`)
              return buffer
            } finally {
              await handle.close()
            }
          },
          catch: fail("read failed")
        }),
      delete: (key) => Effect.tryPromise({ try: () => Fs.promises.rm(pathOf(key), { force: true }), catch: fail("delete failed") }),
      stat: (key) =>
        Effect.tryPromise({
          try: () =>
            Fs.promises.stat(pathOf(key)).then(
              (s) => ({ size: s.size }),
              (e: NodeJS.ErrnoException) => {
                if (e.code === "ENOENT") return undefined
                throw e
              }
            ),
          catch: fail("stat failed")
        })
    })
  })

/** Removes blobs older than an hour that no storage_files or storage_variants row names (Sweep.ts). */
export const sweepDisk = (root: string) =>
  Effect.gen(function* () {
    const blobs = Path.join(root, "blobs")
    const names = yield* Effect.promise(() => Fs.promises.readdir(blobs))
    const before = Date.now() - SWEEP_MIN_AGE_MS
    const old: Array<string> = []
    for (const name of names) {
      if (!isBlobKey(name)) continue
      const stat = yield* Effect.promise(() => Fs.promises.stat(Path.join(blobs, name)).catch(() => undefined))
      if (stat !== undefined && stat.mtimeMs < before) old.push(name)
    }
    yield* removeUnnamed(old, (key) => Effect.promise(() => Fs.promises.rm(Path.join(blobs, key), { force: true })))
  }).pipe(Effect.catchCause((cause) => Effect.logWarning("storage: sweeping orphan blobs failed", cause)))

/** The disk store under the data directory (a temporary one for `memory://`), and its sweep. */
export const DiskStoreLayer = Layer.effect(
  BlobStore,
  Effect.gen(function* () {
    const config = yield* AppConfig
    const root = config.dataDir.startsWith("memory://")
      ? Fs.mkdtempSync(Path.join(Os.tmpdir(), "troupe-storage-"))
      : Path.join(config.dataDir, "storage")
    const store = yield* makeDiskStore(root)
    const every = Schedule.spaced(`${config.storage.sweepSeconds} seconds`)
    yield* Effect.forkScoped(Effect.repeat(sweepDisk(root), every))
    return store
  })
)
