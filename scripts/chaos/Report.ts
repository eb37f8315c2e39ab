// The chaos run's table: what was checked (lost writes, events, SSE gaps, ticks) and what was measured (each key's
// unavailability, the singletons' resumption, the cluster's own failover timeline, 5xx per phase), with the targets.
import type { Phases } from "./Client.ts"
import type { Stretch } from "./Load.ts"

export const secs = (ms: number | undefined) => (ms === undefined || Number.isNaN(ms) ? "n/a" : `${(ms / 1000).toFixed(2)} s`)

interface Spread {
  readonly max: number
  readonly p99: number
  readonly over: number
}

interface Timeline {
  readonly locksBefore: number | undefined
  readonly locksLowest: number | undefined
  readonly unhealthyMs: number | undefined
  readonly expiredMs: number | undefined
  readonly locksRecoveredMs: number | undefined
}

export interface Results {
  readonly acknowledgedWrites: number
  readonly records: number
  readonly lostWrites: number
  readonly failedWrites: number
  readonly failedWritesApplied: number
  readonly committedEvents: number
  readonly lostEvents: number
  readonly unrelayedEvents: number
  readonly acksWithoutEvent: number
  readonly duplicateDeliveries: number
  readonly sseGaps: number
  readonly sseRepeats: number
  readonly sseOutOfOrder: number
  readonly sseResumes: number
  readonly ticks: number
  readonly duplicateTicks: number
  readonly longestTickGapMs: number
  readonly unavailableMaxMs: number
  readonly unavailableP99Ms: number
  readonly killPhaseUnavailable: Spread
  readonly rollingPhaseUnavailable: Spread
  readonly relayResumeMs: number | undefined
  readonly relayResumeOn: string | undefined
  readonly schedulerResumeMs: number | undefined
  readonly schedulerFirstTickAfterKillMs: number | undefined
  readonly relayHandoverOnTermMs: number | undefined
  readonly schedulerHandoverOnTermMs: number | undefined
  readonly longestRelayDelayMs: number
  readonly killTimeline: Timeline
  readonly termTimeline: Timeline
  readonly drainMs: number
  readonly termExitCode: number | null
  readonly writeFailures: Record<string, number>
  readonly lostWriteSamples: ReadonlyArray<unknown>
  readonly lostEventSamples: ReadonlyArray<unknown>
  readonly stretches: ReadonlyArray<
    Pick<Stretch, "key" | "failures"> & { readonly ms: number; readonly fromKillMs: number; readonly fromTermMs: number }
  >
}

