// SQL of the data intelligence service: jobs (claimed by any node, with a heartbeat and a cursor), profiles,
// per-structure config, and the three kinds of findings, each unique per structure by signature (`ON CONFLICT DO
// NOTHING`: never offered twice, rejected and dismissed ones remembered).
import { Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import type { SqlError } from "effect/sql/SqlError"
import { publish } from "../events/Outbox.ts"
import { uuidv7 } from "../lib/Uuid.ts"
import { iso, isoOrNull, json, num } from "../lib/rows.ts"
import type { Insight } from "./Anomalies.ts"
import type { Finding } from "./Checks.ts"
import type { Suggestion } from "./Inference.ts"
import { emptyProfile, type Profile } from "./Profile.ts"

type Sql<A> = Effect.Effect<A, SqlError>

export type JobKind = "discovery_scan" | "discovery_trigger" | "anomaly_analysis" | "validation_scan"

export interface JobRow {
  readonly id: string
  readonly workspace: string
  readonly structureId: string
  readonly kind: JobKind
  readonly status: "queued" | "running" | "completed" | "failed"
  readonly cursor: string | null
  readonly scanned: number
  readonly produced: number
  readonly state: Record<string, unknown>
  readonly error: string | null
  readonly createdBy: string | null
  readonly createdAt: string
  readonly finishedAt: string | null
}

const jobOf = (r: any): JobRow => ({
  id: r.id,
  workspace: r.workspace,
  structureId: r.structure_id,
  kind: r.kind,
  status: r.status,
  cursor: r.cursor ?? null,
  scanned: num(r.scanned),
  produced: num(r.produced),
  state: json(r.state) ?? {},
  error: r.error ?? null,
  createdBy: r.created_by ?? null,
  createdAt: iso(r.created_at),
  finishedAt: isoOrNull(r.finished_at)
})

/** A jsonb column read as text (a jsonb string would otherwise come back as a bare string on PGlite). */
const jsonText = (t: unknown): any => (typeof t === "string" ? JSON.parse(t) : null)

// Every read of insights and validation suggestions takes their jsonb values as text.
const insightColumns = "*, observed::text AS observed_text, expected::text AS expected_text"
const validationColumns = "*, current_value::text AS current_value_text, suggested_value::text AS suggested_value_text"
const columnsOf: Record<string, string> = {
  intel_schema_suggestions: "*",
  intel_insights: insightColumns,
  intel_validation_suggestions: validationColumns
}

export const schemaSuggestionOf = (r: any) => ({
  id: r.id as string,
  structureId: r.structure_id as string,
  kind: r.kind,
  property: json<Record<string, any>>(r.property),
  confidence: Number(r.confidence),
  sampleCount: num(r.sample_count),
  examples: json<Array<any>>(r.examples),
  explanation: r.explanation as string,
  status: r.status,
  createdAt: iso(r.created_at)
})

export const insightOf = (r: any) => ({
  id: r.id as string,
  structureId: r.structure_id as string,
  recordId: (r.record_id ?? null) as string | null,
  field: (r.field ?? null) as string | null,
  kind: r.kind,
  severity: r.severity,
  score: Number(r.score),
  message: r.message as string,
  observed: jsonText(r.observed_text),
  expected: jsonText(r.expected_text),
  status: r.status,
  createdAt: iso(r.created_at)
})

export const validationOf = (r: any) => ({
  id: r.id as string,
  structureId: r.structure_id as string,
  recordId: r.record_id as string,
  field: r.field as string,
  currentValue: jsonText(r.current_value_text),
  suggestedValue: jsonText(r.suggested_value_text),
  reason: r.reason as string,
  source: r.source,
  status: r.status,
  batchId: (r.batch_id ?? null) as string | null,
  createdAt: iso(r.created_at)
})

/** A suggestion just stored, with its id. */
export interface NewSuggestion extends Suggestion {
  readonly id: string
}

export interface Page {
  readonly workspace: string
  readonly structureId?: string | undefined
  readonly status?: string | undefined
  readonly limit: number
  readonly offset: number
}

/** Records after `cursor` in id order (live ones: not deleted, not expired). */
export interface RecordSlice {
  readonly id: string
  readonly data: Record<string, unknown>
}

const make = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  const jsonb = (v: unknown) => JSON.stringify(v ?? null)

  const page = (table: "intel_schema_suggestions" | "intel_insights" | "intel_validation_suggestions", p: Page) =>
    Effect.gen(function* () {
      const where = sql.and([
        sql`workspace = ${p.workspace}`,
        ...(p.structureId !== undefined ? [sql`structure_id = ${p.structureId}::uuid`] : []),
        ...(p.status !== undefined ? [sql`status = ${p.status}`] : [])
      ])
      const rows =
        yield* sql`SELECT ${sql.unsafe(columnsOf[table]!)} FROM ${sql(table)} WHERE ${where} ORDER BY created_at DESC, id DESC LIMIT ${p.limit} OFFSET ${p.offset}`
      const [count] = yield* sql`SELECT count(*)::int AS n FROM ${sql(table)} WHERE ${where}`
      return { rows: rows as Array<any>, total: num((count as any).n) }
    })

  return {
    createJob: (input: { workspace: string; structureId: string; kind: JobKind; createdBy: string | null }): Sql<string> => {
      const id = uuidv7()
      return Effect.as(
        sql`INSERT INTO intel_jobs (id, workspace, structure_id, kind, created_by)
          VALUES (${id}, ${input.workspace}, ${input.structureId}::uuid, ${input.kind}, ${input.createdBy})`,
        id
      )
    },
    getJob: (workspace: string, id: string): Sql<JobRow | undefined> =>
      Effect.map(sql`SELECT * FROM intel_jobs WHERE workspace = ${workspace} AND id = ${id}::uuid`, (rows) =>
        rows.length === 0 ? undefined : jobOf(rows[0])
      ),
    /** Claims the oldest queued job, or a running one whose node stopped beating (it resumes from its cursor). */
    claimJob: (staleSeconds: number): Sql<JobRow | undefined> =>
      Effect.map(
        sql`UPDATE intel_jobs SET status = 'running', heartbeat_at = now() WHERE id = (
            SELECT id FROM intel_jobs
            WHERE status = 'queued' OR (status = 'running' AND heartbeat_at < now() - make_interval(secs => ${staleSeconds}))
            ORDER BY created_at LIMIT 1 FOR UPDATE SKIP LOCKED)
          RETURNING *`,
        (rows) => (rows.length === 0 ? undefined : jobOf(rows[0]))
      ),
    /** Saves a job's progress (and beats its heart). */
    progress: (id: string, p: { cursor: string | null; scanned: number; produced: number; state: unknown }): Sql<void> =>
      Effect.asVoid(sql`UPDATE intel_jobs SET cursor = ${p.cursor}, scanned = ${p.scanned}, produced = ${p.produced},
        state = ${jsonb(p.state)}::jsonb, heartbeat_at = now() WHERE id = ${id}::uuid`),
    /** Saves how many records a job read so far (and beats its heart), leaving its checkpoint. */
    counted: (id: string, scanned: number): Sql<void> =>
      Effect.asVoid(sql`UPDATE intel_jobs SET scanned = ${scanned}, heartbeat_at = now() WHERE id = ${id}::uuid`),
    beat: (id: string): Sql<void> => Effect.asVoid(sql`UPDATE intel_jobs SET heartbeat_at = now() WHERE id = ${id}::uuid`),
    finishJob: (id: string, p: { status: "completed" | "failed"; scanned: number; produced: number; error: string | null }): Sql<void> =>
      Effect.asVoid(sql`UPDATE intel_jobs SET status = ${p.status}, scanned = ${p.scanned}, produced = ${p.produced},
        error = ${p.error}, state = '{}', finished_at = now() WHERE id = ${id}::uuid`),

    records: (structureId: string, after: string | null, limit: number): Sql<Array<RecordSlice>> =>
      Effect.map(
        sql`SELECT id, data FROM records WHERE structure_id = ${structureId}::uuid AND deleted_at IS NULL
          AND (expires_at IS NULL OR expires_at > now()) AND id > ${after ?? "00000000-0000-0000-0000-000000000000"}::uuid
          ORDER BY id LIMIT ${limit}`,
        (rows) => rows.map((r: any) => ({ id: r.id, data: json<Record<string, unknown>>(r.data) }))
      ),

    /** Records created per day over the last 15 days (by the database's clock); the last bucket is the last 24 hours. */
    dailyCounts: (structureId: string): Sql<Array<{ day: string; n: number }>> =>
      Effect.map(
        sql`SELECT floor(extract(epoch FROM now() - created_at) / 86400)::int AS ago, count(*)::int AS n
          FROM records WHERE structure_id = ${structureId}::uuid AND deleted_at IS NULL AND created_at > now() - interval '15 days'
          GROUP BY 1`,
        (rows) => {
          const byAgo = new Map(rows.map((r: any) => [num(r.ago), num(r.n)]))
          const oldest = Math.max(-1, ...byAgo.keys())
          const today = new Date().toISOString().slice(0, 10)
          return Array.from({ length: oldest + 1 }, (_, i) => oldest - i).map((ago) => ({
            day: ago === 0 ? today : `-${ago}`,
            n: byAgo.get(ago) ?? 0
          }))
        }
      ),
    /** For one field: records without a value in the last 24 hours and in the 14 days before. */
    missingCounts: (
      structureId: string,
      field: string
    ): Sql<{ recent: { missing: number; total: number }; baseline: { missing: number; total: number } }> =>
      Effect.map(
        sql`SELECT count(*) FILTER (WHERE recent)::int AS recent_total,
            count(*) FILTER (WHERE recent AND (data -> ${field}::text) IS NULL OR recent AND data -> ${field}::text = 'null'::jsonb)::int AS recent_missing,
            count(*) FILTER (WHERE NOT recent)::int AS base_total,
            count(*) FILTER (WHERE NOT recent AND ((data -> ${field}::text) IS NULL OR data -> ${field}::text = 'null'::jsonb))::int AS base_missing
          FROM (SELECT data, created_at > now() - interval '1 day' AS recent FROM records
            WHERE structure_id = ${structureId}::uuid AND deleted_at IS NULL AND created_at > now() - interval '15 days') r`,
        (rows) => {
          const r = rows[0] as any
          return {
            recent: { missing: num(r.recent_missing), total: num(r.recent_total) },
            baseline: { missing: num(r.base_missing), total: num(r.base_total) }
          }
        }
      ),
    /**
     * Queues an analysis for every structure with anomaly analysis enabled whose last one is older than
     * `intervalSeconds` (and none is waiting); on PostgreSQL under a lock, so nodes checking together add one.
     */
    scheduleAnalyses: (intervalSeconds: number): Sql<number> =>
      sql.withTransaction(
        Effect.gen(function* () {
          if (sql.driver !== "pglite") yield* sql`SELECT pg_advisory_xact_lock(7412031)`
          const rows = yield* sql`INSERT INTO intel_jobs (id, workspace, structure_id, kind, created_by)
            SELECT gen_random_uuid(), c.workspace, c.structure_id, 'anomaly_analysis', 'schedule'
            FROM intel_config c JOIN structures s ON s.id = c.structure_id AND NOT s.is_deleted
            WHERE c.kind = 'anomaly' AND (c.config ->> 'enabled')::boolean
              AND NOT EXISTS (SELECT 1 FROM intel_jobs j WHERE j.structure_id = c.structure_id AND j.kind = 'anomaly_analysis'
                AND (j.status IN ('queued', 'running') OR j.created_at > now() - make_interval(secs => ${intervalSeconds})))
            RETURNING id`
          return rows.length
        })
      ),
    getProfile: (structureId: string, source: "scan" | "observed"): Sql<{ profile: Profile; pending: number }> =>
      Effect.map(
        sql`SELECT profile, records FROM intel_profiles WHERE structure_id = ${structureId}::uuid AND source = ${source}`,
        (rows) =>
          rows.length === 0
            ? { profile: emptyProfile(), pending: 0 }
            : { profile: json<Profile>((rows[0] as any).profile), pending: num((rows[0] as any).records) }
      ),
    putProfile: (workspace: string, structureId: string, source: "scan" | "observed", profile: Profile, pending: number): Sql<void> =>
      Effect.asVoid(sql`INSERT INTO intel_profiles (structure_id, source, workspace, profile, records)
        VALUES (${structureId}::uuid, ${source}, ${workspace}, ${jsonb(profile)}::jsonb, ${pending})
        ON CONFLICT (structure_id, source) DO UPDATE SET profile = EXCLUDED.profile, records = EXCLUDED.records, updated_at = now()`),
    /** Zero the records counted since the last inference, leaving the profile (a concurrent merge is not undone). */
    resetPending: (structureId: string, source: "scan" | "observed"): Sql<void> =>
      Effect.asVoid(
        sql`UPDATE intel_profiles SET records = 0, updated_at = now() WHERE structure_id = ${structureId}::uuid AND source = ${source}`
      ),
    lockProfile: (structureId: string, source: string): Sql<void> =>
      Effect.asVoid(sql`SELECT 1 FROM intel_profiles WHERE structure_id = ${structureId}::uuid AND source = ${source} FOR UPDATE`),

    getConfig: (structureId: string, kind: "anomaly" | "ai" | "discovery"): Sql<Record<string, unknown> | undefined> =>
      Effect.map(sql`SELECT config FROM intel_config WHERE structure_id = ${structureId}::uuid AND kind = ${kind}`, (rows) =>
        rows.length === 0 ? undefined : json((rows[0] as any).config)
      ),
    putConfig: (workspace: string, structureId: string, kind: "anomaly" | "ai" | "discovery", config: unknown): Sql<void> =>
      Effect.asVoid(sql`INSERT INTO intel_config (structure_id, kind, workspace, config)
        VALUES (${structureId}::uuid, ${kind}, ${workspace}, ${jsonb(config)}::jsonb)
        ON CONFLICT (structure_id, kind) DO UPDATE SET config = EXCLUDED.config, updated_at = now()`),
    /** Structures with anomaly analysis enabled (the scheduled analysis). */
    enabledAnomalyConfigs: (): Sql<Array<{ workspace: string; structureId: string }>> =>
      Effect.map(sql`SELECT workspace, structure_id FROM intel_config WHERE kind = 'anomaly' AND (config->>'enabled')::boolean`, (rows) =>
        rows.map((r: any) => ({ workspace: r.workspace, structureId: r.structure_id }))
      ),

    /**
     * Stores new suggestions; those whose signature exists (offered, accepted or rejected before) are not offered again,
     * but a pending one takes the figures of a larger sample (a scan of every record after a sample of writes).
     */
    addSchemaSuggestions: (workspace: string, structureId: string, list: ReadonlyArray<Suggestion>): Sql<Array<NewSuggestion>> =>
      Effect.map(
        Effect.forEach(list, (s) => {
          const id = uuidv7()
          return Effect.map(
            sql`INSERT INTO intel_schema_suggestions (id, workspace, structure_id, signature, kind, property, confidence, sample_count, examples, explanation)
              VALUES (${id}, ${workspace}, ${structureId}::uuid, ${s.signature}, ${s.kind}, ${jsonb(s.property)}::jsonb, ${s.confidence},
                ${s.sampleCount}, ${jsonb(s.examples)}::jsonb, ${s.explanation})
              ON CONFLICT (structure_id, signature) DO UPDATE SET confidence = EXCLUDED.confidence,
                sample_count = EXCLUDED.sample_count, examples = EXCLUDED.examples, explanation = EXCLUDED.explanation
                WHERE intel_schema_suggestions.status = 'pending' AND intel_schema_suggestions.sample_count < EXCLUDED.sample_count
              RETURNING id, (xmax = 0) AS inserted`,
            (rows) => (rows.length === 0 || !(rows[0] as any).inserted ? [] : [{ ...s, id }])
          )
        }),
        (results) => results.flat()
      ),
    schemaSuggestions: (p: Page) => page("intel_schema_suggestions", p),
    schemaSuggestion: (workspace: string, id: string): Sql<any | undefined> =>
      Effect.map(sql`SELECT * FROM intel_schema_suggestions WHERE workspace = ${workspace} AND id = ${id}::uuid`, (rows) => rows[0]),
    resolveSchemaSuggestion: (id: string, status: "accepted" | "rejected", by: string): Sql<any> =>
      Effect.map(
        sql`UPDATE intel_schema_suggestions SET status = ${status}, resolved_by = ${by}, resolved_at = now() WHERE id = ${id}::uuid RETURNING *`,
        (rows) => rows[0]
      ),

    /** Stores new insights and publishes `anomaly.detected` for each, in one transaction; known signatures are skipped. */
    addInsights: (workspace: string, structure: { id: string; slug: string }, list: ReadonlyArray<Insight>): Sql<number> =>
      sql.withTransaction(
        Effect.gen(function* () {
          let n = 0
          for (const i of list) {
            const rows =
              yield* sql`INSERT INTO intel_insights (id, workspace, structure_id, signature, record_id, field, kind, severity, score, message, observed, expected)
              VALUES (${uuidv7()}, ${workspace}, ${structure.id}::uuid, ${i.signature}, ${i.recordId}::uuid, ${i.field}, ${i.kind}, ${i.severity},
                ${i.score}, ${i.message}, ${jsonb(i.observed)}::jsonb, ${jsonb(i.expected)}::jsonb)
              ON CONFLICT (structure_id, signature) DO NOTHING RETURNING ${sql.unsafe(insightColumns)}`
            if (rows.length === 0) continue
            n++
            const insight = insightOf(rows[0])
            yield* publish({
              workspace,
              type: "anomaly.detected",
              structureId: structure.id,
              recordSlug: structure.slug,
              recordId: i.recordId,
              payload: { event: "anomaly.detected", timestamp: insight.createdAt, workspace, structure: structure.slug, data: { insight } }
            }).pipe(Effect.provideService(SqlClient.SqlClient, sql))
          }
          return n
        })
      ),
    insights: (p: Page) => page("intel_insights", p),
    insight: (workspace: string, id: string): Sql<any | undefined> =>
      Effect.map(
        sql`SELECT ${sql.unsafe(insightColumns)} FROM intel_insights WHERE workspace = ${workspace} AND id = ${id}::uuid`,
        (rows) => rows[0]
      ),
    resolveInsight: (id: string, status: "acknowledged" | "dismissed"): Sql<any> =>
      Effect.map(
        sql`UPDATE intel_insights SET status = ${status}, resolved_at = now() WHERE id = ${id}::uuid RETURNING ${sql.unsafe(insightColumns)}`,
        (rows) => rows[0]
      ),

    addValidationSuggestions: (
      workspace: string,
      structureId: string,
      batchId: string | null,
      source: "check" | "model",
      list: ReadonlyArray<Finding>
    ): Sql<number> =>
      Effect.map(
        Effect.forEach(
          list,
          (f) =>
            sql`INSERT INTO intel_validation_suggestions (id, workspace, structure_id, signature, batch_id, record_id, field, current_value, suggested_value, reason, source)
            VALUES (${uuidv7()}, ${workspace}, ${structureId}::uuid, ${`${source}:${f.signature}`}, ${batchId}::uuid, ${f.recordId}::uuid, ${f.field},
              ${jsonb(f.currentValue)}::jsonb, ${jsonb(f.suggestedValue)}::jsonb, ${f.reason}, ${source})
            ON CONFLICT (structure_id, signature) DO NOTHING RETURNING id`
        ),
        (results) => results.reduce((n, rows) => n + rows.length, 0)
      ),
    validationSuggestions: (p: Page) => page("intel_validation_suggestions", p),
    validationSuggestion: (workspace: string, id: string): Sql<any | undefined> =>
      Effect.map(
        sql`SELECT ${sql.unsafe(validationColumns)} FROM intel_validation_suggestions WHERE workspace = ${workspace} AND id = ${id}::uuid`,
        (rows) => rows[0]
      ),
    resolveValidation: (id: string, status: "accepted" | "rejected"): Sql<any> =>
      Effect.map(
        sql`UPDATE intel_validation_suggestions SET status = ${status}, resolved_at = now() WHERE id = ${id}::uuid RETURNING ${sql.unsafe(validationColumns)}`,
        (rows) => rows[0]
      )
  }
})

export class IntelligenceRepo extends Context.Service<IntelligenceRepo, Effect.Success<typeof make>>()(
  "@troupe/server/intelligence/IntelligenceRepo"
) {
  static readonly layer = Layer.effect(IntelligenceRepo, make)
}
