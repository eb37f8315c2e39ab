// Notifications (docs/notifications.md): provider settings per workspace (secrets stored encrypted inside the
// jsonb), Liquid templates with every version kept, and the message outbox.
// - notification_messages is both the log and the queue: a send inserts a `queued` row (its rendered subject and
//   bodies, the template version used, the recipients and a Message-ID fixed for every attempt); any node claims
//   due rows with `FOR UPDATE SKIP LOCKED`, visiting the workspaces with queued rows in turn (the skip scan over
//   notification_messages_queue), and holds a lease while it sends. A temporary failure puts the row back to
//   `queued` with its next attempt time; a node that dies leaves `sending` rows whose lease expires, and they are
//   queued again.
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`CREATE TABLE notification_settings (
    workspace text PRIMARY KEY REFERENCES workspaces(slug) ON DELETE CASCADE,
    email jsonb,
    sms jsonb,
    updated_at timestamptz NOT NULL DEFAULT now()
  )`
  yield* sql`CREATE TABLE notification_templates (
    id uuid PRIMARY KEY,
    workspace text NOT NULL REFERENCES workspaces(slug) ON DELETE CASCADE,
    name text NOT NULL,
    channel text NOT NULL,
    subject text,
    text_body text,
    html_body text,
    variables jsonb NOT NULL DEFAULT '[]',
    version integer NOT NULL DEFAULT 1,
    created_by text,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now(),
    UNIQUE (workspace, name)
  )`
  yield* sql`CREATE INDEX notification_templates_workspace ON notification_templates (workspace, name)`
  yield* sql`CREATE TABLE notification_template_versions (
    template_id uuid NOT NULL REFERENCES notification_templates(id) ON DELETE CASCADE,
    version integer NOT NULL,
    subject text,
    text_body text,
    html_body text,
    variables jsonb NOT NULL DEFAULT '[]',
    created_by text,
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (template_id, version)
  )`
  yield* sql`CREATE TABLE notification_messages (
    id uuid PRIMARY KEY,
    workspace text NOT NULL REFERENCES workspaces(slug) ON DELETE CASCADE,
    channel text NOT NULL,
    status text NOT NULL,
    to_list jsonb NOT NULL,
    cc_list jsonb NOT NULL DEFAULT '[]',
    bcc_list jsonb NOT NULL DEFAULT '[]',
    from_address text,
    subject text,
    text_body text,
    html_body text,
    template_id uuid,
    template_name text,
    template_version integer,
    message_id text,
    attempts integer NOT NULL DEFAULT 0,
    last_error text,
    provider_message_id text,
    next_attempt_at timestamptz NOT NULL DEFAULT now(),
    lease_owner text,
    lease_expires_at timestamptz,
    created_by text,
    -- the function run that sent it, and that run's depth: its notification.* events carry them so a trigger chain
    -- that keeps sending stops at the depth limit, as record writes do
    run_id uuid,
    run_depth integer,
    created_at timestamptz NOT NULL DEFAULT now(),
    sent_at timestamptz
  )`
  yield* sql`CREATE INDEX notification_messages_queue ON notification_messages (workspace, next_attempt_at) WHERE status = 'queued'`
  yield* sql`CREATE INDEX notification_messages_leased ON notification_messages (lease_expires_at) WHERE status = 'sending'`
  yield* sql`CREATE INDEX notification_messages_log ON notification_messages (workspace, created_at DESC, id DESC)`
})
