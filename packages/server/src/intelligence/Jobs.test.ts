// Taking over a job whose node died (PGlite, or PostgreSQL when DATABASE_URL is set): a running job whose heartbeat
// stopped is claimed by another node, which continues from the job's saved cursor and partial results instead of
// starting over. The node's death is staged on the job row: running, a cursor and state as a dead node leaves them,
// and a heartbeat an hour old. What was saved differs on purpose from the records before the cursor, so the results
// show whether the takeover used it or read those records again.
import type { Structure } from "@troupe/api/structures/Structure"
import { expect, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { TEST_WORKSPACE } from "../../../../test/support/TestDatabase.ts"
import { owner, RecordServices, writer } from "../../../../test/support/TestRecords.ts"
import { RecordEngine } from "../records/write/Engine.ts"
import { StructureService } from "../structures/StructureService.ts"
import { IntelligenceRepo, type JobKind } from "./IntelligenceRepo.ts"
import { CHECKPOINT_PAGES, makeJobs, STALE_SECONDS } from "./Jobs.ts"
import type { ModelChecker } from "./ModelChecks.ts"
import { emptyProfile, profileRecord } from "./Profile.ts"

const Services = IntelligenceRepo.layer.pipe(Layer.provideMerge(RecordServices()))

const noModel: ModelChecker = { configured: false, check: () => Effect.succeed([]) }
const limits = { maxKeysPerRecord: 100, maxNestingDepth: 3, maxStringLengthSampled: 1000 }

/** A structure with 30 records `{n: 10 + i % 5}`, and their ids in the order jobs read them. */
const seeded = (slug: string) =>
  Effect.gen(function* () {
    const structure: Structure = yield* Effect.orDie(
      (yield* StructureService).create(TEST_WORKSPACE, { name: slug, recordSlug: slug, properties: [{ name: "n", type: "number" }] }, owner)
    )
    const records = yield* RecordEngine
    for (let i = 0; i < 30; i++) yield* Effect.orDie(records.create({ structure, input: { data: { n: 10 + (i % 5) } }, writer }))
    const sql = yield* SqlClient.SqlClient
    const rows = yield* Effect.orDie(sql`SELECT id, data FROM records WHERE structure_id = ${structure.id} ORDER BY id`)
    return { structure, rows: rows.map((r: any) => ({ id: String(r.id), data: typeof r.data === "string" ? JSON.parse(r.data) : r.data })) }
  })

/** A job left `running` by a dead node at `cursor` with `state`, and the cursor of every page the takeover reads. */
const takeOver = (structure: Structure, kind: JobKind, cursor: string, scanned: number, state: unknown) =>
  Effect.gen(function* () {
    const repo = yield* IntelligenceRepo
    const sql = yield* SqlClient.SqlClient
    const id = yield* Effect.orDie(repo.createJob({ workspace: TEST_WORKSPACE, structureId: structure.id, kind, createdBy: owner.id }))
    const stage = (heartbeat: string) =>
      Effect.orDie(sql`UPDATE intel_jobs SET status = 'running', heartbeat_at = now() - ${heartbeat}::interval, cursor = ${cursor},
        scanned = ${scanned}, state = ${JSON.stringify(state)}::jsonb WHERE id = ${id}::uuid`)
    // still beating: nobody takes it
    yield* stage("1 second")
    expect(yield* Effect.orDie(repo.claimJob(STALE_SECONDS))).toBeUndefined()
    yield* stage("1 hour")
    const claimed = yield* Effect.orDie(repo.claimJob(STALE_SECONDS))
    expect(claimed).toMatchObject({ id, status: "running", cursor, scanned })
    const reads: Array<string | null> = []
    const spied = {
      ...repo,
      records: (s: string, after: string | null, limit: number) => {
        reads.push(after)
        return repo.records(s, after, limit)
      }
    }
    const structures = yield* StructureService
    yield* makeJobs({ repo: spied, structures, model: noModel }).run(claimed!)
    return { job: (yield* Effect.orDie(repo.getJob(TEST_WORKSPACE, id)))!, reads }
  })

layer(Services)("intelligence jobs taken over", (it) => {
  it.effect("a discovery scan continues from its cursor with its partial profile", () =>
    Effect.gen(function* () {
      const { rows, structure } = yield* seeded("resumed-scan")
      // the dead node's partial profile of the first 10 records, marked with a field no record has
      const partial = emptyProfile()
      for (const r of rows.slice(0, 10)) profileRecord(partial, { ...r.data, planted: "from the checkpoint" }, limits)
      const { job, reads } = yield* takeOver(structure, "discovery_scan", rows[9]!.id, 10, { profile: partial })
      expect(reads[0]).toBe(rows[9]!.id)
      expect(job).toMatchObject({ status: "completed", scanned: 30 })
      const { profile } = yield* Effect.orDie((yield* IntelligenceRepo).getProfile(structure.id, "scan"))
      expect(profile.records).toBe(30)
      expect(profile.fields.n!.count).toBe(30)
      expect(profile.fields.planted!.count).toBe(10)
    })
  )

  it.effect("an anomaly analysis continues from its checkpoint; one that read other fields starts over", () =>
    Effect.gen(function* () {
      const { rows, structure } = yield* seeded("resumed-analysis")
      // the checkpoint holds the first 10 records' values, one of them an outlier the records do not have
      const saved = rows.slice(0, 10).map((r, i) => ({ id: r.id, data: { n: i === 3 ? 9000 : r.data.n } }))
      const { job, reads } = yield* takeOver(structure, "anomaly_analysis", rows[9]!.id, 10, { fields: ["n"], records: saved })
      expect(reads[0]).toBe(rows[9]!.id)
      expect(job).toMatchObject({ status: "completed", scanned: 30, produced: 1 })
      const repo = yield* IntelligenceRepo
      const found = yield* Effect.orDie(repo.insights({ workspace: TEST_WORKSPACE, structureId: structure.id, limit: 10, offset: 0 }))
      expect(found.rows.map((r: any) => [r.record_id, r.kind])).toEqual([[rows[3]!.id, "outlier"]])

      const other = yield* takeOver(structure, "validation_scan", rows[9]!.id, 10, { fields: ["m"], records: saved })
      expect(other.reads[0]).toBeNull()
      expect(other.job).toMatchObject({ status: "completed", scanned: 30 })
    })
  )

  it.effect("an analysis saves its cursor and values every CHECKPOINT_PAGES pages", () =>
    Effect.gen(function* () {
      const { rows, structure } = yield* seeded("checkpointed")
      const repo = yield* IntelligenceRepo
      const saved: Array<{ cursor: string | null; state: any }> = []
      const spied = {
        ...repo,
        progress: (id: string, p: Parameters<typeof repo.progress>[1]) => {
          saved.push(structuredClone(p))
          return repo.progress(id, p)
        }
      }
      const id = yield* Effect.orDie(
        repo.createJob({ workspace: TEST_WORKSPACE, structureId: structure.id, kind: "anomaly_analysis", createdBy: owner.id })
      )
      const job = (yield* Effect.orDie(repo.claimJob(STALE_SECONDS)))!
      expect(job.id).toBe(id)
      // pages of 2 records: a checkpoint after every 2 * CHECKPOINT_PAGES records, so one within the 30
      yield* makeJobs({ repo: spied, structures: yield* StructureService, model: noModel, page: 2 }).run(job)
      const at = 2 * CHECKPOINT_PAGES
      expect(saved.map((p) => p.cursor)).toEqual([rows[at - 1]!.id])
      expect(saved[0]!.state).toEqual({ fields: ["n"], records: rows.slice(0, at).map((r) => ({ id: r.id, data: { n: r.data.n } })) })
      expect(yield* Effect.orDie(repo.getJob(TEST_WORKSPACE, id))).toMatchObject({ status: "completed", scanned: 30, state: {} })
    })
  )
})
