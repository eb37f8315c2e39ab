// The worker thread that owns embedded PGlite (see PgliteClient.ts). PGlite's WASM PostgreSQL runs synchronously on
// whichever thread calls it; here that is this thread, so the HTTP thread keeps serving while a statement runs.
// Requests from the parent: query, exec, listen, unlisten, close, each answered by id; NOTIFYs are pushed as they come.
import { PGlite } from "@electric-sql/pglite"
import { parentPort, workerData } from "node:worker_threads"

export type Request =
  | { readonly id: number; readonly kind: "query"; readonly sql: string; readonly params: ReadonlyArray<unknown>; readonly arrays: boolean }
  | { readonly id: number; readonly kind: "exec"; readonly sql: string }
  | { readonly id: number; readonly kind: "listen"; readonly channel: string }
  | { readonly id: number; readonly kind: "unlisten"; readonly listener: number }
  | { readonly id: number; readonly kind: "close" }

export type Reply =
  | { readonly kind: "ready" }
  | { readonly kind: "failed"; readonly error: Record<string, unknown> }
  | { readonly kind: "done"; readonly id: number; readonly value: unknown }
  | { readonly kind: "error"; readonly id: number; readonly error: Record<string, unknown> }
  | { readonly kind: "notify"; readonly listener: number; readonly payload: string }

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

const start = async () => {
  const dataDir = workerData.dataDir as string
  const db = await PGlite.create(dataDir.startsWith("memory://") ? undefined : dataDir)
  const stops = new Map<number, () => Promise<void>>()

  const handle = async (m: Request): Promise<unknown> => {
    switch (m.kind) {
      case "query":
        return (await db.query(m.sql, m.params as Array<unknown>, m.arrays ? { parsers, rowMode: "array" } : { parsers })).rows
      case "exec":
        return (await db.exec(m.sql)).map((r) => ({ rows: r.rows, affectedRows: r.affectedRows }))
      case "listen": {
        const stop = await db.listen(m.channel, (payload) => post({ kind: "notify", listener: m.id, payload }))
        stops.set(m.id, stop)
        return m.id
      }
      case "unlisten": {
        const stop = stops.get(m.listener)
        stops.delete(m.listener)
        if (stop !== undefined) await stop()
        return undefined
      }
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
