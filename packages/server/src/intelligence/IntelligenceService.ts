// The service behind the data intelligence routes: settings, jobs (created here, run by any node's worker below),
// and resolving suggestions and insights. Accepting a schema suggestion is a normal structure update (a new
// version, validated, records migrated as any update does); accepting a validation suggestion is a normal record
// update made as the caller (a version, the record's events, its permissions).
import type { Principal } from "@troupe/api/Authorization"
import { badRequest, conflict, type Conflict, type NotFound, notFound, errorDetail, malformedId } from "@troupe/api/Errors"
import type {
  AiConfig,
  AiConfigInput,
  AnomalyConfig,
  AnomalyConfigInput,
  SchemaDiscoverySettings,
  SchemaDiscoverySettingsInput
} from "@troupe/api/intelligence/Intelligence"
import type { Structure } from "@troupe/api/structures/Structure"
import { Config, Context, Duration, Effect, Layer, Queue, Schedule } from "effect"
import type { SqlError } from "effect/sql/SqlError"
import { isUuid } from "../lib/Uuid.ts"
import type { Writer } from "../records/model.ts"
import { RecordWriter } from "../records/RecordEntity.ts"
import { StructureService } from "../structures/StructureService.ts"
import { applySuggestion } from "./Inference.ts"
import { insightOf, IntelligenceRepo, type JobKind, type JobRow, schemaSuggestionOf, validationOf } from "./IntelligenceRepo.ts"
import { makeJobs, STALE_SECONDS } from "./Jobs.ts"
import { makeModelChecker, modelSettings } from "./ModelChecks.ts"
import { aiConfigOf, anomalyConfigOf, checkDiscovery, mergeAi, mergeAnomaly } from "./Settings.ts"

const POLL = Duration.seconds(2)
const SCHEDULE_CHECK = Duration.seconds(60)

const statuses = {
  schema: ["pending", "accepted", "rejected"],
  insight: ["open", "acknowledged", "dismissed"],
  validation: ["pending", "accepted", "rejected"]
} as const

export interface ListParams {
  readonly page?: number | undefined
  readonly limit?: number | undefined
  readonly status?: string | undefined
  readonly collection?: string | undefined
}

const orDie = <A, E, R>(e: Effect.Effect<A, E | SqlError, R>) =>
  Effect.catchTag(e as Effect.Effect<A, SqlError, R>, "SqlError", (err) => Effect.die(err)) as Effect.Effect<A, Exclude<E, SqlError>, R>

