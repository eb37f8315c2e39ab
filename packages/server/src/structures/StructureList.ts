// The structure list of a workspace (GET /structures): paged, searched, sorted and filtered in one statement, with
// its total.
import { badRequest, errorDetail } from "@troupe/api/Errors"
import { Effect } from "effect"
import type { SqlClient } from "effect/sql"
import { num } from "../lib/rows.ts"
import { toStructure } from "./StructureRows.ts"

export interface ListQuery {
  readonly page?: number | undefined
  readonly limit?: number | undefined
  readonly search?: string | undefined
  readonly searchField?: string | undefined
  readonly "sort[field]"?: string | undefined
  readonly "sort[direction]"?: string | undefined
  readonly "filter[status]"?: string | undefined
  readonly "filter[isDeleted]"?: string | undefined
}

/** The largest page and page size of the structure lists. */
export const MAX_LIST_PAGE = 1_000_000
export const MAX_LIST_LIMIT = 500

export const makeStructureList = (sql: SqlClient.SqlClient) => {
  const sortable: Record<string, string> = {
    name: "name",
    recordSlug: "record_slug",
    createdAt: "created_at",
    updatedAt: "updated_at",
    version: "version",
    status: "(definition->>'status')"
  }

  return Effect.fn("StructureService.list")(function* (workspace: string, q: ListQuery) {
    const bad = (field: string, message: string) =>
      badRequest({
        message: `${field} ${message}`,
        code: "VALIDATION_ERROR",
        details: [errorDetail(field, message)]
      })
    const page = q.page ?? 1
    if (!Number.isSafeInteger(page) || page < 1 || page > MAX_LIST_PAGE) {
      return yield* bad("page", `must be a whole number from 1 to ${MAX_LIST_PAGE}`)
    }
    const limit = q.limit ?? MAX_LIST_LIMIT
    if (!Number.isSafeInteger(limit) || limit < 1 || limit > MAX_LIST_LIMIT) {
      return yield* bad("limit", `must be a whole number from 1 to ${MAX_LIST_LIMIT}`)
    }
    const searchField = q.searchField ?? "name"
    const sortField = q["sort[field]"] ?? "createdAt"
    const sortColumn = sortable[sortField]
    if (sortColumn === undefined) {
      return yield* bad("sort[field]", `must be one of ${Object.keys(sortable).join(", ")}`)
    }
    const desc = (q["sort[direction]"] ?? "asc").toLowerCase() === "desc"
    const deleted = q["filter[isDeleted]"] === "true" || q["filter[isDeleted]"] === "1"
    const conditions = [sql`workspace = ${workspace}`, sql`is_deleted = ${deleted}`]
    if (q["filter[status]"] !== undefined) conditions.push(sql`definition->>'status' = ${q["filter[status]"]}`)
    if (q.search !== undefined && q.search.length > 0) {
      const column =
        searchField === "description"
          ? sql`coalesce(definition->>'description', '')`
          : searchField === "id"
            ? sql`id::text`
            : searchField === "recordSlug"
              ? sql`record_slug`
              : searchField === "name"
                ? sql`name`
                : undefined
      if (column === undefined) return yield* bad("searchField", "must be one of name, recordSlug, description, id")
      conditions.push(sql`${column} ILIKE ${`%${q.search.replace(/[\\%_]/g, (c) => `\\${c}`)}%`}`)
    }
    const where = sql.and(conditions)
    const order = sql.literal(`${sortColumn} ${desc ? "DESC" : "ASC"}, id ASC`)
    const [rows, count] = yield* Effect.all(
      [
        sql`SELECT * FROM structures WHERE ${where} ORDER BY ${order} LIMIT ${limit} OFFSET ${(page - 1) * limit}`,
        sql`SELECT count(*)::int AS n FROM structures WHERE ${where}`
      ],
      { concurrency: 1 }
    ).pipe(Effect.orDie)
    return { data: rows.map(toStructure), meta: { total: num(count[0]!.n), page, pageSize: limit } }
  })
}
