// The parts of an upload's multipart body, as the storage service reads them (StorageService.upload), from either lane:
// the Effect HTTP stack's `request.multipartStream` (`stackParts`), or the fast lane's parser fed straight from the
// node's request (`laneParts`, FastUpload.ts). Both run effect's own multipart parser (effect/http/MultipartParser)
// with the same configuration (Multipart.makeConfig under the same limits), so a body parses alike in both, errors
// included; the lane's differs in what it skips: no Node Duplex and Readable per part (whose buffered chunks a read
// concatenates, a copy of the file) and no Effect stream per chunk. A file part's chunks are views of the socket's.
import { type BadRequest, badRequest, type PayloadTooLarge, payloadTooLarge } from "@troupe/api/Errors"
import * as NodeMultipart from "@effect/platform-node/NodeMultipart"
import { Effect, Stream } from "effect"
import { type HttpServerRequest, Multipart, MultipartParser } from "effect/http"
import type * as Http from "node:http"
import type { Readable } from "node:stream"

/** A field's text, or a file whose bytes are read once, in order, before the next part. */
export type UploadPart =
  | { readonly _tag: "Field"; readonly key: string; readonly value: string }
  | {
      readonly _tag: "File"
      readonly key: string
      /** the part's filename (its field name without one) */
      readonly name: string
      readonly contentType: string
      readonly content: AsyncIterable<Uint8Array>
    }

export type UploadParts = Stream.Stream<UploadPart, BadRequest | PayloadTooLarge>

export const MAX_PARTS = 16
export const MAX_FIELD_BYTES = 80 * 1024

/** Room for a part's headers, which the parser counts into the part's size. */
const PART_HEADERS_BYTES = 64 * 1024

/**
 * The parser's limits for files of at most `maxFile` bytes: the exact cut-off is the store's (BlobStore.metered
 * counts the file's own bytes); the parser's per-part limit, which counts the part's headers too, is a backstop.
 */
const limits = (maxFile: number) =>
  Multipart.limitsServices({
    maxParts: MAX_PARTS,
    maxFieldSize: MAX_FIELD_BYTES,
    maxFileSize: maxFile + PART_HEADERS_BYTES,
    maxTotalSize: maxFile + 1024 * 1024
  })

/** A body that broke off or could not be parsed: 400 (413 when a parser limit on size was hit). */
export const bodyProblem = (cause: unknown): BadRequest | PayloadTooLarge => {
  if (Multipart.isMultipartError(cause)) {
    const tag = cause.reason._tag
    if (tag === "FileTooLarge" || tag === "BodyTooLarge")
      return payloadTooLarge({ message: "The upload exceeds TROUPE_STORAGE_MAX_FILE_BYTES" })
    if (tag === "TooManyParts")
      return badRequest({ message: `Invalid multipart body: at most ${MAX_PARTS} parts`, code: "VALIDATION_ERROR" })
    if (tag === "FieldTooLarge")
      return badRequest({ message: `Invalid multipart body: a field exceeds ${MAX_FIELD_BYTES} bytes`, code: "VALIDATION_ERROR" })
  }
  return badRequest({ message: "Invalid multipart body: it is malformed or was cut off before its end", code: "VALIDATION_ERROR" })
}

/** The parts of a request of the Effect HTTP stack. */
export const stackParts = (request: HttpServerRequest.HttpServerRequest, maxFile: number): UploadParts =>
  request.multipartStream.pipe(
    Stream.map(
      (part): UploadPart =>
        part._tag === "Field"
          ? { _tag: "Field", key: part.key, value: part.value }
          : {
              _tag: "File",
              key: part.key,
              name: part.name,
              contentType: part.contentType,
              content: NodeMultipart.fileToReadable(
                part as unknown as Parameters<typeof NodeMultipart.fileToReadable>[0]
              ) as Readable as AsyncIterable<Uint8Array>
            }
    ),
    Stream.mapError(bodyProblem),
    Stream.provideContext(limits(maxFile))
  )

/** The parser's failures as the stack's parser reports them (NodeMultipart's mapping). */
const toMultipartError = (error: MultipartParser.MultipartError): Multipart.MultipartError => {
  if (error._tag === "ReachedLimit") {
    const reason = (
      { MaxParts: "TooManyParts", MaxFieldSize: "FieldTooLarge", MaxPartSize: "FileTooLarge", MaxTotalSize: "BodyTooLarge" } as const
    )[error.limit]
    return Multipart.MultipartError.fromReason(reason, error)
  }
  return Multipart.MultipartError.fromReason("Parse", error)
}

