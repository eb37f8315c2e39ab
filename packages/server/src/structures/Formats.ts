// Value formats shared by the definition rules and the record validator. Every regular expression here is
// anchored with no nested quantifiers, and inputs are length-capped first, so none can backtrack badly.
import { isUuid } from "../lib/Uuid.ts"

/** Length in Unicode code points (what users mean by "characters"), counted only when UTF-16 length is ambiguous. */
export const codePointLength = (s: string): number => {
  let n = s.length
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i)
    if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length) {
      const d = s.charCodeAt(i + 1)
      if (d >= 0xdc00 && d <= 0xdfff) {
        n--
        i++
      }
    }
  }
  return n
}

const emailRe =
  /^[a-z0-9!#$%&'*+/=?^_`{|}~-]+(?:\.[a-z0-9!#$%&'*+/=?^_`{|}~-]+)*@(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/i
export const isEmail = (s: string): boolean => s.length <= 254 && emailRe.test(s)

const urlRe = /^[a-z][a-z0-9+.-]*:\/\/[^\s/?#]+[^\s]*$/i
export const isUrl = (s: string): boolean => s.length <= 8192 && urlRe.test(s) && URL.canParse(s)

export { isUuid }

const daysIn = (y: number, m: number): number =>
  m === 2 ? (y % 4 === 0 && (y % 100 !== 0 || y % 400 === 0) ? 29 : 28) : m === 4 || m === 6 || m === 9 || m === 11 ? 30 : 31

const dateRe = /^(\d{4})-(\d{2})-(\d{2})$/
export const isDate = (s: string): boolean => {
  const m = s.length === 10 ? dateRe.exec(s) : null
  if (m === null) return false
  const mo = +m[2]!
  const d = +m[3]!
  return mo >= 1 && mo <= 12 && d >= 1 && d <= daysIn(+m[1]!, mo)
}

/** Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's days_from_civil): no Date object needed. */
const daysFromCivil = (year: number, month: number, day: number): number => {
  const y = month <= 2 ? year - 1 : year
  const era = Math.floor(y / 400)
  const yoe = y - era * 400
  const doy = Math.floor((153 * (month + (month > 2 ? -3 : 9)) + 2) / 5) + day - 1
  return era * 146097 + yoe * 365 + Math.floor(yoe / 4) - Math.floor(yoe / 100) + doy - 719468
}

/** Value of the `n` ASCII digits at `i`, or -1 when any is not a digit. */
const digits = (s: string, i: number, n: number): number => {
  let v = 0
  for (let k = i; k < i + n; k++) {
    const c = s.charCodeAt(k) - 48 // NaN past the end, which fails the test below
    if (!(c >= 0 && c <= 9)) return -1
    v = v * 10 + c
  }
  return v
}

const basicRe = /^(\d{4})(\d{2})(\d{2})(?:([Tt])(\d{2})(\d{2})(?:(\d{2})([.,]\d{1,9})?)?([Zz]|[+-]\d{2}(?:\d{2})?)?)?$/

/**
 * The extended form of an ISO 8601 basic date or date-time (`20250101` -> `2025-01-01`, `20250101T120000Z` ->
 * `2025-01-01T12:00:00Z`, `20250101T1200+0100` -> `2025-01-01T12:00+01:00`); any other text is returned as it is.
 * Both forms are accepted wherever a date-time is (PostgreSQL reads both as well).
 */
export const extendedDateTime = (s: string): string => {
  const m = s.length >= 8 && s.length <= 32 && s.charCodeAt(4) !== 45 ? basicRe.exec(s) : null
  if (m === null) return s
  const date = `${m[1]}-${m[2]}-${m[3]}`
  if (m[4] === undefined) return date
  const offset = m[9] === undefined || m[9].length !== 5 ? (m[9] ?? "") : `${m[9].slice(0, 3)}:${m[9].slice(3)}`
  return `${date}${m[4]}${m[5]}:${m[6]}${m[7] === undefined ? "" : `:${m[7]}${m[8] ?? ""}`}${offset}`
}

/**
 * Parses an ISO 8601 date or date-time (`2024-05-01`, `2024-05-01T10:00`, `2024-05-01T10:00:00.123+02:00`, or the
 * basic form `20240501T100000Z`, see `extendedDateTime`) to epoch
 * milliseconds; undefined when it is not one. A time without offset is read as UTC, so results never depend on the
 * server's time zone. Hand-written (no regular expression, no Date): it sits on the hot path of record validation.
 */
export const parseDateTime = (text: string): number | undefined => {
  const s = text.length > 0 && text.charCodeAt(4) !== 45 ? extendedDateTime(text) : text
  const len = s.length
  if (len < 10 || len > 40 || s.charCodeAt(4) !== 45 || s.charCodeAt(7) !== 45) return undefined
  const y = digits(s, 0, 4)
  const mo = digits(s, 5, 2)
  const d = digits(s, 8, 2)
  if (y < 0 || mo < 1 || mo > 12 || d < 1 || d > daysIn(y, mo)) return undefined
  const days = daysFromCivil(y, mo, d)
  if (len === 10) return days * 86_400_000
  const t = s.charCodeAt(10)
  if ((t !== 84 && t !== 116 && t !== 32) || len < 16 || s.charCodeAt(13) !== 58) return undefined // T t space, :
  const h = digits(s, 11, 2)
  const mi = digits(s, 14, 2)
  if (h < 0 || h > 23 || mi < 0 || mi > 59) return undefined
  let i = 16
  let sec = 0
  let ms = 0
  if (s.charCodeAt(i) === 58) {
    sec = digits(s, i + 1, 2)
    if (sec < 0 || sec > 59) return undefined
    i += 3
    const dot = s.charCodeAt(i)
    if (dot === 46 || dot === 44) {
      i++
      const start = i
      let scale = 100
      for (; i < len && i - start < 9; i++) {
        const c = s.charCodeAt(i) - 48
        if (c < 0 || c > 9) break
        ms += c * scale
        scale /= 10
      }
      if (i === start) return undefined
      ms = Math.floor(ms + 1e-7)
      const after = s.charCodeAt(i) - 48
      if (after >= 0 && after <= 9) return undefined // more than 9 fraction digits
    }
  }
  let offset = 0
  if (i < len) {
    const z = s.charCodeAt(i)
    if (z === 90 || z === 122) {
      if (i + 1 !== len) return undefined
    } else if (z === 43 || z === 45) {
      const oh = digits(s, i + 1, 2)
      let om = 0
      let end = i + 3
      if (end < len) {
        if (s.charCodeAt(end) === 58) end++
        om = digits(s, end, 2)
        end += 2
      }
      if (oh < 0 || oh > 23 || om < 0 || om > 59 || end !== len) return undefined
      offset = (z === 45 ? -1 : 1) * (oh * 60 + om) * 60_000
    } else {
      return undefined
    }
  }
  return days * 86_400_000 + h * 3_600_000 + mi * 60_000 + sec * 1000 + ms - offset
}

export const isDateTime = (s: string): boolean => parseDateTime(s) !== undefined

export type StringFormat = "email" | "url" | "uuid" | "date" | "datetime" | "file"

export const formatCheckers: Record<StringFormat, (s: string) => boolean> = {
  email: isEmail,
  url: isUrl,
  uuid: isUuid,
  date: isDate,
  datetime: isDateTime,
  // as the upload answered it (lowercase), so that a file's delete finds every record naming it; existence in the
  // workspace's storage is the records layer's check (RecordPrepare.checkReferences)
  file: (s) => isUuid(s) && s === s.toLowerCase()
}

export const formatMessages: Record<StringFormat, string> = {
  email: "must be a valid email address",
  url: "must be a valid URL",
  uuid: "must be a valid UUID",
  date: "must be a date (YYYY-MM-DD)",
  datetime: "must be an ISO 8601 date-time",
  file: "must be a file id (a lowercase UUID)"
}

/** Keys that could reach an object's prototype when copied naively; refused anywhere in record data. */
export const forbiddenKeys: ReadonlySet<string> = new Set(["__proto__", "constructor", "prototype"])

/** Structural equality of JSON values (key order ignored). */
export const jsonEqual = (a: unknown, b: unknown): boolean => {
  if (a === b) return true
  if (typeof a !== "object" || typeof b !== "object" || a === null || b === null) return false
  if (Array.isArray(a)) {
    if (!Array.isArray(b) || a.length !== b.length) return false
    for (let i = 0; i < a.length; i++) if (!jsonEqual(a[i], b[i])) return false
    return true
  }
  if (Array.isArray(b)) return false
  const ka = Object.keys(a)
  if (ka.length !== Object.keys(b).length) return false
  for (const k of ka) {
    if (!Object.hasOwn(b, k) || !jsonEqual((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k])) return false
  }
  return true
}

/** A canonical string for a JSON value (sorted keys), for duplicate detection. */
export const canonicalJson = (v: unknown): string => {
  if (typeof v !== "object" || v === null) return JSON.stringify(v) ?? "null"
  if (Array.isArray(v)) return `[${v.map(canonicalJson).join(",")}]`
  const keys = Object.keys(v).sort()
  return `{${keys.map((k) => `${JSON.stringify(k)}:${canonicalJson((v as Record<string, unknown>)[k])}`).join(",")}}`
}
