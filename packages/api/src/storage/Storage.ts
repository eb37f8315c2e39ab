/**
 * Storage models on the wire (CONTRACT §8.1, docs/storage.md): the file object, its list, the workspace's usage,
 * the upload form, signed URLs. Names, folders and metadata are checked by the server, which names the field.
 *
 * @since 0.1.0
 */
import { Schema } from "effect"
import { Multipart } from "effect/http"
import { HttpApiSchema } from "effect/http-api"

const optional = Schema.optionalKey
const Timestamp = Schema.String.annotate({ description: "ISO-8601 timestamp" })

/** One stored file (its bytes are at `GET /files/{id}`). @category models */
export const StoredFile = Schema.Struct({
  id: Schema.String,
  name: Schema.String,
  folder: Schema.String.annotate({ description: '"" for the root, else "a/b"' }),
  contentType: Schema.String,
  size: Schema.Int,
  checksum: Schema.String.annotate({ description: "sha256:<hex> of the bytes" }),
  metadata: Schema.Record(Schema.String, Schema.Json),
  createdAt: Timestamp,
  createdBy: Schema.NullOr(Schema.String)
}).annotate({ identifier: "StoredFile" })
/** @category models */
export type StoredFile = typeof StoredFile.Type

/** @category models */
export const FileList = Schema.Struct({
  data: Schema.Array(StoredFile),
  total: Schema.Int,
  page: Schema.Int,
  limit: Schema.Int
}).annotate({ identifier: "StoredFileList" })
/** @category models */
export type FileList = typeof FileList.Type

/** `GET /usage`. @category models */
export const StorageUsage = Schema.Struct({
  files: Schema.Int,
  bytes: Schema.Int,
  quotaBytes: Schema.Int.annotate({ description: "TROUPE_STORAGE_QUOTA_BYTES; 0 = no quota" })
}).annotate({ identifier: "StorageUsage" })
/** @category models */
export type StorageUsage = typeof StorageUsage.Type

/**
 * `POST /upload` (multipart/form-data, streamed: parts are read in order, the file part straight to the store).
 * @category models
 */
export const UploadForm = Schema.Struct({
  file: Multipart.SingleFileSchema.annotate({ description: "The bytes; the part's filename and content type are kept" }),
  folder: optional(Schema.String.annotate({ description: '"a/b": no "..", no leading "/", no "//", at most 512 bytes' })),
  name: optional(Schema.String.annotate({ description: "Overrides the part's filename (no / or control characters)" })),
  metadata: optional(Schema.String.annotate({ description: "A JSON object, as text" }))
}).pipe(HttpApiSchema.asMultipartStream())

const pageField = (maximum: number, description: string) =>
  optional(Schema.FiniteFromString.check(Schema.isInt(), Schema.isBetween({ minimum: 1, maximum })).annotate({ description }))

/** Newest first. @category models */
export const FileListQuery = {
  page: pageField(1_000_000, "1-based page (default 1)"),
  limit: pageField(1000, "Page size (default 50, at most 1000)"),
  folder: optional(Schema.String.annotate({ description: "Files in exactly this folder" })),
  prefix: optional(Schema.String.annotate({ description: "Files whose name starts with this" })),
  contentType: optional(Schema.String.annotate({ description: 'A content type, or a family such as "image/"' })),
  search: optional(Schema.String.annotate({ description: "Files whose name or folder contains this (case-insensitive)" }))
}

/** `?width=&height=&fit=`: a resized image variant (docs/storage.md, "Images"). */
const variantFields = {
  width: optional(Schema.String.annotate({ description: "Images only: a resized variant this wide (one of TROUPE_STORAGE_IMAGE_SIZES)" })),
  height: optional(Schema.String.annotate({ description: "Images only: a resized variant this high (one of TROUPE_STORAGE_IMAGE_SIZES)" })),
  fit: optional(
    Schema.String.annotate({
      description: "With width and height: cover (default), contain, fill, inside or outside (as sharp names them)"
    })
  )
}

/** `GET /files/{id}`. @category models */
export const DownloadQuery = {
  download: optional(Schema.Literals(["true", "false", "1", "0"]).annotate({ description: "true: Content-Disposition attachment" })),
  ...variantFields
}

/** `PATCH /files/{id}`: `metadata` replaces the old object. @category models */
export const FilePatch = Schema.Struct({
  name: optional(Schema.String),
  folder: optional(Schema.String),
  metadata: optional(Schema.Record(Schema.String, Schema.Json))
}).annotate({ identifier: "StoredFilePatch" })
/** @category models */
export type FilePatch = typeof FilePatch.Type

/** @category models */
export const SignedUrlRequest = Schema.Struct({
  expiresIn: optional(
    Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: 604800 })).annotate({ description: "Seconds, 1 to 604800 (default 3600)" })
  )
}).annotate({ identifier: "SignedUrlRequest" })

/** @category models */
export const SignedUrl = Schema.Struct({
  url: Schema.String.annotate({ description: "Absolute; downloads without a token until expiresAt" }),
  expiresAt: Timestamp
}).annotate({ identifier: "SignedUrl" })

/** The query of a signed download. @category models */
export const SignedQuery = {
  expires: Schema.String.annotate({ description: "Unix seconds" }),
  signature: Schema.String,
  download: optional(Schema.Literals(["true", "false", "1", "0"])),
  ...variantFields
}

/** @category models */
export const Deleted = Schema.Struct({ success: Schema.Boolean, message: Schema.String }).annotate({ identifier: "StoredFileDeleted" })

/** The bytes of a download (the type is the file's). @category models */
export const FileBytes = Schema.Uint8Array.pipe(HttpApiSchema.asUint8Array({ contentType: "application/octet-stream" }))
