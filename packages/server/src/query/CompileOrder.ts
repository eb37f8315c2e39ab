// ORDER BY and keyset pagination: the sort as executed, and the opaque cursor that resumes it.
import type { Result } from "effect"
import * as Ast from "./Ast.ts"
import {
  andAll,
  type CompileContext,
  type Fragment,
  fail,
  lit,
  orAll,
  paren,
  type ResolvedField,
  resolve,
  resolveColumn,
  run,
  type ScalarType,
  type Sql,
  scalarType,
  typedExpr
} from "./CompileFields.ts"
import { isDateTime } from "./CompileValues.ts"
import type { QueryFieldError } from "./QueryErrors.ts"
import { isUuid } from "../lib/Uuid.ts"
import { getAt } from "../lib/JsonPath.ts"

interface SortTerm {
  readonly label: string
  readonly direction: Ast.SortDirection
  readonly field: ResolvedField
  readonly type: ScalarType
}

/**
 * The sort as executed: constant columns dropped, `id` appended as the tiebreaker unless already a key. The
 * tiebreaker runs in the direction of the last key, so a sort on one indexed property is exactly the order of its
 * index `(expression, id)` read forwards or backwards: the page is read straight off the index, with no sort step.
 */
const sortTerms = (keys: ReadonlyArray<Ast.SortKey>, ctx: CompileContext): Array<SortTerm> => {
  if (keys.length > MAX_SORT_KEYS) return fail("", `A sort may have at most ${MAX_SORT_KEYS} keys, got ${keys.length}`)
  const terms: Array<SortTerm> = []
  let hasId = false
  for (const key of keys) {
    const f = resolve(key.field, ctx)
    if (f.kind === "const") continue
    if (f.type === "array" || f.type === "object") return fail(f.label, `Cannot sort by ${f.type} field '${f.label}'`)
    if (f.column === "id") hasId = true
    terms.push({ label: f.label, direction: key.direction, field: f, type: scalarType(f) })
    if (hasId) break
  }
  if (!hasId) {
    const direction = terms.length > 0 ? terms[terms.length - 1]!.direction : "asc"
    terms.push({ label: "id", direction, field: resolveColumn("id", ctx), type: "uuid" })
  }
  return terms
}

/** Keys one sort may have. */
export const MAX_SORT_KEYS = 32

// Nulls sort as the greatest value in both directions, so the keyset predicate can treat them uniformly.
export const ASC = lit("ASC NULLS LAST")
export const DESC = lit("DESC NULLS FIRST")

/**
 * Compiles sort keys to an ORDER BY list (without the keyword), typed by property type, nulls last ascending,
 * always ending in `r.id` (in the direction of the last key) so pages are stable.
 */
export const compileOrderBy = (sql: Sql, keys: ReadonlyArray<Ast.SortKey>, ctx: CompileContext): Result.Result<Fragment, QueryFieldError> =>
  run(() => sql.csv(sortTerms(keys, ctx).map((t) => sql`${typedExpr(sql, t.field)} ${t.direction === "asc" ? ASC : DESC}`)))

const cursorText = (sql: Sql, t: SortTerm): Fragment => {
  const e = typedExpr(sql, t.field)
  switch (t.type) {
    case "text":
      return e
    case "timestamptz":
      return sql`(to_jsonb(${e}) #>> '{}')`
    default:
      return sql`(${e})::text`
  }
}

/** Name of the column `compileCursorSelect` adds; `encodeCursor` reads it from the last row. */
export const CURSOR_COLUMN = "qcursor"

/**
 * The sort-key values of a row, exactly as the database compares them, as one jsonb array. Select it beside the
 * row (`SELECT r.*, ${fragment} AS qcursor`) and pass the last row to `encodeCursor`; strip `qcursor` from output.
 */
export const compileCursorSelect = (
  sql: Sql,
  keys: ReadonlyArray<Ast.SortKey>,
  ctx: CompileContext
): Result.Result<Fragment, QueryFieldError> =>
  run(() => sql`jsonb_build_array(${sql.csv(sortTerms(keys, ctx).map((t) => cursorText(sql, t)))})`)

interface CursorPayload {
  readonly k: string
  readonly v: ReadonlyArray<string | null>
}

const signature = (terms: ReadonlyArray<SortTerm>): string => terms.map((t) => `${t.direction === "desc" ? "-" : ""}${t.label}`).join(",")

