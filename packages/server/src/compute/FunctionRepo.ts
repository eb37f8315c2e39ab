// SQL of functions and their versions. Every insert and update also writes the version row, in one transaction.
import { Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import type { SqlError } from "effect/sql/SqlError"
import { listRows, type ListSpec } from "./Listing.ts"
import { type FunctionRow, functionRow, toFunctionVersion } from "./model.ts"

/** A list leaves the code out. */
const LIST_COLUMNS = "id, workspace, name, description, '' AS code, code_hash, version, created_by, updated_by, created_at, updated_at"

/** Columns a list may be sorted by, as the wire names them. */
export const functionSortFields: ReadonlyMap<string, string> = new Map([
  ["name", "name"],
  ["createdAt", "created_at"],
  ["updatedAt", "updated_at"],
  ["version", "version"],
  ["id", "id"]
])

export interface NewFunction {
  readonly id: string
  readonly workspace: string
  readonly name: string
  readonly description: string | null
  readonly code: string
  readonly codeHash: string
  readonly by: string | null
}

export interface FunctionPatch {
  readonly name?: string
  readonly description?: string | null
  readonly code?: string
  readonly codeHash?: string
}

export class FunctionRepo extends Context.Service<
  FunctionRepo,
  {
    readonly insert: (f: NewFunction) => Effect.Effect<FunctionRow, SqlError>
    readonly get: (workspace: string, id: string) => Effect.Effect<FunctionRow | undefined, SqlError>
    readonly list: (workspace: string, spec: ListSpec) => Effect.Effect<{ rows: ReadonlyArray<FunctionRow>; total: number }, SqlError>
    /** Applies the patch, bumps the version and stores it; undefined when the function is gone. */
    readonly update: (
      workspace: string,
      id: string,
      patch: FunctionPatch,
      by: string | null
    ) => Effect.Effect<FunctionRow | undefined, SqlError>
    readonly delete: (workspace: string, id: string) => Effect.Effect<boolean, SqlError>
    readonly versions: (id: string) => Effect.Effect<ReadonlyArray<ReturnType<typeof toFunctionVersion>>, SqlError>
  }
>()("@troupe/server/compute/FunctionRepo") {
  static readonly layer = Layer.effect(
    FunctionRepo,
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient

      const storeVersion = (f: FunctionRow, by: string | null) =>
        sql`INSERT INTO function_versions (function_id, version, workspace, name, description, code, code_hash, created_by)
        VALUES (${f.id}, ${f.version}, ${f.workspace}, ${f.name}, ${f.description}, ${f.code}, ${f.codeHash}, ${by})`

      const insert = (f: NewFunction) =>
        sql.withTransaction(
          Effect.gen(function* () {
            const rows = yield* sql`INSERT INTO functions (id, workspace, name, description, code, code_hash, created_by, updated_by)
          VALUES (${f.id}, ${f.workspace}, ${f.name}, ${f.description}, ${f.code}, ${f.codeHash}, ${f.by}, ${f.by})
          RETURNING *`
            const row = functionRow(rows[0])
            yield* storeVersion(row, f.by)
            return row
          })
        )

      const get = (workspace: string, id: string) =>
        Effect.map(sql`SELECT * FROM functions WHERE workspace = ${workspace} AND id = ${id}`, (rows) =>
          rows[0] === undefined ? undefined : functionRow(rows[0])
        )

      const list = (workspace: string, spec: ListSpec) =>
        Effect.map(listRows(sql, "functions", LIST_COLUMNS, functionSortFields, workspace, spec), ({ rows, total }) => ({
          rows: rows.map(functionRow),
          total
        }))

      const update = (workspace: string, id: string, patch: FunctionPatch, by: string | null) =>
        sql.withTransaction(
          Effect.gen(function* () {
            const rows = yield* sql`UPDATE functions SET
            name = COALESCE(${patch.name ?? null}, name),
            description = CASE WHEN ${patch.description !== undefined} THEN ${patch.description ?? null} ELSE description END,
            code = COALESCE(${patch.code ?? null}, code),
            code_hash = COALESCE(${patch.codeHash ?? null}, code_hash),
            version = version + 1,
            updated_by = ${by},
            updated_at = now()
          WHERE workspace = ${workspace} AND id = ${id}
          RETURNING *`
            if (rows[0] === undefined) return undefined
            const row = functionRow(rows[0])
            yield* storeVersion(row, by)
            return row
          })
        )

      const del = (workspace: string, id: string) =>
        Effect.map(sql`DELETE FROM functions WHERE workspace = ${workspace} AND id = ${id} RETURNING id`, (rows) => rows.length > 0)

      const versions = (id: string) =>
        Effect.map(sql`SELECT * FROM function_versions WHERE function_id = ${id} ORDER BY version DESC`, (rows) =>
          rows.map(toFunctionVersion)
        )

      return FunctionRepo.of({ insert, get, list, update, delete: del, versions })
    })
  )
}
