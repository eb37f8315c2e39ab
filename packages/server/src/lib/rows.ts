// Small conversions for rows read from either database driver.

const two = Array.from({ length: 100 }, (_, i) => String(i).padStart(2, "0"))
const three = Array.from({ length: 1000 }, (_, i) => String(i).padStart(3, "0"))
const DAY = 86_400_000
/** 10000-01-01T00:00:00Z: from there on (and before 1970) `toISOString` writes it. */
const YEAR_10000 = 253_402_300_800_000

/**
 * `date.toISOString()`, five times faster (every timestamp of every record read goes through it: a page of 20
 * records has 40 to 80). The civil date of a day number is H. Hinnant's `civil_from_days`.
 */
export const isoString = (date: Date): string => {
  const ms = date.getTime()
  if (!(ms >= 0 && ms < YEAR_10000)) return date.toISOString()
  const days = Math.floor(ms / DAY)
  let rest = ms - days * DAY
  const z = days + 719_468
  const era = Math.floor(z / 146_097)
  const dayOfEra = z - era * 146_097
  const yearOfEra = Math.floor(
    (dayOfEra - Math.floor(dayOfEra / 1460) + Math.floor(dayOfEra / 36_524) - Math.floor(dayOfEra / 146_096)) / 365
  )
  const dayOfYear = dayOfEra - (365 * yearOfEra + Math.floor(yearOfEra / 4) - Math.floor(yearOfEra / 100))
  const m = Math.floor((5 * dayOfYear + 2) / 153)
  const day = dayOfYear - Math.floor((153 * m + 2) / 5) + 1
  const month = m < 10 ? m + 3 : m - 9
  const year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)
  const hours = Math.floor(rest / 3_600_000)
  rest -= hours * 3_600_000
  const minutes = Math.floor(rest / 60_000)
  rest -= minutes * 60_000
  const seconds = Math.floor(rest / 1000)
  return `${String(year).padStart(4, "0")}-${two[month]}-${two[day]}T${two[hours]}:${two[minutes]}:${two[seconds]}.${three[rest - seconds * 1000]}Z`
}

/** timestamptz from PGlite (Date) or sql-pg (Date or string) -> ISO 8601. */
export const iso = (v: unknown): string =>
  v instanceof Date ? isoString(v) : typeof v === "string" ? new Date(v).toISOString() : String(v)

/** Same, keeping null. */
export const isoOrNull = (v: unknown): string | null => (v === null || v === undefined ? null : iso(v))

/** jsonb that may arrive parsed or as text. */
export const json = <A = unknown>(v: unknown): A => (typeof v === "string" ? JSON.parse(v) : v) as A

/** int8/bigint -> number. */
export const num = (v: unknown): number => (typeof v === "bigint" ? Number(v) : Number(v))

/** `true`/`1` query flags. */
export const flag = (v: string | undefined): boolean => v === "true" || v === "1"
