// Chaos run of a three-node cluster (issue "Cluster resilience"): three nodes on a fresh PostgreSQL database under
// a mixed load spread over all of them (creates, patches, same-key upserts, continuous patches of 100 keys, a
// webhook on record.*, two resuming SSE subscribers per node, a 1 s scheduled trigger). It SIGKILLs the node that
// holds the events relay, lets the cluster fail over, SIGTERMs another node (a rolling-restart step), restarts
// both, stops the load and checks: no acknowledged write lost, every committed event delivered to the webhook, no
// SSE subscriber missing an event after resuming, no duplicate tick. It measures each key's longest unavailability,
// the relay's and the scheduler's resumption, and the 5xx of each phase, and prints them as a table.
// Usage: npm run chaos [-- --profile short] [-- --json] [-- --env KEY=VALUE ...]; DATABASE_URL defaults to the
// local PostgreSQL; CHAOS_LOGS=<dir> keeps every node's log and the raw results there.
// Exits 1 when a target is missed: 0 lost writes or events, 0 SSE gaps, 0 duplicate ticks, failover <= 5 s,
// 0 5xx in the rolling restart.
import postgres from "postgres"
import { startReceiver } from "../test/support/WebhookReceiver.ts"
import { checkEvents, checkTicks, checkWrites } from "./chaos/Checks.ts"
import { makeClient, makePhases } from "./chaos/Client.ts"
import { startLoad } from "./chaos/Load.ts"
import { type LogLine, type Member, RELAY_RUNNING, RELAY_STOPPED, SCHEDULER_RUNNING, SCHEDULER_STOPPED, startNodes } from "./chaos/Nodes.ts"
import { printReport, type Results } from "./chaos/Report.ts"
import { startSubscriber } from "./chaos/Subscriber.ts"
import { failoverTimeline, startWatch } from "./chaos/Watch.ts"

process.env.DATABASE_URL ??= "postgres://postgres@127.0.0.1:5432/test"

const arg = (name: string) => {
  const at = process.argv.indexOf(`--${name}`)
  return at > 0 ? process.argv[at + 1] : undefined
}
const PROFILE = arg("profile") ?? "full"
/** `--env K=V` (repeatable): extra environment of every node, e.g. a cluster knob to try */
const EXTRA_ENV = Object.fromEntries(
  process.argv.flatMap((a, i) => {
    if (process.argv[i - 1] !== "--env") return []
    const at = a.indexOf("=")
    return at > 0 ? [[a.slice(0, at), a.slice(at + 1)]] : []
  })
)
const JSON_OUTPUT = process.argv.includes("--json")
const profiles = {
  // seconds: steady load, after the SIGKILL, after the SIGTERM's exit before the restarts, after the restarts
  full: { steady: 10, kill: 20, down: 5, after: 15, keys: 100 },
  short: { steady: 4, kill: 12, down: 2, after: 6, keys: 60 }
} as const
const P = profiles[PROFILE as keyof typeof profiles] ?? profiles.full
const FAILOVER_TARGET_MS = 5000

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))
const log = (...a: Array<unknown>) => {
  if (!JSON_OUTPUT) console.error(`[chaos ${new Date().toISOString().slice(11, 23)}]`, ...a)
}
const percentile = (values: ReadonlyArray<number>, p: number) => {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted.length === 0 ? NaN : sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!
}

/** When a singleton next started on a node other than `except`, after `after` (ms after it). */
const takeover = (lines: ReadonlyArray<LogLine>, running: string, after: number, except: string) => {
  const line = lines.filter((l) => l.message === running && l.at >= after && l.member !== except).sort((a, b) => a.at - b.at)[0]
  return line === undefined ? undefined : { ms: line.at - after, member: line.member }
}

