// The worker thread that owns embedded PGlite (see PgliteClient.ts). PGlite's WASM PostgreSQL runs synchronously on
// whichever thread calls it; here that is this thread, so the HTTP thread keeps serving while a statement runs.
// Requests from the parent: query, exec, close, each answered by id.
import { parse, PGlite, protocol } from "@electric-sql/pglite"
import { pg_trgm } from "@electric-sql/pglite/contrib/pg_trgm"
import { parentPort, workerData } from "node:worker_threads"

export type Request =
  | { readonly id: number; readonly kind: "query"; readonly sql: string; readonly params: ReadonlyArray<unknown>; readonly arrays: boolean }
  | { readonly id: number; readonly kind: "exec"; readonly sql: string }
  | { readonly id: number; readonly kind: "close" }

export type Reply =
  | { readonly kind: "ready" }
  | { readonly kind: "failed"; readonly error: Record<string, unknown> }
  | { readonly kind: "done"; readonly id: number; readonly value: unknown }
  | { readonly kind: "error"; readonly id: number; readonly error: Record<string, unknown> }

/** The statement that opens a transaction, as effect/sql's client sends it (PgliteClient.ts sends it unawaited). */
const BEGIN = "BEGIN"

const INT8 = 20
const parsers = { [INT8]: (v: string) => Number(v) }

/**
 * An error as plain data (message and the SQLSTATE fields), to be rebuilt on the other side. Only primitive fields:
 * PGlite's errors also carry the query's options, whose parser functions cannot be cloned.
 */
const plain = (e: unknown): Record<string, unknown> =>
  e instanceof Error
    ? {
        ...Object.fromEntries(Object.entries(e).filter(([, v]) => v === null || ["string", "number", "boolean"].includes(typeof v))),
        message: e.message,
        name: e.name
      }
    : { message: String(e) }

// Messages travel in batches: each postMessage costs far more than cloning one more row, and under load many
// statements finish between two turns of the event loop.
const port = parentPort!
let outbox: Array<Reply> = []
const flush = () => {
  const batch = outbox
  outbox = []
  try {
    port.postMessage(batch)
  } catch {
    // something in the batch cannot be cloned: send the rest, and an error in place of what could not go
    for (const reply of batch) {
      try {
        port.postMessage([reply])
      } catch (error) {
        if ("id" in reply) port.postMessage([{ kind: "error", id: reply.id, error: plain(error) }])
      }
    }
  }
}
const post = (reply: Reply) => {
  if (outbox.push(reply) === 1) setImmediate(flush)
}

/** Statements kept prepared in the session (least recently used first); past it the oldest is closed. */
const PREPARED_MAX = 500

const concat = (parts: ReadonlyArray<Uint8Array>) => {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0))
  let at = 0
  for (const p of parts) {
    out.set(p, at)
    at += p.length
  }
  return out
}

/** SQLSTATEs after which a kept statement is prepared again: its cached plan changed its result, or it is gone. */
const STALE = new Set(["0A000", "26000"])

/**
 * Statements as named prepared statements of the session, each prepared (and described) once per SQL text: a query
 * is then one call into PGlite (Bind, Execute, Sync) instead of PGlite's `query`, which parses, describes and
 * plans every statement again over six calls. Measured in process (PGlite 0.5.16): a read by primary key 671 ->
 * 87 us of CPU, a jsonb INSERT 353 -> 102 us. Parameters are serialized and rows parsed as `query` does (its own
 * serializers by parameter type, `parse.parseResults` over the statement's kept row description).
 */
