/**
 * The storage service's routes (CONTRACT §8.1) under `/storage/workspace/{ws}/api/v1`: streamed multipart upload
 * (`write:storage`, a `writes` call), list, metadata, download with ranges, PATCH, DELETE, signed URLs and usage
 * (`read:storage`, `reads`). A signed URL downloads through `GET /signed/{id}` without a token.
 *
 * @since 0.1.0
 */
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import { Authorization, RateClass, RequiredPermission } from "../Authorization.ts"
import {
  BadRequest,
  Conflict,
  Forbidden,
  NotFound,
  PayloadTooLarge,
  RangeNotSatisfiable,
  ServiceUnavailable,
  TooManyRequests
} from "../Errors.ts"
import { WorkspaceParams } from "../Workspace.ts"
import {
  Deleted,
  DownloadQuery,
  FileBytes,
  FileList,
  FileListQuery,
  FilePatch,
  SignedQuery,
  SignedUrl,
  SignedUrlRequest,
  StorageUsage,
  StoredFile,
  UploadForm
} from "./Storage.ts"

/** The base path of the storage service. */
export const storageBase = "/storage/workspace/:workspace/api/v1" as const

const idParams = { ...WorkspaceParams, id: Schema.String }

/** @category groups */
export class StorageApi extends HttpApiGroup.make("storage")
  .add(
    HttpApiEndpoint.post("upload", "/upload", {
      params: WorkspaceParams,
      payload: UploadForm,
      success: StoredFile.pipe(HttpApiSchema.status(201)),
      error: [BadRequest, PayloadTooLarge, TooManyRequests, ServiceUnavailable]
    })
      .annotate(RequiredPermission, "write:storage")
      .annotate(RateClass, "writes"),
    HttpApiEndpoint.get("listFiles", "/files", { params: WorkspaceParams, query: FileListQuery, success: FileList, error: BadRequest })
      .annotate(RequiredPermission, "read:storage")
      .annotate(RateClass, "reads"),
    HttpApiEndpoint.get("usage", "/usage", { params: WorkspaceParams, success: StorageUsage })
      .annotate(RequiredPermission, "read:storage")
      .annotate(RateClass, "reads"),
    HttpApiEndpoint.get("download", "/files/:id", {
      params: idParams,
      query: DownloadQuery,
      success: FileBytes,
      error: [BadRequest, NotFound, RangeNotSatisfiable]
    })
      .annotate(RequiredPermission, "read:storage")
      .annotate(RateClass, "reads"),
    HttpApiEndpoint.get("fileMetadata", "/files/:id/metadata", { params: idParams, success: StoredFile, error: [BadRequest, NotFound] })
      .annotate(RequiredPermission, "read:storage")
      .annotate(RateClass, "reads"),
    HttpApiEndpoint.patch("updateFile", "/files/:id", {
      params: idParams,
      payload: FilePatch,
      success: StoredFile,
      error: [BadRequest, NotFound]
    })
      .annotate(RequiredPermission, "write:storage")
      .annotate(RateClass, "writes"),
    HttpApiEndpoint.delete("deleteFile", "/files/:id", { params: idParams, success: Deleted, error: [BadRequest, NotFound, Conflict] })
      .annotate(RequiredPermission, "write:storage")
      .annotate(RateClass, "writes"),
    HttpApiEndpoint.post("signedUrl", "/files/:id/signed-url", {
      params: idParams,
      payload: [SignedUrlRequest, Schema.Null],
      success: SignedUrl,
      error: [BadRequest, NotFound]
    })
      .annotate(RequiredPermission, "read:storage")
      .annotate(RateClass, "reads")
  )
  .middleware(Authorization)
  .prefix(storageBase)
  .annotateMerge(
    OpenApi.annotations({
      title: "Storage",
      description:
        "Files per workspace: streamed multipart upload (sha256 and size computed while the bytes go to the store), " +
        "downloads with ETag, ranges and safe Content-Disposition, signed URLs, a per-file limit and a workspace quota. " +
        "The bytes live on disk (embedded node), in PostgreSQL (a cluster) or in any S3-compatible store (TROUPE_STORAGE)."
    })
  ) {}

/** Signed downloads: the URL's HMAC is the credential, so this group has no token middleware. @category groups */
export class StorageSignedApi extends HttpApiGroup.make("storageSigned")
  .add(
    HttpApiEndpoint.get("signedDownload", "/signed/:id", {
      params: idParams,
      query: SignedQuery,
      success: FileBytes,
      error: [BadRequest, Forbidden, NotFound, RangeNotSatisfiable, TooManyRequests]
    })
  )
  .prefix(storageBase)
  .annotateMerge(
    OpenApi.annotations({
      title: "Storage (signed URLs)",
      description:
        "Downloads by a URL made with POST /files/{id}/signed-url; an expired or altered URL answers 403. " +
        "Each download counts against the workspace's `reads` rate limit (429 with Retry-After past it)."
    })
  ) {}
