// A minimal Effect SqlClient over embedded PGlite. PGlite is one single-threaded backend session, so the client
// is exactly one connection behind a semaphore: a statement holds it for its own duration, a transaction for the
// whole transaction. Never put a pool in front of PGlite (it interleaves transactions and loses writes).
import { PGlite } from "@electric-sql/pglite"
import { PgClient } from "@effect/sql-pg"
import { Context, Effect, Layer, Scope, Semaphore, Stream } from "effect"
import { Reactivity } from "effect/reactivity"
import { SqlClient, SqlConnection } from "effect/sql"
import { SqlError } from "effect/sql/SqlError"
import { classifyPgError } from "./sqlErrors.ts"
import * as Fs from "node:fs"

export class Pglite extends Context.Service<Pglite, PGlite>()("@troupe/server/platform/Pglite") {}

const INT8 = 20
const options = { parsers: { [INT8]: (v: string) => Number(v) } }

const attempt = <A>(operation: string, run: () => Promise<A>) =>
  Effect.tryPromise({
    try: run,
    catch: (cause) => new SqlError({ reason: classifyPgError(cause, operation) })
  })

const makeConnection = (db: PGlite): SqlConnection.Connection => {
  const rows = (sql: string, params: ReadonlyArray<unknown>) =>
    attempt("execute", () => db.query<any>(sql, params as Array<unknown>, options)).pipe(Effect.map((r) => r.rows))
  const values = (sql: string, params: ReadonlyArray<unknown>) =>
    attempt("executeValues", () => db.query<Array<unknown>>(sql, params as Array<unknown>, { ...options, rowMode: "array" }))
      .pipe(Effect.map((r) => r.rows))
  const execute = (sql: string, params: ReadonlyArray<unknown>, transform?: (<A extends object>(rows: ReadonlyArray<A>) => ReadonlyArray<A>)) =>
    transform ? Effect.map(rows(sql, params), transform) : rows(sql, params)
  return {
    execute,
    executeRaw: (sql, params) =>
      params.length === 0 ? attempt("executeRaw", () => db.exec(sql)) : rows(sql, params),
    executeStream: (sql, params, transform) => Stream.fromIterableEffect(execute(sql, params, transform)),
    executeValues: values,
    executeValuesUnprepared: values,
    executeUnprepared: execute
  }
}

export const make = (dataDir: string) =>
  Effect.gen(function*() {
    if (!dataDir.startsWith("memory://")) Fs.mkdirSync(dataDir, { recursive: true })
    const db = yield* Effect.acquireRelease(
      attempt("open", () => PGlite.create(dataDir.startsWith("memory://") ? undefined : dataDir)),
      (db) => Effect.promise(() => db.close()).pipe(Effect.ignore)
    )
    const lock = yield* Semaphore.make(1)
    const connection = makeConnection(db)
    const acquirer = Effect.as(
      Effect.acquireRelease(lock.take(1), () => lock.release(1)),
      connection
    ) as Effect.Effect<SqlConnection.Connection, SqlError, Scope.Scope>
    const client = yield* SqlClient.make({
      acquirer,
      transactionAcquirer: acquirer,
      compiler: PgClient.makeCompiler(),
      driver: "pglite",
      spanAttributes: [["db.system.name", "postgresql"]]
    })
    return { db, client }
  })

export const layer = (dataDir: string): Layer.Layer<SqlClient.SqlClient | Pglite, SqlError> =>
  Layer.effectContext(
    Effect.map(make(dataDir), ({ client, db }) =>
      Context.make(SqlClient.SqlClient, client).pipe(Context.add(Pglite, db)))
  ).pipe(Layer.provide(Reactivity.layer))
