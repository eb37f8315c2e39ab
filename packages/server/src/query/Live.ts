// When a record is live, in SQL and in memory: not soft-deleted and not expired. An expired record is gone for every
// reader at once, before the TTL sweeper deletes its row, so every read, reference check, lookup and lock of a live
// record uses this one predicate.
import type { Statement } from "effect/sql"

type Sql = Statement.Constructor

/** `alias.column`, or the bare column without an alias. */
const column = (sql: Sql, alias: string | undefined, name: string) => sql.literal(alias === undefined ? name : `${alias}.${name}`)

/** Not expired (soft-deleted rows included): `expires_at IS NULL OR expires_at > now()`. */
export const notExpired = (sql: Sql, alias?: string): Statement.Fragment =>
  sql`(${column(sql, alias, "expires_at")} IS NULL OR ${column(sql, alias, "expires_at")} > now())`

/** A live record: not soft-deleted and not expired. `alias` names the records table in the statement (`r`). */
export const liveRecord = (sql: Sql, alias?: string): Statement.Fragment =>
  sql`${column(sql, alias, "deleted_at")} IS NULL AND ${notExpired(sql, alias)}`

/** The list scope: live records, or with `includeDeleted` every record that has not expired. */
export const visibleRecord = (sql: Sql, includeDeleted: boolean, alias?: string): Statement.Fragment =>
  includeDeleted ? notExpired(sql, alias) : liveRecord(sql, alias)

/** The same predicate on a decoded row, at `now` (epoch milliseconds). */
export const isLive = (row: { readonly deletedAt: string | null; readonly expiresAt: string | null }, now: number) =>
  row.deletedAt === null && !isExpired(row, now)

/** Expired at `now` (epoch milliseconds). */
export const isExpired = (row: { readonly expiresAt: string | null }, now: number) =>
  row.expiresAt !== null && Date.parse(row.expiresAt) <= now
