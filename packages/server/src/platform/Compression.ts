// Compressed answers (brotli or gzip, as the client's Accept-Encoding allows) on both lanes, and cached static
// documents (/docs, /openapi.json) with an ETag, as the console's assets have.
// - An API answer is compressed when it is at least MIN_COMPRESS_BYTES long (one TCP segment: a smaller answer goes
//   in one packet anyway, and compressing it cost 0.05-0.08 ms of CPU per answer, a third of a read by id, measured
//   with node:zlib on record JSON; from 1.7 KB on it saves most of its bytes for about the same cost). Fast levels:
//   brotli 4 up to 64 KB, brotli 1 above (a 400 KB list page in 0.3 ms), gzip 1.
// - /docs (3.4 MB of HTML) and /openapi.json (the same document on every request: HttpApi memoizes it) are
//   compressed once, at the best levels, and answered with `ETag` and `Cache-Control: no-cache`, so a browser
//   revalidates and gets a 304.
import { type HttpServerRequest, HttpServerResponse } from "effect/http"
import * as Crypto from "node:crypto"
import * as Zlib from "node:zlib"

export const MIN_COMPRESS_BYTES = 1400

export type Encoding = "br" | "gzip"

/** The encoding to answer with: brotli when accepted, else gzip, else none (`q=0` refuses one). */
export const pickEncoding = (accept: string | undefined): Encoding | undefined => {
  if (accept === undefined || accept === "") return undefined
  let gzip = false
  let br = false
  let any = false
  for (const part of accept.split(",")) {
    const [name = "", ...params] = part.trim().toLowerCase().split(";")
    const refused = params.some((p) => /^\s*q\s*=\s*0(\.0*)?\s*$/.test(p))
    if (refused) continue
    if (name === "br") br = true
    else if (name === "gzip" || name === "x-gzip") gzip = true
    else if (name === "*") any = true
  }
  return br || (any && !gzip) ? "br" : gzip ? "gzip" : undefined
}

/** Content types worth compressing: JSON, text, HTML, JavaScript, XML, SVG. */
export const compressible = (contentType: string | undefined) =>
  contentType !== undefined && /json|^text\/|javascript|xml|svg/i.test(contentType)

/** `bytes` compressed for an answer made per request (fast levels). */
export const compressFast = (bytes: Uint8Array, encoding: Encoding): Uint8Array =>
  encoding === "br"
    ? Zlib.brotliCompressSync(bytes, {
        params: {
          [Zlib.constants.BROTLI_PARAM_QUALITY]: bytes.length <= 65_536 ? 4 : 1,
          [Zlib.constants.BROTLI_PARAM_SIZE_HINT]: bytes.length
        }
      })
    : Zlib.gzipSync(bytes, { level: 1 })

/** A document served as is on every request: its bytes in every encoding, and its ETag. */
export interface StaticDocument {
  readonly etag: string
  readonly identity: Uint8Array
  readonly br: Uint8Array
  readonly gzip: Uint8Array
}

export const staticDocument = (bytes: Uint8Array): StaticDocument => ({
  etag: `"${Crypto.createHash("sha256").update(bytes).digest("base64url").slice(0, 22)}"`,
  identity: bytes,
  br: Zlib.brotliCompressSync(bytes, {
    params: { [Zlib.constants.BROTLI_PARAM_QUALITY]: 9, [Zlib.constants.BROTLI_PARAM_SIZE_HINT]: bytes.length }
  }),
  gzip: Zlib.gzipSync(bytes, { level: 9 })
})

/** Whether an If-None-Match header names this ETag (a list, `*`, or weak forms). */
export const matchesEtag = (ifNoneMatch: string | undefined, etag: string) =>
  ifNoneMatch !== undefined && (ifNoneMatch.trim() === "*" || ifNoneMatch.split(",").some((t) => t.trim().replace(/^W\//, "") === etag))

/** The paths answered as static documents. */
export const STATIC_DOCUMENT_PATHS: ReadonlySet<string> = new Set(["/docs", "/openapi.json"])

const documents = new WeakMap<object, StaticDocument>()

const withoutEntityHeaders = (response: HttpServerResponse.HttpServerResponse) => {
  const headers = { ...response.headers } as Record<string, string>
  delete headers["content-length"]
  delete headers["content-type"]
  return headers
}

/**
 * The Effect stack's answer, compressed for the client (and, for a static document, with its ETag, or a 304). Any
 * other answer (a stream, an empty or small body, one already encoded, a type not worth it) is returned as it is.
 */
export const encodeAnswer = (
  request: HttpServerRequest.HttpServerRequest,
  path: string,
  response: HttpServerResponse.HttpServerResponse
): HttpServerResponse.HttpServerResponse => {
  const body = response.body
  if (body._tag !== "Uint8Array" || response.headers["content-encoding"] !== undefined) return response
  if (!compressible(body.contentType)) return response
  const encoding = pickEncoding(request.headers["accept-encoding"])
  if (STATIC_DOCUMENT_PATHS.has(path) && response.status === 200) {
    let doc = documents.get(body)
    if (doc === undefined) {
      doc = staticDocument(body.body)
      documents.set(body, doc)
    }
    const headers = { ...withoutEntityHeaders(response), etag: doc.etag, "cache-control": "no-cache", vary: "accept-encoding" }
    if (matchesEtag(request.headers["if-none-match"], doc.etag)) return HttpServerResponse.empty({ status: 304, headers })
    return HttpServerResponse.uint8Array(encoding === undefined ? doc.identity : doc[encoding], {
      status: 200,
      contentType: body.contentType,
      headers: encoding === undefined ? headers : { ...headers, "content-encoding": encoding }
    })
  }
  if (body.contentLength < MIN_COMPRESS_BYTES || response.status === 204 || response.status === 304) return response
  const headers = { ...withoutEntityHeaders(response), vary: "accept-encoding" }
  if (encoding === undefined) return HttpServerResponse.setHeader(response, "vary", "accept-encoding")
  return HttpServerResponse.uint8Array(compressFast(body.body, encoding), {
    status: response.status,
    contentType: body.contentType,
    headers: { ...headers, "content-encoding": encoding }
  })
}

/** The fast lane's JSON answer on a node response, compressed as `encodeAnswer` would. */
export const writeEncodedJson = (
  res: { readonly req?: { readonly headers: Record<string, string | Array<string> | undefined> } } & {
    writeHead: (status: number, headers: Record<string, string | number>) => unknown
    end: (chunk: string | Uint8Array) => unknown
  },
  status: number,
  text: string,
  headers: Record<string, string>
) => {
  const length = Buffer.byteLength(text)
  const accept = res.req?.headers["accept-encoding"]
  const encoding = length >= MIN_COMPRESS_BYTES ? pickEncoding(Array.isArray(accept) ? accept.join(",") : accept) : undefined
  if (encoding === undefined) {
    const vary = length >= MIN_COMPRESS_BYTES ? { vary: "accept-encoding" } : {}
    res.writeHead(status, { ...headers, ...vary, "content-type": "application/json", "content-length": length })
    res.end(text)
    return
  }
  const bytes = compressFast(Buffer.from(text), encoding)
  res.writeHead(status, {
    ...headers,
    vary: "accept-encoding",
    "content-encoding": encoding,
    "content-type": "application/json",
    "content-length": bytes.length
  })
  res.end(bytes)
}
