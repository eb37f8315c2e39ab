// PostgreSQL SQLSTATE -> Effect's SqlError reasons, for the PGlite client (sql-pg does the same for its own).
import {
  ConnectionError,
  ConstraintError,
  DeadlockError,
  SerializationError,
  SqlSyntaxError,
  StatementTimeoutError,
  UniqueViolation,
  UnknownError,
  type SqlError,
  type SqlErrorReason
} from "effect/sql/SqlError"

export const classifyPgError = (cause: unknown, operation: string): SqlErrorReason => {
  const e = cause as { code?: string; constraint?: string; message?: string }
  const props = { cause, message: e?.message ?? String(cause), operation }
  const code = typeof e?.code === "string" ? e.code : undefined
  if (code === undefined) return new UnknownError(props)
  if (code === "23505") return new UniqueViolation({ ...props, constraint: e.constraint ?? "unknown" })
  if (code.startsWith("23")) return new ConstraintError(props)
  if (code.startsWith("08")) return new ConnectionError(props)
  if (code.startsWith("42")) return new SqlSyntaxError(props)
  if (code === "40P01") return new DeadlockError(props)
  if (code === "40001") return new SerializationError(props)
  if (code === "57014") return new StatementTimeoutError(props)
  return new UnknownError(props)
}

/** A foreign key violation (23503): the row the write names was deleted meanwhile. Both drivers keep the code. */
export const isForeignKeyViolation = (e: SqlError): boolean =>
  e.reason._tag === "ConstraintError" && (e.reason.cause as { code?: unknown } | undefined)?.code === "23503"

/**
 * A record write named a structure deleted for good meanwhile: the create statement's null `structure_id`
 * (23502 on that column, RecordBatchSql.createRecords), or a foreign key of another table.
 */
export const isStructureGone = (e: SqlError): boolean => {
  if (e.reason._tag !== "ConstraintError") return false
  const cause = e.reason.cause as { code?: unknown; column?: unknown; message?: unknown } | undefined
  if (cause?.code === "23503") return true
  return (
    cause?.code === "23502" &&
    (cause.column === "structure_id" || (typeof cause.message === "string" && cause.message.includes('"structure_id"')))
  )
}

/**
 * PostgreSQL failed the transaction to resolve a collision with a concurrent one (a deadlock, 40P01, or a
 * serialisation failure, 40001): nothing of it was written, and running it again may succeed.
 */
export const isCollision = (e: SqlError): boolean => e.reason._tag === "DeadlockError" || e.reason._tag === "SerializationError"
