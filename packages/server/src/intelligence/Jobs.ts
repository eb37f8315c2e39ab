// The jobs of the service, run by any node: a node claims the oldest queued job (or a running one whose node
// stopped beating for STALE_SECONDS) and runs it, resuming where it stopped. A discovery scan keeps its cursor and
// partial profile after every page; analyses and validation scans read their fields' values and keep them with their
// cursor every CHECKPOINT_PAGES pages (the values so far are rewritten each time, so not after every page), so a
// takeover reads only the records past the last checkpoint. Findings are deduplicated by signature besides, so a
// page read twice raises nothing twice.
import type { Structure } from "@troupe/api/structures/Structure"
import { Cause, Effect } from "effect"
import type { StructureService } from "../structures/StructureService.ts"
import { missingSpike, outliers, rareValues, type Sample, typeMismatches, volumeSpike } from "./Anomalies.ts"
import { autoApply } from "./AutoApply.ts"
import { checkField } from "./Checks.ts"
import { infer } from "./Inference.ts"
import type { IntelligenceRepo, JobRow, RecordSlice } from "./IntelligenceRepo.ts"
import type { ModelChecker } from "./ModelChecks.ts"
import { emptyProfile, mergeProfiles, type Profile, profileRecord } from "./Profile.ts"
import { aiConfigOf, anomalyConfigOf } from "./Settings.ts"

export const STALE_SECONDS = 60
const PAGE = 200
/** Most records an analysis or validation scan reads (documented in docs/intelligence.md). */
export const MAX_ANALYSED = 50_000

/** Pages an analysis or validation scan reads between two checkpoints. */
export const CHECKPOINT_PAGES = 10

/** What an analysis or validation scan keeps at a checkpoint (with its cursor): the fields and the values so far. */
interface Checkpoint {
  readonly fields?: ReadonlyArray<string>
  readonly records?: ReadonlyArray<RecordSlice>
}

export interface Outcome {
  readonly scanned: number
  readonly produced: number
}

