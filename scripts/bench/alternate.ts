// The harness of the bench sections that measure a figure beside its baseline on one node, driven alternately
// (scripts/bench/cors.ts, scripts/bench/intelligence.ts): the node (PostgreSQL on a fresh database beside
// DATABASE_URL, else embedded PGlite in memory) with an admin token, autocannon drives, medians, the result table.
import autocannon from "autocannon"
import { freshDatabase, startNode, type TestNode } from "../../test/support/TestServer.ts"

export interface Target {
  readonly path: string
  readonly method?: string
  readonly headers?: Record<string, string>
  readonly body?: string
  /** the status every answer must have */
  readonly status: number
}

export interface Knobs {
  /** s per drive */
  readonly duration: number
  /** alternations */
  readonly rounds: number
}

const warmup = Number(process.env.BENCH_WARMUP ?? 2)
export const connections = Number(process.env.BENCH_CONNECTIONS ?? 64)

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
export const compare = async (node: TestNode, knobs: Knobs, a: Target, b: Target) => {
  await drive(node, a, warmup)
  await drive(node, b, warmup)
  const runs: Array<[number, number]> = []
  for (let i = 0; i < knobs.rounds; i++) {
    const x = await drive(node, a, knobs.duration)
    const y = await drive(node, b, knobs.duration)
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

/** One row of the result table: a measure beside its baseline. */
export interface Row {
  readonly measure: string
  readonly rps: number
  readonly baseline: string
  readonly baselineRps: number
  /** the wanted ratio (0.9 for >= 90 %), or none */
  readonly wanted?: number
}

/** Starts the node, hands it and an admin token to `body`, prints the table of the rows it returns, stops it. */
export const runSection = async (section: string, knobs: Knobs, body: (node: TestNode, token: string) => Promise<ReadonlyArray<Row>>) => {
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
    const rows = await body(node, token)
    console.log(
      `\n${section}, ${db ? "PostgreSQL" : "PGlite"}, node ${process.version}, ${connections} connections, ` +
        `${knobs.rounds} x ${knobs.duration} s, ${((Date.now() - started) / 1000).toFixed(0)} s\n`
    )
    console.log("| measure | req/s | baseline | req/s | ratio | target | met |")
    console.log("|---|---|---|---|---|---|---|")
    for (const r of rows) {
      const ratio = r.rps / r.baselineRps
      const target = r.wanted === undefined ? "" : `>= ${(r.wanted * 100).toFixed(0)} %`
      const met = r.wanted === undefined ? "" : ratio >= r.wanted ? "yes" : "NO"
      console.log(
        `| ${r.measure} | ${r.rps.toFixed(0)} | ${r.baseline} | ${r.baselineRps.toFixed(0)} | ${(ratio * 100).toFixed(0)} % | ${target} | ${met} |`
      )
    }
  } finally {
    await node.stop()
    await db?.drop()
  }
}

/** Runs a section's main, exiting 1 on a failure. */
export const main = (run: () => Promise<void>) =>
  run().catch((e) => {
    console.error(e)
    process.exit(1)
  })
