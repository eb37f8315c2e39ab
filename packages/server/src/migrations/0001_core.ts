// The core schema shared by every domain. Later changes go in new numbered files, never edits here.
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  // Platform
  yield* sql`CREATE TABLE settings (key text PRIMARY KEY, value text NOT NULL)`
  // Identity
  yield* sql`CREATE TABLE workspaces (
    slug text PRIMARY KEY,
    name text NOT NULL,
    created_by text,
    created_at timestamptz NOT NULL DEFAULT now()
  )`
  yield* sql`CREATE TABLE users (
    id uuid PRIMARY KEY,
    username text NOT NULL UNIQUE,
    password_hash text NOT NULL,
    is_platform_admin boolean NOT NULL DEFAULT false,
    created_at timestamptz NOT NULL DEFAULT now()
  )`
  yield* sql`CREATE TABLE memberships (
    workspace text NOT NULL REFERENCES workspaces(slug) ON DELETE CASCADE,
    user_id uuid NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    role text NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (workspace, user_id)
  )`
  yield* sql`CREATE TABLE service_accounts (
    id serial PRIMARY KEY,
    workspace text NOT NULL REFERENCES workspaces(slug) ON DELETE CASCADE,
    client_id text NOT NULL UNIQUE,
    secret_hash text NOT NULL,
    name text NOT NULL,
    description text,
    grant_types jsonb NOT NULL,
    scope text NOT NULL,
    role text,
    permissions jsonb NOT NULL DEFAULT '[]',
    status text NOT NULL DEFAULT 'active',
    secret_version integer NOT NULL DEFAULT 1,
    created_by text,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now()
  )`
  yield* sql`CREATE TABLE groups (
    id uuid PRIMARY KEY,
    workspace text NOT NULL REFERENCES workspaces(slug) ON DELETE CASCADE,
    name text NOT NULL,
    description text,
    created_at timestamptz NOT NULL DEFAULT now(),
    UNIQUE (workspace, name)
  )`
  yield* sql`CREATE TABLE group_members (
    group_id uuid NOT NULL REFERENCES groups(id) ON DELETE CASCADE,
    member_type text NOT NULL,
    member_id text NOT NULL,
    PRIMARY KEY (group_id, member_type, member_id)
  )`
  yield* sql`CREATE TABLE policies (
    id uuid PRIMARY KEY,
    group_id uuid NOT NULL REFERENCES groups(id) ON DELETE CASCADE,
    action text NOT NULL,
    resource text NOT NULL,
    effect text NOT NULL DEFAULT 'allow',
    created_at timestamptz NOT NULL DEFAULT now()
  )`
  yield* sql`CREATE TABLE signing_keys (
    kid text PRIMARY KEY,
    alg text NOT NULL,
    public_jwk jsonb NOT NULL,
    private_enc text NOT NULL,
    active boolean NOT NULL DEFAULT true,
    created_at timestamptz NOT NULL DEFAULT now()
  )`
  yield* sql`CREATE TABLE rate_counters (
    workspace text NOT NULL,
    class text NOT NULL,
    window_start bigint NOT NULL,
    count integer NOT NULL,
    PRIMARY KEY (workspace, class, window_start)
  )`
  // Structures
  yield* sql`CREATE TABLE structures (
    id uuid PRIMARY KEY,
    workspace text NOT NULL REFERENCES workspaces(slug) ON DELETE CASCADE,
    record_slug text NOT NULL,
    name text NOT NULL,
    definition jsonb NOT NULL,
    version integer NOT NULL DEFAULT 1,
    is_deleted boolean NOT NULL DEFAULT false,
    created_by text,
    updated_by text,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now()
  )`
  yield* sql`CREATE UNIQUE INDEX structures_slug_uq ON structures (workspace, record_slug) WHERE NOT is_deleted`
  yield* sql`CREATE TABLE structure_versions (
    structure_id uuid NOT NULL REFERENCES structures(id) ON DELETE CASCADE,
    version integer NOT NULL,
    definition jsonb NOT NULL,
    pinned boolean NOT NULL DEFAULT false,
    created_by text,
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (structure_id, version)
  )`
  // Records
  yield* sql`CREATE TABLE records (
    id uuid PRIMARY KEY,
    workspace text NOT NULL,
    structure_id uuid NOT NULL REFERENCES structures(id) ON DELETE CASCADE,
    data jsonb NOT NULL,
    metadata jsonb NOT NULL DEFAULT '{}',
    version integer NOT NULL DEFAULT 1,
    status text NOT NULL DEFAULT 'active',
    created_by text,
    updated_by text,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now(),
    deleted_at timestamptz,
    expires_at timestamptz
  )`
  yield* sql`CREATE INDEX records_structure_created ON records (structure_id, created_at, id)`
  yield* sql`CREATE INDEX records_expires ON records (expires_at) WHERE expires_at IS NOT NULL`
  yield* sql`CREATE INDEX records_data_gin ON records USING gin (data jsonb_path_ops)`
  yield* sql`CREATE TABLE record_versions (
    record_id uuid NOT NULL REFERENCES records(id) ON DELETE CASCADE,
    version integer NOT NULL,
    data jsonb NOT NULL,
    changes jsonb NOT NULL DEFAULT '{}',
    restored_from integer,
    created_by text,
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (record_id, version)
  )`
  yield* sql`CREATE TABLE record_changelog (
    id uuid PRIMARY KEY,
    record_id uuid NOT NULL REFERENCES records(id) ON DELETE CASCADE,
    workspace text NOT NULL,
    action text NOT NULL,
    user_id text,
    user_name text,
    changes jsonb NOT NULL DEFAULT '{}',
    metadata jsonb NOT NULL DEFAULT '{}',
    created_at timestamptz NOT NULL DEFAULT now()
  )`
  yield* sql`CREATE INDEX record_changelog_record ON record_changelog (record_id, created_at)`
  // One row per (structure, unique property, value): uniqueness that holds across nodes and under concurrency.
  yield* sql`CREATE TABLE record_unique_values (
    structure_id uuid NOT NULL REFERENCES structures(id) ON DELETE CASCADE,
    field text NOT NULL,
    value text NOT NULL,
    record_id uuid NOT NULL REFERENCES records(id) ON DELETE CASCADE,
    PRIMARY KEY (structure_id, field, value)
  )`
  yield* sql`CREATE INDEX record_unique_values_record ON record_unique_values (record_id)`
  yield* sql`CREATE TABLE auto_increments (
    structure_id uuid NOT NULL REFERENCES structures(id) ON DELETE CASCADE,
    field text NOT NULL,
    next_value double precision NOT NULL,
    PRIMARY KEY (structure_id, field)
  )`
  yield* sql`CREATE TABLE idempotency_keys (
    workspace text NOT NULL,
    key text NOT NULL,
    request_hash text NOT NULL,
    status integer NOT NULL,
    body jsonb NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (workspace, key)
  )`
  // Events: the transactional outbox. Every write appends here in its own transaction.
  yield* sql`CREATE TABLE events (
    id bigserial PRIMARY KEY,
    workspace text NOT NULL,
    type text NOT NULL,
    structure_id uuid,
    record_slug text,
    record_id uuid,
    payload jsonb NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    processed_at timestamptz
  )`
  yield* sql`CREATE INDEX events_pending ON events (id) WHERE processed_at IS NULL`
  yield* sql`CREATE TABLE webhooks (
    id uuid PRIMARY KEY,
    workspace text NOT NULL REFERENCES workspaces(slug) ON DELETE CASCADE,
    name text NOT NULL,
    url text NOT NULL,
    events jsonb NOT NULL,
    filters jsonb NOT NULL DEFAULT '{}',
    secret text NOT NULL,
    enabled boolean NOT NULL DEFAULT true,
    status text NOT NULL DEFAULT 'active',
    created_by text,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now()
  )`
  yield* sql`CREATE TABLE webhook_deliveries (
    id uuid PRIMARY KEY,
    webhook_id uuid NOT NULL REFERENCES webhooks(id) ON DELETE CASCADE,
    event_id bigint,
    event text NOT NULL,
    payload jsonb NOT NULL,
    status text NOT NULL,
    attempts integer NOT NULL DEFAULT 0,
    next_attempt_at timestamptz,
    last_status integer,
    last_error text,
    duration_ms integer,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now(),
    failed_at timestamptz
  )`
  yield* sql`CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at) WHERE status IN ('pending', 'retrying')`
  yield* sql`CREATE INDEX webhook_deliveries_webhook ON webhook_deliveries (webhook_id, created_at)`
})