export const makeJobs = (deps: {
  readonly repo: IntelligenceRepo["Service"]
  readonly structures: StructureService["Service"]
  readonly model: ModelChecker
  /** records per page of analyses and validation scans (PAGE; tests take small pages to see checkpoints) */
  readonly page?: number
}) => {
  const { model, repo, structures } = deps
  const pageSize = deps.page ?? PAGE

  const limitsOf = (s: Structure) => ({
    maxKeysPerRecord: s.schemaDiscoveryConfig.maxKeysPerRecord,
    maxNestingDepth: s.schemaDiscoveryConfig.maxNestingDepth,
    maxStringLengthSampled: s.schemaDiscoveryConfig.maxStringLengthSampled
  })

  /**
   * Values of the named top-level fields over the structure's live records (at most MAX_ANALYSED), each record with
   * just those fields; a job taken over continues from its last checkpoint when that read the same fields.
   */
  const samplesOf = (job: JobRow, fields: ReadonlyArray<string>) =>
    Effect.gen(function* () {
      const saved = job.state as Checkpoint
      const resumed = job.cursor !== null && Array.isArray(saved.records) && JSON.stringify(saved.fields) === JSON.stringify(fields)
      const rows: Array<RecordSlice> = resumed ? [...saved.records!] : []
      let cursor = resumed ? job.cursor : null
      let pages = 0
      while (rows.length < MAX_ANALYSED) {
        const page: Array<RecordSlice> = yield* repo.records(job.structureId, cursor, Math.min(pageSize, MAX_ANALYSED - rows.length))
        if (page.length === 0) break
        for (const r of page)
          rows.push({ id: r.id, data: Object.fromEntries(fields.filter((f) => f in r.data).map((f) => [f, r.data[f]])) })
        cursor = page[page.length - 1]!.id
        if (++pages % CHECKPOINT_PAGES === 0) {
          yield* repo.progress(job.id, { cursor, scanned: rows.length, produced: 0, state: { fields, records: rows } satisfies Checkpoint })
        } else yield* repo.counted(job.id, rows.length)
      }
      const samples = new Map<string, Array<Sample>>(
        fields.map((f) => [f, rows.flatMap((r) => (f in r.data ? [{ id: r.id, value: r.data[f] }] : []))])
      )
      return { samples, rows }
    })

  const discoveryScan = (job: JobRow, structure: Structure) =>
    Effect.gen(function* () {
      let profile: Profile = (job.state.profile as Profile | undefined) ?? emptyProfile()
      let cursor = job.cursor
      let scanned = job.scanned
      const limits = limitsOf(structure)
      while (true) {
        const page = yield* repo.records(job.structureId, cursor, Math.max(PAGE, structure.schemaDiscoveryConfig.batchSize))
        if (page.length === 0) break
        const batch = emptyProfile()
        for (const r of page) profileRecord(batch, r.data, limits)
        profile = mergeProfiles(profile, batch)
        cursor = page[page.length - 1]!.id
        scanned += page.length
        yield* repo.progress(job.id, { cursor, scanned, produced: 0, state: { profile } })
      }
      yield* repo.putProfile(job.workspace, job.structureId, "scan", profile, 0)
      const added = yield* repo.addSchemaSuggestions(job.workspace, job.structureId, infer(structure, profile))
      return { scanned, produced: added.length }
    })

  const discoveryTrigger = (job: JobRow, structure: Structure) =>
    Effect.gen(function* () {
      const { profile } = yield* repo.getProfile(job.structureId, "observed")
      const added = yield* repo.addSchemaSuggestions(job.workspace, job.structureId, infer(structure, profile))
      // only the pending count: writing the profile back would undo what the observer merged meanwhile
      yield* repo.resetPending(job.structureId, "observed")
      yield* autoApply({ repo, structures }, job.workspace, job.structureId, added)
      return { scanned: profile.records, produced: added.length }
    })

  /** Every top-level field with a value in the records, when the config names none. */
  const fieldsOf = (structure: Structure, configured: ReadonlyArray<string>, types: ReadonlyArray<string>) =>
    configured.length > 0 ? configured : structure.properties.filter((p) => types.includes(p.type)).map((p) => p.name)

  const anomalyAnalysis = (job: JobRow, structure: Structure) =>
    Effect.gen(function* () {
      const config = anomalyConfigOf(yield* repo.getConfig(job.structureId, "anomaly"))
      const fields = fieldsOf(structure, config.fields, ["number", "string"])
      const { rows, samples } = yield* samplesOf(job, fields)
      const found = fields.flatMap((f) => {
        const s = samples.get(f)!
        return [...outliers(f, s, config.sensitivity), ...typeMismatches(f, s), ...rareValues(f, s)]
      })
      // the last 24 hours against the days before: write volume, and the share of missing values per field
      const days = yield* repo.dailyCounts(structure.id)
      found.push(...volumeSpike(days, config.sensitivity))
      const today = days[days.length - 1]?.day
      if (today !== undefined) {
        for (const f of fields) {
          const counts = yield* repo.missingCounts(structure.id, f)
          found.push(...missingSpike(f, today, counts.recent, counts.baseline))
        }
      }
      const produced = yield* repo.addInsights(job.workspace, { id: structure.id, slug: structure.recordSlug }, found)
      return { scanned: rows.length, produced }
    })

  const validationScan = (job: JobRow, structure: Structure) =>
    Effect.gen(function* () {
      const config = aiConfigOf(yield* repo.getConfig(job.structureId, "ai"))
      const fields = fieldsOf(structure, config.fields, ["number", "string"])
      const { rows, samples } = yield* samplesOf(job, fields)
      const findings = fields.flatMap((f) => checkField(f, samples.get(f)!))
      let produced = yield* repo.addValidationSuggestions(job.workspace, job.structureId, job.id, "check", findings)
      if (config.rules.length > 0 && model.configured) {
        // the model only suggests; a failed batch ends the scan as failed, after the checks' suggestions were kept
        const suggested = yield* model.check(config.rules, fields, rows)
        produced += yield* repo.addValidationSuggestions(job.workspace, job.structureId, job.id, "model", suggested)
      }
      return { scanned: rows.length, produced }
    })

  /** Runs one claimed job to its end and records the outcome. */
  const run = (job: JobRow): Effect.Effect<void> =>
    Effect.gen(function* () {
      const structure = yield* structures.get(job.workspace, job.structureId)
      const go =
        job.kind === "discovery_scan"
          ? discoveryScan(job, structure)
          : job.kind === "discovery_trigger"
            ? discoveryTrigger(job, structure)
            : job.kind === "anomaly_analysis"
              ? anomalyAnalysis(job, structure)
              : validationScan(job, structure)
      return yield* go
    }).pipe(
      Effect.matchCauseEffect({
        onSuccess: (o: Outcome) => repo.finishJob(job.id, { status: "completed", scanned: o.scanned, produced: o.produced, error: null }),
        onFailure: (cause) => repo.finishJob(job.id, { status: "failed", scanned: 0, produced: 0, error: errorText(cause) })
      }),
      Effect.catchCause((cause) => Effect.logWarning(`intelligence: job ${job.id} could not be recorded`, cause))
    )

  return { run }
}

/** The failure as one line: a domain error's message (a model batch error names what went wrong). */
const errorText = (cause: Cause.Cause<unknown>): string => {
  const e = Cause.squash(cause) as { message?: unknown } | undefined
  return (typeof e?.message === "string" && e.message.length > 0 ? e.message : "the job failed").slice(0, 500)
}
