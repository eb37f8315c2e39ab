// Data intelligence (docs/intelligence.md, CONTRACT §8.4).
// - intel_jobs: scans, inference, analyses and validation batches; any node claims a queued job (or a running one
//   whose heartbeat stopped) and keeps its cursor (the last record id done), so a job resumes where it stopped.
// - intel_profiles: per structure and source (`scan`: the last scan of stored records; `observed`: records written
//   with undeclared fields since the last inference), the field profile as jsonb.
// - intel_config: per structure the anomaly and validation settings (discovery settings live on the structure).
// - suggestions and insights carry a signature unique per structure: the same one is never raised twice, and a
//   rejected or dismissed one stays, so it is remembered.
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`CREATE TABLE intel_jobs (
    id uuid PRIMARY KEY,
    workspace text NOT NULL REFERENCES workspaces(slug) ON DELETE CASCADE,
    structure_id uuid NOT NULL REFERENCES structures(id) ON DELETE CASCADE,
    kind text NOT NULL,
    status text NOT NULL DEFAULT 'queued',
    cursor text,
    scanned integer NOT NULL DEFAULT 0,
    produced integer NOT NULL DEFAULT 0,
    state jsonb NOT NULL DEFAULT '{}',
    error text,
    created_by text,
    heartbeat_at timestamptz,
    created_at timestamptz NOT NULL DEFAULT now(),
    finished_at timestamptz
  )`
  yield* sql`CREATE INDEX intel_jobs_open ON intel_jobs (created_at) WHERE status IN ('queued', 'running')`
  yield* sql`CREATE TABLE intel_profiles (
    structure_id uuid NOT NULL REFERENCES structures(id) ON DELETE CASCADE,
    source text NOT NULL,
    workspace text NOT NULL,
    profile jsonb NOT NULL DEFAULT '{}',
    records integer NOT NULL DEFAULT 0,
    updated_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (structure_id, source)
  )`
  yield* sql`CREATE TABLE intel_config (
    structure_id uuid NOT NULL REFERENCES structures(id) ON DELETE CASCADE,
    kind text NOT NULL,
    workspace text NOT NULL,
    config jsonb NOT NULL,
    updated_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (structure_id, kind)
  )`
  yield* sql`CREATE TABLE intel_schema_suggestions (
    id uuid PRIMARY KEY,
    workspace text NOT NULL,
    structure_id uuid NOT NULL REFERENCES structures(id) ON DELETE CASCADE,
    signature text NOT NULL,
    kind text NOT NULL,
    property jsonb NOT NULL,
    confidence double precision NOT NULL,
    sample_count integer NOT NULL,
    examples jsonb NOT NULL DEFAULT '[]',
    explanation text NOT NULL,
    status text NOT NULL DEFAULT 'pending',
    resolved_by text,
    created_at timestamptz NOT NULL DEFAULT now(),
    resolved_at timestamptz,
    UNIQUE (structure_id, signature)
  )`
  yield* sql`CREATE TABLE intel_insights (
    id uuid PRIMARY KEY,
    workspace text NOT NULL,
    structure_id uuid NOT NULL REFERENCES structures(id) ON DELETE CASCADE,
    signature text NOT NULL,
    record_id uuid,
    field text,
    kind text NOT NULL,
    severity text NOT NULL,
    score double precision NOT NULL,
    message text NOT NULL,
    observed jsonb,
    expected jsonb,
    status text NOT NULL DEFAULT 'open',
    created_at timestamptz NOT NULL DEFAULT now(),
    resolved_at timestamptz,
    UNIQUE (structure_id, signature)
  )`
  yield* sql`CREATE INDEX intel_insights_workspace ON intel_insights (workspace, created_at DESC)`
  yield* sql`CREATE TABLE intel_validation_suggestions (
    id uuid PRIMARY KEY,
    workspace text NOT NULL,
    structure_id uuid NOT NULL REFERENCES structures(id) ON DELETE CASCADE,
    signature text NOT NULL,
    batch_id uuid,
    record_id uuid NOT NULL,
    field text NOT NULL,
    current_value jsonb,
    suggested_value jsonb,
    reason text NOT NULL,
    source text NOT NULL,
    status text NOT NULL DEFAULT 'pending',
    created_at timestamptz NOT NULL DEFAULT now(),
    resolved_at timestamptz,
    UNIQUE (structure_id, signature)
  )`
  yield* sql`CREATE INDEX intel_validation_workspace ON intel_validation_suggestions (workspace, created_at DESC)`
})
