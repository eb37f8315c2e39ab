// Codecs the PostgreSQL driver lacks. @effect/sql-pg reads every column in binary and decodes an unregistered type as
// UTF-8 text: a `tsvector` (records.search_vector, migration 0011) in binary holds position words whose weight bits
// (labels A and B) are not UTF-8, so any `SELECT *` of a record weighted A or B failed to decode. Registered once for
// every client of the process; a tsvector decodes to its text form ('word':1A 'other':2), as PostgreSQL prints it.
import { PgTypes } from "@effect/sql-pg"
import { Result } from "effect"

const TSVECTOR_OID = 3614
const LABELS = ["D", "C", "B", "A"] as const
const utf8 = new TextDecoder("utf-8", { fatal: true })

const codecError = (message: string) => Result.fail(new PgTypes.CodecError({ message }))

/** The text form of a binary tsvector: int32 count, then per lexeme a NUL-ended string, int16 npos, npos int16 words. */
export const decodeTsvector = (bytes: Uint8Array): Result.Result<string, PgTypes.CodecError> => {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength)
  if (bytes.length < 4) return codecError("Truncated tsvector")
  const count = view.getInt32(0)
  let at = 4
  const parts: Array<string> = []
  for (let i = 0; i < count; i++) {
    const end = bytes.indexOf(0, at)
    if (end < 0 || end + 2 > bytes.length) return codecError("Truncated tsvector lexeme")
    let lexeme: string
    try {
      lexeme = utf8.decode(bytes.subarray(at, end))
    } catch {
      return codecError("Invalid UTF-8 in a tsvector lexeme")
    }
    at = end + 1
    const npos = view.getUint16(at)
    at += 2
    if (at + 2 * npos > bytes.length) return codecError("Truncated tsvector positions")
    const positions: Array<string> = []
    for (let k = 0; k < npos; k++) {
      const word = view.getUint16(at)
      at += 2
      const label = LABELS[word >> 14]!
      positions.push(`${word & 0x3fff}${label === "D" ? "" : label}`)
    }
    const quoted = `'${lexeme.replace(/\\/g, "\\\\").replace(/'/g, "''")}'`
    parts.push(npos === 0 ? quoted : `${quoted}:${positions.join(",")}`)
  }
  return Result.succeed(parts.join(" "))
}

PgTypes.register<string>(TSVECTOR_OID, {
  decode: decodeTsvector,
  // never bound as a parameter: the server builds vectors from text (to_tsvector)
  encode: () => codecError("tsvector parameters are not supported: bind text and call to_tsvector")
})
