// `npm run bench`: a Troupe node, the raw baseline (node:http + postgres.js, same SQL; scripts/bench/raw-baseline.ts)
// and, for the writes, the ceiling (node:http + postgres.js, one durable statement per request into a table of its
// own; scripts/bench/raw-ceiling.ts) started in the same run on the same PostgreSQL, each driven by autocannon (64
// connections, BENCH_DURATION s, BENCH_ROUNDS rounds, after BENCH_WARMUP s unmeasured per side), and the ratios
// Troupe/raw and Troupe/ceiling per scenario. Ratios, not absolute figures, are what to compare across machines.
// Then the in-process benches (scripts/bench-validator.ts, scripts/bench-events.ts when present) and the compute
// targets (scripts/bench/compute.ts) run as extra sections.
//
// BENCH_PROFILE=embedded (`npm run bench:embedded`): the Troupe node on embedded PGlite in a fresh data directory (no
// DATABASE_URL), the record scenarios only (create record, get by id, patch; BENCH_ONLY narrows them further), beside
// the ceiling on a fresh PostgreSQL database when one is reachable; no raw baseline (it runs on Troupe's database),
// no extra sections. (PGlite's fdatasync is a no-op in its Emscripten file system: its commits reach the page cache,
// not the disk, while the ceiling's wait for their WAL flush. The ratio compares unequal durability.)
import autocannon from "autocannon"
import { type ChildProcess, spawn } from "node:child_process"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { freePort, freshDatabase, request, startNode } from "../test/support/TestServer.ts"
import { machineLine, type Measured, printTargets } from "./bench/targets.ts"

const root = Path.resolve(import.meta.dirname, "..")
const duration = Number(process.env.BENCH_DURATION ?? 10)
const rounds = Number(process.env.BENCH_ROUNDS ?? 3)
const connections = Number(process.env.BENCH_CONNECTIONS ?? 64)
const embedded = process.env.BENCH_PROFILE === "embedded"
if (process.env.BENCH_PROFILE && !["embedded", "postgres"].includes(process.env.BENCH_PROFILE)) {
  throw new Error(`BENCH_PROFILE: expected embedded or postgres, got ${process.env.BENCH_PROFILE}`)
}
const only =
  process.env.BENCH_ONLY?.split(",") ?? (embedded ? ["create record", "get by id", "patch", "list page", "list after bulk"] : undefined)
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
  /** the write ceiling (scripts/bench/raw-ceiling.ts); writes only, absent for reads */
  readonly ceiling?: Target | undefined
  /** autocannon connections for this scenario (default BENCH_CONNECTIONS) */
  readonly connections?: number
  /** items each request writes (bulk): the table adds items/s */
  readonly itemsPerRequest?: number
  /** at least this many seconds per round (slow requests need a few to finish) */
  readonly minDuration?: number
  /** run right before the scenario's first request (its warm-up), when the scenario is selected */
  readonly prepare?: () => Promise<void>
}

interface Figures {
  rps: number
  p50: number
  p99: number
  errors: number
}

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
          requests: [
            {
              setupRequest: (req: any) => ({
                ...req,
                ...(target.pathFactory ? { path: target.pathFactory() } : {}),
                ...(target.bodyFactory ? { body: JSON.stringify(target.bodyFactory()) } : {})
              })
            }
          ]
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

/** A baseline server (its own process) on `databaseUrl`, ready once it writes a line on stdout. */
const startBaseline = async (script: string, databaseUrl: string) => {
  const port = await freePort()
  const child: ChildProcess = spawn(
    process.execPath,
    ["--experimental-strip-types", "--disable-warning=ExperimentalWarning", Path.join(root, script)],
    { env: { ...process.env, DATABASE_URL: databaseUrl, PORT: String(port) }, stdio: ["ignore", "pipe", "inherit"] }
  )
  await new Promise<void>((resolve, reject) => {
    child.stdout!.once("data", () => resolve())
    child.once("exit", (code) => reject(new Error(`${script} exited with ${code}`)))
  })
  return { url: `http://127.0.0.1:${port}`, stop: () => child.kill("SIGTERM") }
}

/** The sections run after the HTTP scenarios, each its own process (BENCH_ONLY names them too). */
const sections: Array<[name: string, script: string]> = [
  ["validator", "scripts/bench-validator.ts"],
  ["events", "scripts/bench-events.ts"],
  // compute targets with their own node and baseline; `npm run bench -- --runs 100000` is passed on to it
  ["compute", "scripts/bench/compute.ts"],
  // preflights beside GET /health, and the grant's headers on the fast lane (issue 32)
  ["cors", "scripts/bench/cors.ts"],
  // notification targets (issue 30): accepted sends beside creates, end to end beside nodemailer, queue-to-sent
  ["notification", "scripts/bench/notification.ts"],
  // storage (issue 28): a 10 MB download at 16 connections beside a raw node:http baseline on the same store
  ["storage", "scripts/bench/storage.ts"],
  // search targets (issue 29): GET /search beside the raw tsvector query and the lists' scan; creates with and without the index
  ["search", "scripts/bench/search.ts"],
  // schema discovery's cost on the write path (issue 31): creates with an observed undeclared field beside strict ones
  ["intelligence", "scripts/bench/intelligence.ts"]
]

