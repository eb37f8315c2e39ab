// Small conversions for rows read from either database driver.

/** timestamptz from PGlite (Date) or sql-pg (Date or string) -> ISO 8601. */
export const iso = (v: unknown): string =>
  v instanceof Date ? v.toISOString() : typeof v === "string" ? new Date(v).toISOString() : String(v)

/** Same, keeping null. */
export const isoOrNull = (v: unknown): string | null => (v === null || v === undefined ? null : iso(v))

/** jsonb that may arrive parsed or as text. */
export const json = <A = unknown>(v: unknown): A => (typeof v === "string" ? JSON.parse(v) : v) as A

/** int8/bigint -> number. */
export const num = (v: unknown): number => (typeof v === "bigint" ? Number(v) : Number(v))

/** `true`/`1` query flags. */
export const flag = (v: string | undefined): boolean => v === "true" || v === "1"
