// The storage service (CONTRACT §8.1, docs/storage.md). Upload: the multipart body is parsed as it arrives; the
// `file` part streams straight into the BlobStore (sha256 and size computed on the way, cut off at
// TROUPE_STORAGE_MAX_FILE_BYTES), the fields before and after it are read, and only then is the metadata row
// inserted with the quota check in one transaction. Any failure on the way (bad field, second file, truncated
// body, client gone, quota) removes the bytes: nothing is left behind. Downloads answer like a CDN (Download.ts:
// ETag, If-None-Match, one byte range, nosniff, attachment for types a browser would run); images also as resized
// variants (ImageVariants.ts).
import type { Principal } from "@troupe/api/Authorization"
import {
  type BadRequest,
  badRequest,
  type Conflict,
  details,
  type Forbidden,
  forbidden,
  malformedId,
  type NotFound,
  notFound,
  type PayloadTooLarge,
  payloadTooLarge,
  type ServiceUnavailable,
  serviceUnavailable,
  type TooManyRequests,
  tooManyRequests
} from "@troupe/api/Errors"
import type { FileList, FilePatch, StorageUsage, StoredFile } from "@troupe/api/storage/Storage"
import { Context, Effect, Exit, Layer, Option, Stream } from "effect"
import type { HttpServerRequest } from "effect/http"
import { SqlClient } from "effect/sql"
import { fileTypeFromBuffer } from "file-type"
import * as Crypto from "node:crypto"
import { AppConfig } from "../platform/AppConfig.ts"
import * as GroupCommit from "../lib/GroupCommit.ts"
import { isUuid } from "../lib/Uuid.ts"
import { Secrets } from "../platform/Secrets.ts"
import { BlobStore } from "./BlobStore.ts"
import { FileReferrers } from "./FileReferrers.ts"
import { makeImageVariants, type VariantQuery } from "./ImageVariants.ts"
import { type DownloadAnswer, fileAnswer, type RequestHeaders } from "./Download.ts"
import { checkFolder, cleanContentType, isGeneric, nameProblem, parseMetadata } from "./Rules.ts"
import { type FileRow, type NewFile, QuotaExceeded, StorageRepo, toFile } from "./StorageRepo.ts"
import { bodyProblem, type UploadPart, type UploadParts } from "./UploadParts.ts"

type UploadError = BadRequest | PayloadTooLarge | TooManyRequests | ServiceUnavailable

const invalid = (field: string, problem: string) =>
  badRequest({ message: `Invalid ${field}: ${field} ${problem}`, code: "VALIDATION_ERROR", details: details([[field, problem]]) })

const KNOWN_FIELDS: ReadonlySet<string> = new Set(["folder", "name", "metadata"])

export class StorageService extends Context.Service<
  StorageService,
  {
    /** Stores the file of a multipart body (its Content-Type, and its parts from either lane: UploadParts.ts). */
    readonly upload: (
      workspace: string,
      principal: Principal,
      contentType: string,
      parts: UploadParts
    ) => Effect.Effect<StoredFile, UploadError>
    readonly list: (
      workspace: string,
      q: {
        folder?: string | undefined
        prefix?: string | undefined
        contentType?: string | undefined
        search?: string | undefined
        page: number
        limit: number
      }
    ) => Effect.Effect<FileList>
    readonly get: (workspace: string, id: string) => Effect.Effect<StoredFile, BadRequest | NotFound>
    readonly update: (workspace: string, id: string, patch: FilePatch) => Effect.Effect<StoredFile, BadRequest | NotFound>
    /** Deletes the file, its variants and (per their onDelete) what records say of it; restrict → Conflict. */
    readonly remove: (
      workspace: string,
      id: string,
      principal: Principal
    ) => Effect.Effect<{ success: boolean; message: string }, BadRequest | NotFound | Conflict>
    readonly usage: (workspace: string) => Effect.Effect<StorageUsage>
    /**
     * The bytes, or with width/height a resized image variant (ImageVariants.ts), answered to a request with these
     * headers (Download.ts): the same answer for the stack's routes and the fast lane.
     */
    readonly download: (
      workspace: string,
      id: string,
      headers: RequestHeaders,
      attachment: boolean,
      variant?: VariantQuery
    ) => Effect.Effect<DownloadAnswer, BadRequest | NotFound>
    readonly signedUrl: (
      workspace: string,
      id: string,
      expiresIn: number,
      request: HttpServerRequest.HttpServerRequest
    ) => Effect.Effect<{ url: string; expiresAt: string }, BadRequest | NotFound>
    /** Checks a signed URL's expiry and HMAC (403 when expired or altered). */
    readonly verifySignature: (
      workspace: string,
      id: string,
      expires: string,
      signature: string
    ) => Effect.Effect<void, BadRequest | Forbidden>
    /** Reads a whole file (functions' `api.storage.read`), refusing files over `maxBytes`. */
    readonly readAll: (
      workspace: string,
      id: string,
      maxBytes: number
    ) => Effect.Effect<{ file: StoredFile; bytes: Uint8Array }, BadRequest | NotFound | PayloadTooLarge>
    /** Stores bytes held in memory (functions' `api.storage.write`). */
    readonly write: (
      workspace: string,
      principal: Principal,
      input: {
        name: string
        folder?: string | undefined
        contentType?: string | undefined
        metadata?: Record<string, unknown> | undefined
        bytes: Uint8Array
      }
    ) => Effect.Effect<StoredFile, UploadError>
  }