/** The body was cut off: the client went away, or the connection broke. */
const cutOff = () => Multipart.MultipartError.fromReason("Parse", new Error("the request body ended before its end"))

/** Socket bytes a file part may hold unread before the request is paused (backpressure). */
const HIGH_WATER = 1024 * 1024

/**
 * The parts of a node request's body, parsed as its chunks arrive: one part at a time, a file's chunks handed over
 * as views of the socket's (no copy), the request paused while more than HIGH_WATER of them wait to be read.
 */
export const laneParts = (req: Http.IncomingMessage, maxFile: number): UploadParts =>
  Stream.unwrap(
    Effect.map(Multipart.makeConfig(req.headers as Record<string, string>).pipe(Effect.provideContext(limits(maxFile))), (config) =>
      Stream.fromAsyncIterable(partsOf(req, config), bodyProblem)
    )
  )

/** A file part's chunks not yet read, their byte count, and whether the part ended. */
interface FileState {
  readonly chunks: Array<Uint8Array>
  buffered: number
  ended: boolean
}

const partsOf = (req: Http.IncomingMessage, config: MultipartParser.BaseConfig): AsyncIterable<UploadPart> => ({
  [Symbol.asyncIterator]: () => {
    const parts: Array<UploadPart> = []
    let done = false
    let failure: Multipart.MultipartError | undefined
    let wake: (() => void) | undefined
    const signal = () => {
      const w = wake
      wake = undefined
      w?.()
    }
    const waitFor = () => new Promise<void>((resolve) => (wake = resolve))
    const parser = MultipartParser.make({
      ...config,
      onField: (info, value) => {
        parts.push({ _tag: "Field", key: info.name, value: MultipartParser.decodeField(info, value) })
        signal()
      },
      onFile: (info) => {
        const file: FileState = { chunks: [], buffered: 0, ended: false }
        parts.push({
          _tag: "File",
          key: info.name,
          name: info.filename ?? info.name,
          contentType: info.contentType,
          content: content(file)
        })
        signal()
        return (chunk) => {
          if (chunk === null) file.ended = true
          else {
            file.chunks.push(chunk)
            file.buffered += chunk.byteLength
            if (file.buffered > HIGH_WATER) req.pause()
          }
          signal()
        }
      },
      onError: (error) => {
        failure ??= toMultipartError(error)
        signal()
      },
      onDone: () => {
        done = true
        signal()
      }
    })
    const onData = (chunk: Buffer) => parser.write(chunk)
    const onEnd = () => {
      parser.end()
      signal()
    }
    const onClose = () => {
      if (!req.complete) failure ??= cutOff()
      signal()
    }
    req.on("data", onData)
    req.on("end", onEnd)
    req.on("close", onClose)
    // a client gone mid-body: reported by `close` (an unheard stream error would crash the node)
    req.on("error", () => {})
    // the rest of the body is read and dropped, as Node does for a request answered before its end
    const stop = () => {
      req.off("data", onData)
      req.off("end", onEnd)
      req.off("close", onClose)
      req.resume()
    }
    const content = (file: FileState): AsyncIterable<Uint8Array> => ({
      [Symbol.asyncIterator]: () => ({
        next: async (): Promise<IteratorResult<Uint8Array>> => {
          while (true) {
            const chunk = file.chunks.shift()
            if (chunk !== undefined) {
              file.buffered -= chunk.byteLength
              if (file.buffered <= HIGH_WATER && req.isPaused()) req.resume()
              return { done: false, value: chunk }
            }
            if (failure !== undefined) throw failure
            if (file.ended) return { done: true, value: undefined }
            if (req.isPaused()) req.resume()
            await waitFor()
          }
        }
      })
    })
    return {
      next: async (): Promise<IteratorResult<UploadPart>> => {
        while (true) {
          // the parts parsed before a failure come first, as from the stack's parser
          const part = parts.shift()
          if (part !== undefined) return { done: false, value: part }
          if (failure !== undefined) {
            stop()
            throw failure
          }
          if (done) {
            stop()
            return { done: true, value: undefined }
          }
          // (a file part left unread holds its chunks; the service fails on a part it does not want)
          if (req.isPaused()) req.resume()
          await waitFor()
        }
      },
      return: async () => {
        stop()
        return { done: true, value: undefined }
      }
    }
  }
})
