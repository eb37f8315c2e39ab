// `npm run bench`: a Troupe node and the raw baseline (node:http + postgres.js, same SQL) started in the same run on
// the same PostgreSQL, each driven by autocannon (64 connections, BENCH_DURATION s, BENCH_ROUNDS rounds, after
// BENCH_WARMUP s unmeasured per side), and the ratio Troupe/raw per scenario. Ratios, not absolute figures, are what
// to compare across machines. Then the in-process benches (scripts/bench-validator.ts, scripts/bench-events.ts when present) run as extra sections.
import autocannon from "autocannon"
import { type ChildProcess, spawn } from "node:child_process"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { freePort, freshDatabase, request, startNode } from "../test/support/TestServer.ts"

const root = Path.resolve(import.meta.dirname, "..")
const duration = Number(process.env.BENCH_DURATION ?? 10)
const rounds = Number(process.env.BENCH_ROUNDS ?? 3)
const connections = Number(process.env.BENCH_CONNECTIONS ?? 64)
const only = process.env.BENCH_ONLY?.split(",")
/** unmeasured seconds per target before its rounds (JIT, pools, plan caches, on both sides alike) */
const warmup = Number(process.env.BENCH_WARMUP ?? 2)
const baseUrl = process.env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/test"

export interface Target {
  readonly url: string
  readonly method?: string
  readonly headers?: Record<string, string>
  /** a fixed body, or a factory called per request */
  readonly body?: unknown
  readonly bodyFactory?: () => unknown
  /** a path (with query) per request, replacing the url's */
  readonly pathFactory?: () => string
}

export interface Scenario {
  readonly name: string
  readonly troupe: Target
  readonly raw: Target | undefined
  /** autocannon connections for this scenario (default BENCH_CONNECTIONS) */
  readonly connections?: number
  /** items each request writes (bulk): the table adds items/s */
  readonly itemsPerRequest?: number
  /** at least this many seconds per round (slow requests need a few to finish) */
  readonly minDuration?: number
}

interface Figures { rps: number; p50: number; p99: number; errors: number }

const drive = async (target: Target, conns: number, seconds: number): Promise<Figures> => {
  const result: any = await autocannon({
    url: target.url,
    method: (target.method ?? "GET") as any,
    connections: conns,
    duration: seconds,
    // a slow request (a bulk of 1,000) is measured, not dropped at autocannon's default 10 s
    timeout: 120,
    headers: { "content-type": "application/json", ...target.headers },
    ...(target.body !== undefined ? { body: JSON.stringify(target.body) } : {}),
    ...(target.bodyFactory || target.pathFactory
      ? {
        requests: [{
          setupRequest: (req: any) => ({
            ...req,
            ...(target.pathFactory ? { path: target.pathFactory() } : {}),
            ...(target.bodyFactory ? { body: JSON.stringify(target.bodyFactory()) } : {})
          })
        }]
      }
      : {})
  })
  return {
    rps: result.requests.average,
    p50: result.latency.p50,
    p99: result.latency.p99,
    errors: result.errors + result.non2xx
  }
}

const median = (xs: Array<number>) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!

const startRaw = async (databaseUrl: string) => {
  const port = await freePort()
  const child: ChildProcess = spawn(process.execPath, [
    "--experimental-strip-types", "--disable-warning=ExperimentalWarning", Path.join(root, "scripts/bench/raw-baseline.ts")
  ], { env: { ...process.env, DATABASE_URL: databaseUrl, PORT: String(port) }, stdio: ["ignore", "pipe", "inherit"] })
  await new Promise<void>((resolve) => child.stdout!.once("data", () => resolve()))
  return { url: `http://127.0.0.1:${port}`, stop: () => child.kill("SIGTERM") }
}

