// A minimal Effect SqlClient over embedded PGlite. PGlite is one single-threaded backend session: a transaction
// must have it to itself (see `make`). Never put a pool in front of PGlite (it interleaves transactions and loses
// writes).
// PGlite itself runs in a worker thread (PgliteWorker.ts): its WASM PostgreSQL computes synchronously, and on the
// HTTP thread every statement would stall every request. Statements cross as messages (structured clone).
import { PgClient } from "@effect/sql-pg"
import { Context, Effect, Layer, type Scope, Semaphore, Stream } from "effect"
import { Reactivity } from "effect/reactivity"
import { SqlClient, type SqlConnection } from "effect/sql"
import { SqlError } from "effect/sql/SqlError"
import * as Fs from "node:fs"
import { Worker } from "node:worker_threads"
import type { Reply, Request } from "./PgliteWorker.ts"
import { classifyPgError } from "./sqlErrors.ts"

/**
 * The embedded database, as the rest of the server sees it. No LISTEN: every listener of an embedded node is in
 * its process, and wake-ups reach them directly (events/Wake.ts).
 */
export interface EmbeddedDb {
  readonly query: (sql: string, params: ReadonlyArray<unknown>, arrays: boolean) => Promise<Array<any>>
  readonly exec: (sql: string) => Promise<unknown>
  readonly close: () => Promise<void>
}

export class Pglite extends Context.Service<Pglite, EmbeddedDb>()("@troupe/server/platform/Pglite") {}

type Distribute<R> = R extends { readonly id: number } ? Omit<R, "id"> : never

/** An error sent back by the worker, rebuilt with its SQLSTATE fields. */
const rebuilt = (fields: Record<string, unknown>) => Object.assign(new Error(String(fields.message)), fields)

/** Starts the worker that owns PGlite under `dataDir` and answers once the database is open. */
const openWorker = (dataDir: string): Promise<EmbeddedDb> =>
  new Promise((resolve, reject) => {
    const worker = new Worker(new URL("./PgliteWorker.ts", import.meta.url), { workerData: { dataDir } })
    const pending = new Map<number, { resolve: (value: any) => void; reject: (error: Error) => void }>()
    let next = 0
    let ready = false
    // requests made in one turn of the event loop go in one message (PgliteWorker.ts batches its replies too)
    let outbox: Array<Request> = []
    const flush = () => {
      const batch = outbox
      outbox = []
      worker.postMessage(batch)
    }
    const call = (request: Distribute<Request>, id = ++next): Promise<any> =>
      new Promise((res, rej) => {
        pending.set(id, { resolve: res, reject: rej })
        if (outbox.push({ ...request, id } as Request) === 1) queueMicrotask(flush)
      })
    const receive = (reply: Reply) => {
      switch (reply.kind) {
        case "ready":
          ready = true
          return resolve({
            query: (sql, params, arrays) => call({ kind: "query", sql, params, arrays }),
            exec: (sql) => call({ kind: "exec", sql }),
            close: async () => {
              await call({ kind: "close" })
              await worker.terminate()
            }
          })
        case "failed":
          return reject(rebuilt(reply.error))
        case "done":
        case "error": {
          const waiting = pending.get(reply.id)
          pending.delete(reply.id)
          if (reply.kind === "done") waiting?.resolve(reply.value)
          else waiting?.reject(rebuilt(reply.error))
        }
      }
    }
    worker.on("message", (replies: ReadonlyArray<Reply>) => {
      for (const reply of replies) receive(reply)
    })
    // the database is gone with its thread: whatever waits fails, and a node that was running stops
    worker.on("error", (error) => {
      for (const waiting of pending.values()) waiting.reject(error)
      pending.clear()
      if (!ready) reject(error)
      else {
        console.error("embedded PGlite worker failed; stopping", error)
        process.exit(1)
      }
    })
  })

const attempt = <A>(operation: string, run: () => Promise<A>) =>
  Effect.tryPromise({
    try: run,
    catch: (cause) => new SqlError({ reason: classifyPgError(cause, operation) })
  })

/**
 * A transaction's BEGIN is sent without waiting for its answer: the transaction's first statement follows it in the
 * same message to the worker, instead of a round trip through both threads later, during which PGlite, held by
 * the transaction, would sit idle. The worker runs statements in order and fails those behind a failed BEGIN
 * (PgliteWorker.ts), so they fail here too.
 */
const BEGIN = "BEGIN"
const sendBegin = (db: EmbeddedDb) =>
  Effect.sync(() => {
    db.query(BEGIN, [], false).catch(() => {
      /* the statements behind it fail with its error */
    })
    return [] as Array<any>
  })

const makeConnection = (db: EmbeddedDb): SqlConnection.Connection => {
  const rows = (sql: string, params: ReadonlyArray<unknown>) =>
    sql === BEGIN && params.length === 0 ? sendBegin(db) : attempt("execute", () => db.query(sql, params, false))
  const values = (sql: string, params: ReadonlyArray<unknown>) => attempt("executeValues", () => db.query(sql, params, true))
  const execute = (
    sql: string,
    params: ReadonlyArray<unknown>,
    transform?: <A extends object>(rows: ReadonlyArray<A>) => ReadonlyArray<A>
  ) => (transform ? Effect.map(rows(sql, params), transform) : rows(sql, params))
  return {
    execute,
    executeRaw: (sql, params) => (params.length === 0 ? attempt("executeRaw", () => db.exec(sql)) : rows(sql, params)),
    executeStream: (sql, params, transform) => Stream.fromIterableEffect(execute(sql, params, transform)),
    executeValues: values,
    executeValuesUnprepared: values,
    executeUnprepared: execute
  }
}

/** Single statements in flight at once (a transaction takes them all). */
const SHARED_MAX = 256

export const make = (dataDir: string) =>
  Effect.gen(function* () {
    if (!dataDir.startsWith("memory://")) Fs.mkdirSync(dataDir, { recursive: true })
    const db = yield* Effect.acquireRelease(
      attempt("open", () => openWorker(dataDir)),
      (db) => Effect.promise(() => db.close()).pipe(Effect.ignore)
    )
    // The session is shared by statements and held alone by a transaction. Single statements (each its own
    // implicit transaction) are sent to the worker without waiting for one another, so PGlite runs them back to
    // back; a transaction waits until they are done and keeps everyone else out until it ends. Everyone passes a
    // one-at-a-time turnstile first, so a waiting transaction is not overtaken by later statements.
    const turnstile = yield* Semaphore.make(1)
    const session = yield* Semaphore.make(SHARED_MAX)
    const hold = (permits: number) =>
      Effect.as(
        Effect.acquireRelease(turnstile.withPermits(1)(session.take(permits)), () => session.release(permits)),
        makeConnection(db)
      ) as Effect.Effect<SqlConnection.Connection, SqlError, Scope.Scope>
    const client = yield* SqlClient.make({
      acquirer: hold(1),
      transactionAcquirer: hold(SHARED_MAX),
      compiler: PgClient.makeCompiler(),
      driver: "pglite",
      spanAttributes: [["db.system.name", "postgresql"]]
    })
    return { db, client }
  })

export const layer = (dataDir: string): Layer.Layer<SqlClient.SqlClient | Pglite, SqlError> =>
  Layer.effectContext(
    Effect.map(make(dataDir), ({ client, db }) => Context.make(SqlClient.SqlClient, client).pipe(Context.add(Pglite, db)))
  ).pipe(Layer.provide(Reactivity.layer))
