// What the function and trigger lists share (search, sort, page), and publishing a draft as either resource: read
// the draft, check its data with the resource's create schema, create, remove the draft — in one transaction.
import type { DraftResourceType } from "@troupe/api/compute/Compute"
import { BadRequest, type NotFound, renameDetails } from "@troupe/api/Errors"
import { Effect, Schema } from "effect"
import type { SqlClient } from "effect/sql"
import type { SqlError } from "effect/sql/SqlError"
import { schemaDetails } from "../platform/HttpEdge.ts"
import type { DraftRepo } from "./DraftRepo.ts"
import { checkId, draftNotFound, invalidAll, parseSortParam, type SortKey } from "./model.ts"

export interface ListQuery {
  readonly page?: number | undefined
  readonly limit?: number | undefined
  readonly search?: string | undefined
  readonly searchField?: "name" | "description" | "id" | undefined
  readonly sort?: string | undefined
}

export interface ListSpec {
  readonly search?: string | undefined
  readonly searchField: "name" | "description" | "id"
  readonly sort: ReadonlyArray<SortKey>
  readonly limit: number
  readonly offset: number
}

/** `%` and `_` match themselves in a search. */
export const likePattern = (text: string) => `%${text.replace(/[\\%_]/g, (c) => `\\${c}`)}%`

/** A query's page (default 1), page size (default 500) and repo spec; `sortFields` maps wire names to columns. */
export const listSpecOf = (query: ListQuery, sortFields: ReadonlyMap<string, string>) =>
  Effect.map(parseSortParam(query.sort, new Set(sortFields.keys())), (sort) => {
    const page = query.page ?? 1
    const limit = query.limit ?? 500
    const spec: ListSpec = { search: query.search, searchField: query.searchField ?? "name", sort, limit, offset: (page - 1) * limit }
    return { page, limit, spec }
  })

/** One page of a workspace's rows of `table` (functions, triggers) and their count. */
export const listRows = (
  sql: SqlClient.SqlClient,
  table: string,
  columns: string,
  sortFields: ReadonlyMap<string, string>,
  workspace: string,
  spec: ListSpec
) =>
  Effect.gen(function* () {
    const conditions = [sql`workspace = ${workspace}`]
    if (spec.search !== undefined && spec.search !== "") {
      const column = spec.searchField === "id" ? sql`id::text` : sql(spec.searchField)
      conditions.push(sql`${column} ILIKE ${likePattern(spec.search)}`)
    }
    const where = sql.and(conditions)
    const order = [
      ...spec.sort.map((k) => sql.unsafe(`${sortFields.get(k.field) ?? "created_at"} ${k.direction === "desc" ? "DESC" : "ASC"}`)),
      sql.unsafe("created_at ASC, id ASC")
    ]
    const rows = yield* sql`SELECT ${sql.unsafe(columns)} FROM ${sql(table)} WHERE ${where}
      ORDER BY ${sql.csv(order)} LIMIT ${spec.limit} OFFSET ${spec.offset}`
    const total = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM ${sql(table)} WHERE ${where}`
    return { rows, total: Number(total[0]?.n ?? 0) }
  })

/** A create's 400 as a publish gives it: each detail names the field inside the draft (`data.<field>`). */
const underData = (e: BadRequest): BadRequest =>
  renameDetails(e, (field) => (field.startsWith("data.") || field === "data" ? field : `data.${field}`))

/**
 * Publishes a draft of `type`: its data decoded with the resource's create schema (400 naming `data.<field>`), then
 * `create` and the draft's removal in one transaction (a failed create keeps the draft).
 */
export const publishDraft =
  <I, A, E, R>(
    sql: SqlClient.SqlClient,
    drafts: DraftRepo["Service"],
    type: DraftResourceType,
    schema: Schema.Codec<I, any, never, never>,
    create: (input: I) => Effect.Effect<A, E | SqlError, R>
  ) =>
  (workspace: string, draftId: string): Effect.Effect<A, E | BadRequest | NotFound, R> =>
    Effect.gen(function* () {
      yield* checkId("draft", draftId)
      const decode = Schema.decodeUnknownEffect(schema)
      return yield* sql
        .withTransaction(
          Effect.gen(function* () {
            const draft = yield* Effect.orDie(drafts.get(workspace, draftId))
            if (draft === undefined || draft.resourceType !== type) return yield* draftNotFound(draftId)
            const input = yield* decode(draft.data, { errors: "all" }).pipe(Effect.mapError((e) => invalidAll(schemaDetails(e, "data"))))
            const created = yield* create(input).pipe(Effect.mapError((e) => (e instanceof BadRequest ? underData(e) : e)))
            yield* Effect.orDie(drafts.delete(workspace, draftId))
            return created
          })
        )
        .pipe(Effect.catchTag("SqlError", Effect.die)) as Effect.Effect<A, E | BadRequest | NotFound, R>
    })