const main = async () => {
  const db = await freshDatabase(baseUrl)
  const password = "bench-password-1"
  const troupe = await startNode({
    DATABASE_URL: db.url, TROUPE_ADMIN_PASSWORD: password, TROUPE_LOG_LEVEL: "none",
    TROUPE_LIMIT_READS: "0", TROUPE_LIMIT_WRITES: "0", TROUPE_LIMIT_BULK: "0", TROUPE_LIMIT_QUERIES: "0"
  })
  const raw = await startRaw(db.url)
  try {
    const { scenarios } = await import("./bench/scenarios.ts")
    const list: Array<Scenario> = await scenarios({ troupe: troupe.baseUrl, raw: raw.url, password, request })
    const rows: Array<Array<string>> = []
    for (const scenario of list) {
      if (only && !only.includes(scenario.name)) continue
      const t: Array<Figures> = []
      const r: Array<Figures> = []
      const conns = scenario.connections ?? connections
      const seconds = Math.max(duration, scenario.minDuration ?? 0)
      if (warmup > 0) {
        await drive(scenario.troupe, conns, warmup)
        if (scenario.raw) await drive(scenario.raw, conns, warmup)
      }
      for (let i = 0; i < rounds; i++) {
        t.push(await drive(scenario.troupe, conns, seconds))
        if (scenario.raw) r.push(await drive(scenario.raw, conns, seconds))
      }
      const tr = median(t.map((f) => f.rps))
      const rr = scenario.raw ? median(r.map((f) => f.rps)) : NaN
      const rate = (rps: number) =>
        scenario.itemsPerRequest
          ? `${rps.toFixed(1)} (${(rps * scenario.itemsPerRequest).toFixed(0)} items/s)`
          : rps.toFixed(0)
      rows.push([
        scenario.name,
        String(conns),
        rate(tr), `${median(t.map((f) => f.p50))}/${median(t.map((f) => f.p99))}`,
        scenario.raw ? rate(rr) : "-", scenario.raw ? `${median(r.map((f) => f.p50))}/${median(r.map((f) => f.p99))}` : "-",
        scenario.raw ? `${((tr / rr) * 100).toFixed(0)} %` : "-",
        String(t.reduce((n, f) => n + f.errors, 0))
      ])
      process.stderr.write(`${scenario.name}: troupe ${tr.toFixed(0)} req/s, raw ${rr.toFixed(0)} req/s\n`)
    }
    const header = ["scenario", "conns", "troupe req/s", "p50/p99 ms", "raw req/s", "p50/p99 ms", "troupe/raw", "errors"]
    const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)))
    const line = (cells: Array<string>) => "| " + cells.map((c, i) => c.padEnd(widths[i]!)).join(" | ") + " |"
    console.log(`\n${duration} s x ${rounds} rounds (medians), PostgreSQL, node ${process.version}\n`)
    console.log(line(header))
    console.log("|" + widths.map((w) => "-".repeat(w + 2)).join("|") + "|")
    for (const row of rows) console.log(line(row))
  } finally {
    raw.stop()
    await troupe.stop()
    await db.drop()
  }
  await extras()
}

/** The in-process benches, each a section of its own, run after the servers are gone (they want both cores). */
const extras = async () => {
  const sections: Array<[name: string, script: string]> = [
    ["validator", "scripts/bench-validator.ts"],
    ["events", "scripts/bench-events.ts"]
  ]
  for (const [name, script] of sections) {
    if (only && !only.includes(name)) continue
    const file = Path.join(root, script)
    if (!Fs.existsSync(file)) continue
    console.log(`\n## ${name} (${script})\n`)
    const code = await new Promise<number | null>((resolve) => {
      const child = spawn(process.execPath, [
        "--no-node-snapshot", "--experimental-strip-types", "--disable-warning=ExperimentalWarning", file
      ], { cwd: root, env: { ...process.env, DATABASE_URL: baseUrl }, stdio: ["ignore", "inherit", "inherit"] })
      child.on("exit", resolve)
    })
    if (code !== 0) console.log(`(${script} exited with ${code})`)
  }
}

main().catch((e) => {
  console.error(e)
  process.exit(1)
})