const main = async () => {
  // BENCH_ONLY naming sections only (BENCH_ONLY=compute) skips the HTTP scenarios and their seeding
  if (!only || only.some((name) => !sections.some(([s]) => s === name))) await scenariosSection()
  if (!embedded) await extras()
}

/** The Troupe node under test: on a fresh PostgreSQL database, or (embedded) on PGlite in a fresh data directory. */
const startTroupe = async (password: string) => {
  const env = {
    TROUPE_ADMIN_PASSWORD: password,
    TROUPE_LOG_LEVEL: "none",
    TROUPE_LIMIT_READS: "0",
    TROUPE_LIMIT_WRITES: "0",
    TROUPE_LIMIT_BULK: "0",
    TROUPE_LIMIT_QUERIES: "0"
  }
  if (embedded) {
    const dataDir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "troupe-bench-"))
    const node = await startNode({ ...env, DATABASE_URL: "", TROUPE_DATA_DIR: dataDir })
    return { node, databaseUrl: undefined, drop: async () => Fs.rmSync(dataDir, { recursive: true, force: true }) }
  }
  const db = await freshDatabase(baseUrl)
  const node = await startNode({ ...env, DATABASE_URL: db.url }).catch(async (e) => {
    await db.drop()
    throw e
  })
  return { node, databaseUrl: db.url, drop: db.drop }
}

/** The ceiling's PostgreSQL database: Troupe's own, or (embedded) a fresh one, when PostgreSQL is reachable. */
const ceilingDatabase = async (troupeDatabase: string | undefined) => {
  if (troupeDatabase) return { url: troupeDatabase, drop: async () => {} }
  return freshDatabase(baseUrl).catch((e) => {
    process.stderr.write(`bench: no PostgreSQL at ${baseUrl} for the ceiling (${e.message}); troupe alone\n`)
    return undefined
  })
}

