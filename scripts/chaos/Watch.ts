// Watches the cluster's own tables while the chaos run goes on (every 100 ms): the runners effect/cluster has
// registered (health flag, heartbeat age) and the shard locks held (PostgreSQL advisory locks of the cluster's
// namespace, summed over every session). From these the report tells when a dead runner was marked unhealthy, when
// its heartbeat expired, and when its shards were locked again by the survivors.
import type postgres from "postgres"

export interface Sample {
  readonly at: number
  readonly runners: ReadonlyArray<{ readonly address: string; readonly healthy: boolean; readonly ageMs: number }>
  readonly locks: number
}

export interface Watch {
  readonly samples: Array<Sample>
  readonly stop: () => Promise<void>
}

// the namespace effect/cluster gives its advisory locks: FNV-1a of "effect-cluster:cluster" (SqlRunnerStorage)
const namespace = (() => {
  const bytes = new TextEncoder().encode("effect-cluster:cluster")
  let hash = 0x811c9dc5
  for (const b of bytes) hash = Math.imul(hash ^ b, 0x01000193)
  return (hash | 0) >>> 0
})()

export const startWatch = (sql: postgres.Sql): Watch => {
  const samples: Array<Sample> = []
  let stopped = false
  const loop = (async () => {
    while (!stopped) {
      try {
        const [runners, locks] = await Promise.all([
          sql`SELECT address, healthy, extract(epoch FROM (now()::timestamp - last_heartbeat)) * 1000 AS age FROM cluster_runners`,
          sql`SELECT count(*)::int AS n FROM pg_locks WHERE locktype = 'advisory' AND granted AND classid = ${namespace}::oid`
        ])
        samples.push({
          at: Date.now(),
          runners: runners.map((r) => ({ address: String(r.address), healthy: Boolean(r.healthy), ageMs: Number(r.age) })),
          locks: Number(locks[0]!.n)
        })
      } catch {
        // the tables appear with the first node; a failed sample is skipped
      }
      await new Promise((r) => setTimeout(r, 100))
    }
  })()
  return {
    samples,
    stop: async () => {
      stopped = true
      await loop
    }
  }
}

/**
 * Between `after` (a runner at `address` died or stopped) and `until`: when it was first seen unhealthy, when its
 * heartbeat was older than `expirationMs` (or its row gone), and when the shard locks were back to what they were
 * just before.
 */
export const failoverTimeline = (samples: ReadonlyArray<Sample>, after: number, until: number, address: string, expirationMs: number) => {
  const before = [...samples].reverse().find((s) => s.at < after)
  const later = samples.filter((s) => s.at >= after && s.at < until)
  const runner = (s: Sample) => s.runners.find((r) => r.address === address)
  const unhealthy = later.find((s) => runner(s)?.healthy === false)
  const expired = later.find((s) => runner(s) === undefined || runner(s)!.ageMs > expirationMs)
  const lowest = later.reduce((min, s) => Math.min(min, s.locks), Infinity)
  const dropped = later.findIndex((s) => s.locks === lowest)
  const recovered = before === undefined ? undefined : later.slice(dropped).find((s) => s.locks >= before.locks)
  return {
    locksBefore: before?.locks,
    locksLowest: Number.isFinite(lowest) ? lowest : undefined,
    unhealthyMs: unhealthy === undefined ? undefined : unhealthy.at - after,
    expiredMs: expired === undefined ? undefined : expired.at - after,
    locksRecoveredMs: recovered === undefined ? undefined : recovered.at - after
  }
}
