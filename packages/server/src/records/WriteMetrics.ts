// Metrics of the group commit (GET /metrics, README "What to watch on /metrics"): how many record writes each
// transaction carried, and how often a batch failed as a whole and was written again one by one.
import { Effect, Metric } from "effect"
import { seriesCache } from "../platform/Metrics.ts"

export type WriteKind = "create" | "update" | "delete" | "upsert"

const batchSeries = seriesCache((attributes) =>
  Metric.histogram("troupe_record_write_batch_size", {
    description: "Record writes committed together in one transaction (group commit), by kind (create, update, delete, upsert)",
    boundaries: [1, 2, 4, 8, 16, 32, 64, 128, 256],
    attributes
  })
)

const fallbackSeries = seriesCache((attributes) =>
  Metric.counter("troupe_record_write_batch_retries_total", {
    description: "Batches of record writes that failed as a whole (a bad item, a taken unique value) and were written one by one",
    incremental: true,
    attributes
  })
)

/** Counts a batch of `size` writes of `kind` as it is written. */
export const observeBatch = (kind: WriteKind, size: number) =>
  Metric.update(
    batchSeries(kind, () => ({ kind })),
    size
  )

/** Counts a batch written again one by one. */
export const observeRetry = (kind: WriteKind) =>
  Effect.asVoid(
    Metric.update(
      fallbackSeries(kind, () => ({ kind })),
      1
    )
  )
