// The search section of `npm run bench` (BENCH_ONLY=search runs it alone), on PostgreSQL, the targets of issue 29
// measured in one run against baselines of the same run:
//   1. create throughput (POST /records, BENCH_CONNECTIONS connections) with the search index, and without it (the
//      structure's search configuration, which the create statement computes the vector from, the insert trigger and
//      the GIN index removed from the same database for the measurement, then put back; the lexicon is
//      filled by the outbox relay off the write path, search/Lexicon.ts, and runs in both),
//      with, without, without, with: the mean of each side and its worst p99;
//   2. GET /search for 2-word queries (the last a prefix now and then) at 16 connections over N records of realistic
//      text (titles and paragraphs drawn from a seeded word list with a Zipf distribution): p99 and req/s;
//   3. the raw baseline: the same tsvector statement (match, class, ts_rank_cd, count, ts_headline of the page)
//      through a plain postgres.js client, 16 in flight;
//   4. the lists' search (GET /records?search=, the same words), which reads the same index (the structure names its
//      search fields), beside GET /search.
// Knobs: BENCH_SEARCH_RECORDS (N, 100000; the figure is 1,000,000), BENCH_SEARCH_DURATION (s per measurement,
// 5), BENCH_CONNECTIONS (64), BENCH_WARMUP (s, 2), DATABASE_URL, BENCH_SEARCH_DATABASE (a database name kept between
// runs, so a 1,000,000-record run seeds once: `BENCH_SEARCH_DATABASE=search1m BENCH_SEARCH_RECORDS=1000000`).
// Every figure is printed with the core count.
import autocannon from "autocannon"
import * as Os from "node:os"
import postgres from "postgres"
import { passwordToken } from "../../test/support/IdentityHelpers.ts"
import { freshDatabase, startNode } from "../../test/support/TestServer.ts"
import { tsqueryText } from "../../packages/server/src/search/SearchText.ts"

const records = Number(process.env.BENCH_SEARCH_RECORDS ?? 100_000)
const duration = Number(process.env.BENCH_SEARCH_DURATION ?? 5)
const connections = Number(process.env.BENCH_CONNECTIONS ?? 64)
const warmup = Number(process.env.BENCH_WARMUP ?? 2)
const baseUrl = process.env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/test"
const cores = Os.availableParallelism()
const SEARCHERS = 16

// a seeded generator (mulberry32) and a Zipf-distributed vocabulary of made-up words
let state = 0x2929
const random = () => {
  state = (state + 0x6d2b79f5) | 0
  let t = Math.imul(state ^ (state >>> 15), 1 | state)
  t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296
}
const syllables = "ka,lo,mi,ne,ru,ta,shi,po,ve,da,zu,ri,mo,fa,le,gi,no,ba,te,xo".split(",")
const vocabulary = Array.from({ length: 20_000 }, (_, i) => {
  let w = ""
  for (let n = i + 7; w.length < 4 || n > 0; n = Math.floor(n / 20)) w += syllables[n % 20]!
  return w
})
const cumulative: Array<number> = []
vocabulary.reduce((sum, _, r) => {
  cumulative.push(sum + 1 / (r + 1))
  return sum + 1 / (r + 1)
}, 0)
const zipfWord = () => {
  const x = random() * cumulative[cumulative.length - 1]!
  let lo = 0
  let hi = cumulative.length - 1
  while (lo < hi) {
    const mid = (lo + hi) >> 1
    if (cumulative[mid]! < x) lo = mid + 1
    else hi = mid
  }
  return vocabulary[lo]!
}
const sentence = (min: number, max: number) => Array.from({ length: min + Math.floor(random() * (max - min + 1)) }, zipfWord).join(" ")

/** 2-word queries of mid-frequency words; one in four ends in a prefix. */
const queries = Array.from({ length: 200 }, (_, i) => {
  const a = vocabulary[50 + Math.floor(random() * 1500)]!
  const b = vocabulary[50 + Math.floor(random() * 1500)]!
  return i % 4 === 3 ? [a, b.slice(0, Math.max(3, b.length - 2))] : [a, b]
})

const percentile = (xs: ReadonlyArray<number>, p: number) => {
  const s = [...xs].sort((a, b) => a - b)
  return s.length === 0 ? Number.NaN : s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]!
}

const cannon = async (opts: {
  url: string
  method: string
  headers: Record<string, string>
  connections: number
  body?: () => string
  path?: () => string
}) => {
  const run = (seconds: number) =>
    autocannon({
      url: opts.url,
      method: opts.method as "GET",
      connections: opts.connections,
      duration: seconds,
      timeout: 120,
      headers: opts.headers,
      requests: [
        {
          setupRequest: (req: any) => ({
            ...req,
            ...(opts.body === undefined ? {} : { body: opts.body() }),
            ...(opts.path === undefined ? {} : { path: opts.path() })
          })
        }
      ]
    })
  if (warmup > 0) await run(warmup)
  const r = await run(duration)
  return { rps: r.requests.average, p99: r.latency.p99, non2xx: r.non2xx, errors: r.errors + r.timeouts }
}

