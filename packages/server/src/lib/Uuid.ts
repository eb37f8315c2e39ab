// UUID version 7 (RFC 9562) for the ids of rows written at a high rate (records, changelog entries): 48 bits of
// Unix milliseconds, then 74 random bits. Ids made one after another sort one after another, so the B-trees they key
// (records, versions, changelog, unique claims) grow at their right edge: a random (v4) key lands on a random leaf
// page, and on a table larger than the buffer cache each insert reads and dirties a page of its own.
import * as Crypto from "node:crypto"

const hex = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, "0"))
// random bytes drawn a pool at a time: one system call per 409 ids, not one per id
const pool = Buffer.alloc(4096)
let offset = pool.length

export const uuidv7 = (): string => {
  if (offset + 10 > pool.length) {
    Crypto.randomFillSync(pool)
    offset = 0
  }
  const r = offset
  offset += 10
  const ms = Date.now()
  const high = Math.floor(ms / 0x10000)
  const b = (i: number) => hex[pool[r + i]!]!
  return (
    (high >>> 0).toString(16).padStart(8, "0") +
    "-" +
    (ms & 0xffff).toString(16).padStart(4, "0") +
    "-7" +
    hex[pool[r]! & 0x0f]![1]! +
    b(1) +
    "-" +
    hex[(pool[r + 2]! & 0x3f) | 0x80]! +
    b(3) +
    "-" +
    b(4) +
    b(5) +
    b(6) +
    b(7) +
    b(8) +
    b(9)
  )
}

/** The one UUID pattern (any version, either case): 8-4-4-4-12 hexadecimal digits. */
export const UUID_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

/** Whether `s` is a UUID in its text form. */
export const isUuid = (s: string): boolean => s.length === 36 && UUID_PATTERN.test(s)
