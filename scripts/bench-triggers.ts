// Trigger benchmarks: starts real nodes on PostgreSQL (a fresh database per scenario; DATABASE_URL, default the
// local postgres://postgres@127.0.0.1:5432/test) and reads what the triggers did straight from `function_runs`
// (timestamps subtracted in SQL, so microseconds survive):
// - lateness: N scheduled triggers every 1 s for a window; p50/p99 of tick lateness (run created_at −
//   scheduled_for: the tick's transaction) and start lateness (started_at − scheduled_for: a worker claimed it),
//   missed ticks (grid points of each trigger inside the window without a run) and duplicate ticks;
// - events: one event-driven trigger on record_created, records written at `--rate`/s; latency = run started_at −
//   record created_at, split into relay (run created_at − record created_at) and claim (started_at − created_at);
// - burst: `--burst` writes by `--concurrency` writers with one subscribed trigger; runs/s = writes / (last run's
//   finished_at − first write);
// - failover: two nodes, a 1 s interval trigger, SIGKILL of the scheduler's node after `--failover-seconds`; the gap
//   between the last tick before the kill and the first after (by scheduled_for and created_at), and duplicates.
// Usage: node --no-node-snapshot --experimental-strip-types scripts/bench-triggers.ts
//        [--only lateness,events,burst,failover] [--triggers 100] [--lateness-seconds 120] [--rate 20]
//        [--events-seconds 20] [--burst 2000] [--concurrency 32] [--failover-seconds 10] [--json]
// Extra server environment for every node: BENCH_ENV='{"TROUPE_FUNCTION_CONCURRENCY":"8"}'.
import * as Fs from "node:fs"
import postgres from "postgres"
import { startServer, type TestNode } from "../test/support/TestServer.ts"

process.env.DATABASE_URL ??= "postgres://postgres@127.0.0.1:5432/test"

const arg = (name: string, fallback: number) => {
  const at = process.argv.indexOf(`--${name}`)
  return at > 0 && process.argv[at + 1] !== undefined ? Number(process.argv[at + 1]) : fallback
}
const onlyAt = process.argv.indexOf("--only")
const ONLY = new Set(onlyAt > 0 ? process.argv[onlyAt + 1]!.split(",").map((s) => s.trim()) : ["lateness", "events", "burst", "failover"])
const TRIGGERS = arg("triggers", 100)
const LATENESS_SECONDS = arg("lateness-seconds", 120)
const RATE = arg("rate", 20)
const EVENTS_SECONDS = arg("events-seconds", 20)
const BURST = arg("burst", 2000)
const CONCURRENCY = arg("concurrency", 32)
const FAILOVER_SECONDS = arg("failover-seconds", 10)
const JSON_OUTPUT = process.argv.includes("--json")
const EXTRA_ENV: Record<string, string> = process.env.BENCH_ENV ? JSON.parse(process.env.BENCH_ENV) : {}

const ENV = {
  TROUPE_LOG_LEVEL: "warn",
  TROUPE_LIMIT_FUNCTIONS: "0",
  TROUPE_LIMIT_WRITES: "0",
  TROUPE_LIMIT_READS: "0",
  ...EXTRA_ENV
}
const NOOP = "async function run() { return 1 }"

const log = (...a: Array<unknown>) => {
  if (!JSON_OUTPUT) console.log(...a)
}
const sleep = (ms: number) => new Promise((r) => setTimeout(r, Math.max(0, ms)))
const percentile = (sorted: ReadonlyArray<number>, p: number) =>
  sorted.length === 0 ? NaN : sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!
const round = (n: number, digits = 1) => Math.round(n * 10 ** digits) / 10 ** digits
const stats = (values: ReadonlyArray<number>) => {
  const sorted = [...values].sort((a, b) => a - b)
  return {
    n: sorted.length,
    p50: round(percentile(sorted, 50)),
    p99: round(percentile(sorted, 99)),
    max: round(sorted[sorted.length - 1] ?? NaN)
  }
}

/** Runs `task(i)` for i in [0, n) with at most `limit` in flight. */
const pool = async (n: number, limit: number, task: (i: number) => Promise<void>) => {
  let next = 0
  await Promise.all(
    Array.from({ length: Math.min(limit, n) }, async () => {
      while (next < n) await task(next++)
    })
  )
}

