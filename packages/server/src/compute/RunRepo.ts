// SQL of function runs, the durable jobs of compute. A run is inserted `queued` (every node's worker is woken after
// commit, on troupe_runs) or, when the inserting node runs it at once, `running` with that node's lease. Nodes claim
// queued runs with `FOR UPDATE SKIP LOCKED`, renew the leases of what they run, and finish runs in batches: final
// status and the function.completed / function.failed event in one statement. A running run whose lease expired (its
// node died) is failed as "node lost", never run again on its own.
import { Clock, Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import type { SqlError } from "effect/sql/SqlError"
import { appendEvents, EVENTS_CHANNEL, type OutboxEvent } from "../events/Outbox.ts"
import { notifyAfterCommit } from "../events/Wake.ts"
import { type ActingAs, type RunRow, runRow } from "./model.ts"

/** Channel of run wake-ups (payload: the run id, a hint only). */
export const RUNS_CHANNEL = "troupe_runs"

export interface NewRun {
  readonly id: string
  readonly workspace: string
  readonly functionId: string | null
  readonly triggerId: string | null
  readonly source: string
  readonly code: string | null
  readonly codeHash: string | null
  readonly parameters: string
  readonly executionContext: Record<string, unknown>
  readonly actingAs: ActingAs | null
  readonly depth: number
  readonly isRerun?: boolean
  readonly originalRunId?: string | null
  readonly rerunBy?: string | null
  readonly rerunReason?: string | null
  /** ISO; scheduled ticks (unique per trigger) */
  readonly scheduledFor?: string | null
  readonly fired?: FiredTrigger | undefined
  /** stored already failed with this error */
  readonly error?: string | undefined
}

/** The trigger a run was fired by, for its `trigger.fired` event. */
export interface FiredTrigger {
  readonly name: string
  readonly executionType: string
}

/** `trigger.fired`: a trigger queued (or started) a run. */
const firedEvent = (run: NewRun, at: string): OutboxEvent => ({
  workspace: run.workspace,
  type: "trigger.fired",
  payload: {
    event: "trigger.fired",
    timestamp: at,
    workspace: run.workspace,
    data: {
      triggerId: run.triggerId,
      triggerName: run.fired?.name ?? null,
      executionType: run.fired?.executionType ?? null,
      functionId: run.functionId,
      runId: run.id,
      executionSource: run.source,
      ...(run.scheduledFor ? { scheduledFor: run.scheduledFor } : {})
    }
  }
})

/** A claimed run with what executing it needs: the function's current code, the trigger's stored params. */
export interface ClaimedRun {
  readonly run: RunRow
  /** the code to run: the function's current code, or the run's own (test executions) */
  readonly code: string | null
  readonly triggerParams: unknown
  readonly triggerName: string | null
  /** the function's version and code hash at claim time (null for test executions and deleted functions) */
  readonly functionVersion: number | null
  readonly functionCodeHash: string | null
}

export interface Finished {
  readonly id: string
  readonly status: "completed" | "failed" | "timed_out"
  readonly result: unknown
  readonly error: string | null
  readonly logs: ReadonlyArray<unknown>
  readonly durationMs: number
  readonly memoryUsageBytes: number
  readonly cpuUsageSeconds: number
  readonly functionCodeHash: string | null
  readonly functionVersion: string | null
}

const CLAIMED_COLUMNS =
  "r.*, f.code AS fn_code, f.version AS fn_version, f.code_hash AS fn_hash, t.metadata AS trigger_metadata, t.name AS trigger_name"

const claimed = (r: any): ClaimedRun => {
  const run = runRow(r)
  const metadata =
    r.trigger_metadata === null || r.trigger_metadata === undefined
      ? {}
      : typeof r.trigger_metadata === "string"
        ? JSON.parse(r.trigger_metadata)
        : r.trigger_metadata
  return {
    run,
    code: run.code ?? r.fn_code ?? null,
    triggerParams: metadata?.params ?? {},
    triggerName: r.trigger_name ?? null,
    functionVersion: r.fn_version === null || r.fn_version === undefined ? null : Number(r.fn_version),
    functionCodeHash: r.fn_hash ?? null
  }
}

export class RunRepo extends Context.Service<
  RunRepo,
  {
    /** Inserts queued runs and wakes every node (on commit). */
    readonly enqueue: (runs: ReadonlyArray<NewRun>) => Effect.Effect<ReadonlyArray<RunRow>, SqlError>
    /**
     * Inserts runs submitted together in one statement: each `running` with `owner`'s lease (it runs on this node at
     * once) or, with a null owner, `queued` (every node woken on commit); with the code and trigger params each runs
     * with, in the order given (undefined for a run that was not stored).
     */
    readonly store: (
      items: ReadonlyArray<{ readonly run: NewRun; readonly owner: string | null }>,
      leaseMs: number
    ) => Effect.Effect<ReadonlyArray<ClaimedRun | undefined>, SqlError>
    /** Claims up to `n` queued runs, oldest first. */
    readonly claim: (owner: string, n: number, leaseMs: number) => Effect.Effect<ReadonlyArray<ClaimedRun>, SqlError>
    readonly renew: (owner: string, ids: ReadonlyArray<string>, leaseMs: number) => Effect.Effect<void, SqlError>
    /** Final states and their events in one transaction; runs no longer running (lost) are left as they are. */
    readonly finish: (runs: ReadonlyArray<Finished>) => Effect.Effect<ReadonlyArray<RunRow>, SqlError>
    /** Fails running runs whose lease expired; returns them. */
    readonly failLost: (limit: number) => Effect.Effect<ReadonlyArray<RunRow>, SqlError>
    readonly get: (id: string) => Effect.Effect<RunRow | undefined, SqlError>
    readonly list: (workspace: string, filter: RunFilter) => Effect.Effect<{ rows: ReadonlyArray<RunRow>; total: number }, SqlError>
    readonly reruns: (originalId: string) => Effect.Effect<ReadonlyArray<RunRow>, SqlError>
    readonly incrementRerunCount: (id: string) => Effect.Effect<void, SqlError>
    /** True when queued runs are waiting (the worker's fallback poll). */
    readonly hasQueued: Effect.Effect<boolean, SqlError>
    /** Queued runs in the whole cluster (over the partial index of queued runs). */
    readonly countQueued: Effect.Effect<number, SqlError>
  }
>()("@troupe/server/compute/RunRepo") {
  static readonly layer = Layer.effect(
    RunRepo,
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient

      /**
       * The function.* events of the finished runs a `done` CTE returns, and the relay's wake-up:
       * `{event, timestamp, workspace, data: {runId, functionId, triggerId, status, durationMs, executionSource, error?}}`.
       * (A data-modifying CTE runs whether or not the final SELECT reads it.)
       */
      const finishedEvents = (at: string) => sql`ev AS (
        INSERT INTO events (workspace, type, payload)
        SELECT workspace, t.type, jsonb_build_object('event', t.type, 'timestamp', ${at}::text, 'workspace', workspace,
          'data', jsonb_build_object('runId', id, 'functionId', function_id, 'triggerId', trigger_id, 'status', status,
            'durationMs', duration_ms, 'executionSource', execution_source)
            || CASE WHEN error IS NULL THEN '{}'::jsonb ELSE jsonb_build_object('error', error) END)
        FROM done, LATERAL (SELECT CASE WHEN status = 'completed' THEN 'function.completed' ELSE 'function.failed' END AS type) t
        ORDER BY id
        RETURNING id
      )
      SELECT done.* FROM done`

      const rowsOf = (runs: ReadonlyArray<NewRun>, status: string, owner: string | null) =>
        runs.map((r) => ({
          id: r.id,
          workspace: r.workspace,
          function_id: r.functionId,
          trigger_id: r.triggerId,
          status: r.error !== undefined ? "failed" : status,
          error: r.error ?? null,
          execution_source: r.source,
          code: r.code,
          function_code_hash: r.codeHash,
          parameters: r.parameters,
          execution_context: r.executionContext,
          acting_as: r.actingAs,
          depth: r.depth,
          is_rerun: r.isRerun ?? false,
          original_run_id: r.originalRunId ?? null,
          rerun_by: r.rerunBy ?? null,
          rerun_reason: r.rerunReason ?? null,
          scheduled_for: r.scheduledFor ?? null,
          lease_owner: owner
        }))

      const insertSql = (rows: ReadonlyArray<unknown>, leaseMs: number | null) =>
        sql`INSERT INTO function_runs (id, workspace, function_id, trigger_id, status, error, execution_source, code,
          function_code_hash, parameters, execution_context, acting_as, depth, is_rerun, original_run_id, rerun_by,
          rerun_reason, scheduled_for, lease_owner, lease_expires_at, started_at, finished_at)
        SELECT id, workspace, function_id, trigger_id, status, error, execution_source, code, function_code_hash, parameters,
          COALESCE(execution_context, '{}'), acting_as, depth, is_rerun, original_run_id, rerun_by, rerun_reason,
          scheduled_for, lease_owner,
          CASE WHEN lease_owner IS NULL THEN NULL ELSE now() + make_interval(secs => ${(leaseMs ?? 0) / 1000}) END,
          CASE WHEN lease_owner IS NULL THEN NULL ELSE now() END,
          CASE WHEN status = 'failed' THEN now() END
        FROM jsonb_to_recordset(${JSON.stringify(rows)}::jsonb) AS v(id uuid, workspace text, function_id uuid,
          trigger_id uuid, status text, error text, execution_source text, code text, function_code_hash text, parameters text,
          execution_context jsonb, acting_as jsonb, depth int, is_rerun boolean, original_run_id uuid, rerun_by text,
          rerun_reason text, scheduled_for timestamptz, lease_owner text)
        ON CONFLICT DO NOTHING
        RETURNING *`

      /** The run rows, their trigger.fired events and (on commit) the wake-up of every node's worker. */
      const enqueue = (runs: ReadonlyArray<NewRun>) =>
        Effect.gen(function* () {
          if (runs.length === 0) return []
          const rows = (yield* insertSql(rowsOf(runs, "queued", null), null)).map(runRow)
          const stored = new Set(rows.map((r) => r.id))
          const at = new Date(yield* Clock.currentTimeMillis).toISOString()
          yield* appendEvents(
            sql,
            runs.filter((r) => r.fired !== undefined && stored.has(r.id)).map((r) => firedEvent(r, at))
          )
          if (rows.some((r) => r.status === "queued")) yield* notifyAfterCommit(sql, RUNS_CHANNEL)
          return rows
        })

      /** `id IN (…)` over a JSON array of ids (one parameter, the same on both drivers). */
      const idIn = (column: string, ids: ReadonlyArray<string>) =>
        sql`${sql(column)} IN (SELECT value::uuid FROM jsonb_array_elements_text(${JSON.stringify(ids)}::jsonb))`

      const _withCode = (ids: ReadonlyArray<string>) =>
        sql`SELECT ${sql.unsafe(CLAIMED_COLUMNS)} FROM function_runs r
        LEFT JOIN functions f ON f.id = r.function_id LEFT JOIN triggers t ON t.id = r.trigger_id
        WHERE ${idIn("r.id", ids)}`

      /** One statement: the run rows (claimed or queued), their trigger.fired events when a trigger fired them, and
       * the code and trigger params they run with. */
      const store = (items: ReadonlyArray<{ readonly run: NewRun; readonly owner: string | null }>, leaseMs: number) =>
        Effect.gen(function* () {
          if (items.length === 0) return []
          const at = new Date(yield* Clock.currentTimeMillis).toISOString()
          const fired = items.flatMap(({ run }) => (run.fired === undefined ? [] : [firedEvent(run, at)]))
          const rows = items.flatMap(({ run, owner }) => rowsOf([run], owner === null ? "queued" : "running", owner))
          const stored = yield* sql`WITH r AS (${insertSql(rows, leaseMs)}),
          ev AS (
            INSERT INTO events (workspace, type, payload)
            SELECT workspace, type, payload FROM jsonb_to_recordset(${JSON.stringify(fired)}::jsonb)
              AS v(workspace text, type text, payload jsonb)
            RETURNING id
          )
          SELECT ${sql.unsafe(CLAIMED_COLUMNS)}, (SELECT count(*) FROM ev) AS fired_events
          FROM r LEFT JOIN functions f ON f.id = r.function_id LEFT JOIN triggers t ON t.id = r.trigger_id`
          if (fired.length > 0) yield* notifyAfterCommit(sql, EVENTS_CHANNEL)
          if (stored.some((r) => r.status === "queued")) yield* notifyAfterCommit(sql, RUNS_CHANNEL)
          const byId = new Map(stored.map((r) => [String(r.id), claimed(r)] as const))
          return items.map(({ run }) => byId.get(run.id))
        })

      const claim = (owner: string, n: number, leaseMs: number) =>
        Effect.gen(function* () {
          if (n <= 0) return []
          const rows = yield* sql`WITH picked AS (
            SELECT id FROM function_runs
            WHERE status = 'queued'
            ORDER BY created_at
            LIMIT ${n}
            FOR UPDATE SKIP LOCKED
          ), claimed AS (
            UPDATE function_runs r SET status = 'running', started_at = now(), lease_owner = ${owner},
              lease_expires_at = now() + make_interval(secs => ${leaseMs / 1000})
            FROM picked WHERE r.id = picked.id
            RETURNING r.*
          )
          SELECT ${sql.unsafe(CLAIMED_COLUMNS)}
          FROM claimed r LEFT JOIN functions f ON f.id = r.function_id LEFT JOIN triggers t ON t.id = r.trigger_id`
          return rows.map(claimed)
        })

      const renew = (owner: string, ids: ReadonlyArray<string>, leaseMs: number) =>
        ids.length === 0
          ? Effect.void
          : sql`UPDATE function_runs SET lease_expires_at = now() + make_interval(secs => ${leaseMs / 1000})
        WHERE ${idIn("id", ids)} AND status = 'running' AND lease_owner = ${owner}`.pipe(Effect.asVoid)

      const finish = (runs: ReadonlyArray<Finished>) =>
        Effect.gen(function* () {
          if (runs.length === 0) return []
          const payload = runs.map((r) => ({
            id: r.id,
            status: r.status,
            result: JSON.stringify(r.result === undefined ? null : r.result),
            error: r.error,
            logs: r.logs,
            duration_ms: r.durationMs,
            memory_usage_bytes: Math.round(r.memoryUsageBytes),
            cpu_usage_seconds: r.cpuUsageSeconds,
            function_code_hash: r.functionCodeHash,
            function_version: r.functionVersion
          }))
          const at = new Date(yield* Clock.currentTimeMillis).toISOString()
          // one statement (one round trip, atomic): the final states, their function.* events, the relay's wake-up
          const rows = yield* sql`WITH done AS (
            UPDATE function_runs r SET status = v.status, result = v.result, error = v.error,
              logs = v.logs, finished_at = now(), duration_ms = v.duration_ms, memory_usage_bytes = v.memory_usage_bytes,
              cpu_usage_seconds = v.cpu_usage_seconds, lease_owner = NULL, lease_expires_at = NULL,
              function_code_hash = COALESCE(v.function_code_hash, r.function_code_hash),
              function_version = COALESCE(v.function_version, r.function_version)
            FROM jsonb_to_recordset(${JSON.stringify(payload)}::jsonb) AS v(id uuid, status text, result text,
              error text, logs jsonb, duration_ms double precision, memory_usage_bytes bigint, cpu_usage_seconds numeric,
              function_code_hash text, function_version text)
            WHERE r.id = v.id AND r.status = 'running'
            RETURNING r.*
          ), ${finishedEvents(at)}`
          if (rows.length > 0) yield* notifyAfterCommit(sql, EVENTS_CHANNEL)
          return rows.map(runRow)
        })

      const failLost = (limit: number) =>
        Effect.gen(function* () {
          const at = new Date(yield* Clock.currentTimeMillis).toISOString()
          const rows = yield* sql`WITH lost AS (
            SELECT id FROM function_runs WHERE status = 'running' AND lease_expires_at < now()
            ORDER BY lease_expires_at LIMIT ${limit} FOR UPDATE SKIP LOCKED
          ), done AS (
            UPDATE function_runs r SET status = 'failed', finished_at = now(),
              error = 'node lost: the node running this function stopped before it finished',
              duration_ms = EXTRACT(EPOCH FROM (now() - r.started_at)) * 1000, lease_owner = NULL, lease_expires_at = NULL
            FROM lost WHERE r.id = lost.id
            RETURNING r.*
          ), ${finishedEvents(at)}`
          if (rows.length > 0) yield* notifyAfterCommit(sql, EVENTS_CHANNEL)
          return rows.map(runRow)
        })

      const list = (workspace: string, filter: RunFilter) =>
        Effect.gen(function* () {
          const conditions = [sql`workspace = ${workspace}`]
          if (filter.functionId !== undefined) conditions.push(sql`function_id = ${filter.functionId}`)
          if (filter.triggerId !== undefined) conditions.push(sql`trigger_id = ${filter.triggerId}`)
          if (filter.status !== undefined) conditions.push(sql`status = ${filter.status}`)
          if (filter.executionSource !== undefined) conditions.push(sql`execution_source = ${filter.executionSource}`)
          const where = sql.and(conditions)
          const rows = yield* sql`SELECT * FROM function_runs WHERE ${where}
          ORDER BY created_at DESC, id DESC LIMIT ${filter.limit} OFFSET ${filter.offset}`
          const total = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM function_runs WHERE ${where}`
          return { rows: rows.map(runRow), total: Number(total[0]?.n ?? 0) }
        })

      return RunRepo.of({
        enqueue,
        store,
        claim,
        renew,
        finish,
        failLost,
        get: (id) =>
          Effect.map(sql`SELECT * FROM function_runs WHERE id = ${id}`, (rows) => (rows[0] === undefined ? undefined : runRow(rows[0]))),
        list,
        reruns: (originalId) =>
          Effect.map(sql`SELECT * FROM function_runs WHERE original_run_id = ${originalId} ORDER BY created_at, id`, (rows) =>
            rows.map(runRow)
          ),
        incrementRerunCount: (id) => sql`UPDATE function_runs SET rerun_count = rerun_count + 1 WHERE id = ${id}`.pipe(Effect.asVoid),
        hasQueued: Effect.map(sql`SELECT 1 FROM function_runs WHERE status = 'queued' LIMIT 1`, (rows) => rows.length > 0),
        countQueued: Effect.map(sql<{ n: number }>`SELECT count(*)::int AS n FROM function_runs WHERE status = 'queued'`, (rows) =>
          Number(rows[0]?.n ?? 0)
        )
      })
    })
  )
}

export interface RunFilter {
  readonly functionId?: string | undefined
  readonly triggerId?: string | undefined
  readonly status?: string | undefined
  readonly executionSource?: string | undefined
  readonly limit: number
  readonly offset: number
}
