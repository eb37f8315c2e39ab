// Compute: functions and their versions, triggers and their versions, drafts, and function runs (durable jobs).
// - Functions are deleted for good; triggers keep their function_id (no foreign key) and stop firing.
// - Every workspace has a system trigger `default-trigger` (test executions run on it): created here for the
//   workspaces that exist, and by a row trigger for every workspace inserted later, whoever inserts it.
// - function_runs: a run is queued in a transaction, claimed by any node (`FOR UPDATE SKIP LOCKED` and a lease),
//   and finished with its event in one transaction. A scheduled tick is unique on (trigger_id, scheduled_for).
// - function_runs.result is JSON text: a jsonb string would read back as a bare string on either driver.
// - encryption_key_versions: the numeric `keyVersion` shown for encrypted trigger params, one per key id.
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`CREATE TABLE functions (
    id uuid PRIMARY KEY,
    workspace text NOT NULL REFERENCES workspaces(slug) ON DELETE CASCADE,
    name text NOT NULL,
    description text,
    code text NOT NULL,
    code_hash text NOT NULL,
    version integer NOT NULL DEFAULT 1,
    created_by text,
    updated_by text,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now(),
    UNIQUE (workspace, name)
  )`
  yield* sql`CREATE INDEX functions_workspace_created ON functions (workspace, created_at)`
  yield* sql`CREATE TABLE function_versions (
    function_id uuid NOT NULL REFERENCES functions(id) ON DELETE CASCADE,
    version integer NOT NULL,
    workspace text NOT NULL,
    name text NOT NULL,
    description text,
    code text NOT NULL,
    code_hash text NOT NULL,
    created_by text,
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (function_id, version)
  )`
  yield* sql`CREATE TABLE triggers (
    id uuid PRIMARY KEY,
    workspace text NOT NULL REFERENCES workspaces(slug) ON DELETE CASCADE,
    name text NOT NULL,
    description text,
    function_id uuid,
    execution_type text NOT NULL,
    metadata jsonb NOT NULL DEFAULT '{}',
    is_system boolean NOT NULL DEFAULT false,
    paused boolean NOT NULL DEFAULT false,
    http_path text,
    event text,
    record_slug text,
    next_run_at timestamptz,
    version integer NOT NULL DEFAULT 1,
    created_by text,
    created_by_kind text,
    updated_by text,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now(),
    UNIQUE (workspace, name)
  )`
  yield* sql`CREATE UNIQUE INDEX triggers_http_path ON triggers (workspace, http_path) WHERE http_path IS NOT NULL`
  yield* sql`CREATE INDEX triggers_event ON triggers (workspace, record_slug, event) WHERE event IS NOT NULL`
  yield* sql`CREATE INDEX triggers_due ON triggers (next_run_at) WHERE next_run_at IS NOT NULL`
  yield* sql`CREATE TABLE trigger_versions (
    trigger_id uuid NOT NULL REFERENCES triggers(id) ON DELETE CASCADE,
    version integer NOT NULL,
    workspace text NOT NULL,
    name text NOT NULL,
    description text,
    function_id uuid,
    metadata jsonb NOT NULL,
    created_by text,
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (trigger_id, version)
  )`
  yield* sql`CREATE TABLE drafts (
    id uuid PRIMARY KEY,
    workspace text NOT NULL REFERENCES workspaces(slug) ON DELETE CASCADE,
    resource_type text NOT NULL,
    data jsonb NOT NULL,
    created_by text,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now()
  )`
  yield* sql`CREATE INDEX drafts_workspace ON drafts (workspace, created_at)`
  yield* sql`CREATE TABLE function_runs (
    id uuid PRIMARY KEY,
    workspace text NOT NULL REFERENCES workspaces(slug) ON DELETE CASCADE,
    function_id uuid,
    trigger_id uuid,
    status text NOT NULL,
    execution_source text NOT NULL,
    code text,
    function_code_hash text,
    function_version text,
    parameters text,
    execution_context jsonb NOT NULL DEFAULT '{}',
    acting_as jsonb,
    depth integer NOT NULL DEFAULT 0,
    result text,
    error text,
    logs jsonb,
    started_at timestamptz,
    finished_at timestamptz,
    duration_ms double precision,
    memory_usage_bytes bigint,
    cpu_usage_seconds numeric,
    is_rerun boolean NOT NULL DEFAULT false,
    original_run_id uuid,
    rerun_count integer NOT NULL DEFAULT 0,
    rerun_by text,
    rerun_reason text,
    scheduled_for timestamptz,
    lease_owner text,
    lease_expires_at timestamptz,
    created_at timestamptz NOT NULL DEFAULT now()
  )`
  yield* sql`CREATE INDEX function_runs_queued ON function_runs (created_at) WHERE status = 'queued'`
  yield* sql`CREATE INDEX function_runs_running ON function_runs (lease_expires_at) WHERE status = 'running'`
  yield* sql`CREATE INDEX function_runs_workspace ON function_runs (workspace, created_at DESC, id DESC)`
  yield* sql`CREATE INDEX function_runs_function ON function_runs (function_id, created_at DESC)`
  yield* sql`CREATE INDEX function_runs_trigger ON function_runs (trigger_id, created_at DESC)`
  yield* sql`CREATE INDEX function_runs_original ON function_runs (original_run_id) WHERE original_run_id IS NOT NULL`
  yield* sql`CREATE UNIQUE INDEX function_runs_tick ON function_runs (trigger_id, scheduled_for) WHERE scheduled_for IS NOT NULL`
  yield* sql`CREATE TABLE encryption_key_versions (
    key_id text PRIMARY KEY,
    version serial NOT NULL UNIQUE,
    created_at timestamptz NOT NULL DEFAULT now()
  )`
  // The system trigger of every workspace, now and for every workspace created later.
  yield* sql.unsafe(`CREATE OR REPLACE FUNCTION troupe_default_trigger() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      INSERT INTO triggers (id, workspace, name, description, execution_type, is_system, metadata)
      VALUES (gen_random_uuid(), NEW.slug, 'default-trigger', 'System trigger for test executions', 'on-demand', true, '{}')
      ON CONFLICT (workspace, name) DO NOTHING;
      RETURN NEW;
    END $$`)
  yield* sql`CREATE TRIGGER workspaces_default_trigger AFTER INSERT ON workspaces
    FOR EACH ROW EXECUTE FUNCTION troupe_default_trigger()`
  yield* sql`INSERT INTO triggers (id, workspace, name, description, execution_type, is_system, metadata)
    SELECT gen_random_uuid(), slug, 'default-trigger', 'System trigger for test executions', 'on-demand', true, '{}'
    FROM workspaces ON CONFLICT (workspace, name) DO NOTHING`
})
