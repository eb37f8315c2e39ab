// The S3-compatible store (TROUPE_STORAGE=s3://bucket[/prefix]): AWS S3, MinIO, R2, Ceph and the like, addressed
// path-style (`<endpoint>/<bucket>/<key>`) so any of them works without DNS per bucket. TROUPE_S3_ENDPOINT and
// TROUPE_S3_REGION choose the service, AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY (or the SDK's other sources)
// the credentials. A put streams through @aws-sdk/lib-storage's Upload: one PUT for a small file, a multipart
// upload in 8 MiB parts for a large one, aborted (its parts dropped) when the upload fails or is cut off. Orphan
// objects under the prefix are swept (sweepS3).
import { DeleteObjectCommand, GetObjectCommand, HeadObjectCommand, ListObjectsV2Command, S3Client } from "@aws-sdk/client-s3"
import { Upload } from "@aws-sdk/lib-storage"
import { Effect, Layer, Option, Schedule, Stream } from "effect"
import { PassThrough, type Readable } from "node:stream"
import { AppConfig } from "../platform/AppConfig.ts"
import { BlobStore, BlobStoreError, metered } from "./BlobStore.ts"
import { isBlobKey, removeUnnamed, SWEEP_MIN_AGE_MS } from "./Sweep.ts"

const fail = (reason: string) => (cause: unknown) => new BlobStoreError({ reason, cause })

export interface S3Location {
  readonly bucket: string
  readonly prefix: string
}

/** `s3://bucket/some/prefix` → bucket and key prefix (`some/prefix/`, or "" at the bucket's root). */
export const parseS3Url = (url: string): S3Location => {
  const rest = url.slice("s3://".length)
  const slash = rest.indexOf("/")
  const bucket = slash < 0 ? rest : rest.slice(0, slash)
  const prefix = slash < 0 ? "" : rest.slice(slash + 1).replace(/^\/+|\/+$/g, "")
  return { bucket, prefix: prefix === "" ? "" : `${prefix}/` }
}

export const makeS3Store = (client: S3Client, location: S3Location) => {
  const Bucket = location.bucket
  const keyOf = (key: string) => `${location.prefix}${key}`
  const remove = (key: string) =>
    Effect.tryPromise({ try: () => client.send(new DeleteObjectCommand({ Bucket, Key: keyOf(key) })), catch: fail("delete failed") }).pipe(
      Effect.asVoid
    )
  return BlobStore.of({
    kind: "s3",
    put: (key, body, maxBytes) =>
      Effect.gen(function* () {
        const pass = new PassThrough({ highWaterMark: 1024 * 1024 })
        const upload = new Upload({
          client,
          params: { Bucket, Key: keyOf(key), Body: pass },
          partSize: 8 * 1024 * 1024,
          queueSize: 2,
          leavePartsOnError: false
        })
        const done = upload.done()
        // the SDK failing stops the writer below (a destroyed stream never drains)
        done.catch((error) => pass.destroy(error))
        const write = (chunk: Uint8Array) =>
          Effect.callback<void, BlobStoreError>((resume) => {
            if (pass.destroyed) return resume(Effect.fail(new BlobStoreError({ reason: "upload failed" })))
            if (pass.write(chunk)) return resume(Effect.void)
            const onDrain = () => {
              pass.off("close", onClose)
              resume(Effect.void)
            }
            const onClose = () => {
              pass.off("drain", onDrain)
              resume(Effect.fail(new BlobStoreError({ reason: "upload failed" })))
            }
            pass.once("drain", onDrain)
            pass.once("close", onClose)
          })
        const result = yield* metered(body, maxBytes, write).pipe(
          Effect.onExit((exit) =>
            exit._tag === "Failure"
              ? Effect.promise(async () => {
                  await upload.abort().catch(() => {})
                  pass.destroy()
                  await done.catch(() => {})
                })
              : Effect.void
          )
        )
        pass.end()
        yield* Effect.tryPromise({ try: () => done, catch: fail("upload failed") })
        return result
      }).pipe(Effect.onExit((exit) => (exit._tag === "Failure" ? Effect.ignore(remove(key)) : Effect.void))),
    get: (key, range) =>
      Stream.unwrap(
        Effect.tryPromise({
          try: (signal) =>
            client.send(
              new GetObjectCommand({
                Bucket,
                Key: keyOf(key),
                ...(range === undefined ? {} : { Range: `bytes=${range.start}-${range.end}` })
              }),
              { abortSignal: signal }
            ),
          catch: fail("read failed")
        }).pipe(Effect.map((out) => Stream.fromAsyncIterable(out.Body as Readable as AsyncIterable<Uint8Array>, fail("read failed"))))
      ),
    open: (key, range) =>
      Effect.tryPromise({
        try: () => client.send(new GetObjectCommand({ Bucket, Key: keyOf(key), Range: `bytes=${range.start}-${range.end}` })),
        catch: fail("read failed")
      }).pipe(Effect.map((out) => out.Body as Readable)),
    read: (key, range) =>
      Effect.tryPromise({
        try: async () => {
          const out = await client.send(new GetObjectCommand({ Bucket, Key: keyOf(key), Range: `bytes=${range.start}-${range.end}` }))
          const bytes = (await out.Body?.transformToByteArray()) ?? new Uint8Array(0)
          if (bytes.byteLength !== range.end - range.start + 1) throw new Error(`${bytes.byteLength} bytes of ${key}`)
          return bytes
        },
        catch: fail("read failed")
      }),
    delete: remove,
    stat: (key) =>
      Effect.tryPromise({
        try: () =>
          client.send(new HeadObjectCommand({ Bucket, Key: keyOf(key) })).then(
            (out) => ({ size: Number(out.ContentLength ?? 0) }),
            (error: { name?: string; $metadata?: { httpStatusCode?: number } }) => {
              if (error.name === "NotFound" || error.$metadata?.httpStatusCode === 404) return undefined
              throw error
            }
          ),
        catch: fail("stat failed")
      })
  })
}