>()("@troupe/server/storage/StorageService") {
  static readonly layer = Layer.effect(
    StorageService,
    Effect.gen(function* () {
      const config = yield* AppConfig
      const repo = yield* StorageRepo
      const store = yield* BlobStore
      const secrets = yield* Secrets
      const referrers = yield* Effect.serviceOption(FileReferrers)
      const images = makeImageVariants({ store, repo, sizes: config.storage.imageSizes })
      const maxFile = config.storage.maxFileBytes
      const quota = config.storage.quotaBytes

      const die = <A, E, R>(e: Effect.Effect<A, E, R>) => Effect.orDie(e)

      // the URL-signing key: one per cluster, in `settings`, encrypted with the node's key
      const urlKey = yield* Effect.cached(
        die(
          Effect.flatMap(
            repo.signingKey(() => secrets.encrypt(Crypto.randomBytes(32).toString("base64"), "storage_url_key")),
            (stored) => secrets.decrypt(stored, "storage_url_key")
          )
        ).pipe(Effect.map((b64) => Buffer.from(b64, "base64")))
      )
      const sign = (workspace: string, id: string, expires: number) =>
        Effect.map(urlKey, (key) => Crypto.createHmac("sha256", key).update(`${workspace}\n${id}\n${expires}`).digest("base64url"))

      // Reads by id that arrive while one is in flight share the next statement (as RecordService.get's do): a
      // small file's download is that read and the bytes, and PGlite's single thread gains most from one statement.
      const reads = yield* GroupCommit.make({
        maxBatch: 128,
        concurrency: (yield* SqlClient.SqlClient).driver === "pglite" ? 1 : 4,
        run: (ids: ReadonlyArray<string>) =>
          Effect.map(die(repo.findMany([...new Set(ids)])), (found) => ids.map((id) => Exit.succeed(found.get(id)))),
        onShutdown: () => serviceUnavailable({ message: "The node is shutting down; retry the read", code: "UNAVAILABLE" })
      })

      const findRow = (workspace: string, id: string) =>
        Effect.gen(function* () {
          if (!isUuid(id)) return yield* malformedId("id", id, "file id")
          const row = yield* reads.submit(id.toLowerCase())
          if (row === undefined || row.workspace !== workspace) return yield* notFound({ message: `File not found: ${id}` })
          return row
        })

      /** The type kept: the client's when specific, else sniffed from the first bytes, else octet-stream. */
      const typeOf = (client: string | undefined, head: Uint8Array) =>
        Effect.gen(function* () {
          const clean = cleanContentType(client)
          if (!isGeneric(clean)) return clean!
          const sniffed = yield* Effect.promise(() => fileTypeFromBuffer(head).catch(() => undefined))
          return sniffed?.mime ?? clean ?? "application/octet-stream"
        })

      const quotaExceeded = (q: QuotaExceeded, size: number) =>
        tooManyRequests({ message: `Storage quota exceeded: ${q.used} of ${q.quota} bytes used, the file has ${size}` })
      const insertOne = (file: NewFile) =>
        repo.insert(file, quota).pipe(
          Effect.catchTag("QuotaExceeded", (q: QuotaExceeded) => Effect.fail(quotaExceeded(q, file.size))),
          Effect.catchTag("SqlError", (e) => Effect.die(e))
        )
      // Uploads whose bytes are stored while a metadata commit runs share the next one (as records' creates do):
      // one transaction, so one WAL flush on PGlite, for the batch. A batch that fails as a whole is retried one by
      // one, so a file that cannot be inserted fails alone.
      const inserts = yield* GroupCommit.make({
        maxBatch: 64,
        concurrency: (yield* SqlClient.SqlClient).driver === "pglite" ? 1 : 2,
        run: (files: ReadonlyArray<NewFile>) =>
          repo.insertMany(files, quota).pipe(
            Effect.map((outcomes) =>
              outcomes.map(
                (o, i): Exit.Exit<FileRow, TooManyRequests | ServiceUnavailable> =>
                  o instanceof QuotaExceeded ? Exit.fail(quotaExceeded(o, files[i]!.size)) : Exit.succeed(o)
              )
            ),
            Effect.catchCause(() => Effect.forEach(files, (file) => Effect.exit(insertOne(file))))
          ),
        onShutdown: () => serviceUnavailable({ message: "The node is shutting down; retry the upload", code: "UNAVAILABLE" })
      })

      // Once queued, the row may commit whatever the caller does: the wait is not interruptible, and `committed`
      // tells the caller's clean-up that the bytes are now the row's (a client gone meanwhile must not remove them).
      const commit = (row: Omit<NewFile, "contentType">, clientType: string | undefined, head: Uint8Array, state: { committed: boolean }) =>
        Effect.flatMap(typeOf(clientType, head), (contentType) =>
          Effect.uninterruptible(Effect.tap(inserts.submit({ ...row, contentType }), () => Effect.sync(() => (state.committed = true))))
        )
      /** Removes the bytes of an upload that failed, unless its row committed. */
      const cleanUp =
        (id: string, state: { committed: boolean }) =>
        <A, E>(exit: Exit.Exit<A, E>) =>
          exit._tag === "Failure" && !state.committed ? Effect.ignore(store.delete(id)) : Effect.void

      const quotaFull = (workspace: string) =>
        Effect.gen(function* () {
          if (quota === 0) return
          const used = yield* die(repo.usage(workspace))
          if (used.bytes >= quota)
            return yield* tooManyRequests({ message: `Storage quota exceeded: ${used.bytes} of ${quota} bytes used` })
        })

      const upload = (
        id: string,
        workspace: string,
        principal: Principal,
        type: string,
        parts: UploadParts,
        state: { committed: boolean }
      ) =>
        Effect.gen(function* () {
          if (!/^multipart\/form-data\s*;/i.test(type) || !/boundary=/i.test(type)) {
            return yield* badRequest({ message: "The body must be multipart/form-data with a boundary", code: "VALIDATION_ERROR" })
          }
          yield* quotaFull(workspace)
          const fields = new Map<string, string>()
          let stored: { size: number; sha256: string; head: Uint8Array; filename: string; contentType: string | undefined } | undefined
          const onPart = (part: UploadPart): Effect.Effect<void, UploadError> =>
            Effect.gen(function* () {
              if (part._tag === "Field") {
                if (part.key === "file") return yield* invalid("file", "must be a file part (with a filename)")
                if (!KNOWN_FIELDS.has(part.key)) return yield* invalid(part.key, "is not a known field (folder, name, metadata, file)")
                if (fields.has(part.key)) return yield* invalid(part.key, "must be given once")
                fields.set(part.key, part.value)
                return
              }
              if (part.key !== "file") return yield* invalid(part.key, 'is not a known field (the file goes in a part named "file")')
              if (stored !== undefined) return yield* invalid("file", "must be given once")
              const result = yield* store.put(id, part.content, maxFile).pipe(
                Effect.catchTags({
                  BlobTooLarge: () =>
                    Effect.fail(payloadTooLarge({ message: `The file exceeds TROUPE_STORAGE_MAX_FILE_BYTES (${maxFile} bytes)` })),
                  BodyError: (e) => Effect.fail(bodyProblem(e.cause)),
                  BlobStoreError: (e) => Effect.die(e)
                })
              )
              stored = { ...result, filename: part.name, contentType: part.contentType }
            })
          yield* Stream.runForEach(parts, onPart)
          if (stored === undefined) return yield* invalid("file", 'is required: send the bytes in a multipart part named "file"')
          const folder = checkFolder(fields.get("folder") ?? "")
          if ("problem" in folder) return yield* invalid("folder", folder.problem)
          const name = fields.get("name") ?? stored.filename
          const badName = nameProblem(name)
          if (badName !== undefined) return yield* invalid("name", badName)
          const metadataText = fields.get("metadata")
          const metadata = metadataText === undefined ? { metadata: {} } : parseMetadata(metadataText)
          if ("problem" in metadata) return yield* invalid("metadata", metadata.problem)
          const row = yield* commit(
            {
              id,
              workspace,
              name,
              folder: folder.folder,
              size: stored.size,
              sha256: stored.sha256,
              metadata: metadata.metadata,
              blobKey: id,
              createdBy: principal.id
            },
            stored.contentType,
            stored.head,
            state
          )
          return toFile(row)
        })

      const baseUrl = (request: HttpServerRequest.HttpServerRequest) => {
        if (Option.isSome(config.configuredPublicUrl)) return config.configuredPublicUrl.value.replace(/\/+$/, "")
        const host = request.headers.host
        return host !== undefined && /^[A-Za-z0-9.:[\]-]{1,255}$/.test(host) ? `http://${host}` : config.publicUrl
      }

      return StorageService.of({
        upload: (workspace, principal, contentType, parts) =>
          Effect.suspend(() => {
            const id = Crypto.randomUUID()
            // any failure after the bytes were stored (bad field, second file, quota, client gone) removes them:
            // the metadata row never committed
            const state = { committed: false }
            return upload(id, workspace, principal, contentType, parts, state).pipe(Effect.onExit(cleanUp(id, state)))
          }),
        list: (workspace, q) =>
          Effect.gen(function* () {
            const folder = q.folder === undefined ? undefined : checkFolder(q.folder)
            const { rows, total } = yield* die(
              repo.list(workspace, {
                folder: folder === undefined ? undefined : "folder" in folder ? folder.folder : q.folder,
                prefix: q.prefix,
                contentType: q.contentType,
                search: q.search,
                limit: q.limit,
                offset: (q.page - 1) * q.limit
              })
            )
            return { data: rows.map(toFile), total, page: q.page, limit: q.limit }
          }),
        get: (workspace, id) => Effect.map(findRow(workspace, id), toFile),
        update: (workspace, id, patch) =>
          Effect.gen(function* () {
            yield* findRow(workspace, id)
            let folder: string | undefined
            if (patch.folder !== undefined) {
              const checked = checkFolder(patch.folder)
              if ("problem" in checked) return yield* invalid("folder", checked.problem)
              folder = checked.folder
            }
            if (patch.name !== undefined) {
              const problem = nameProblem(patch.name)
              if (problem !== undefined) return yield* invalid("name", problem)
            }
            if (patch.metadata !== undefined && JSON.stringify(patch.metadata).length > 64 * 1024) {
              return yield* invalid("metadata", "must be at most 65536 bytes")
            }
            const row = yield* die(
              repo.update(workspace, id, { name: patch.name, folder, metadata: patch.metadata as Record<string, unknown> | undefined })
            )
            if (row === undefined) return yield* notFound({ message: `File not found: ${id}` })
            return toFile(row)
          }),
        remove: (workspace, id, principal) =>
          Effect.gen(function* () {
            yield* findRow(workspace, id)
            const before = (row: FileRow) =>
              Option.match(referrers, {
                onNone: () => Effect.void,
                onSome: (r) => r.beforeDelete(workspace, row.id, principal)
              })
            const removed = yield* repo.remove(workspace, id, before).pipe(Effect.catchTag("SqlError", Effect.die))
            if (removed === undefined) return yield* notFound({ message: `File not found: ${id}` })
            yield* Effect.forEach(removed.blobKeys, (key) =>
              store.delete(key).pipe(Effect.catchCause((cause) => Effect.logWarning(`storage: removing the bytes of ${id} failed`, cause)))
            )
            return { success: true, message: `File ${id} deleted` }
          }),
        usage: (workspace) => Effect.map(die(repo.usage(workspace)), (u) => ({ ...u, quotaBytes: quota })),
        download: (workspace, id, headers, attachment, variant = {}) =>
          findRow(workspace, id).pipe(
            Effect.flatMap((row) => images.rowToServe(row, variant)),
            Effect.flatMap((row) => fileAnswer(store, row, headers, attachment))
          ),
        signedUrl: (workspace, id, expiresIn, request) =>
          Effect.gen(function* () {
            const row = yield* findRow(workspace, id)
            const expires = Math.floor(Date.now() / 1000) + expiresIn
            const signature = yield* sign(workspace, row.id, expires)
            const url = `${baseUrl(request)}/storage/workspace/${encodeURIComponent(workspace)}/api/v1/signed/${row.id}?expires=${expires}&signature=${signature}`
            return { url, expiresAt: new Date(expires * 1000).toISOString() }
          }),
        verifySignature: (workspace, id, expires, signature) =>
          Effect.gen(function* () {
            if (!/^\d{1,12}$/.test(expires)) return yield* invalid("expires", "must be unix seconds")
            const at = Number(expires)
            if (at < Date.now() / 1000) return yield* forbidden({ message: "The signed URL has expired", code: "PERMISSION_DENIED" })
            const wanted = Buffer.from(yield* sign(workspace, id, at))
            const given = Buffer.from(signature)
            if (given.length !== wanted.length || !Crypto.timingSafeEqual(given, wanted)) {
              return yield* forbidden({ message: "The signed URL is not valid", code: "PERMISSION_DENIED" })
            }
          }),
        readAll: (workspace, id, maxBytes) =>
          Effect.gen(function* () {
            const row = yield* findRow(workspace, id)
            if (row.size > maxBytes)
              return yield* payloadTooLarge({ message: `The file has ${row.size} bytes; at most ${maxBytes} can be read here` })
            const chunks =
              row.size === 0 ? [] : yield* Stream.runCollect(store.get(row.blobKey, { start: 0, end: row.size - 1 })).pipe(Effect.orDie)
            return { file: toFile(row), bytes: Buffer.concat(Array.from(chunks)) }
          }),
        write: (workspace, principal, input) =>
          Effect.gen(function* () {
            const folder = checkFolder(input.folder ?? "")
            if ("problem" in folder) return yield* invalid("folder", folder.problem)
            const badName = nameProblem(input.name)
            if (badName !== undefined) return yield* invalid("name", badName)
            yield* quotaFull(workspace)
            const id = Crypto.randomUUID()
            const state = { committed: false }
            const bytes = input.bytes
            const source = (async function* () {
              yield bytes
            })()
            const result = yield* store.put(id, source, maxFile).pipe(
              Effect.catchTags({
                BlobTooLarge: () =>
                  Effect.fail(payloadTooLarge({ message: `The file exceeds TROUPE_STORAGE_MAX_FILE_BYTES (${maxFile} bytes)` })),
                BodyError: (e) => Effect.die(e),
                BlobStoreError: (e) => Effect.die(e)
              })
            )
            const row = yield* commit(
              {
                id,
                workspace,
                name: input.name,
                folder: folder.folder,
                size: result.size,
                sha256: result.sha256,
                metadata: input.metadata ?? {},
                blobKey: id,
                createdBy: principal.id
              },
              input.contentType,
              result.head,
              state
            ).pipe(Effect.onExit(cleanUp(id, state)))
            return toFile(row)
          })
      })
    })
  )
}
