// What a download answers (docs/storage.md, "Downloads"), in one place for every route that serves a file's bytes:
// GET /files/{id} on the Effect stack and in the fast lane (FastDownload.ts), and GET /signed/{id}. Like a CDN:
// ETag (the sha256), If-None-Match → 304, one byte range (If-Range honoured) → 206 or 416, Accept-Ranges, nosniff,
// `Cache-Control: private, no-cache`, and Content-Disposition attachment for types a browser would run. The bytes
// of an answer up to SMALL_ANSWER_BYTES are read in one piece (a stream's set-up cost more than a 4 KB file's bytes);
// longer ones stream from the store. Either way they go out raw: never compressed, so the length and ETag hold.
import { type BadRequest, badRequest, details } from "@troupe/api/Errors"
import { Effect } from "effect"
import { HttpServerResponse } from "effect/http"
import type { FastAnswer, FastBytes } from "../platform/FastRoutes.ts"
import type { Readable } from "node:stream"
import type { BlobStoreError, BlobStoreShape } from "./BlobStore.ts"
import { contentDisposition, mustDownload, parseRange } from "./Rules.ts"
import type { FileRow } from "./StorageRepo.ts"

/** Answers up to this many bytes are read whole into memory; longer ones are streamed. */
export const SMALL_ANSWER_BYTES = 64 * 1024

/** A request's headers, as Node (the fast lane) or HttpServerRequest (the stack) hold them. */
export type RequestHeaders = { readonly [name: string]: string | ReadonlyArray<string> | undefined }

/** A download's answer: bytes (or a 304 without), or the 416's JSON body. */
export type DownloadAnswer = FastBytes | FastAnswer

/** The `download` query flag: `true` or `1` asks for `Content-Disposition: attachment`. */
export const wantsAttachment = (flag: string | undefined) => flag === "true" || flag === "1"

const one = (value: string | ReadonlyArray<string> | undefined) => (typeof value === "string" ? value : undefined)

/** The answer to a request for `row`'s bytes (the file's, or an image variant's), headers included. */
export const fileAnswer = (
  store: BlobStoreShape,
  row: FileRow,
  request: RequestHeaders,
  attachment: boolean
): Effect.Effect<DownloadAnswer, BadRequest> =>
  Effect.gen(function* () {
    const etag = `"${row.checksum.slice("sha256:".length)}"`
    const headers: Record<string, string> = {
      etag,
      "accept-ranges": "bytes",
      "x-content-type-options": "nosniff",
      "content-disposition": contentDisposition(attachment || mustDownload(row.contentType) ? "attachment" : "inline", row.name),
      "cache-control": "private, no-cache"
    }
    const inm = one(request["if-none-match"])
    if (inm?.split(",").some((t) => t.trim() === "*" || t.trim().replace(/^W\//, "") === etag)) {
      return { status: 304, headers, bytes: undefined }
    }
    const ifRange = one(request["if-range"])
    const range = ifRange !== undefined && ifRange.trim() !== etag ? { _tag: "Whole" as const } : parseRange(one(request.range), row.size)
    if (range._tag === "Malformed") {
      return yield* badRequest({
        message: "Invalid Range header: expected bytes=start-end, bytes=start- or bytes=-suffix",
        code: "VALIDATION_ERROR",
        details: details([["range", "is malformed"]])
      })
    }
    if (range._tag === "Unsatisfiable") {
      return {
        status: 416,
        body: {
          error: "Range Not Satisfiable",
          message: `The range is outside the file's ${row.size} bytes`,
          code: "RANGE_NOT_SATISFIABLE",
          statusCode: 416,
          details: []
        },
        headers: { "content-range": `bytes */${row.size}` }
      }
    }
    const entity = { "content-type": row.contentType }
    if (row.size === 0) return { status: 200, headers: { ...headers, ...entity, "content-length": "0" }, bytes: new Uint8Array(0) }
    const part = range._tag === "Part" ? range : undefined
    const bytes = part ?? { start: 0, end: row.size - 1 }
    const length = bytes.end - bytes.start + 1
    return {
      status: part === undefined ? 200 : 206,
      headers: {
        ...headers,
        ...(part === undefined ? {} : { "content-range": `bytes ${part.start}-${part.end}/${row.size}` }),
        ...entity,
        "content-length": String(length)
      },
      bytes: yield* Effect.orDie<Uint8Array | Readable, BlobStoreError, never>(
        length <= SMALL_ANSWER_BYTES ? store.read(row.blobKey, bytes) : store.open(row.blobKey, bytes)
      )
    }
  })

/** The answer as the Effect stack's response: raw bytes (never compressed), an empty 304, or the 416's JSON. */
export const toResponse = (answer: DownloadAnswer): HttpServerResponse.HttpServerResponse => {
  if (!("bytes" in answer)) return HttpServerResponse.jsonUnsafe(answer.body, { status: answer.status, headers: answer.headers ?? {} })
  return answer.bytes === undefined
    ? HttpServerResponse.empty({ status: answer.status, headers: answer.headers })
    : HttpServerResponse.raw(answer.bytes, { status: answer.status, headers: answer.headers })
}