const make = Effect.gen(function* () {
  const repo = yield* IntelligenceRepo
  const structures = yield* StructureService
  const records = yield* RecordWriter
  const model = makeModelChecker(yield* modelSettings)
  const jobs = makeJobs({ repo, structures, model })
  const wake = yield* Queue.sliding<void>(1)

  const collection = (workspace: string, idOrSlug: string) => structures.resolve(workspace, idOrSlug)

  const checkStatus = (kind: keyof typeof statuses, status: string | undefined) =>
    status === undefined || (statuses[kind] as ReadonlyArray<string>).includes(status)
      ? Effect.void
      : Effect.fail(
          badRequest({
            message: `status must be one of ${statuses[kind].join(", ")}`,
            code: "VALIDATION_ERROR",
            details: [errorDetail("status", `must be one of ${statuses[kind].join(", ")}`)]
          })
        )

  const pageOf = (q: ListParams) => {
    const page = q.page ?? 1
    const limit = q.limit ?? 50
    return { page, limit, offset: (page - 1) * limit }
  }

  const discoveryOf = (s: Structure): Effect.Effect<SchemaDiscoverySettings> =>
    Effect.map(orDie(repo.getConfig(s.id, "discovery")), (stored) => ({
      mode: s.schemaDiscoveryMode,
      config: s.schemaDiscoveryConfig,
      autoApply: stored?.autoApply === true
    }))

  const startJob = (workspace: string, idOrSlug: string, kind: JobKind, by: Principal) =>
    Effect.gen(function* () {
      const s = yield* collection(workspace, idOrSlug)
      const id = yield* orDie(repo.createJob({ workspace, structureId: s.id, kind, createdBy: by.id }))
      Queue.offerUnsafe(wake, undefined)
      return id
    })

  const byId = <A>(workspace: string, id: string, what: string, find: (w: string, id: string) => Effect.Effect<A | undefined, SqlError>) =>
    isUuid(id)
      ? Effect.flatMap(orDie(find(workspace, id)), (row) =>
          row === undefined ? Effect.fail(notFound(`${what} ${id} not found`)) : Effect.succeed(row)
        )
      : // a malformed id is the caller's mistake, not a missing thing (docs/errors.md: 400, an unknown one 404)
        Effect.fail(malformedId("id", id, `${what} id`))

  const service = {
    getDiscovery: (workspace: string, idOrSlug: string): Effect.Effect<SchemaDiscoverySettings, NotFound> =>
      Effect.flatMap(collection(workspace, idOrSlug), (s) => discoveryOf(s)),
    putDiscovery: (workspace: string, idOrSlug: string, input: SchemaDiscoverySettingsInput, by: Principal) =>
      Effect.gen(function* () {
        yield* checkDiscovery(input)
        let s = yield* collection(workspace, idOrSlug)
        if (input.mode !== undefined || input.config !== undefined) {
          s = yield* structures.update(
            workspace,
            s.id,
            {
              ...(input.mode !== undefined ? { schemaDiscoveryMode: input.mode } : {}),
              ...(input.config !== undefined ? { schemaDiscoveryConfig: input.config } : {})
            },
            by
          )
        }
        if (input.autoApply !== undefined) yield* orDie(repo.putConfig(workspace, s.id, "discovery", { autoApply: input.autoApply }))
        return yield* discoveryOf(s)
      }),
    profiles: (workspace: string, idOrSlug: string) =>
      Effect.gen(function* () {
        const s = yield* collection(workspace, idOrSlug)
        const scan = yield* orDie(repo.getProfile(s.id, "scan"))
        const observed = yield* orDie(repo.getProfile(s.id, "observed"))
        return { scan: scan.profile as any, observed: observed.profile as any }
      }),
    scan: (workspace: string, idOrSlug: string, by: Principal) => startJob(workspace, idOrSlug, "discovery_scan", by),
    trigger: (workspace: string, idOrSlug: string, by: Principal) => startJob(workspace, idOrSlug, "discovery_trigger", by),
    analyse: (workspace: string, idOrSlug: string, by: Principal) => startJob(workspace, idOrSlug, "anomaly_analysis", by),
    validate: (workspace: string, idOrSlug: string, by: Principal) => startJob(workspace, idOrSlug, "validation_scan", by),
    job: (workspace: string, id: string) => Effect.map(byId(workspace, id, "job", repo.getJob), jobView),
    batch: (workspace: string, id: string) =>
      Effect.flatMap(byId(workspace, id, "batch", repo.getJob), (job) =>
        job.kind === "validation_scan"
          ? Effect.succeed({
              id: job.id,
              structureId: job.structureId,
              status: job.status,
              scanned: job.scanned,
              suggestions: job.produced,
              error: job.error,
              createdAt: job.createdAt,
              finishedAt: job.finishedAt
            })
          : Effect.fail(notFound(`batch ${id} not found`))
      ),

    schemaSuggestions: (workspace: string, idOrSlug: string, q: ListParams) =>
      Effect.gen(function* () {
        yield* checkStatus("schema", q.status)
        const s = yield* collection(workspace, idOrSlug)
        const { limit, offset, page } = pageOf(q)
        const { rows, total } = yield* orDie(repo.schemaSuggestions({ workspace, structureId: s.id, status: q.status, limit, offset }))
        return { data: rows.map(schemaSuggestionOf), total, page, limit }
      }),
    schemaSuggestion: (workspace: string, id: string) =>
      Effect.map(byId(workspace, id, "suggestion", repo.schemaSuggestion), schemaSuggestionOf),
    acceptSchema: (workspace: string, idOrSlug: string, id: string, by: Principal) =>
      Effect.gen(function* () {
        const s = yield* collection(workspace, idOrSlug)
        const row = yield* byId(workspace, id, "suggestion", repo.schemaSuggestion)
        if (row.structure_id !== s.id) return yield* notFound(`suggestion ${id} not found`)
        const suggestion = schemaSuggestionOf(row)
        if (suggestion.status !== "pending") return yield* conflictOf(`suggestion ${id} is already ${suggestion.status}`)
        const applied = applySuggestion(s, suggestion)
        if ("conflict" in applied) return yield* conflictOf(`the suggestion conflicts with the current definition: ${applied.conflict}`)
        const structure = yield* structures.update(workspace, s.id, { properties: applied.properties }, by)
        const resolved = yield* orDie(repo.resolveSchemaSuggestion(id, "accepted", by.id))
        return { suggestion: schemaSuggestionOf(resolved), structure: structure as any }
      }),
    rejectSchema: (workspace: string, idOrSlug: string, id: string, by: Principal) =>
      Effect.gen(function* () {
        const s = yield* collection(workspace, idOrSlug)
        const row = yield* byId(workspace, id, "suggestion", repo.schemaSuggestion)
        if (row.structure_id !== s.id) return yield* notFound(`suggestion ${id} not found`)
        if (row.status === "accepted") return yield* conflictOf(`suggestion ${id} is already accepted`)
        return schemaSuggestionOf(yield* orDie(repo.resolveSchemaSuggestion(id, "rejected", by.id)))
      }),

    getAnomaly: (workspace: string, idOrSlug: string): Effect.Effect<AnomalyConfig, NotFound> =>
      Effect.flatMap(collection(workspace, idOrSlug), (s) => Effect.map(orDie(repo.getConfig(s.id, "anomaly")), anomalyConfigOf)),
    putAnomaly: (workspace: string, idOrSlug: string, input: AnomalyConfigInput) =>
      Effect.gen(function* () {
        const s = yield* collection(workspace, idOrSlug)
        const next = yield* mergeAnomaly(s, anomalyConfigOf(yield* orDie(repo.getConfig(s.id, "anomaly"))), input)
        yield* orDie(repo.putConfig(workspace, s.id, "anomaly", next))
        return next
      }),
    insights: (workspace: string, q: ListParams) =>
      Effect.gen(function* () {
        yield* checkStatus("insight", q.status)
        const structureId = q.collection === undefined ? undefined : (yield* collection(workspace, q.collection)).id
        const { limit, offset, page } = pageOf(q)
        const { rows, total } = yield* orDie(repo.insights({ workspace, structureId, status: q.status, limit, offset }))
        return { data: rows.map(insightOf), total, page, limit }
      }),
    insight: (workspace: string, id: string) => Effect.map(byId(workspace, id, "insight", repo.insight), insightOf),
    resolveInsight: (workspace: string, id: string, status: "acknowledged" | "dismissed") =>
      Effect.gen(function* () {
        const row = yield* byId(workspace, id, "insight", repo.insight)
        if (row.status === "dismissed" && status === "acknowledged") return yield* conflictOf(`insight ${id} is already dismissed`)
        return insightOf(yield* orDie(repo.resolveInsight(id, status)))
      }),

    getAi: (workspace: string, idOrSlug: string): Effect.Effect<AiConfig, NotFound> =>
      Effect.flatMap(collection(workspace, idOrSlug), (s) => Effect.map(orDie(repo.getConfig(s.id, "ai")), aiConfigOf)),
    putAi: (workspace: string, idOrSlug: string, input: AiConfigInput) =>
      Effect.gen(function* () {
        const s = yield* collection(workspace, idOrSlug)
        const next = yield* mergeAi(s, aiConfigOf(yield* orDie(repo.getConfig(s.id, "ai"))), input)
        yield* orDie(repo.putConfig(workspace, s.id, "ai", next))
        return next
      }),
    validationSuggestions: (workspace: string, q: ListParams) =>
      Effect.gen(function* () {
        yield* checkStatus("validation", q.status)
        const structureId = q.collection === undefined ? undefined : (yield* collection(workspace, q.collection)).id
        const { limit, offset, page } = pageOf(q)
        const { rows, total } = yield* orDie(repo.validationSuggestions({ workspace, structureId, status: q.status, limit, offset }))
        return { data: rows.map(validationOf), total, page, limit }
      }),
    acceptValidation: (workspace: string, id: string, writer: Writer) =>
      Effect.gen(function* () {
        const row = validationOf(yield* byId(workspace, id, "suggestion", repo.validationSuggestion))
        if (row.status !== "pending") return yield* conflictOf(`suggestion ${id} is already ${row.status}`)
        if (row.suggestedValue === null) return yield* conflictOf(`suggestion ${id} proposes no value: correct the record by hand`)
        yield* records.update({
          workspace,
          id: row.recordId,
          input: { data: { [row.field]: row.suggestedValue }, reason: `suggestion ${id}` },
          writer
        })
        return validationOf(yield* orDie(repo.resolveValidation(id, "accepted")))
      }),
    rejectValidation: (workspace: string, id: string) =>
      Effect.gen(function* () {
        const row = yield* byId(workspace, id, "suggestion", repo.validationSuggestion)
        if (row.status === "accepted") return yield* conflictOf(`suggestion ${id} is already accepted`)
        return validationOf(yield* orDie(repo.resolveValidation(id, "rejected")))
      })
  }

  // This node's worker: claims jobs (its own at once through `wake`, others' on the poll) and runs one at a time.
  const loop = Effect.gen(function* () {
    const job = yield* repo
      .claimJob(STALE_SECONDS)
      .pipe(Effect.catchCause((cause) => Effect.as(Effect.logWarning("intelligence: claiming a job failed", cause), undefined)))
    if (job !== undefined) {
      // the heartbeat keeps a long job from being taken over while it runs
      yield* jobs.run(job).pipe(Effect.raceFirst(heartbeat(job)))
      return
    }
    yield* Queue.take(wake).pipe(Effect.timeout(POLL), Effect.ignore)
  }).pipe(Effect.forever)
  const heartbeat = (job: JobRow) =>
    repo
      .beat(job.id)
      .pipe(Effect.ignore, Effect.delay(Duration.seconds(STALE_SECONDS / 3)), Effect.repeat(Schedule.forever), Effect.andThen(Effect.never))
  yield* Effect.forkScoped(loop)

  // Scheduled analyses: every minute each node queues the analyses that are due (one per structure per interval)
  const interval = yield* Config.withDefault(Config.Number("TROUPE_ANOMALY_INTERVAL_SECONDS"), 3600).pipe(Effect.orDie)
  const schedule = repo.scheduleAnalyses(Math.max(60, interval)).pipe(
    Effect.tap((n) => (n > 0 ? Effect.sync(() => Queue.offerUnsafe(wake, undefined)) : Effect.void)),
    Effect.catchCause((cause) => Effect.logWarning("intelligence: scheduling analyses failed", cause)),
    Effect.delay(SCHEDULE_CHECK),
    Effect.forever
  )
  yield* Effect.forkScoped(schedule)
  return service
})

const conflictOf = (message: string): Effect.Effect<never, Conflict> => Effect.fail(conflict({ message, code: "CONFLICT" }))

const jobView = (job: JobRow) => ({
  id: job.id,
  kind: job.kind,
  structureId: job.structureId,
  status: job.status,
  scanned: job.scanned,
  produced: job.produced,
  error: job.error,
  createdAt: job.createdAt,
  finishedAt: job.finishedAt
})

export class IntelligenceService extends Context.Service<IntelligenceService, Effect.Success<typeof make>>()(
  "@troupe/server/intelligence/IntelligenceService"
) {
  static readonly layer = Layer.effect(IntelligenceService, make)
}