/** CPU ms (user + system) a process has used so far, from /proc (Linux, CLK_TCK 100); 0 when it is gone. */
const cpuMs = (pid: number | undefined) => {
  try {
    const stat = Fs.readFileSync(`/proc/${pid}/stat`, "utf8")
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ")
    return (Number(fields[11]) + Number(fields[12])) * 10
  } catch {
    return 0
  }
}

/**
 * What a phase cost: CPU of the Troupe node(s) and of the PostgreSQL backends of the scenario's database (other
 * agents share the machine and the server, so wall-clock figures vary; these do much less), and the database's
 * committed transactions (pg_stat_database, flushed about once a second: wait before the end; they include this
 * script's own few polls), and the WAL written (pg_current_wal_lsn, server-wide).
 */
const usageMeter = async (db: postgres.Sql, nodes: () => ReadonlyArray<TestNode>) => {
  const snapshot = async () => {
    const backends = await db<Array<{ pid: number }>>`SELECT pid FROM pg_stat_activity WHERE datname = current_database()`
    const [s] = await db<Array<{ commits: number; wal: number }>>`
      SELECT xact_commit::float8 AS commits, pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')::float8 AS wal
      FROM pg_stat_database WHERE datname = current_database()`
    return {
      at: Date.now(),
      node: nodes().reduce((sum, n) => sum + cpuMs(n.process.pid), 0),
      pg: new Map(backends.map((b) => [b.pid, cpuMs(b.pid)])),
      ...s!
    }
  }
  const start = await snapshot()
  return {
    /** The cost since the meter started, per `units` (writes or ticks; a function gets the elapsed ms). */
    per: async (units: number | ((elapsedMs: number) => number)) => {
      await sleep(1500)
      const end = await snapshot()
      if (typeof units === "function") units = units(end.at - start.at)
      let pg = 0
      for (const [pid, ms] of end.pg) pg += ms - (start.pg.get(pid) ?? 0)
      return {
        nodeCpuMs: round((end.node - start.node) / units, 2),
        pgCpuMs: round(pg / units, 2),
        commits: round((end.commits - start.commits) / units, 2),
        // the server's whole WAL (other databases' writes too, if any run meanwhile)
        walBytes: Math.round((end.wal - start.wal) / units)
      }
    }
  }
}

/** A started server, its admin token, a postgres.js client on its database, and the API calls the scenarios use. */
const boot = async (env: Record<string, string> = {}) => {
  const server = await startServer({ env: { ...ENV, ...env } })
  const db = postgres(server.databaseUrl!, { max: 2, onnotice: () => {} })
  const token = await server.adminToken()
  // Under load a fresh node has answered 401 "no longer valid" to its very first token for a moment after /ready
  // (its identity cache had not yet seen the bootstrap admin): wait until the token is accepted.
  for (let i = 0; ; i++) {
    const res = await server.request("GET", `${server.base}/function-triggers?limit=1`, { token })
    if (res.status === 200) break
    if (res.status !== 401 || i >= 100) throw new Error(`token check: ${res.status} ${res.text}`)
    if (i === 0) log(`  (token refused right after start: ${res.text.slice(0, 120)}; waiting)`)
    await sleep(100)
  }
  const call = async (method: string, path: string, body?: unknown, node: Pick<TestNode, "request"> = server) => {
    const res = await node.request(method, `${server.base}${path}`, { token, ...(body !== undefined ? { body } : {}) })
    if (res.status >= 300) throw new Error(`${method} ${path}: ${res.status} ${res.text}`)
    return res.body
  }
  const close = async () => {
    await db.end({ timeout: 1 })
    await server.close()
  }
  return { server, db, token, call, close }
}
type Booted = Awaited<ReturnType<typeof boot>>

interface Row {
  readonly scenario: string
  readonly measured: string
  readonly target: string
  readonly met: boolean
}

// ---------------------------------------------------------------- 1. scheduler lateness

