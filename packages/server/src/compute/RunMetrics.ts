// Metrics of function runs (GET /metrics, README "What to watch on /metrics"): runs finished on this node by status
// and execution source, their duration, and the runs running here and queued in the whole cluster.
import { Effect, Metric } from "effect"
import { latencyBuckets, seriesCache } from "../platform/Metrics.ts"
import type { RunRepo } from "./RunRepo.ts"

type FinalStatus = "completed" | "failed" | "timed_out"

const runsSeries = seriesCache((attributes) =>
  Metric.counter("troupe_function_runs_total", {
    description: "Function runs finished by this node, by final status (completed, failed, timed_out) and execution source",
    incremental: true,
    attributes
  })
)

const durationSeries = seriesCache((attributes) =>
  Metric.histogram("troupe_function_run_duration_seconds", {
    description: "Wall-clock time of a function run in the sandbox, in seconds, by final status",
    boundaries: latencyBuckets,
    attributes
  })
)

/** Runs executing on this node. */
export const runsRunning = Metric.gauge("troupe_function_runs_running", {
  description: "Function runs executing on this node"
})

/** Runs waiting for a slot anywhere in the cluster (the database's count, at scrape time). */
export const runsQueued = Metric.gauge("troupe_function_runs_queued", {
  description: "Function runs queued in the cluster, waiting for a free slot on any node (read from the database when scraped)"
})

/** Counts a finished run; `durationMs` undefined when it never ran here (a run failed as node lost). */
export const recordRun = (status: FinalStatus, source: string, durationMs: number | undefined) =>
  Effect.andThen(
    Metric.update(
      runsSeries(`${status} ${source}`, () => ({ status, source })),
      1
    ),
    durationMs === undefined
      ? Effect.void
      : Metric.update(
          durationSeries(status, () => ({ status })),
          durationMs / 1000
        )
  )

/** Sets troupe_function_runs_queued from the database (for MetricsScrape). */
export const refreshQueuedRuns = (runs: RunRepo["Service"]) => runs.countQueued.pipe(Effect.flatMap((n) => Metric.update(runsQueued, n)))
