// Workspaces: created and deleted by platform administrators. The slug is fixed at creation. Deleting a workspace
// removes everything in it: rows reached by foreign keys cascade, and every other table with a `workspace` column
// is cleared in the same transaction.
import type { Principal } from "@troupe/api/Authorization"
import { type BadRequest, badRequest, type Conflict, conflict, details, type NotFound, notFound } from "@troupe/api/Errors"
import type { WorkspaceInfo } from "@troupe/api/identity/Identity"
import { Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { AccessCache } from "./AccessCache.ts"
import { identityChange, iso, type Page, uniqueOr } from "./model.ts"

/** Slugs that would read as a route segment. */
export const reservedSlugs: ReadonlySet<string> = new Set(["api"])

interface Row {
  readonly slug: string
  readonly name: string
  readonly createdAt: Date
  readonly createdBy: string | null
}

const toInfo = (r: Row): WorkspaceInfo => ({
  slug: r.slug,
  name: r.name,
  createdAt: iso(r.createdAt),
  createdBy: r.createdBy
})

export interface WorkspaceServiceShape {
  readonly create: (
    input: { readonly slug: string; readonly name?: string },
    by: Principal
  ) => Effect.Effect<WorkspaceInfo, BadRequest | Conflict>
  readonly list: (page: Page) => Effect.Effect<{ data: Array<WorkspaceInfo>; total: number; page: number; limit: number }>
  readonly get: (slug: string) => Effect.Effect<WorkspaceInfo, NotFound>
  readonly delete: (slug: string) => Effect.Effect<void, NotFound>
}

export class WorkspaceService extends Context.Service<WorkspaceService, WorkspaceServiceShape>()(
  "@troupe/server/identity/WorkspaceService"
) {
  static readonly layer: Layer.Layer<WorkspaceService, never, SqlClient.SqlClient | AccessCache> = Layer.effect(
    WorkspaceService,
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const cache = yield* AccessCache
      const provide = <A, E>(e: Effect.Effect<A, E, SqlClient.SqlClient | AccessCache>) =>
        e.pipe(Effect.provideService(SqlClient.SqlClient, sql), Effect.provideService(AccessCache, cache))

      const select = (slug: string) =>
        sql<Row>`
          SELECT slug, name, created_at AS "createdAt", created_by AS "createdBy" FROM workspaces WHERE slug = ${slug}`

      const create = Effect.fn("WorkspaceService.create")(function* (
        input: { readonly slug: string; readonly name?: string },
        by: Principal
      ) {
        if (reservedSlugs.has(input.slug)) {
          return yield* Effect.fail(
            badRequest({
              message: `The slug "${input.slug}" is reserved`,
              code: "VALIDATION_ERROR",
              details: details([["slug", "this slug is reserved"]])
            })
          )
        }
        const createdBy = by.kind === "user" ? by.id : null
        return yield* provide(
          identityChange(
            Effect.gen(function* () {
              const rows = yield* sql<Row>`
            INSERT INTO workspaces (slug, name, created_by)
              VALUES (${input.slug}, ${input.name ?? input.slug}, ${createdBy})
            RETURNING slug, name, created_at AS "createdAt", created_by AS "createdBy"`.pipe(
                uniqueOr(() => conflict(`Workspace "${input.slug}" already exists`))
              )
              // The creator owns what they create, so they can sign in to it and add members.
              if (by.kind === "user") {
                yield* sql`INSERT INTO memberships (workspace, user_id, role) VALUES (${input.slug}, ${by.id}, 'owner')`
              }
              return toInfo(rows[0]!)
            })
          )
        )
      })

      const list = Effect.fn("WorkspaceService.list")(function* (page: Page) {
        const rows = yield* sql<Row>`
          SELECT slug, name, created_at AS "createdAt", created_by AS "createdBy" FROM workspaces
          ORDER BY slug LIMIT ${page.limit} OFFSET ${page.offset}`
        const total = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM workspaces`
        return { data: rows.map(toInfo), total: Number(total[0]?.n ?? 0), page: page.page, limit: page.limit }
      }, Effect.orDie)

      const get = Effect.fn("WorkspaceService.get")(function* (slug: string) {
        const rows = yield* Effect.orDie(select(slug))
        if (rows[0] === undefined) return yield* Effect.fail(notFound(`Workspace "${slug}" not found`))
        return toInfo(rows[0])
      })

      const remove = Effect.fn("WorkspaceService.delete")(function* (slug: string) {
        yield* provide(
          identityChange(
            Effect.gen(function* () {
              const deleted = yield* sql`DELETE FROM workspaces WHERE slug = ${slug} RETURNING slug`
              if (deleted.length === 0) return yield* Effect.fail(notFound(`Workspace "${slug}" not found`))
              const tables = yield* sql<{ table: string }>`
            SELECT DISTINCT c.table_name AS "table" FROM information_schema.columns c
            JOIN information_schema.tables t ON t.table_schema = c.table_schema AND t.table_name = c.table_name
            WHERE c.table_schema = current_schema() AND c.column_name = 'workspace' AND t.table_type = 'BASE TABLE'
            ORDER BY 1`
              // Foreign keys between these tables may want another order: a table that cannot be cleared yet (its
              // savepoint rolls back) is retried after the others.
              let remaining = tables.map((t) => t.table)
              for (let pass = 0; pass < 5 && remaining.length > 0; pass++) {
                const blocked: Array<string> = []
                for (const table of remaining) {
                  const done = yield* Effect.result(
                    sql.withTransaction(sql`
                DELETE FROM ${sql(table)} WHERE workspace = ${slug}`)
                  )
                  if (done._tag === "Failure") blocked.push(table)
                }
                remaining = blocked
              }
              if (remaining.length > 0) return yield* Effect.die(new Error(`could not clear ${remaining.join(", ")}`))
            })
          )
        )
      })

      return WorkspaceService.of({ create, list, get, delete: remove })
    })
  )
}
