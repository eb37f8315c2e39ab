// Raw-baseline routes of the query scenarios (scripts/bench/query.ts): seeding with one INSERT ... SELECT
// generate_series, and the exact statement Troupe runs for a filtered, sorted page of 20, on plain postgres.js.
import type postgres from "postgres"
import type { Route, Send } from "./raw-http.ts"

export const queryRoutes = (sql: postgres.Sql<{}>, send: Send): Array<Route> => [
  [
    "POST",
    /^\/raw\/seed\/([0-9a-f-]{36})$/,
    async (req, res, m) => {
      const params = new URL(req.url ?? "/", "http://x").searchParams
      const count = Number(params.get("count") ?? 0)
      // wait for Troupe's indexes on the structure's `indexed` properties, so the data goes in beside them
      const prefix = `rq_${m[1]!.replace(/-/g, "")}_`
      for (let i = 0; i < 300 && params.get("indexes"); i++) {
        // valid, not merely listed: ANALYZE beside a CREATE INDEX CONCURRENTLY still running can deadlock
        const [row] = await sql`SELECT count(*)::int AS n FROM pg_index x JOIN pg_class c ON c.oid = x.indexrelid
        WHERE starts_with(c.relname, ${prefix}) AND x.indisvalid AND x.indisready`
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
    }
  ],
  [
    "GET",
    /^\/raw\/page\/([0-9a-f-]{36})$/,
    async (_req, res, m) => {
      const rows = await sql`SELECT r.* FROM records r
      WHERE r.structure_id = ${m[1]!} AND (r.expires_at IS NULL OR r.expires_at > now()) AND r.deleted_at IS NULL
        AND (r.data @> ${'{"category":"c3"}'}::text::jsonb)
        AND ((CASE WHEN jsonb_typeof((r.data -> 'price')) = 'number' THEN ((r.data -> 'price'))::numeric END)
          BETWEEN ${"200"}::text::numeric AND ${"800"}::text::numeric)
      ORDER BY (CASE WHEN jsonb_typeof((r.data -> 'price')) = 'number' THEN ((r.data -> 'price'))::numeric END)
        DESC NULLS FIRST, r.id DESC
      LIMIT 20`
      send(res, 200, { results: rows })
    }
  ]
]
