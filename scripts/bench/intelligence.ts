// The intelligence section of `npm run bench` (BENCH_ONLY=intelligence runs it alone): what schema discovery costs
// the write path, on one node in one run (issue 31's target: creates with discovery on at >= 90 % of the req/s with
// it off). "Off": a strict structure declaring both fields. "On": an auto-evolving structure declaring one of them,
// so every create carries an undeclared field that the relay hands to the profiler (intelligence/Observer.ts).
// The two are driven alternately; medians.
// Runs on its own: `node --no-node-snapshot --experimental-strip-types scripts/bench/intelligence.ts`. On PostgreSQL
// (DATABASE_URL, a fresh database beside it) or, without it, embedded PGlite in memory.
// Knobs: BENCH_INTEL_DURATION (s per drive, default 5), BENCH_INTEL_ROUNDS (alternations, 2), BENCH_WARMUP (s, 2),
// BENCH_CONNECTIONS (64), BENCH_LOG_LEVEL (the node's TROUPE_LOG_LEVEL, default none).
import autocannon from "autocannon"
import { freshDatabase, startNode, type TestNode } from "../../test/support/TestServer.ts"

const duration = Number(process.env.BENCH_INTEL_DURATION ?? 5)
const rounds = Number(process.env.BENCH_INTEL_ROUNDS ?? 2)
const warmup = Number(process.env.BENCH_WARMUP ?? 2)
const connections = Number(process.env.BENCH_CONNECTIONS ?? 64)

interface Target {
  readonly path: string
  readonly method?: string
  readonly headers?: Record<string, string>
  readonly body?: string
  /** the status every answer must have */
  readonly status: number
}

const drive = async (node: TestNode, target: Target, seconds: number) => {
  const result: any = await autocannon({
    url: `${node.baseUrl}${target.path}`,
    method: (target.method ?? "GET") as any,
    connections,
    duration: seconds,
    timeout: 60,
    headers: target.headers ?? {},
    ...(target.body !== undefined ? { body: target.body } : {})
  })
  // a wrong answer is no answer: only the expected status counts
  const right = result.statusCodeStats?.[String(target.status)]?.count ?? 0
  return { rps: result.requests.average, right, total: result.requests.total, p99: result.latency.p99 }
}

/** Each target's req/s, alternated `rounds` times after a warm-up of each; medians. */
const compare = async (node: TestNode, a: Target, b: Target) => {
  await drive(node, a, warmup)
  await drive(node, b, warmup)
  const runs: Array<[number, number]> = []
  for (let i = 0; i < rounds; i++) {
    const x = await drive(node, a, duration)
    const y = await drive(node, b, duration)
    for (const [r, t] of [
      [x, a],
      [y, b]
    ] as const) {
      if (r.right < r.total * 0.99)
        throw new Error(`${t.method ?? "GET"} ${t.path}: ${r.total - r.right} of ${r.total} answers were not ${t.status}`)
    }
    runs.push([x.rps, y.rps])
  }
  const median = (xs: Array<number>) => [...xs].sort((p, q) => p - q)[Math.floor(xs.length / 2)]!
  return { a: median(runs.map((r) => r[0])), b: median(runs.map((r) => r[1])) }
}

const main = async () => {
  const started = Date.now()
  const password = "bench-password-123"
  const db = process.env.DATABASE_URL ? await freshDatabase(process.env.DATABASE_URL) : undefined
  const node = await startNode({
    TROUPE_ADMIN_PASSWORD: password,
    TROUPE_LOG_LEVEL: process.env.BENCH_LOG_LEVEL ?? "none",
    TROUPE_LIMIT_READS: "0",
    TROUPE_LIMIT_WRITES: "0",
    ...(db ? { DATABASE_URL: db.url } : { DATABASE_URL: "", TROUPE_DATA_DIR: "memory://" })
  })
  try {
    const token = (
      await node.request("POST", "/oidc/token", {
        raw: `grant_type=password&username=admin&password=${password}&scope=openid%20workspace:default`,
        headers: { "content-type": "application/x-www-form-urlencoded" }
      })
    ).body.access_token as string
    const base = "/workspace/default/api/v1"
    const structure = async (slug: string, mode: string, names: ReadonlyArray<string>) => {
      const res = await node.request("POST", `${base}/structures`, {
        token,
        body: { name: slug, recordSlug: slug, schemaDiscoveryMode: mode, properties: names.map((name) => ({ name, type: "string" })) }
      })
      if (res.status >= 300) throw new Error(`structure ${slug}: ${res.status} ${res.text}`)
    }
    await structure("bench-discovery-off", "strict", ["title", "note"])
    await structure("bench-discovery-on", "auto-evolving", ["title"])
    const create = (slug: string): Target => ({
      path: `${base}/records`,
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      body: JSON.stringify({ structureId: slug, data: { title: "a title", note: "an undeclared note" } }),
      status: 201
    })
    const r = await compare(node, create("bench-discovery-on"), create("bench-discovery-off"))
    const ratio = r.a / r.b
    console.log(
      `\nintelligence, ${db ? "PostgreSQL" : "PGlite"}, node ${process.version}, ${connections} connections, ${rounds} x ${duration} s, ` +
        `${((Date.now() - started) / 1000).toFixed(0)} s\n`
    )
    console.log("| measure | req/s | baseline | req/s | ratio | target | met |")
    console.log("|---|---|---|---|---|---|---|")
    console.log(
      `| create, discovery on (undeclared field observed) | ${r.a.toFixed(0)} | create, discovery off (strict) | ${r.b.toFixed(0)} | ` +
        `${(ratio * 100).toFixed(0)} % | >= 90 % | ${ratio >= 0.9 ? "yes" : "NO"} |`
    )
  } finally {
    await node.stop()
    await db?.drop()
  }
}

main().catch((e) => {
  console.error(e)
  process.exit(1)
})
