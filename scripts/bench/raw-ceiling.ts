// The write ceiling of `npm run bench`: plain node:http + postgres.js doing ONE durable statement per request
// (synchronous_commit as the server has it, `on` by default: every request waits for its WAL flush) into a table
// of its own. No record versions, no changelog, no outbox, no unique claims beyond the one unique index: the most a
// user's simplest server could write on this box, which Troupe's write figures are divided by beside `raw`.
//
// Its own process and script rather than `/ceiling/...` routes in raw-baseline.ts: it needs nothing of Troupe's
// schema, so the embedded profile (Troupe on PGlite) runs it alone on a bare PostgreSQL database; its pool is tuned
// on its own; and it stays a file a reader can take in at a glance. Only the HTTP layer is shared (raw-http.ts).
//
//   POST  /ceiling/records/:structureId  {data}            one INSERT ... RETURNING *
//   PATCH /ceiling/records/:id           {data}            one UPDATE ... SET data = data || $1 RETURNING *
//   POST  /ceiling/upsert/:structureId   {match:{key},data} one INSERT ... ON CONFLICT (structure_id, key) DO UPDATE
//   POST  /ceiling/bulk/:structureId     {records:[{data}]} one INSERT ... SELECT FROM jsonb_array_elements($1)
//                                                          (?returning=id answers the ids: the bench seeds with it)
import postgres from "postgres"
import { healthRoute, HttpError, readBody, type Route, send, serve } from "./raw-http.ts"

// Pool: measured on the 2-core box (PostgreSQL on the same machine, fsync on, 64 autocannon connections on
// `create record`, 5 s rounds with the box otherwise idle), in req/s: 4 connections 9,200, 8 10,000-12,600,
// 10 11,500-12,300, 16 12,300-13,100, 24-32 11,800-12,900; patch alike. From 8 to 32 it is within the noise of the
// box's fsync; 16 measured best most often (the raw baseline's 10 is 5-10 % under it at worst). max_pipeline 1 as
// raw-baseline.ts: postgres.js's default (100) measured no better, a connection's pipelined statements waiting for
// their commits in turn. CEILING_POOL overrides the pool, to measure again on another box.
const sql = postgres(process.env.DATABASE_URL!, {
  max: Number(process.env.CEILING_POOL ?? 16),
  max_pipeline: 1,
  onnotice: () => {}
} as any)
const port = Number(process.env.PORT)
/** A jsonb parameter (postgres.js encodes it once, as jsonb). */
const json = (value: unknown) => sql.json(value as any)

const [{ synchronous_commit }] = (await sql`SHOW synchronous_commit`) as any
if (synchronous_commit === "off") throw new Error("raw-ceiling: synchronous_commit is off; the ceiling must be durable")
await sql`CREATE TABLE IF NOT EXISTS raw_ceiling (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  structure_id uuid NOT NULL,
  key text,
  data jsonb NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  UNIQUE (structure_id, key)
)`

/** The business key of a record (`data.key`, as the bench's structure has it), or null. */
const keyOf = (data: any) => (typeof data?.key === "string" ? data.key : null)

const routes: Array<Route> = [
  healthRoute,
  [
    "POST",
    /^\/ceiling\/records\/([0-9a-f-]{36})$/,
    async (req, res, m) => {
      const { data } = await readBody(req)
      const [row] = await sql`INSERT INTO raw_ceiling (structure_id, key, data)
      VALUES (${m[1]!}, ${keyOf(data)}, ${json(data)}) RETURNING *`
      send(res, 201, row)
    }
  ],
  [
    "PATCH",
    /^\/ceiling\/records\/([0-9a-f-]{36})$/,
    async (req, res, m) => {
      const { data } = await readBody(req)
      const [row] = await sql`UPDATE raw_ceiling SET data = data || ${json(data)} WHERE id = ${m[1]!} RETURNING *`
      if (!row) throw new HttpError(404, "not found")
      send(res, 200, row)
    }
  ],
  [
    "POST",
    /^\/ceiling\/upsert\/([0-9a-f-]{36})$/,
    async (req, res, m) => {
      const { match, data } = await readBody(req)
      const key = keyOf(match)
      if (key === null) throw new HttpError(400, "match.key is required")
      const [row] = await sql`INSERT INTO raw_ceiling (structure_id, key, data)
      VALUES (${m[1]!}, ${key}, ${json({ ...data, ...match })})
      ON CONFLICT (structure_id, key) DO UPDATE SET data = raw_ceiling.data || EXCLUDED.data
      RETURNING id, data, (xmax = 0) AS inserted`
      send(res, row!.inserted ? 201 : 200, { data: { id: row!.id, data: row!.data }, operation: row!.inserted ? "created" : "updated" })
    }
  ],
  [
    "POST",
    /^\/ceiling\/bulk\/([0-9a-f-]{36})$/,
    async (req, res, m) => {
      const { records } = await readBody(req)
      const returning = new URL(req.url ?? "/", "http://x").searchParams.get("returning") === "id"
      const items = json((records as Array<{ data: unknown }>).map((r) => r.data))
      if (returning) {
        const rows = await sql`INSERT INTO raw_ceiling (structure_id, key, data)
        SELECT ${m[1]!}, e ->> 'key', e FROM jsonb_array_elements(${items}) e RETURNING id`
        send(res, 201, { created: rows.length, ids: rows.map((r) => r.id) })
      } else {
        const result = await sql`INSERT INTO raw_ceiling (structure_id, key, data)
        SELECT ${m[1]!}, e ->> 'key', e FROM jsonb_array_elements(${items}) e`
        send(res, 201, { created: result.count })
      }
    }
  ]
]

serve(port, routes)