const lateness = async (rows: Array<Row>) => {
  log(`lateness: ${TRIGGERS} triggers every 1 s for ${LATENESS_SECONDS} s`)
  const b = await boot()
  try {
    const fn = await b.call("POST", "/compute-functions", { name: "noop", code: NOOP })
    const anchors = new Map<string, number>()
    const createStart = Date.now()
    await pool(TRIGGERS, 4, async (i) => {
      const t = await b.call("POST", "/function-triggers", {
        name: `tick-${i}`,
        functionId: fn.id,
        executionType: "scheduled",
        triggerMetadata: { interval: 1 }
      })
      anchors.set(t.id, Date.parse(t.nextRunAt))
    })
    log(`  created ${TRIGGERS} triggers in ${Date.now() - createStart} ms`)
    const windowStart = Date.now() + 1000
    const windowEnd = windowStart + LATENESS_SECONDS * 1000
    await sleep(windowStart - Date.now())
    const meter = await usageMeter(b.db, () => [b.server])
    await sleep(windowEnd - Date.now())
    const perTick = await meter.per((ms) => (TRIGGERS * ms) / 1000)
    const ticks = await b.db<Array<{ triggerId: string; scheduledFor: Date; tickMs: number; startMs: number | null }>>`
      SELECT trigger_id AS "triggerId", scheduled_for AS "scheduledFor",
        EXTRACT(EPOCH FROM (created_at - scheduled_for)) * 1000 AS "tickMs",
        EXTRACT(EPOCH FROM (started_at - scheduled_for)) * 1000 AS "startMs"
      FROM function_runs
      WHERE execution_source = 'scheduled'
        AND scheduled_for >= ${new Date(windowStart)} AND scheduled_for <= ${new Date(windowEnd)}`
    // the worker's side: runs finished per second over the window, and what was still queued at its end
    const [worker] = await b.db<Array<{ finished: number; queuedAtEnd: number }>>`
      SELECT count(*) FILTER (WHERE finished_at BETWEEN ${new Date(windowStart)} AND ${new Date(windowEnd)})::int AS finished,
        count(*) FILTER (WHERE created_at <= ${new Date(windowEnd)}
          AND (started_at IS NULL OR started_at > ${new Date(windowEnd)}))::int AS "queuedAtEnd"
      FROM function_runs WHERE execution_source = 'scheduled'`
    const [dup] = await b.db`SELECT count(*)::int - count(DISTINCT (trigger_id, scheduled_for))::int AS n
      FROM function_runs WHERE scheduled_for IS NOT NULL`
    let expected = 0
    for (const anchor of anchors.values()) {
      const first = Math.ceil((windowStart - anchor) / 1000)
      const last = Math.floor((windowEnd - anchor) / 1000)
      expected += Math.max(0, last - first + 1)
    }
    const distinct = new Set(ticks.map((t) => `${t.triggerId}/${t.scheduledFor.getTime()}`)).size
    const missed = expected - distinct
    const tick = stats(ticks.map((t) => Number(t.tickMs)))
    const started = ticks.filter((t) => t.startMs !== null)
    const start = stats(started.map((t) => Number(t.startMs)))
    const warnings = b.server
      .output()
      .split("\n")
      .filter((l) => l.includes("scheduler") && !l.includes(`"level":"INFO"`))
    const result = {
      triggers: TRIGGERS,
      seconds: LATENESS_SECONDS,
      expectedTicks: expected,
      ticks: ticks.length,
      missed,
      duplicates: dup!.n as number,
      notStarted: ticks.length - started.length,
      tickLatenessMs: tick,
      startLatenessMs: start,
      schedulerWarnings: warnings.map((l) => l.slice(0, 300)),
      runsFinishedPerSecond: round(worker!.finished / LATENESS_SECONDS),
      queuedAtWindowEnd: worker!.queuedAtEnd,
      perTick
    }
    log("  ", result)
    rows.push(
      {
        scenario: `scheduler tick lateness (${TRIGGERS} × 1 s, ${LATENESS_SECONDS} s)`,
        measured: `p50/p99 ${tick.p50}/${tick.p99} ms; missed ${missed} of ${expected}; dup ${result.duplicates}`,
        target: "p99 ≤ 100 ms, 0 missed, 0 dup",
        met: tick.p99 <= 100 && missed === 0 && result.duplicates === 0
      },
      {
        scenario: "scheduler start lateness (same runs)",
        measured: `p50/p99 ${start.p50}/${start.p99} ms; ${result.notStarted} not started; ${result.runsFinishedPerSecond} runs/s done`,
        target: "p99 ≤ 100 ms",
        met: start.p99 <= 100 && result.notStarted === 0
      }
    )
    return result
  } finally {
    await b.close()
  }
}