/** BENCH_SEARCH_DATABASE names a database kept between runs (created when missing): a run seeds only what it lacks. */
const benchDatabase = async () => {
  const name = process.env.BENCH_SEARCH_DATABASE
  if (name === undefined || name === "") return freshDatabase(baseUrl)
  if (!/^[a-z_][a-z0-9_]*$/.test(name)) throw new Error(`BENCH_SEARCH_DATABASE: expected a plain database name, got ${name}`)
  const admin = postgres(baseUrl, { max: 1, onnotice: () => {} })
  if ((await admin`SELECT 1 FROM pg_database WHERE datname = ${name}`).length === 0) await admin.unsafe(`CREATE DATABASE ${name}`)
  await admin.end()
  const url = new URL(baseUrl)
  url.pathname = `/${name}`
  return { url: url.toString(), drop: async () => {} }
}

const main = async () => {
  const db = await benchDatabase()
  const node = await startNode({
    DATABASE_URL: db.url,
    TROUPE_ADMIN_PASSWORD: "bench-password",
    TROUPE_LIMIT_READS: "0",
    TROUPE_LIMIT_WRITES: "0",
    TROUPE_LIMIT_BULK: "0"
  })
  const pg = postgres(db.url, { max: SEARCHERS + 2, onnotice: () => {} })
  try {
    const token = await passwordToken(node, "admin", "bench-password")
    const headers = { authorization: `Bearer ${token}`, "content-type": "application/json" }
    const base = `${node.baseUrl}/workspace/default/api/v1`
    const post = async (path: string, body: unknown) => {
      const res = await fetch(`${base}${path}`, { method: "POST", headers, body: JSON.stringify(body) })
      if (res.status >= 300) throw new Error(`${path}: ${res.status} ${await res.text()}`)
      return (await res.json()) as any
    }
    const [kept] = await pg`SELECT id::text FROM structures WHERE name = 'docs' AND NOT is_deleted`
    const structure =
      kept ??
      (await post("/structures", {
        name: "docs",
        properties: [
          { name: "title", type: "string" },
          { name: "body", type: "string" }
        ],
        searchFields: [
          { name: "title", weight: 4 },
          { name: "body", weight: 1 }
        ]
      }))
    const newRecord = () => JSON.stringify({ structureId: structure.id, data: { title: sentence(3, 8), body: sentence(30, 60) } })

    // 1. create throughput with and without the index, alternated twice (a loaded machine drifts: neither side
    //    always runs first)
    // without the index: no configuration for the create statement to compute a vector from (migration 0018), no
    // insert trigger to fall back on, no GIN index; put back as they were, the vectors filled in
    let savedConfig: unknown = null
    const dropIndex = async () => {
      const [row] =
        await pg`DELETE FROM search_configs WHERE structure_id = ${structure.id}::uuid RETURNING to_jsonb(search_configs) AS row`
      savedConfig = row!.row
      await pg.unsafe("ALTER TABLE records DISABLE TRIGGER records_search_insert")
      await pg.unsafe("DROP INDEX records_search")
    }
    const restoreIndex = async () => {
      await pg`INSERT INTO search_configs SELECT * FROM jsonb_populate_record(null::search_configs, ${pg.json(savedConfig as postgres.JSONValue)})`
      await pg.unsafe("ALTER TABLE records ENABLE TRIGGER records_search_insert")
      await pg.unsafe("UPDATE records SET search_vector = troupe_search_vector(structure_id, data) WHERE search_vector IS NULL")
      await pg.unsafe(
        "CREATE INDEX records_search ON records USING gin (search_vector) WITH (fastupdate = on, gin_pending_list_limit = 1024)"
      )
    }
    const creates = () => cannon({ url: `${base}/records`, method: "POST", headers, connections, body: newRecord })
    const withIndex: Array<Awaited<ReturnType<typeof creates>>> = []
    const withoutIndex: Array<Awaited<ReturnType<typeof creates>>> = []
    withIndex.push(await creates())
    await dropIndex()
    withoutIndex.push(await creates())
    withoutIndex.push(await creates())
    await restoreIndex()
    withIndex.push(await creates())
    const mean = (xs: ReadonlyArray<{ rps: number }>) => xs.reduce((a, x) => a + x.rps, 0) / xs.length
    const createWith = {
      rps: mean(withIndex),
      p99: Math.max(...withIndex.map((x) => x.p99)),
      non2xx: withIndex.reduce((a, x) => a + x.non2xx, 0)
    }
    const createWithout = {
      rps: mean(withoutIndex),
      p99: Math.max(...withoutIndex.map((x) => x.p99)),
      non2xx: withoutIndex.reduce((a, x) => a + x.non2xx, 0)
    }

    // seed to N records through the API (bulk creates: the write path and its trigger)
    let have = Number((await pg`SELECT count(*)::int AS n FROM records`)[0]!.n)
    const started = Date.now()
    while (have < records) {
      const n = Math.min(1000, records - have)
      const batch = Array.from({ length: n }, () => ({ data: { title: sentence(3, 8), body: sentence(30, 60) } }))
      await post("/records/bulk", { structureId: structure.id, records: batch })
      have += n
    }
    console.log(`seeded ${records} records in ${((Date.now() - started) / 1000).toFixed(1)} s`)
    await pg.unsafe("ANALYZE records")

    // 2. GET /search at 16 connections
    let i = 0
    const nextQuery = () => queries[i++ % queries.length]!
    const searchPath = () =>
      `/search/workspace/default/api/v1/search?q=${encodeURIComponent(nextQuery().join(" "))}&structures=docs&limit=20`
    const search = await cannon({ url: node.baseUrl, method: "GET", headers, connections: SEARCHERS, path: searchPath })

    // 3. the raw baseline: the same statement through postgres.js
    const rawOne = async (words: ReadonlyArray<string>) => {
      const terms = words.map((lexeme, k) => ({ lexeme, typos: [], prefix: k === words.length - 1 }))
      const q = tsqueryText(terms)
      await pg`WITH m AS (SELECT r.id, r.data, r.structure_id, count(*) OVER () AS total,
          (CASE WHEN r.search_vector @@ ${tsqueryText(terms, "A")}::tsquery THEN 3
            WHEN r.search_vector @@ ${tsqueryText(terms, "AB")}::tsquery THEN 2
            WHEN r.search_vector @@ ${tsqueryText(terms, "ABC")}::tsquery THEN 1 ELSE 0 END)
            + ts_rank_cd(r.search_vector, ${q}::tsquery, 32) AS score
        FROM records r WHERE r.structure_id = ${structure.id}::uuid
          AND r.search_vector @@ ${q}::tsquery AND r.deleted_at IS NULL AND (r.expires_at IS NULL OR r.expires_at > now())
        ORDER BY score DESC, r.id LIMIT 20)
      SELECT m.*, ts_headline('simple', m.data ->> 'title', ${q}::tsquery) AS t, ts_headline('simple', m.data ->> 'body', ${q}::tsquery) AS b
      FROM m ORDER BY m.score DESC, m.id`
    }
    const rawRun = async (seconds: number) => {
      const latencies: Array<number> = []
      const until = Date.now() + seconds * 1000
      await Promise.all(
        Array.from({ length: SEARCHERS }, async () => {
          while (Date.now() < until) {
            const t0 = performance.now()
            await rawOne(nextQuery())
            latencies.push(performance.now() - t0)
          }
        })
      )
      return { rps: latencies.length / seconds, p99: percentile(latencies, 99) }
    }
    if (warmup > 0) await rawRun(warmup)
    const raw = await rawRun(duration)

    // 4. the lists' search=, the same words
    const scanPath = () => `/workspace/default/api/v1/records?structureId=docs&limit=20&search=${encodeURIComponent(nextQuery().join(" "))}`
    const scan = await cannon({ url: node.baseUrl, method: "GET", headers, connections: SEARCHERS, path: scanPath })

    const f = (x: number) => (Number.isFinite(x) ? x.toFixed(1) : "n/a")
    console.log(`machine: ${cores} cores (${Os.cpus()[0]?.model ?? "?"}), PostgreSQL, ${records} records`)
    console.log(`create with index     ${f(createWith.rps)} req/s  p99 ${createWith.p99} ms  (non-2xx ${createWith.non2xx})`)
    console.log(`create without index  ${f(createWithout.rps)} req/s  p99 ${createWithout.p99} ms  (non-2xx ${createWithout.non2xx})`)
    console.log(`  with/without: ${f((100 * createWith.rps) / createWithout.rps)} % (target >= 85 %)`)
    console.log(`GET /search           ${f(search.rps)} req/s  p99 ${search.p99} ms  (non-2xx ${search.non2xx}, ${SEARCHERS} connections)`)
    console.log(`raw tsvector query    ${f(raw.rps)} q/s    p99 ${f(raw.p99)} ms  (postgres.js, ${SEARCHERS} in flight)`)
    console.log(`  search p99 / raw p99: ${f(search.p99 / raw.p99)}x (target <= 1.5x)`)
    console.log(`list search=          ${f(scan.rps)} req/s  p99 ${scan.p99} ms  (non-2xx ${scan.non2xx})`)
    // the lists' search= reads the same index for a structure naming its search fields (no typos, no highlights);
    // it was a scan when this line was "the factor gained"
    console.log(`  GET /search / list search= (req/s): ${f(search.rps / Math.max(scan.rps, 0.001))}x`)
  } finally {
    await pg.end()
    await node.stop()
    await db.drop()
  }
}

await main()
