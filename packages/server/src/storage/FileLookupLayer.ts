// The storage side of query/FileLookup.ts: file rows by id, in the caller's transaction when there is one.
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { FileLookup } from "../query/FileLookup.ts"
import { filesById } from "./StorageRepo.ts"

export const FileLookupLayer = Layer.effect(
  FileLookup,
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    return FileLookup.of({ byIds: (workspace, ids, lock) => Effect.orDie(filesById(sql, workspace, ids, lock)) })
  })
)