const main = async () => {
  log(`profile ${PROFILE}: starting 3 nodes`)
  const nodes = await startNodes(EXTRA_ENV)
  const phases = makePhases()
  const token = await nodes.server.adminToken()
  const client = makeClient(
    nodes.members.map((m) => m.slot),
    token,
    phases
  )
  const base = nodes.server.base
  const receiver = await startReceiver(() => 200)
  const sql = postgres(nodes.server.databaseUrl!, { max: 3, onnotice: () => {} })
  const watch = startWatch(sql)
  const subscribers: Array<Awaited<ReturnType<typeof startSubscriber>>> = []
  let exitCode = 0
  try {
    // setup
    const structure = await client.request("POST", `${base}/structures`, {
      start: 0,
      body: {
        name: "Chaos Item",
        recordSlug: "chaos-item",
        properties: [
          { name: "key", type: "string" },
          { name: "n", type: "number" },
          { name: "op", type: "string" }
        ]
      }
    })
    if (structure.status >= 300) throw new Error(`structure: ${structure.status} ${structure.text}`)
    const structureId = structure.body.id as string
    const hook = await client.request("POST", `${base}/webhooks`, {
      start: 0,
      body: { name: "chaos", url: `${receiver.url}/chaos`, events: ["record.*"], filters: { structure: "chaos-item" } }
    })
    if (hook.status >= 300) throw new Error(`webhook: ${hook.status} ${hook.text}`)
    const fn = await client.request("POST", `${base}/compute-functions`, {
      start: 0,
      body: { name: "chaos-tick", code: "async function run() { return { success: true, data: executionParams.scheduledFor } }" }
    })
    if (fn.status >= 300) throw new Error(`function: ${fn.status} ${fn.text}`)
    const trigger = await client.request("POST", `${base}/function-triggers`, {
      start: 0,
      body: { name: "chaos-every-second", functionId: fn.body.id, executionType: "scheduled", triggerMetadata: { interval: 1 } }
    })
    if (trigger.status >= 300) throw new Error(`trigger: ${trigger.status} ${trigger.text}`)

    // subscribers first: each owes every event of the structure
    const ssePath = `/realtime/workspace/${nodes.server.workspace}/api/v1/events?structure=chaos-item`
    for (let i = 0; i < 6; i++) {
      const name = `sse${i + 1}@n${(i % 3) + 1}`
      subscribers.push(
        await startSubscriber(
          name,
          nodes.members.map((m) => m.slot),
          i % 3,
          ssePath,
          token
        )
      )
    }
    await sleep(300)

    const keyIds: Array<string> = []
    for (let k = 0; k < P.keys; k++) {
      const body = { structureId, data: { key: `k-${k}`, n: 0, op: `key-${k}` } }
      const res = await client.request("POST", `${base}/records`, { start: k, body })
      if (res.status !== 201) throw new Error(`key ${k}: ${res.status} ${res.text}`)
      keyIds.push(res.body.id)
    }

    // load
    phases.current = "steady"
    log(`load: ${P.keys} keys, creates, patches, upserts; steady for ${P.steady} s`)
    const load = startLoad(client, {
      base,
      structureId,
      keyIds,
      keyIntervalMs: 500,
      creators: 2,
      patchers: 2,
      upserters: 3,
      upsertKeys: 4,
      pauseMs: 50
    })
    await sleep(P.steady * 1000)

    // SIGKILL the relay's node
    const relayHolder = nodes.holder(RELAY_RUNNING, RELAY_STOPPED)
    const schedulerHolder = nodes.holder(SCHEDULER_RUNNING, SCHEDULER_STOPPED)
    const victim: Member = relayHolder ?? nodes.members[0]!
    log(`relay on ${relayHolder?.name ?? "?"}, scheduler on ${schedulerHolder?.name ?? "?"}: SIGKILL ${victim.name}`)
    phases.current = "kill"
    const killAt = Date.now()
    await victim.node().stop("SIGKILL")
    await sleep(P.kill * 1000)

    // a rolling-restart step: SIGTERM the node now running the relay (else the scheduler, else any survivor)
    const survivors = nodes.members.filter((m) => m !== victim)
    const termTarget = nodes.holder(RELAY_RUNNING, RELAY_STOPPED) ?? nodes.holder(SCHEDULER_RUNNING, SCHEDULER_STOPPED) ?? survivors[0]!
    const heldAtTerm = {
      relay: nodes.holder(RELAY_RUNNING, RELAY_STOPPED) === termTarget,
      scheduler: nodes.holder(SCHEDULER_RUNNING, SCHEDULER_STOPPED) === termTarget
    }
    const here = (held: boolean) => (held ? "here" : "elsewhere")
    log(`SIGTERM ${termTarget.name} (relay ${here(heldAtTerm.relay)}, scheduler ${here(heldAtTerm.scheduler)})`)
    phases.current = "rolling"
    const termAt = Date.now()
    const termCode = await termTarget.node().stop("SIGTERM")
    const drainMs = Date.now() - termAt
    log(`${termTarget.name} exited ${termCode} after ${drainMs} ms`)
    await sleep(P.down * 1000)
    const restartsAt = Date.now()
    log(`restarting ${victim.name}`)
    await nodes.restart(victim)
    log(`restarting ${termTarget.name}`)
    await nodes.restart(termTarget)
    const restartedAt = Date.now()
    await sleep(P.after * 1000)

    phases.current = "settle"
    log("stopping the load")
    await load.stop()
    const loadStoppedAt = Date.now()

    log(`checking ${load.acks.length} acknowledged writes`)
    const writes = await checkWrites(client, base, load.acks)
    log("waiting for events to reach the webhook and every subscriber")
    const events = await checkEvents(sql, structureId, load.acks, receiver, subscribers, 90_000)
    const ticks = await checkTicks(sql, trigger.body.id, 1000)

    await watch.stop()
    const expirationMs = Number(nodes.env.TROUPE_CLUSTER_LOCK_EXPIRATION_SECONDS ?? 5) * 1000
    const runnerOf = (m: Member) => `127.0.0.1:${m.runnerPort}`
    const killTimeline = failoverTimeline(watch.samples, killAt, termAt, runnerOf(victim), expirationMs)
    const termTimeline = failoverTimeline(watch.samples, termAt, restartsAt, runnerOf(termTarget), expirationMs)
    const lines = nodes.lines()
    const relayAfterKill = takeover(lines, RELAY_RUNNING, killAt, victim.name)
    const schedulerAfterKill = takeover(lines, SCHEDULER_RUNNING, killAt, victim.name)
    const relayAfterTerm = heldAtTerm.relay ? takeover(lines, RELAY_RUNNING, termAt, termTarget.name) : undefined
    const schedulerAfterTerm = heldAtTerm.scheduler ? takeover(lines, SCHEDULER_RUNNING, termAt, termTarget.name) : undefined
    const schedulerKilled = schedulerHolder === victim

    const unavailable = load.longest.map((s) => (s === undefined ? Infinity : s.to - s.from))
    const maxUnavailable = Math.max(...unavailable)
    const p99Unavailable = percentile(unavailable, 99)
    // per phase: each key's longest stretch that ended in it, counted from the phase's start at the earliest (a write
    // in flight to the node when it was killed was slow, not failing, until then)
    const inPhase = (from: number, to: number) => {
      const perKey = load.byKey.map((list) =>
        Math.max(0, ...list.filter((s) => s.to >= from && s.to < to).map((s) => s.to - Math.max(s.from, from)))
      )
      const over = perKey.filter((u) => u > FAILOVER_TARGET_MS).length
      return { max: Math.max(...perKey), p99: percentile(perKey, 99), over }
    }
    const killUnavailable = inPhase(killAt, termAt)
    const rollingUnavailable = inPhase(termAt, Infinity)
    const rolling5xx = phases.counts.get("rolling")?.s5xx ?? 0
    const sseGaps = events.sse.reduce((n, s) => n + s.missing, 0)

    const results: Results & Record<string, unknown> = {
      profile: PROFILE,
      victim: victim.name,
      terminated: termTarget.name,
      acknowledgedWrites: load.acks.length,
      records: writes.records,
      lostWrites: writes.lost.length,
      committedEvents: events.committed,
      acksWithoutEvent: events.acksWithoutEvent,
      failedWrites: load.ambiguous.length,
      failedWritesApplied: load.ambiguous.filter((a) => events.ops.has(a.op)).length,
      unrelayedEvents: events.unrelayed,
      lostEvents: events.lostEvents.length,
      duplicateDeliveries: events.duplicateDeliveries,
      sseGaps,
      sseRepeats: events.sse.reduce((n, s) => n + s.repeats, 0),
      sseOutOfOrder: events.sse.reduce((n, s) => n + s.outOfOrder, 0),
      sseResumes: events.sse.reduce((n, s) => n + s.resumes, 0),
      ticks: ticks.runs,
      duplicateTicks: ticks.duplicates,
      longestTickGapMs: ticks.longestGap,
      unavailableMaxMs: maxUnavailable,
      unavailableP99Ms: p99Unavailable,
      keysOverTarget: unavailable.filter((u) => u > FAILOVER_TARGET_MS).length,
      killPhaseUnavailable: killUnavailable,
      rollingPhaseUnavailable: rollingUnavailable,
      relayResumeMs: relayAfterKill?.ms,
      relayResumeOn: relayAfterKill?.member,
      schedulerResumeMs: schedulerKilled ? schedulerAfterKill?.ms : undefined,
      schedulerFirstTickAfterKillMs: schedulerKilled ? ticks.resumeAfter(killAt) : undefined,
      relayHandoverOnTermMs: relayAfterTerm?.ms,
      schedulerHandoverOnTermMs: schedulerAfterTerm?.ms,
      longestRelayDelayMs: events.longestRelayDelay,
      killTimeline,
      termTimeline,
      drainMs,
      termExitCode: termCode,
      phases: Object.fromEntries(phases.counts),
      writeFailures: Object.fromEntries(load.failures),
      serverErrors: phases.serverErrors.slice(0, 50),
      stretches: load.stretches
        .sort((a, b) => b.to - b.from - (a.to - a.from))
        .slice(0, 10)
        .map((s) => ({
          key: s.key,
          fromKillMs: s.from - killAt,
          fromTermMs: s.from - termAt,
          fromRestartMs: s.from - restartedAt,
          ms: s.to - s.from,
          failures: s.failures.slice(0, 6)
        })),
      lostWriteSamples: writes.lost.slice(0, 10),
      lostEventSamples: events.lostEvents.slice(0, 10),
      loadStoppedAt
    }

    const misses: Array<string> = []
    if (results.lostWrites > 0) misses.push("lost writes")
    if (results.lostEvents > 0 || results.unrelayedEvents > 0 || results.acksWithoutEvent > 0) misses.push("lost events")
    if (sseGaps > 0) misses.push("SSE gaps")
    if (results.duplicateTicks > 0) misses.push("duplicate ticks")
    if (killUnavailable.max > FAILOVER_TARGET_MS) misses.push("failover > 5 s")
    if (rolling5xx > 0) misses.push("5xx in the rolling restart")
    exitCode = misses.length > 0 ? 1 : 0

    if (JSON_OUTPUT) console.log(JSON.stringify({ ...results, misses }, null, 2))
    else {
      printReport({
        title: `chaos (${PROFILE}): SIGKILL ${victim.name}, SIGTERM ${termTarget.name}, restart both`,
        keys: P.keys,
        results,
        phases,
        killed: victim.name,
        terminated: termTarget.name,
        schedulerKilled,
        heldAtTerm,
        misses
      })
    }
    if (process.env.CHAOS_LOGS) {
      const fs = await import("node:fs")
      fs.mkdirSync(process.env.CHAOS_LOGS, { recursive: true })
      for (const m of nodes.members) {
        m.lives.forEach((node, i) => fs.writeFileSync(`${process.env.CHAOS_LOGS}/${m.name}-${i}.log`, node.output()))
      }
      const raw = {
        ...results,
        killAt,
        termAt,
        restartedAt,
        allServerErrors: phases.serverErrors,
        allStretches: load.stretches,
        watch: watch.samples
      }
      fs.writeFileSync(`${process.env.CHAOS_LOGS}/results.json`, JSON.stringify(raw, null, 2))
      log(`logs in ${process.env.CHAOS_LOGS}`)
    }
  } finally {
    for (const s of subscribers) s.stop()
    await watch.stop()
    await sql.end()
    await receiver.close()
    await nodes.close()
  }
  return exitCode
}

main().then(
  (code) => process.exit(code),
  (e) => {
    console.error(e)
    process.exit(2)
  }
)