export const printReport = (r: {
  readonly title: string
  readonly keys: number
  readonly results: Results
  readonly phases: Phases
  readonly killed: string
  readonly terminated: string
  readonly schedulerKilled: boolean
  readonly heldAtTerm: { readonly relay: boolean; readonly scheduler: boolean }
  readonly misses: ReadonlyArray<string>
}) => {
  const x = r.results
  const count = (phase: string) => r.phases.counts.get(phase) ?? { total: 0, s5xx: 0, transport: 0, timeouts: 0 }
  const fiveHundreds = (phase: string) => `${count(phase).s5xx} of ${count(phase).total}`
  const all = [...r.phases.counts.values()]
  const spread = (s: Spread) => `${secs(s.max)} / ${secs(s.p99)} / ${s.over}`
  const locks = (t: Timeline) => `(${t.locksBefore}->${t.locksLowest})`
  const rows: Array<readonly [string, string, string]> = [
    ["acknowledged writes (records)", `${x.acknowledgedWrites} (${x.records})`, ""],
    ["lost writes", String(x.lostWrites), "0"],
    ["writes answered 5xx or unanswered (of which applied)", `${x.failedWrites} (${x.failedWritesApplied})`, ""],
    ["committed events / lost events", `${x.committedEvents} / ${x.lostEvents}`, "0 lost"],
    ["  unrelayed, acks without event", `${x.unrelayedEvents}, ${x.acksWithoutEvent}`, "0, 0"],
    ["  duplicate webhook deliveries", String(x.duplicateDeliveries), "(at least once)"],
    ["SSE gaps (6 subscribers)", String(x.sseGaps), "0"],
    ["  SSE repeats / out of order / resumes", `${x.sseRepeats} / ${x.sseOutOfOrder} / ${x.sseResumes}`, ""],
    ["scheduled runs / duplicate ticks", `${x.ticks} / ${x.duplicateTicks}`, "0 duplicates"],
    ["  longest gap between ticks", secs(x.longestTickGapMs), ""],
    [`longest unavailability per key (${r.keys} keys): max / p99`, `${secs(x.unavailableMaxMs)} / ${secs(x.unavailableP99Ms)}`, ""],
    ["  after the SIGKILL (failover, from the kill): max / p99 / keys over 5 s", spread(x.killPhaseUnavailable), "<= 5 s"],
    ["  rolling restart (from the SIGTERM): max / p99 / keys over 5 s", spread(x.rollingPhaseUnavailable), ""],
    [`relay resume after SIGKILL of ${r.killed}`, `${secs(x.relayResumeMs)}${x.relayResumeOn ? ` (on ${x.relayResumeOn})` : ""}`, ""],
    [
      "scheduler resume after SIGKILL (log / first tick)",
      r.schedulerKilled ? `${secs(x.schedulerResumeMs)} / ${secs(x.schedulerFirstTickAfterKillMs)}` : `not on ${r.killed}`,
      ""
    ],
    [
      `relay / scheduler hand-over on SIGTERM of ${r.terminated}`,
      `${r.heldAtTerm.relay ? secs(x.relayHandoverOnTermMs) : "-"} / ${r.heldAtTerm.scheduler ? secs(x.schedulerHandoverOnTermMs) : "-"}`,
      ""
    ],
    ["longest commit-to-relay delay", secs(x.longestRelayDelayMs), ""],
    [
      "after SIGKILL: runner unhealthy / heartbeat expired / shard locks back",
      `${secs(x.killTimeline.unhealthyMs)} / ${secs(x.killTimeline.expiredMs)} / ${secs(x.killTimeline.locksRecoveredMs)} ` +
        locks(x.killTimeline),
      ""
    ],
    ["after SIGTERM: shard locks back", `${secs(x.termTimeline.locksRecoveredMs)} ${locks(x.termTimeline)}`, ""],
    [`SIGTERM drain of ${r.terminated} (exit code)`, `${secs(x.drainMs)} (${x.termExitCode})`, "0"],
    ["5xx: steady", fiveHundreds("steady"), ""],
    ["5xx: kill phase", fiveHundreds("kill"), ""],
    ["5xx: rolling-restart phase", fiveHundreds("rolling"), "0"],
    [
      "timeouts / transport failures (all phases)",
      `${all.reduce((n, c) => n + c.timeouts, 0)} / ${all.reduce((n, c) => n + c.transport, 0)}`,
      ""
    ]
  ]
  const w0 = Math.max(...rows.map((row) => row[0].length))
  const w1 = Math.max(...rows.map((row) => row[1].length))
  console.log(`\n${r.title}\n`)
  console.log(`${"".padEnd(w0)}  ${"measured".padEnd(w1)}  target`)
  for (const [a, b, c] of rows) console.log(`${a.padEnd(w0)}  ${b.padEnd(w1)}  ${c}`)
  if (Object.keys(x.writeFailures).length > 0) console.log(`\nwrite failures: ${JSON.stringify(x.writeFailures)}`)
  if (r.phases.serverErrors.length > 0) {
    console.log("\n5xx answers (first 10):")
    for (const e of r.phases.serverErrors.slice(0, 10)) {
      console.log(`  ${e.phase} ${e.node} ${e.method} ${e.route} ${e.status} ${e.body}`)
    }
  }
  if (x.stretches.length > 0) {
    console.log("\nlongest unavailability stretches (from the first attempt after the key's last acknowledged write):")
    for (const s of x.stretches.slice(0, 5)) {
      const failures = s.failures.length > 0 ? `: ${s.failures.join(", ")}` : " (waiting, no failure)"
      console.log(`  key ${s.key}: ${secs(s.ms)} from kill+${secs(s.fromKillMs)} / term+${secs(s.fromTermMs)}${failures}`)
    }
  }
  if (x.lostWrites > 0) console.log(`\nlost writes (first 10): ${JSON.stringify(x.lostWriteSamples)}`)
  if (x.lostEvents > 0) console.log(`\nlost events (first 10): ${JSON.stringify(x.lostEventSamples)}`)
  console.log(r.misses.length === 0 ? "\nall targets met" : `\ntargets missed: ${r.misses.join(", ")}`)
}