// ---------------------------------------------------------------- 2. and 3. event-driven triggers

/** A structure, a no-op function and one record_created trigger on it; `write(n, phase)` creates a record. */
const eventSetup = async (b: Booted) => {
  await b.call("POST", "/structures", {
    name: "bench",
    recordSlug: "bench",
    properties: [
      { name: "n", type: "number" },
      { name: "phase", type: "string" }
    ]
  })
  const fn = await b.call("POST", "/compute-functions", { name: "noop", code: NOOP })
  const trigger = await b.call("POST", "/function-triggers", {
    name: "on-bench",
    functionId: fn.id,
    executionType: "event-driven",
    triggerMetadata: { event: "record_created", recordSlug: "bench" }
  })
  const write = (n: number, phase: string) => b.call("POST", "/records", { structureId: "bench", data: { n, phase } })
  /** Waits until `count` runs of the trigger are final. */
  const settle = async (count: number, timeoutMs = 300_000) => {
    const deadline = Date.now() + timeoutMs
    while (Date.now() < deadline) {
      const [r] = await b.db`SELECT count(*)::int AS n FROM function_runs
        WHERE trigger_id = ${trigger.id} AND status IN ('completed', 'failed', 'timed_out')`
      if (r!.n >= count) return
      await sleep(50)
    }
    throw new Error(`runs did not settle within ${timeoutMs} ms`)
  }
  /** Per run of a record of `phase`: record created_at → run created_at → started_at → finished_at, in ms. */
  const timings = (phase: string) =>
    b.db<Array<{ relayMs: number; claimMs: number; startMs: number; finishMs: number; runMs: number; sandboxMs: number; status: string }>>`
      SELECT EXTRACT(EPOCH FROM (r.created_at - rec.created_at)) * 1000 AS "relayMs",
        EXTRACT(EPOCH FROM (r.finished_at - r.started_at)) * 1000 AS "runMs", r.duration_ms AS "sandboxMs",
        EXTRACT(EPOCH FROM (r.started_at - r.created_at)) * 1000 AS "claimMs",
        EXTRACT(EPOCH FROM (r.started_at - rec.created_at)) * 1000 AS "startMs",
        EXTRACT(EPOCH FROM (r.finished_at - rec.created_at)) * 1000 AS "finishMs",
        r.status
      FROM function_runs r
      JOIN events e ON e.id = (r.execution_context->>'eventId')::bigint
      JOIN records rec ON rec.id = e.record_id
      WHERE r.trigger_id = ${trigger.id} AND rec.data->>'phase' = ${phase}`
  // warm the isolate, the claim path and the relay
  await pool(20, 4, (i) => write(i, "warm").then(() => {}))
  await settle(20)
  return { trigger, write, settle, timings }
}

const events = async (rows: Array<Row>) => {
  const count = RATE * EVENTS_SECONDS
  log(`events: 1 record_created trigger, ${RATE} writes/s for ${EVENTS_SECONDS} s`)
  const b = await boot()
  try {
    const s = await eventSetup(b)
    const meter = await usageMeter(b.db, () => [b.server])
    const t0 = performance.now()
    await Promise.all(
      Array.from({ length: count }, async (_, n) => {
        await sleep(t0 + (n / RATE) * 1000 - performance.now())
        await s.write(n, "paced")
      })
    )
    await s.settle(20 + count)
    const perWrite = await meter.per(count)
    const runs = await s.timings("paced")
    const start = stats(runs.map((r) => Number(r.startMs)))
    const result = {
      writes: count,
      rate: RATE,
      runs: runs.length,
      failed: runs.filter((r) => r.status !== "completed").length,
      commitToStartMs: start,
      relayMs: stats(runs.map((r) => Number(r.relayMs))),
      claimMs: stats(runs.map((r) => Number(r.claimMs))),
      commitToFinishMs: stats(runs.map((r) => Number(r.finishMs))),
      perWrite
    }
    log("  ", result)
    rows.push({
      scenario: `event-driven latency (${RATE} writes/s, ${EVENTS_SECONDS} s)`,
      measured: `p50/p99 ${start.p50}/${start.p99} ms (relay p99 ${result.relayMs.p99}, claim p99 ${result.claimMs.p99}); ${runs.length}/${count} runs`,
      target: "p99 ≤ 50 ms",
      met: start.p99 <= 50 && runs.length === count
    })
    return result
  } finally {
    await b.close()
  }
}

