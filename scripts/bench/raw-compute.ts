// The raw baseline of the compute benchmarks (scripts/bench/compute.ts): the simplest server a user could write for
// "run my function and record that it ran". Plain node:http; per request it runs the function in bare isolated-vm
// (one isolate per core, a fresh context per call, the compiled script cached per isolate) and does one INSERT of a
// row with postgres.js (max_pipeline 1, one pool of 10). No queue, no lease, no params encryption, no events: it is
// the ceiling the Troupe node's runs/s are divided by. Needs `node --no-node-snapshot`.
import ivm from "isolated-vm"
import * as Http from "node:http"
import * as Os from "node:os"
import postgres from "postgres"

const sql = postgres(process.env.DATABASE_URL!, { max: 10, max_pipeline: 1, onnotice: () => {} } as any)
const port = Number(process.env.PORT)
/** The function every request runs (the same empty function the Troupe side runs). */
const CODE = process.env.RAW_COMPUTE_CODE ?? "async function run() {}"
const MEMORY_MB = 128
const TIMEOUT_MS = 30_000

interface Slot {
  readonly isolate: ivm.Isolate
  readonly script: ivm.Script
}
const makeSlot = (): Slot => {
  const isolate = new ivm.Isolate({ memoryLimit: MEMORY_MB })
  return { isolate, script: isolate.compileScriptSync(`${CODE}\n;run()`) }
}
const idle: Array<Slot> = Array.from({ length: Os.availableParallelism() }, makeSlot)
const waiting: Array<(slot: Slot) => void> = []
const acquire = (): Promise<Slot> | Slot => idle.pop() ?? new Promise((resolve) => waiting.push(resolve))
const release = (slot: Slot) => {
  const next = waiting.shift()
  if (next) next(slot)
  else idle.push(slot)
}

const runFunction = async (): Promise<{ status: string; result: unknown; error: string | null; durationMs: number }> => {
  const slot = await acquire()
  const started = performance.now()
  const context = slot.isolate.createContextSync()
  try {
    const result = await slot.script.run(context, { promise: true, copy: true, timeout: TIMEOUT_MS })
    return { status: "completed", result: result ?? null, error: null, durationMs: performance.now() - started }
  } catch (e) {
    return { status: "failed", result: null, error: String(e), durationMs: performance.now() - started }
  } finally {
    context.release()
    release(slot)
  }
}

const send = (res: Http.ServerResponse, status: number, body: unknown) => {
  const text = JSON.stringify(body)
  res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(text) })
  res.end(text)
}

await sql`CREATE TABLE IF NOT EXISTS raw_function_runs (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  status text NOT NULL,
  result jsonb,
  error text,
  duration_ms double precision,
  created_at timestamptz NOT NULL DEFAULT now()
)`

Http.createServer((req, res) => {
  const path = (req.url ?? "/").split("?")[0]!
  if (req.method === "GET" && path === "/health") return send(res, 200, { status: "ok" })
  if (req.method !== "POST" || path !== "/raw/run") return send(res, 404, { error: "not found" })
  req.resume() // the body (params) is not used: the empty function takes none
  req.on("end", () => {
    runFunction()
      .then(async (run) => {
        const [row] = await sql`INSERT INTO raw_function_runs (status, result, error, duration_ms)
          VALUES (${run.status}, ${sql.json(run.result as any)}, ${run.error}, ${run.durationMs}) RETURNING id`
        send(res, 200, { id: row!.id, status: run.status })
      })
      .catch((e) => send(res, 500, { error: String(e) }))
  })
}).listen(port, "127.0.0.1", () => process.stdout.write("ready\n"))
