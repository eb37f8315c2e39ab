// Resized images (docs/storage.md, "Images"): `GET /files/{id}?width=&height=&fit=` on a JPEG, PNG, WebP, GIF or
// AVIF file answers a variant made with sharp, once per file, size and fit, and kept in the BlobStore beside the
// original (a `storage_variants` row names its blob; the file's delete removes both). Sizes come from the
// configured list only (TROUPE_STORAGE_IMAGE_SIZES), so a client cannot make a node store unboundedly many
// variants. Two requests making the same new variant at once each write a blob of their own (a fresh key: never
// one half-written file); the first row recorded wins, the other blob is removed, and both answer the winner's
// bytes. Variants do not count against the workspace quota: they are derived, bounded by the size list, and go
// with their file.
import { type BadRequest, badRequest, details, type NotFound, notFound } from "@troupe/api/Errors"
import { Effect, Semaphore, Stream } from "effect"
import * as Crypto from "node:crypto"
import sharp from "sharp"
import type { BlobStoreShape } from "./BlobStore.ts"
import type { FileRow, StorageRepo, Variant } from "./StorageRepo.ts"

const IMAGE_TYPES: ReadonlySet<string> = new Set(["image/jpeg", "image/png", "image/webp", "image/gif", "image/avif"])
const FITS = ["cover", "contain", "fill", "inside", "outside"] as const
type Fit = (typeof FITS)[number]

/** sharp's output format → the variant's content type (the output keeps the input's format). */
const TYPES: Record<string, string> = { jpeg: "image/jpeg", png: "image/png", webp: "image/webp", gif: "image/gif", heif: "image/avif" }

export interface VariantQuery {
  readonly width?: string | undefined
  readonly height?: string | undefined
  readonly fit?: string | undefined
}

interface Wanted {
  readonly width: number | undefined
  readonly height: number | undefined
  readonly fit: Fit
  /** the variant's name: `256x`, `x128`, `256x128-cover` */
  readonly key: string
}

const invalid = (field: string, problem: string) =>
  badRequest({ message: `Invalid ${field}: ${field} ${problem}`, code: "VALIDATION_ERROR", details: details([[field, problem]]) })

const baseType = (contentType: string) => contentType.split(";")[0]!.trim().toLowerCase()

// Bounds of the memory one variant takes: the original is read whole (sharp buffers a streamed input anyway) and
// decoded whole (4 bytes a pixel), two at a time (the semaphore below).
const MAX_SOURCE_BYTES = 64 * 1024 * 1024
const MAX_PIXELS = 64 * 1024 * 1024