const burst = async (rows: Array<Row>) => {
  log(`burst: ${BURST} writes by ${CONCURRENCY} writers, 1 record_created trigger`)
  const b = await boot()
  try {
    // the same writes without a trigger first: what the runs add on top of them
    await b.call("POST", "/structures", { name: "plain", recordSlug: "plain", properties: [{ name: "n", type: "number" }] })
    const plainCount = Math.min(BURST, 500)
    const plainMeter = await usageMeter(b.db, () => [b.server])
    const plainStart = Date.now()
    await pool(plainCount, CONCURRENCY, async (n) => {
      await b.call("POST", "/records", { structureId: "plain", data: { n } })
    })
    const plainWritesPerSecond = round(plainCount / ((Date.now() - plainStart) / 1000))
    const plainPerWrite = await plainMeter.per(plainCount)
    const s = await eventSetup(b)
    const meter = await usageMeter(b.db, () => [b.server])
    const t0 = new Date()
    await pool(BURST, CONCURRENCY, async (n) => {
      await s.write(n, "burst")
    })
    const writesDone = Date.now()
    await s.settle(20 + BURST)
    const perWrite = await meter.per(BURST)
    const [span] = await b.db<Array<{ lastCreated: Date; lastFinished: Date }>>`
      SELECT max(r.created_at) AS "lastCreated", max(r.finished_at) AS "lastFinished"
      FROM function_runs r WHERE r.trigger_id = ${s.trigger.id} AND r.created_at >= ${t0}`
    const runs = await s.timings("burst")
    const seconds = (span!.lastFinished.getTime() - t0.getTime()) / 1000
    const runsPerSecond = round(BURST / seconds)
    const result = {
      writes: BURST,
      concurrency: CONCURRENCY,
      runs: runs.length,
      failed: runs.filter((r) => r.status !== "completed").length,
      writesPerSecond: round(BURST / ((writesDone - t0.getTime()) / 1000)),
      lastRunQueuedAfterS: round((span!.lastCreated.getTime() - t0.getTime()) / 1000, 2),
      lastRunFinishedAfterS: round(seconds, 2),
      runsPerSecond,
      relayMs: stats(runs.map((r) => Number(r.relayMs))),
      claimMs: stats(runs.map((r) => Number(r.claimMs))),
      startToFinishMs: stats(runs.map((r) => Number(r.runMs))),
      sandboxMs: stats(runs.map((r) => Number(r.sandboxMs))),
      perWrite,
      withoutTrigger: { writes: plainCount, writesPerSecond: plainWritesPerSecond, perWrite: plainPerWrite }
    }
    log("  ", result)
    rows.push({
      scenario: `burst (${BURST} writes, ${CONCURRENCY} writers)`,
      measured: `${runsPerSecond} runs/s (writes ${result.writesPerSecond}/s; last queued ${result.lastRunQueuedAfterS} s, last finished ${result.lastRunFinishedAfterS} s)`,
      target: "≥ 300 runs/s",
      met: runsPerSecond >= 300 && runs.length === BURST
    })
    return result
  } finally {
    await b.close()
  }
}

// ---------------------------------------------------------------- 4. scheduler failover

const schedulerHere = (node: TestNode) => {
  const out = node.output()
  return out.split("scheduler: running on this node").length > out.split("scheduler: stopped on this node").length
}