/**
 * Removes objects under the prefix older than an hour that no file or variant row names (Sweep.ts), a page of the
 * listing at a time. Every node of a cluster may sweep: a delete of a missing object succeeds.
 */
export const sweepS3 = (client: S3Client, location: S3Location) =>
  Effect.gen(function* () {
    const store = makeS3Store(client, location)
    let token: string | undefined
    do {
      const page = yield* Effect.tryPromise({
        try: () => client.send(new ListObjectsV2Command({ Bucket: location.bucket, Prefix: location.prefix, ContinuationToken: token })),
        catch: fail("list failed")
      })
      const before = Date.now() - SWEEP_MIN_AGE_MS
      const old = (page.Contents ?? []).flatMap((object) => {
        const key = (object.Key ?? "").slice(location.prefix.length)
        return isBlobKey(key) && object.LastModified !== undefined && object.LastModified.getTime() < before ? [key] : []
      })
      yield* removeUnnamed(old, store.delete)
      token = page.IsTruncated === true ? page.NextContinuationToken : undefined
    } while (token !== undefined)
  }).pipe(Effect.catchCause((cause) => Effect.logWarning("storage: sweeping orphan objects failed", cause)))

/** The S3 store of TROUPE_STORAGE, with the node's endpoint, region and the SDK's credential chain. */
export const S3StoreLayer = (url: string) =>
  Layer.effect(
    BlobStore,
    Effect.gen(function* () {
      const config = yield* AppConfig
      const client = new S3Client({
        region: config.storage.s3Region,
        forcePathStyle: true,
        ...Option.match(config.storage.s3Endpoint, { onNone: () => ({}), onSome: (endpoint) => ({ endpoint }) })
      })
      yield* Effect.addFinalizer(() => Effect.sync(() => client.destroy()))
      const location = parseS3Url(url)
      yield* Effect.forkScoped(Effect.repeat(sweepS3(client, location), Schedule.spaced(`${config.storage.sweepSeconds} seconds`)))
      return makeS3Store(client, location)
    })
  )