const snake = (s: string) => s.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`)

/** What the SQL expression of a term evaluates to for this row, as text (the fallback when no `qcursor`). */
const rowValue = (row: Readonly<Record<string, unknown>>, t: SortTerm): string | null => {
  const f = t.field
  let v: unknown
  if (f.kind === "column") {
    v = row[f.column!] ?? row[snake(f.column!)]
  } else {
    const data = typeof row.data === "string" ? JSON.parse(row.data) : row.data
    v = getAt(data, f.path)
    if (!f.asText) {
      if (t.type === "numeric" && typeof v !== "number") return null
      if (t.type === "boolean" && typeof v !== "boolean") return null
      if (t.type === "timestamptz" && (typeof v !== "string" || !isDateTime(v))) return null
    }
  }
  if (v === undefined || v === null) return null
  if (v instanceof Date) return v.toISOString()
  if (typeof v === "object") return JSON.stringify(v)
  return String(v)
}

/**
 * Encodes the position after `lastRow` for the given sort as an opaque base64url cursor. Exact when the row
 * carries the `qcursor` column of `compileCursorSelect`. Without it the values are read from the row (`id`,
 * `data`, columns in camel or snake case), which is exact for data fields but not for `createdAt`/`updatedAt`
 * when the row holds a JS Date: it has milliseconds, the column microseconds.
 */
export const encodeCursor = (
  lastRow: Readonly<Record<string, unknown>>,
  keys: ReadonlyArray<Ast.SortKey>,
  ctx: CompileContext
): Result.Result<string, QueryFieldError> =>
  run(() => {
    const terms = sortTerms(keys, ctx)
    const selected = lastRow[CURSOR_COLUMN]
    const values =
      Array.isArray(selected) && selected.length === terms.length
        ? selected.map((v) => (v === null || v === undefined ? null : String(v)))
        : terms.map((t) => rowValue(lastRow, t))
    const payload: CursorPayload = { k: signature(terms), v: values }
    return Buffer.from(JSON.stringify(payload), "utf8").toString("base64url")
  })

const MAX_CURSOR_LENGTH = 8192

const badCursor = (message = "Invalid cursor"): never => fail("cursor", message)

const decodeCursor = (cursor: string): CursorPayload => {
  if (cursor.length === 0 || cursor.length > MAX_CURSOR_LENGTH || !/^[A-Za-z0-9_-]+$/.test(cursor)) return badCursor()
  let parsed: unknown
  try {
    parsed = JSON.parse(Buffer.from(cursor, "base64url").toString("utf8"))
  } catch {
    return badCursor()
  }
  if (typeof parsed !== "object" || parsed === null) return badCursor()
  const { k, v } = parsed as { k?: unknown; v?: unknown }
  if (typeof k !== "string" || !Array.isArray(v) || v.some((x) => x !== null && typeof x !== "string")) {
    return badCursor()
  }
  return { k, v }
}

const cursorBind = (sql: Sql, value: string, type: ScalarType): Fragment => {
  switch (type) {
    case "numeric":
      return Ast.numberPattern.test(value) ? sql`${value}::text::numeric` : badCursor()
    case "boolean":
      return value === "true" || value === "false" ? sql`${value}::text::boolean` : badCursor()
    case "timestamptz":
      return isDateTime(value) ? sql`${value}::text::timestamptz` : badCursor()
    case "uuid":
      return isUuid(value) ? sql`${value}::text::uuid` : badCursor()
    case "text":
      return sql`${value}::text`
  }
}

/**
 * The keyset predicate "rows after the cursor" for the same sort (ORDER BY of `compileOrderBy`). A cursor that is
 * malformed, tampered with, or made for another sort fails with QueryFieldError on field `cursor`.
 */
export const compileCursor = (
  sql: Sql,
  cursor: string,
  keys: ReadonlyArray<Ast.SortKey>,
  ctx: CompileContext
): Result.Result<Fragment, QueryFieldError> =>
  run(() => {
    const terms = sortTerms(keys, ctx)
    const payload = decodeCursor(cursor)
    if (payload.k !== signature(terms)) return badCursor("The cursor was made for a different sort order")
    if (payload.v.length !== terms.length) return badCursor()
    const equal: Array<Fragment> = []
    const branches: Array<Fragment> = []
    terms.forEach((t, i) => {
      const e = typedExpr(sql, t.field)
      const v = payload.v[i]!
      let after: Fragment | undefined
      let same: Fragment
      if (v === null) {
        after = t.direction === "asc" ? undefined : sql`(${e} IS NOT NULL)`
        same = sql`(${typedExpr(sql, t.field)} IS NULL)`
      } else {
        const b = cursorBind(sql, v, t.type)
        after =
          t.direction === "desc"
            ? sql`(${e} < ${b})`
            : t.field.column === "id"
              ? sql`(${e} > ${b})`
              : sql`(${e} > ${b} OR ${typedExpr(sql, t.field)} IS NULL)`
        same = sql`(${typedExpr(sql, t.field)} = ${cursorBind(sql, v, t.type)})`
      }
      if (after !== undefined) branches.push(andAll(sql, [...equal, after]))
      equal.push(same)
    })
    // A redundant bound on the first key, so an index on it can start the scan at the cursor instead of filtering
    // from the first row: after a non-null value nothing smaller follows in descending order (nulls came first), and
    // nothing smaller follows in ascending order on a NOT NULL column.
    const first = terms[0]!
    const v0 = payload.v[0]!
    const bound =
      v0 === null
        ? undefined
        : first.direction === "desc"
          ? sql`(${typedExpr(sql, first.field)} <= ${cursorBind(sql, v0, first.type)})`
          : first.field.kind === "column" && notNullColumns.has(first.field.column!)
            ? sql`(${typedExpr(sql, first.field)} >= ${cursorBind(sql, v0, first.type)})`
            : undefined
    const after = orAll(sql, branches)
    return paren(sql, bound === undefined ? after : sql`${after} AND ${bound}`)
  })

const notNullColumns: ReadonlySet<Ast.ColumnName> = new Set(["id", "createdAt", "updatedAt", "version", "status"])