const failover = async (rows: Array<Row>) => {
  log(`failover: 2 nodes, a 1 s trigger, SIGKILL of the scheduler's node after ${FAILOVER_SECONDS} s`)
  const env = { TROUPE_PUBLIC_URL: "http://troupe.bench", TROUPE_LOG_LEVEL: "info" }
  const b = await boot(env)
  try {
    const peer: TestNode = await b.server.startPeer({ ...ENV, ...env })
    const fn = await b.call("POST", "/compute-functions", { name: "noop", code: NOOP })
    const trigger = await b.call("POST", "/function-triggers", {
      name: "every-second",
      functionId: fn.id,
      executionType: "scheduled",
      triggerMetadata: { interval: 1 }
    })
    await sleep(FAILOVER_SECONDS * 1000)
    const nodes: Array<TestNode> = [b.server, peer]
    const scheduler = nodes.find(schedulerHere)
    if (scheduler === undefined) throw new Error("no node logs 'scheduler: running on this node'")
    const survivor = scheduler === peer ? b.server : peer
    const killedAt = new Date()
    await scheduler.stop("SIGKILL")
    const deadline = Date.now() + 60_000
    while (Date.now() < deadline) {
      const [r] = await b.db`SELECT count(*)::int AS n FROM function_runs
        WHERE trigger_id = ${trigger.id} AND created_at > ${killedAt}`
      if (r!.n >= 3) break
      await sleep(100)
    }
    const ticks = await b.db<Array<{ scheduledFor: Date; createdAt: Date; tickMs: number }>>`
      SELECT scheduled_for AS "scheduledFor", created_at AS "createdAt",
        EXTRACT(EPOCH FROM (created_at - scheduled_for)) * 1000 AS "tickMs"
      FROM function_runs WHERE trigger_id = ${trigger.id} ORDER BY scheduled_for`
    const before = ticks.filter((t) => t.createdAt.getTime() <= killedAt.getTime())
    const after = ticks.filter((t) => t.createdAt.getTime() > killedAt.getTime())
    const last = before[before.length - 1]
    const first = after[0]
    const duplicates = ticks.length - new Set(ticks.map((t) => t.scheduledFor.getTime())).size
    const anchor = Date.parse(trigger.nextRunAt)
    const lastTick = ticks[ticks.length - 1]
    const gridPoints = lastTick === undefined ? 0 : Math.round((lastTick.scheduledFor.getTime() - anchor) / 1000) + 1
    const resumeS = first === undefined ? NaN : round((first.createdAt.getTime() - killedAt.getTime()) / 1000, 2)
    const result = {
      killed: scheduler === peer ? "peer" : "first",
      survivorTookOver: schedulerHere(survivor),
      ticksBefore: before.length,
      ticksAfter: after.length,
      killToFirstTickS: resumeS,
      gapByCreatedAtS: first && last ? round((first.createdAt.getTime() - last.createdAt.getTime()) / 1000, 2) : NaN,
      gapByScheduledForS: first && last ? round((first.scheduledFor.getTime() - last.scheduledFor.getTime()) / 1000, 2) : NaN,
      collapsedTicks: gridPoints - ticks.length + duplicates,
      firstAfterTickLatenessMs: first ? round(Number(first.tickMs)) : NaN,
      duplicates
    }
    log("  ", result)
    rows.push({
      scenario: "scheduler failover (2 nodes, SIGKILL)",
      measured: `resumed ${resumeS} s after the kill; gap ${result.gapByCreatedAtS} s by createdAt, ${result.gapByScheduledForS} s by scheduledFor; ${result.collapsedTicks} collapsed; dup ${duplicates}`,
      target: "resume ≤ 10 s, 0 dup",
      met: resumeS <= 10 && duplicates === 0
    })
    return result
  } finally {
    await b.close()
  }
}

// ---------------------------------------------------------------- main

const main = async () => {
  const rows: Array<Row> = []
  const results: Record<string, unknown> = { backend: "postgresql", env: EXTRA_ENV }
  const scenarios: Array<[string, (rows: Array<Row>) => Promise<unknown>]> = [
    ["lateness", lateness],
    ["events", events],
    ["burst", burst],
    ["failover", failover]
  ]
  for (const [name, run] of scenarios) {
    if (!ONLY.has(name)) continue
    results[name] = await run(rows)
  }
  if (JSON_OUTPUT) {
    console.log(JSON.stringify({ ...results, table: rows }))
    return
  }
  const widths = [0, 1, 2].map((i) =>
    Math.max(...[["scenario", "measured", "target"][i]!.length, ...rows.map((r) => [r.scenario, r.measured, r.target][i]!.length)])
  )
  const line = (cells: Array<string>) => `| ${cells.map((c, i) => c.padEnd(widths[i] ?? 4)).join(" | ")} |`
  console.log()
  console.log(line(["scenario", "measured", "target", "met?"]))
  console.log(line(widths.map((w) => "-".repeat(w)).concat("----")))
  for (const r of rows) console.log(line([r.scenario, r.measured, r.target, r.met ? "yes" : "NO"]))
}

main().catch((e) => {
  console.error(e)
  process.exit(1)
})
