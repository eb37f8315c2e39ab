/**
 * `troupe health <structure>`: the structure's data health (docs/intelligence.md). Starts a schema discovery scan, an
 * anomaly analysis and a validation scan, waits for the three jobs, then lists the pending schema suggestions, the
 * open insights and the pending corrections, each with its one-sentence reason. `--no-scan` only lists.
 *
 * @since 0.1.0
 */
import { Duration, Effect } from "effect"
import { Argument, Command, Flag } from "effect/cli"
import { CliFailure, result } from "../Output.ts"
import { TroupeApi } from "../TroupeApi.ts"

const FINAL = new Set(["completed", "failed"])

interface Report {
  readonly structure: string
  readonly jobs: ReadonlyArray<{ kind: string; status: string; error: string | null }>
  readonly suggestions: ReadonlyArray<{ id: string; kind: string; property: { name: string }; confidence: number; explanation: string }>
  readonly insights: ReadonlyArray<{ id: string; kind: string; severity: string; message: string }>
  readonly corrections: ReadonlyArray<{
    id: string
    recordId: string
    field: string
    currentValue: unknown
    suggestedValue: unknown
    reason: string
  }>
}

const lines = (r: Report): Array<string> => [
  ...r.jobs.filter((j) => j.status === "failed").map((j) => `${j.kind} failed: ${j.error ?? "unknown error"}`),
  `${r.suggestions.length} schema suggestion(s)`,
  ...r.suggestions.map((s) => `  ${s.id} ${s.kind} ${s.property.name} (${Math.round(s.confidence * 100)} %): ${s.explanation}`),
  `${r.insights.length} open insight(s)`,
  ...r.insights.map((i) => `  ${i.id} ${i.kind} ${i.severity}: ${i.message}`),
  `${r.corrections.length} correction(s)`,
  ...r.corrections.map(
    (c) => `  ${c.id} ${c.recordId} ${c.field}: ${JSON.stringify(c.currentValue)} -> ${JSON.stringify(c.suggestedValue)} (${c.reason})`
  )
]

/** @category commands */
export const health = Command.make(
  "health",
  {
    structure: Argument.String("structure").pipe(Argument.withDescription("The structure's recordSlug or id")),
    noScan: Flag.Boolean("no-scan").pipe(Flag.withDefault(false), Flag.withDescription("Only list what earlier scans found"))
  },
  (input) =>
    Effect.gen(function* () {
      const api = yield* TroupeApi
      const c = `/collections/${encodeURIComponent(input.structure)}`
      const jobs: Array<{ kind: string; status: string; error: string | null }> = []
      if (!input.noScan) {
        const started = [
          ((yield* api.call("POST", `${c}/schema-discovery/scan`)) as { jobId: string }).jobId,
          ((yield* api.call("POST", `${c}/anomaly-analysis`)) as { jobId: string }).jobId,
          ((yield* api.call("POST", `${c}/ai-validation/scan`)) as { batchId: string }).batchId
        ]
        for (const id of started) {
          let job = (yield* api.call("GET", `/intelligence-jobs/${id}`)) as { kind: string; status: string; error: string | null }
          for (let i = 0; i < 1200 && !FINAL.has(job.status); i++) {
            yield* Effect.sleep(Duration.millis(500))
            job = (yield* api.call("GET", `/intelligence-jobs/${id}`)) as typeof job
          }
          if (!FINAL.has(job.status))
            return yield* new CliFailure({ message: `the ${job.kind} job did not finish in 10 minutes`, exitCode: 1 })
          jobs.push({ kind: job.kind, status: job.status, error: job.error })
        }
      }
      const list = (path: string, query: Record<string, string>) =>
        Effect.map(api.call("GET", path, { query: { ...query, limit: "1000" } }), (r) => (r as { data: Array<any> }).data)
      const report: Report = {
        structure: input.structure,
        jobs,
        suggestions: yield* list(`${c}/schema-suggestions`, { status: "pending" }),
        insights: yield* list("/anomaly-insights", { collection: input.structure, status: "open" }),
        corrections: yield* list("/ai-validation/suggestions", { collection: input.structure, status: "pending" })
      }
      return yield* result(report, lines)
    })
).pipe(
  Command.withDescription(
    "Data health of a structure: scans it (schema discovery, anomalies, corrections) and lists what was found with why"
  ),
  Command.provide(TroupeApi.layer)
)
