// The CORS section of `npm run bench` (BENCH_ONLY=cors runs it alone): what browser apps cost the node, on one node
// in one run, each figure beside its baseline measured alternately with it (issue 32's target: a preflight answered
// at >= 90 % of GET /health's req/s).
//   1. preflights (OPTIONS with Origin, Access-Control-Request-Method and -Headers, for PATCH /records/{id}, from an
//      origin the workspace allows) beside GET /health;
//   2. GET /records/{id} (the fast lane) from an allowed origin beside the same read without an Origin: the price of
//      the grant's headers on the hottest route.
// Runs on its own: `node --no-node-snapshot --experimental-strip-types scripts/bench/cors.ts`. On PostgreSQL
// (DATABASE_URL, a fresh database beside it) or, without it, embedded PGlite in memory.
// Knobs: BENCH_CORS_DURATION (s per drive, default 5), BENCH_CORS_ROUNDS (alternations, 2), BENCH_WARMUP (s, 2),
// BENCH_CONNECTIONS (64), BENCH_LOG_LEVEL (the node's TROUPE_LOG_LEVEL, default none).
import autocannon from "autocannon"
import { freshDatabase, startNode, type TestNode } from "../../test/support/TestServer.ts"

const duration = Number(process.env.BENCH_CORS_DURATION ?? 5)
const rounds = Number(process.env.BENCH_CORS_ROUNDS ?? 2)
const warmup = Number(process.env.BENCH_WARMUP ?? 2)
const connections = Number(process.env.BENCH_CONNECTIONS ?? 64)
const APP = "https://app.example"

interface Target {
  readonly path: string
  readonly method?: string
  readonly headers?: Record<string, string>
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
    headers: target.headers ?? {}
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
    const put = await node.request("PUT", `${base}/settings/cors`, { token, body: { allowedOrigins: [APP] } })
    if (put.status !== 200) throw new Error(`settings/cors: ${put.status} ${put.text}`)
    await node.request("POST", `${base}/structures`, {
      token,
      body: { name: "Bench cors", properties: [{ name: "title", type: "string" }] }
    })
    const record = await node.request("POST", `${base}/records`, { token, body: { structureId: "bench-cors", data: { title: "x" } } })
    if (record.status !== 201) throw new Error(`record: ${record.status} ${record.text}`)
    const read = `${base}/records/${record.body.id}`

    const health: Target = { path: "/health", status: 200 }
    const preflight: Target = {
      path: read,
      method: "OPTIONS",
      headers: {
        origin: APP,
        "access-control-request-method": "PATCH",
        "access-control-request-headers": "authorization, content-type, if-match"
      },
      status: 204
    }
    const plainRead: Target = { path: read, headers: { authorization: `Bearer ${token}` }, status: 200 }
    const corsRead: Target = { path: read, headers: { authorization: `Bearer ${token}`, origin: APP }, status: 200 }

    const first = await compare(node, preflight, health)
    const second = await compare(node, corsRead, plainRead)
    const pct = (x: number, y: number) => `${((x / y) * 100).toFixed(0)} %`
    const rows = [
      ["preflight (OPTIONS, allowed origin)", first.a, "GET /health", first.b, pct(first.a, first.b), ">= 90 %", first.a >= 0.9 * first.b],
      ["GET /records/{id}, allowed Origin", second.a, "same read, no Origin", second.b, pct(second.a, second.b), "", undefined]
    ] as const
    console.log(
      `\ncors, ${db ? "PostgreSQL" : "PGlite"}, node ${process.version}, ${connections} connections, ${rounds} x ${duration} s, ` +
        `${((Date.now() - started) / 1000).toFixed(0)} s\n`
    )
    console.log("| measure | req/s | baseline | req/s | ratio | target | met |")
    console.log("|---|---|---|---|---|---|---|")
    for (const [what, x, baseline, y, ratio, target, met] of rows) {
      console.log(
        `| ${what} | ${x.toFixed(0)} | ${baseline} | ${y.toFixed(0)} | ${ratio} | ${target} | ${met === undefined ? "" : met ? "yes" : "NO"} |`
      )
    }
  } finally {
    await node.stop()
    await db?.drop()
  }
}

main().catch((e) => {
  console.error(e)
  process.exit(1)
})