export const makeImageVariants = (deps: {
  readonly store: BlobStoreShape
  readonly repo: StorageRepo["Service"]
  readonly sizes: ReadonlyArray<number>
}) => {
  const { repo, sizes, store } = deps
  // sharp runs on libuv's threads: a few variants at a time keep a burst of new sizes from taking every core
  const making = Semaphore.makeUnsafe(2)

  const dimension = (field: "width" | "height", raw: string | undefined) =>
    Effect.gen(function* () {
      if (raw === undefined) return undefined
      const n = /^\d{1,5}$/.test(raw) ? Number(raw) : Number.NaN
      if (!sizes.includes(n)) return yield* invalid(field, `must be one of ${sizes.join(", ")} (TROUPE_STORAGE_IMAGE_SIZES)`)
      return n
    })

  /** The variant a query asks for, undefined for the original; 400 for a bad size or fit, or a file that is no image. */
  const wanted = (row: FileRow, q: VariantQuery): Effect.Effect<Wanted | undefined, BadRequest> =>
    Effect.gen(function* () {
      if (q.width === undefined && q.height === undefined) {
        return q.fit === undefined ? undefined : yield* invalid("fit", "needs width and height")
      }
      if (!IMAGE_TYPES.has(baseType(row.contentType))) {
        const field = q.width !== undefined ? "width" : "height"
        return yield* invalid(field, `applies to JPEG, PNG, WebP, GIF and AVIF images only, not ${row.contentType}`)
      }
      const width = yield* dimension("width", q.width)
      const height = yield* dimension("height", q.height)
      if (q.fit !== undefined && !(FITS as ReadonlyArray<string>).includes(q.fit)) {
        return yield* invalid("fit", `must be one of ${FITS.join(", ")}`)
      }
      const fit = (q.fit ?? "cover") as Fit
      const both = width !== undefined && height !== undefined
      return { width, height, fit, key: `${width ?? ""}x${height ?? ""}${both ? `-${fit}` : ""}` }
    })

  const original = (row: FileRow) =>
    row.size === 0
      ? Effect.succeed(Buffer.alloc(0))
      : Stream.runCollect(store.get(row.blobKey, { start: 0, end: row.size - 1 })).pipe(
          Effect.map((chunks) => Buffer.concat(Array.from(chunks))),
          Effect.orDie
        )

  const resize = (input: Buffer, w: Wanted) =>
    Effect.tryPromise({
      try: () =>
        sharp(input, { animated: true, limitInputPixels: MAX_PIXELS })
          .rotate()
          .resize({ width: w.width, height: w.height, fit: w.fit })
          .toBuffer({ resolveWithObject: true }),
      catch: (e) =>
        invalid(
          w.width !== undefined ? "width" : "height",
          /pixel limit/i.test(String(e))
            ? `cannot be applied: images over ${MAX_PIXELS >> 20} megapixels are served whole only`
            : "cannot be applied: the file is not a readable image"
        )
    })

  /** Makes the variant, stores it under a fresh key and records it, or answers the one recorded first. */
  /** Stores `data` under `blobKey` and records it, or answers the variant recorded first (undefined: file gone). */
  const keep = (row: FileRow, w: Wanted, blobKey: string, data: Buffer, format: string) =>
    Effect.gen(function* () {
      const source = (async function* () {
        yield data
      })()
      const put = yield* Effect.orDie(store.put(blobKey, source, Number.MAX_SAFE_INTEGER))
      const contentType = TYPES[format] ?? row.contentType
      return yield* Effect.orDie(repo.insertVariant(row.id, { variant: w.key, blobKey, contentType, size: put.size, sha256: put.sha256 }))
    })

  /** Makes the variant under a fresh key; its blob is removed unless its row is the one recorded (lost race, file gone, interrupted). */
  const make = (row: FileRow, w: Wanted): Effect.Effect<Variant, BadRequest | NotFound> =>
    Effect.gen(function* () {
      // made meanwhile by a request that held the permit before this one
      const done = yield* Effect.orDie(repo.findVariant(row.id, w.key))
      if (done !== undefined) return done
      if (row.size > MAX_SOURCE_BYTES) {
        return yield* invalid(
          w.width !== undefined ? "width" : "height",
          `cannot be applied: images over ${MAX_SOURCE_BYTES >> 20} MiB are served whole only`
        )
      }
      const { data, info } = yield* resize(yield* original(row), w)
      const blobKey = Crypto.randomUUID()
      const recorded = yield* keep(row, w, blobKey, data, info.format).pipe(
        Effect.onExit((exit) =>
          exit._tag === "Success" && exit.value?.blobKey === blobKey ? Effect.void : Effect.ignore(store.delete(blobKey))
        )
      )
      return recorded ?? (yield* notFound({ message: `File not found: ${row.id}` }))
    }).pipe(making.withPermit)

  /**
   * The row to serve for a download: the file itself, or (with width/height) its variant as a row of its own
   * (its blob, type, size and checksum: the ETag and ranges are the variant's).
   */
  const rowToServe = (row: FileRow, q: VariantQuery): Effect.Effect<FileRow, BadRequest | NotFound> =>
    Effect.gen(function* () {
      const w = yield* wanted(row, q)
      if (w === undefined) return row
      const found = yield* repo.findVariant(row.id, w.key).pipe(Effect.orDie)
      const v = found ?? (yield* make(row, w))
      return { ...row, blobKey: v.blobKey, contentType: v.contentType, size: v.size, checksum: `sha256:${v.sha256}` }
    })

  return { rowToServe }
}
