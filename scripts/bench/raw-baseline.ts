// The raw baseline of `npm run bench`: plain node:http + postgres.js (max_pipeline 1, one pool of 10), running the
// same SQL Troupe runs for each benchmarked endpoint. It is the ceiling Troupe's figures are divided by, so it
// must be the strongest plain setup: no framework, no validation, no auth.
import * as Crypto from "node:crypto"
import * as Http from "node:http"
import postgres from "postgres"

const sql = postgres(process.env.DATABASE_URL!, { max: 10, max_pipeline: 1, onnotice: () => {} } as any)
const port = Number(process.env.PORT)

const readBody = (req: Http.IncomingMessage): Promise<any> =>
  new Promise((resolve, reject) => {
    const chunks: Array<Buffer> = []
    req.on("data", (c) => chunks.push(c))
    req.on("end", () => {
      try {
        resolve(chunks.length ? JSON.parse(Buffer.concat(chunks).toString()) : undefined)
      } catch (e) {
        reject(e)
      }
    })
  })

const send = (res: Http.ServerResponse, status: number, body: unknown) => {
  const text = JSON.stringify(body)
  res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(text) })
  res.end(text)
}

type Handler = (req: Http.IncomingMessage, res: Http.ServerResponse, match: RegExpMatchArray) => Promise<void>
const routes: Array<[string, RegExp, Handler]> = [
  ["GET", /^\/health$/, async (_req, res) => send(res, 200, { status: "ok" })],
  // Record create: the record row, its first version, a changelog entry and the outbox event, in one transaction.
  ["POST", /^\/raw\/records\/([^/]+)$/, async (req, res, m) => {
    const body = await readBody(req)
    const id = Crypto.randomUUID()
    const data = JSON.stringify(body.data)
    const row = await sql.begin(async (tx) => {
      const [r] = await tx`INSERT INTO records (id, workspace, structure_id, data, created_by, updated_by)
        VALUES (${id}, 'default', ${m[1]!}, ${data}::jsonb, 'bench', 'bench') RETURNING *`
      await tx`INSERT INTO record_versions (record_id, version, data, created_by) VALUES (${id}, 1, ${data}::jsonb, 'bench')`
      await tx`INSERT INTO record_changelog (id, record_id, workspace, action, user_id, changes)
        VALUES (${Crypto.randomUUID()}, ${id}, 'default', 'create', 'bench', '{}'::jsonb)`
      await tx`INSERT INTO events (workspace, type, structure_id, record_id, payload)
        VALUES ('default', 'record.created', ${m[1]!}, ${id}, ${data}::jsonb)`
      return r
    })
    send(res, 201, row)
  }],
  ["GET", /^\/raw\/records\/([0-9a-f-]{36})$/, async (_req, res, m) => {
    const [row] = await sql`SELECT * FROM records WHERE id = ${m[1]!} AND deleted_at IS NULL`
    row ? send(res, 200, row) : send(res, 404, { error: "not found" })
  }],
  // Query scenarios (scripts/bench/query.ts): seeding, then the exact statement of a filtered, sorted page of 20.
  ["POST", /^\/raw\/seed\/([0-9a-f-]{36})$/, async (req, res, m) => {
    const params = new URL(req.url ?? "/", "http://x").searchParams
    const count = Number(params.get("count") ?? 0)
    // wait for Troupe's indexes on the structure's `indexed` properties, so the data goes in beside them
    const prefix = `rq_${m[1]!.replace(/-/g, "")}_`
    for (let i = 0; i < 300 && params.get("indexes"); i++) {
      const [row] = await sql`SELECT count(*)::int AS n FROM pg_indexes WHERE starts_with(indexname, ${prefix})`
      if (row!.n >= Number(params.get("indexes"))) break
      await new Promise((r) => setTimeout(r, 100))
    }
    await sql`INSERT INTO records (id, workspace, structure_id, data, created_by, updated_by)
      SELECT gen_random_uuid(), 'default', ${m[1]!}::uuid,
        jsonb_build_object('name', 'item ' || g, 'price', ((g::bigint * 7919) % 100000) / 100.0, 'category', 'c' || (g % 10),
          'rank', g % 1000),
        'bench', 'bench'
      FROM generate_series(1, ${count}::int) g`
    await sql`ANALYZE records`
    send(res, 200, { seeded: count })
  }],
  ["GET", /^\/raw\/page\/([0-9a-f-]{36})$/, async (_req, res, m) => {
    const rows = await sql`SELECT r.* FROM records r
      WHERE r.structure_id = ${m[1]!} AND (r.expires_at IS NULL OR r.expires_at > now()) AND r.deleted_at IS NULL
        AND (r.data @> ${'{"category":"c3"}'}::text::jsonb)
        AND ((CASE WHEN jsonb_typeof((r.data -> 'price')) = 'number' THEN ((r.data -> 'price'))::numeric END)
          BETWEEN ${"200"}::text::numeric AND ${"800"}::text::numeric)
      ORDER BY (CASE WHEN jsonb_typeof((r.data -> 'price')) = 'number' THEN ((r.data -> 'price'))::numeric END)
        DESC NULLS FIRST, r.id ASC
      LIMIT 20`
    send(res, 200, { results: rows })
  }]
]

Http.createServer((req, res) => {
  const path = (req.url ?? "/").split("?")[0]!
  for (const [method, pattern, handler] of routes) {
    const m = path.match(pattern)
    if (m && req.method === method) {
      handler(req, res, m).catch((e) => send(res, 500, { error: String(e) }))
      return
    }
  }
  send(res, 404, { error: "not found" })
}).listen(port, "127.0.0.1", () => process.stdout.write("ready\n"))
