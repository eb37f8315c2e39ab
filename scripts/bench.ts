// `npm run bench`: a Troupe node and the raw baseline (node:http + postgres.js, same SQL) started in the same run on
// the same PostgreSQL, each driven by autocannon (64 connections, BENCH_DURATION s, BENCH_ROUNDS rounds), and the
// ratio Troupe/raw per scenario. Ratios, not absolute figures, are what to compare across machines.
import autocannon from "autocannon"
import { type ChildProcess, spawn } from "node:child_process"
import * as Path from "node:path"
import { freePort, freshDatabase, request, startNode } from "../test/support/TestServer.ts"

const root = Path.resolve(import.meta.dirname, "..")
const duration = Number(process.env.BENCH_DURATION ?? 10)
const rounds = Number(process.env.BENCH_ROUNDS ?? 3)
const connections = Number(process.env.BENCH_CONNECTIONS ?? 64)
const only = process.env.BENCH_ONLY?.split(",")
const baseUrl = process.env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/test"

export interface Target {
  readonly url: string
  readonly method?: string
  readonly headers?: Record<string, string>
  /** a fixed body, or a factory called per request */
  readonly body?: unknown
  readonly bodyFactory?: () => unknown
}

export interface Scenario {
  readonly name: string
  readonly troupe: Target
  readonly raw: Target | undefined
}

interface Figures { rps: number; p50: number; p99: number; errors: number }

const drive = async (target: Target): Promise<Figures> => {
  const result: any = await autocannon({
    url: target.url,
    method: (target.method ?? "GET") as any,
    connections,
    duration,
    headers: { "content-type": "application/json", ...target.headers },
    ...(target.body !== undefined ? { body: JSON.stringify(target.body) } : {}),
    ...(target.bodyFactory
      ? { requests: [{ setupRequest: (req: any) => ({ ...req, body: JSON.stringify(target.bodyFactory!()) }) }] }
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
      for (let i = 0; i < rounds; i++) {
        t.push(await drive(scenario.troupe))
        if (scenario.raw) r.push(await drive(scenario.raw))
      }
      const tr = median(t.map((f) => f.rps))
      const rr = scenario.raw ? median(r.map((f) => f.rps)) : NaN
      rows.push([
        scenario.name,
        tr.toFixed(0), `${median(t.map((f) => f.p50))}/${median(t.map((f) => f.p99))}`,
        scenario.raw ? rr.toFixed(0) : "-", scenario.raw ? `${median(r.map((f) => f.p50))}/${median(r.map((f) => f.p99))}` : "-",
        scenario.raw ? `${((tr / rr) * 100).toFixed(0)} %` : "-",
        String(t.reduce((n, f) => n + f.errors, 0))
      ])
      process.stderr.write(`${scenario.name}: troupe ${tr.toFixed(0)} req/s, raw ${rr.toFixed(0)} req/s\n`)
    }
    const header = ["scenario", "troupe req/s", "p50/p99 ms", "raw req/s", "p50/p99 ms", "troupe/raw", "errors"]
    const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)))
    const line = (cells: Array<string>) => "| " + cells.map((c, i) => c.padEnd(widths[i]!)).join(" | ") + " |"
    console.log(`\n${connections} connections, ${duration} s x ${rounds} rounds (medians), PostgreSQL, node ${process.version}\n`)
    console.log(line(header))
    console.log("|" + widths.map((w) => "-".repeat(w + 2)).join("|") + "|")
    for (const row of rows) console.log(line(row))
  } finally {
    raw.stop()
    await troupe.stop()
    await db.drop()
  }
}

main().catch((e) => {
  console.error(e)
  process.exit(1)
})