const scenariosSection = async () => {
  const password = "bench-password-1"
  const troupe = await startTroupe(password)
  const stops: Array<() => unknown> = [() => troupe.node.stop(), troupe.drop]
  try {
    const raw = troupe.databaseUrl ? await startBaseline("scripts/bench/raw-baseline.ts", troupe.databaseUrl) : undefined
    if (raw) stops.unshift(raw.stop)
    const ceilingDb = await ceilingDatabase(troupe.databaseUrl)
    if (ceilingDb) stops.push(ceilingDb.drop)
    const ceiling = ceilingDb ? await startBaseline("scripts/bench/raw-ceiling.ts", ceilingDb.url) : undefined
    if (ceiling) stops.unshift(ceiling.stop)
    /** the baselines running beside Troupe, each with its columns in the table */
    const baselines = (
      [
        ["raw", raw, (s: Scenario) => s.raw],
        ["ceiling", ceiling, (s: Scenario) => s.ceiling]
      ] as const
    )
      .filter(([, server]) => server !== undefined)
      .map(([name, , pick]) => ({ name, pick }))
    const { scenarios } = await import("./bench/scenarios.ts")
    const list: Array<Scenario> = await scenarios({
      troupe: troupe.node.baseUrl,
      raw: raw?.url,
      ceiling: ceiling?.url,
      only,
      password,
      request
    })
    const rows: Array<Array<string>> = []
    /** Troupe's and the baselines' medians by scenario, for the targets printed after the table */
    const measured = new Map<string, Measured>()
    for (const scenario of list) {
      if (only && !only.includes(scenario.name)) continue
      const conns = scenario.connections ?? connections
      const seconds = Math.max(duration, scenario.minDuration ?? 0)
      if (scenario.prepare) await scenario.prepare()
      // Troupe, then each baseline, in every round: a drift of the box (WAL, autovacuum, load) hits them alike
      const targets = [scenario.troupe, ...baselines.map((b) => b.pick(scenario))]
      if (warmup > 0) for (const target of targets) if (target) await drive(target, conns, warmup)
      const figures: Array<Array<Figures>> = targets.map(() => [])
      for (let i = 0; i < rounds; i++) {
        for (const [j, target] of targets.entries()) if (target) figures[j]!.push(await drive(target, conns, seconds))
      }
      const rps = figures.map((f) => (f.length ? median(f.map((x) => x.rps)) : NaN))
      const at = (name: string) => baselines.findIndex((b) => b.name === name) + 1
      const p99Of = (j: number) => (j > 0 && figures[j]!.length > 0 ? median(figures[j]!.map((x) => x.p99)) : NaN)
      measured.set(scenario.name, {
        troupe: rps[0]!,
        troupeP99: median(figures[0]!.map((x) => x.p99)),
        raw: at("raw") > 0 ? rps[at("raw")]! : NaN,
        ceiling: at("ceiling") > 0 ? rps[at("ceiling")]! : NaN,
        ceilingP99: p99Of(at("ceiling")),
        items: scenario.itemsPerRequest ?? 1
      })
      const latency = (f: Array<Figures>) => (f.length ? `${median(f.map((x) => x.p50))}/${median(f.map((x) => x.p99))}` : "-")
      const errors = figures.map((f) => f.reduce((n, x) => n + x.errors, 0))
      const rate = (r: number) =>
        Number.isNaN(r)
          ? "-"
          : scenario.itemsPerRequest
            ? `${r.toFixed(1)} (${(r * scenario.itemsPerRequest).toFixed(0)} items/s)`
            : r.toFixed(0)
      rows.push([
        scenario.name,
        String(conns),
        rate(rps[0]!),
        latency(figures[0]!),
        ...baselines.flatMap((_, j) => [
          rate(rps[j + 1]!),
          latency(figures[j + 1]!),
          Number.isNaN(rps[j + 1]!) ? "-" : `${((rps[0]! / rps[j + 1]!) * 100).toFixed(0)} %`
        ]),
        // Troupe's errors, then any baseline's (a baseline answering errors would flatter it)
        [String(errors[0]), ...baselines.flatMap((b, j) => (errors[j + 1] ? [`${b.name} ${errors[j + 1]}`] : []))].join(", ")
      ])
      process.stderr.write(
        `${scenario.name}: troupe ${rps[0]!.toFixed(0)} req/s${baselines
          .flatMap((b, j) => (Number.isNaN(rps[j + 1]) ? [] : [`, ${b.name} ${rps[j + 1]!.toFixed(0)} req/s`]))
          .join("")}\n`
      )
    }
    const header = [
      "scenario",
      "conns",
      "troupe req/s",
      "p50/p99 ms",
      ...baselines.flatMap((b) => [`${b.name} req/s`, "p50/p99 ms", `troupe/${b.name}`]),
      "errors"
    ]
    const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)))
    const line = (cells: Array<string>) => `| ${cells.map((c, i) => c.padEnd(widths[i]!)).join(" | ")} |`
    const where = embedded ? `Troupe on embedded PGlite${ceiling ? ", ceiling on PostgreSQL" : ""}` : "PostgreSQL"
    console.log(`\n${duration} s x ${rounds} rounds (medians), ${where}; ${machineLine()}\n`)
    console.log(line(header))
    console.log(`|${widths.map((w) => "-".repeat(w + 2)).join("|")}|`)
    for (const row of rows) console.log(line(row))
    // a bulk request's items/s against the ceiling's one-INSERT-per-request creates: what batching buys over the
    // simplest server's single writes
    const single = measured.get("create record")?.ceiling
    for (const [name, m] of measured) {
      if (m.items === 1 || single === undefined || Number.isNaN(single)) continue
      const items = m.troupe * m.items
      console.log(
        `${name}: ${items.toFixed(0)} items/s = ${((items / single) * 100).toFixed(0)} % of the ceiling's single-INSERT creates (${single.toFixed(0)}/s)`
      )
    }
    printTargets(measured, embedded)
  } finally {
    for (const stop of stops) await stop()
  }
}

/** The in-process benches, each a section of its own, run after the servers are gone (they want both cores). */
const extras = async () => {
  for (const [name, script] of sections) {
    if (only && !only.includes(name)) continue
    const file = Path.join(root, script)
    if (!Fs.existsSync(file)) continue
    console.log(`\n## ${name} (${script})\n`)
    const code = await new Promise<number | null>((resolve) => {
      const child = spawn(
        process.execPath,
        [
          "--no-node-snapshot",
          "--experimental-strip-types",
          "--disable-warning=ExperimentalWarning",
          file,
          ...(name === "compute" ? process.argv.slice(2) : [])
        ],
        { cwd: root, env: { ...process.env, DATABASE_URL: baseUrl }, stdio: ["ignore", "inherit", "inherit"] }
      )
      child.on("exit", resolve)
    })
    if (code !== 0) console.log(`(${script} exited with ${code})`)
  }
}

main().catch((e) => {
  console.error(e)
  process.exit(1)
})