const preparedStatements = (db: PGlite) => {
  const { serialize } = protocol
  const kept = new Map<string, { readonly name: string; readonly types: ReadonlyArray<number>; readonly row: unknown }>()
  let counter = 0

  const prepare = async (sql: string) => {
    const name = `troupe_${++counter}`
    const described = await db.execProtocolStream(
      concat([serialize.parse({ name, text: sql }), serialize.describe({ type: "S", name }), serialize.sync()]),
      { syncToFs: false }
    )
    const params = described.find((m) => m.name === "parameterDescription") as { dataTypeIDs?: Array<number> } | undefined
    const entry = { name, types: params?.dataTypeIDs ?? [], row: described.find((m) => m.name === "rowDescription") }
    kept.set(sql, entry)
    if (kept.size > PREPARED_MAX) {
      const [oldest, old] = kept.entries().next().value!
      kept.delete(oldest)
      await db.execProtocolStream(concat([serialize.close({ type: "S", name: old.name }), serialize.sync()]), { syncToFs: false })
    }
    return entry
  }

  const run = async (sql: string, params: ReadonlyArray<unknown>, arrays: boolean, again: boolean): Promise<Array<unknown>> => {
    let entry = kept.get(sql)
    if (entry === undefined) entry = await prepare(sql)
    else {
      kept.delete(sql) // most recently used last
      kept.set(sql, entry)
    }
    const types = entry.types
    const values = params.map((v, i) => {
      if (v === null || v === undefined) return null
      const serializer = db.serializers[types[i]!]
      return serializer ? serializer(v) : String(v)
    })
    try {
      const messages = await db.execProtocolStream(
        concat([serialize.bind({ statement: entry.name, values }), serialize.execute({}), serialize.sync()]),
        { syncToFs: false }
      )
      const results = parse.parseResults(entry.row === undefined ? messages : [entry.row as any, ...messages], db.parsers, {
        parsers,
        ...(arrays ? { rowMode: "array" as const } : {})
      })
      return (results[0]?.rows ?? []) as Array<unknown>
    } catch (error) {
      if (!again && STALE.has(String((error as { code?: unknown }).code))) {
        kept.delete(sql)
        return run(sql, params, arrays, true)
      }
      throw Object.assign(error as object, { query: sql })
    }
  }

  // A transaction's BEGIN is not waited for by the client (PgliteClient.ts): its next statements come right behind
  // it. Should it fail, every statement up to the transaction's end fails with its error, so none of them runs
  // outside the transaction they were written for.
  // The transaction's end then rolls back whatever the session had open (its COMMIT fails with the same error).
  let failedBegin: unknown
  const guarded = async (sql: string, params: ReadonlyArray<unknown>, arrays: boolean) => {
    if (failedBegin !== undefined) {
      const error = failedBegin
      if (sql !== "COMMIT" && sql !== "ROLLBACK") throw error
      failedBegin = undefined
      await run("ROLLBACK", [], false, false)
      if (sql === "COMMIT") throw error
      return []
    }
    try {
      return await run(sql, params, arrays, false)
    } catch (error) {
      if (sql === BEGIN) failedBegin = error
      throw error
    }
  }

  // one statement at a time in the session, as PGlite's own query holds it (its protocol state is per call); the
  // mutex is first come, first served, so statements run in the order they arrive
  return (sql: string, params: ReadonlyArray<unknown>, arrays: boolean) => db.runExclusive(() => guarded(sql, params, arrays))
}

const start = async () => {
  const dataDir = workerData.dataDir as string
  // pg_trgm: the trigram index of search/ (migration 0011)
  const db = await PGlite.create(dataDir.startsWith("memory://") ? undefined : dataDir, { extensions: { pg_trgm } })
  // Statements are kept prepared (below), and a prepared statement may switch to a generic plan after five runs,
  // blind to its values (a page's sort index traded for a scan of the structure: query/QueryPool.ts): plans stay
  // custom, as they were for PGlite's unnamed statements. Preparing still saves the parse, analysis and describes.
  await db.exec("SET plan_cache_mode = force_custom_plan")
  const query = preparedStatements(db)

  const handle = async (m: Request): Promise<unknown> => {
    switch (m.kind) {
      case "query":
        return await query(m.sql, m.params, m.arrays)
      case "exec":
        return (await db.exec(m.sql)).map((r) => ({ rows: r.rows, affectedRows: r.affectedRows }))
      case "close":
        await db.close()
        return undefined
    }
  }

  port.on("message", (batch: ReadonlyArray<Request>) => {
    for (const m of batch) {
      handle(m).then(
        (value) => post({ kind: "done", id: m.id, value }),
        (error) => post({ kind: "error", id: m.id, error: plain(error) })
      )
    }
  })
  post({ kind: "ready" })
}

start().catch((error) => post({ kind: "failed", error: plain(error) }))
