// The storage service's rules on input and output, pure (docs/storage.md): folder and name shapes, the metadata
// object, the Range header, Content-Disposition (RFC 6266, non-ASCII names through filename*), which types are
// always served as attachments (a browser would run them: stored XSS), and the content type kept for a file.
const CONTROL = /[\u0000-\u001f\u007f]/
const encoder = new TextEncoder()

export const MAX_FOLDER_BYTES = 512
export const MAX_NAME_BYTES = 255
export const MAX_METADATA_BYTES = 64 * 1024

/** A folder as stored ("" = root; a trailing "/" is dropped), or the reason it is refused. */
export const checkFolder = (raw: string): { readonly folder: string } | { readonly problem: string } => {
  if (encoder.encode(raw).byteLength > MAX_FOLDER_BYTES) return { problem: `must be at most ${MAX_FOLDER_BYTES} bytes` }
  if (CONTROL.test(raw)) return { problem: "must not contain control characters or NUL" }
  if (raw.includes("\\")) return { problem: 'must not contain "\\"' }
  if (raw.startsWith("/")) return { problem: 'must not start with "/"' }
  if (raw.includes("//")) return { problem: 'must not contain "//"' }
  const folder = raw.endsWith("/") ? raw.slice(0, -1) : raw
  if (folder === "") return { folder }
  if (folder.split("/").some((s) => s === ".." || s === ".")) return { problem: 'must not contain "." or ".." segments' }
  return { folder }
}

/** A name's problem, if any. */
export const nameProblem = (name: string): string | undefined => {
  if (name.length === 0) return "must not be empty"
  if (encoder.encode(name).byteLength > MAX_NAME_BYTES) return `must be at most ${MAX_NAME_BYTES} bytes`
  if (name.includes("/") || name.includes("\\")) return 'must not contain "/" or "\\"'
  if (CONTROL.test(name)) return "must not contain control characters or NUL"
  if (name === "." || name === "..") return 'must not be "." or ".."'
  return undefined
}

/** The `metadata` form field: a JSON object as text. */
export const parseMetadata = (text: string): { readonly metadata: Record<string, unknown> } | { readonly problem: string } => {
  if (encoder.encode(text).byteLength > MAX_METADATA_BYTES) return { problem: `must be at most ${MAX_METADATA_BYTES} bytes` }
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch {
    return { problem: "must be a JSON object (it is not valid JSON)" }
  }
  if (value === null || typeof value !== "object" || Array.isArray(value)) return { problem: "must be a JSON object" }
  return { metadata: value as Record<string, unknown> }
}

export type RangeAnswer =
  | { readonly _tag: "Whole" }
  | { readonly _tag: "Part"; readonly start: number; readonly end: number }
  | { readonly _tag: "Malformed" }
  | { readonly _tag: "Unsatisfiable" }

/**
 * A `Range` header against a file of `size` bytes: one `bytes=a-b`, `bytes=a-` or `bytes=-n` range. Several ranges
 * are served whole (RFC 9110 lets a server ignore Range); a header that is not a byte range at all is refused (400).
 */
export const parseRange = (header: string | undefined, size: number): RangeAnswer => {
  if (header === undefined) return { _tag: "Whole" }
  const m = /^\s*bytes\s*=\s*(.+)$/i.exec(header)
  if (m === null) return { _tag: "Malformed" }
  const specs = m[1]!.split(",").map((s) => s.trim())
  const one = /^(\d*)-(\d*)$/
  if (specs.some((s) => !one.test(s) || s === "-")) return { _tag: "Malformed" }
  if (specs.length > 1) return { _tag: "Whole" }
  const [, a, b] = one.exec(specs[0]!)!
  if (a === "") {
    const n = Number(b)
    if (!Number.isSafeInteger(n)) return { _tag: "Malformed" }
    if (n === 0 || size === 0) return { _tag: "Unsatisfiable" }
    return { _tag: "Part", start: Math.max(0, size - n), end: size - 1 }
  }
  const start = Number(a)
  const end = b === "" ? size - 1 : Number(b)
  if (!Number.isSafeInteger(start) || !Number.isSafeInteger(end)) return { _tag: "Malformed" }
  if (b !== "" && end < start) return { _tag: "Malformed" }
  if (start >= size) return { _tag: "Unsatisfiable" }
  return { _tag: "Part", start, end: Math.min(end, size - 1) }
}

/** Types a browser would render as active content from our origin: always served as attachments. */
export const mustDownload = (contentType: string): boolean => {
  const type = contentType.toLowerCase().split(";")[0]!.trim()
  return (
    type === "text/html" ||
    type === "application/xhtml+xml" ||
    type === "image/svg+xml" ||
    type === "text/xml" ||
    type === "application/xml" ||
    type.endsWith("+xml") ||
    type.includes("javascript") ||
    type.includes("ecmascript") ||
    type === "application/wasm" ||
    type === "application/x-shockwave-flash" ||
    type === "text/xsl" ||
    type === "multipart/x-mixed-replace"
  )
}

/** RFC 6266: an ASCII fallback and the exact name as UTF-8 in `filename*`. */
export const contentDisposition = (kind: "inline" | "attachment", name: string): string => {
  const fallback = name.replace(/[^\x20-\x7e]|["\\%]/g, "_")
  const encoded = encodeURIComponent(name).replace(/['()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`)
  return `${kind}; filename="${fallback}"; filename*=UTF-8''${encoded}`
}

const MEDIA_TYPE =
  /^[a-z0-9][a-z0-9!#$&^_.+-]{0,126}\/[a-z0-9][a-z0-9!#$&^_.+-]{0,126}(\s*;\s*[a-z0-9!#$&^_.+-]+=("[^"\r\n]*"|[a-z0-9!#$&^_.+-]+))*$/i

/** The client's content type when it is a well-formed media type, else undefined. */
export const cleanContentType = (raw: string | undefined): string | undefined => {
  if (raw === undefined) return undefined
  const t = raw.trim()
  return t.length > 0 && t.length <= 255 && MEDIA_TYPE.test(t) ? t : undefined
}

/** True when the client's type says nothing useful (then the bytes are sniffed). */
export const isGeneric = (contentType: string | undefined) => contentType === undefined || /^application\/octet-stream\b/i.test(contentType)
