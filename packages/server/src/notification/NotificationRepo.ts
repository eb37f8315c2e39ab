// SQL of the notification service: settings, templates (a version row written beside every change), and the
// message outbox. A send inserts a `queued` row in the caller's transaction and wakes every node's worker after
// commit (troupe_notifications). Workers claim due rows `FOR UPDATE SKIP LOCKED` with a lease, visiting the
// workspaces that have queued rows in turn from a cursor (a skip scan of notification_messages_queue), at most
// `cap` in hand per workspace on a node; outcomes are written in batches with their notification.* events in one
// statement; rows whose lease expired (their node died) are queued again.
import { Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import type { SqlError } from "effect/sql/SqlError"
import { EVENTS_CHANNEL } from "../events/Outbox.ts"
import { notifyAfterCommit } from "../events/Wake.ts"
import {
  decodeMessageRow,
  decodeSettingsRow,
  decodeTemplateRow,
  decodeTemplateVersionRow,
  type MessageRow,
  messageColumns,
  type NewMessage,
  type Outcome,
  type StoredEmail,
  type StoredSms,
  type TemplateRow,
  type TemplateVersionRowDb
} from "./model.ts"
import { isUuid } from "../lib/Uuid.ts"

/** Channel of outbox wake-ups (no payload). */
export const NOTIFICATIONS_CHANNEL = "troupe_notifications"

type Sql<A> = Effect.Effect<A, SqlError>

export interface TemplateFields {
  readonly name: string
  readonly channel: "email" | "sms"
  readonly subject: string | null
  readonly text: string | null
  readonly html: string | null
  readonly variables: ReadonlyArray<string>
}

export interface MessageFilter {
  readonly channel?: string | undefined
  readonly status?: string | undefined
  readonly to?: string | undefined
  readonly limit: number
  readonly offset: number
}

export interface ClaimRequest {
  readonly owner: string
  /** visit workspaces after this one first (round robin) */
  readonly cursor: string
  /** messages this node already holds, per workspace */
  readonly busy: ReadonlyMap<string, number>
  /** most messages of one workspace a node holds */
  readonly cap: number
  /** most messages to claim */
  readonly n: number
  readonly leaseMs: number
}

export class NotificationRepo extends Context.Service<
  NotificationRepo,
  {
    readonly settings: (workspace: string) => Sql<{ email: StoredEmail | null; sms: StoredSms | null; updatedAt: string } | undefined>
    readonly putSettings: (workspace: string, email: StoredEmail | null, sms: StoredSms | null) => Sql<string>
    readonly insertTemplate: (workspace: string, id: string, fields: TemplateFields, by: string | null) => Sql<TemplateRow>
    readonly updateTemplate: (workspace: string, id: string, fields: TemplateFields, by: string | null) => Sql<TemplateRow | undefined>
    readonly deleteTemplate: (workspace: string, id: string) => Sql<boolean>
    readonly findTemplate: (workspace: string, idOrName: string) => Sql<TemplateRow | undefined>
    readonly listTemplates: (workspace: string, limit: number, offset: number) => Sql<{ rows: ReadonlyArray<TemplateRow>; total: number }>
    readonly templateVersions: (id: string) => Sql<ReadonlyArray<typeof TemplateVersionRowDb.Type>>
    /**
     * Inserts messages (in the caller's transaction): queued, waking the workers after commit, or (`lease`, for the
     * ids it names) already leased by the inserting node, which sends them itself.
     */
    readonly insertMessages: (
      messages: ReadonlyArray<NewMessage>,
      lease?: { readonly owner: string; readonly leaseMs: number; readonly ids: ReadonlySet<string> }
    ) => Sql<void>
    readonly getMessage: (workspace: string, id: string) => Sql<MessageRow | undefined>
    readonly listMessages: (workspace: string, filter: MessageFilter) => Sql<{ rows: ReadonlyArray<MessageRow>; total: number }>
    /** Claims due queued messages for `owner` (status `sending`, leased). */
    readonly claim: (request: ClaimRequest) => Sql<ReadonlyArray<MessageRow>>
    readonly renew: (owner: string, ids: ReadonlyArray<string>, leaseMs: number) => Sql<void>
    /** Records outcomes of messages `owner` still holds, and the notification.* events of those sent or failed. */
    readonly finish: (owner: string, outcomes: ReadonlyArray<Outcome>) => Sql<number>
    /** Queues again messages whose lease expired; returns how many. */
    readonly requeueLost: (limit: number) => Sql<number>
  }
>()("@troupe/server/notification/NotificationRepo") {
  static readonly layer = Layer.effect(
    NotificationRepo,
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient

      const settings = (workspace: string) =>
        Effect.map(sql`SELECT email, sms, updated_at FROM notification_settings WHERE workspace = ${workspace}`, (rows) => {
          if (rows[0] === undefined) return undefined
          const r = decodeSettingsRow(rows[0])
          return { email: r.email as StoredEmail | null, sms: r.sms as StoredSms | null, updatedAt: r.updated_at }
        })

      const putSettings = (workspace: string, email: StoredEmail | null, sms: StoredSms | null) =>
        Effect.map(
          sql`INSERT INTO notification_settings (workspace, email, sms, updated_at)
          VALUES (${workspace}, ${email === null ? null : JSON.stringify(email)}::jsonb, ${sms === null ? null : JSON.stringify(sms)}::jsonb, now())
          ON CONFLICT (workspace) DO UPDATE SET email = EXCLUDED.email, sms = EXCLUDED.sms, updated_at = now()
          RETURNING updated_at`,
          (rows) => decodeSettingsRow({ email: null, sms: null, ...rows[0] }).updated_at
        )

      /** The template row a CTE `t` returns, with its version row written beside it. */
      const withVersion = (by: string | null) =>
        sql`v AS (
          INSERT INTO notification_template_versions (template_id, version, subject, text_body, html_body, variables, created_by)
          SELECT id, version, subject, text_body, html_body, variables, ${by} FROM t
          RETURNING template_id
        )
        SELECT t.* FROM t`

      const insertTemplate = (workspace: string, id: string, f: TemplateFields, by: string | null) =>
        Effect.map(
          sql`WITH t AS (
            INSERT INTO notification_templates (id, workspace, name, channel, subject, text_body, html_body, variables, created_by)
            VALUES (${id}, ${workspace}, ${f.name}, ${f.channel}, ${f.subject}, ${f.text}, ${f.html},
              ${JSON.stringify(f.variables)}::jsonb, ${by})
            RETURNING *
          ), ${withVersion(by)}`,
          (rows) => decodeTemplateRow(rows[0])
        )

      const updateTemplate = (workspace: string, id: string, f: TemplateFields, by: string | null) =>
        Effect.map(
          sql`WITH t AS (
            UPDATE notification_templates SET name = ${f.name}, subject = ${f.subject}, text_body = ${f.text},
              html_body = ${f.html}, variables = ${JSON.stringify(f.variables)}::jsonb, version = version + 1, updated_at = now()
            WHERE workspace = ${workspace} AND id = ${id}
            RETURNING *
          ), ${withVersion(by)}`,
          (rows) => (rows[0] === undefined ? undefined : decodeTemplateRow(rows[0]))
        )

      const deleteTemplate = (workspace: string, id: string) =>
        Effect.map(
          sql`DELETE FROM notification_templates WHERE workspace = ${workspace} AND id = ${id} RETURNING id`,
          (rows) => rows.length > 0
        )

      const findTemplate = (workspace: string, idOrName: string) =>
        Effect.map(
          isUuid(idOrName)
            ? sql`SELECT * FROM notification_templates WHERE workspace = ${workspace} AND (id = ${idOrName}::uuid OR name = ${idOrName})
              ORDER BY (id = ${idOrName}::uuid) DESC LIMIT 1`
            : sql`SELECT * FROM notification_templates WHERE workspace = ${workspace} AND name = ${idOrName}`,
          (rows) => (rows[0] === undefined ? undefined : decodeTemplateRow(rows[0]))
        )

      const listTemplates = (workspace: string, limit: number, offset: number) =>
        Effect.gen(function* () {
          const rows = yield* sql`SELECT * FROM notification_templates WHERE workspace = ${workspace}
            ORDER BY name LIMIT ${limit} OFFSET ${offset}`
          const total = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM notification_templates WHERE workspace = ${workspace}`
          return { rows: rows.map((r) => decodeTemplateRow(r)), total: Number(total[0]?.n ?? 0) }
        })

      const templateVersions = (id: string) =>
        Effect.map(
          sql`SELECT version, subject, text_body, html_body, variables, created_at FROM notification_template_versions
            WHERE template_id = ${id} ORDER BY version DESC`,
          (rows) => rows.map((r) => decodeTemplateVersionRow(r))
        )

      const insertMessages = (
        messages: ReadonlyArray<NewMessage>,
        lease?: { readonly owner: string; readonly leaseMs: number; readonly ids: ReadonlySet<string> }
      ) =>
        Effect.gen(function* () {
          if (messages.length === 0) return
          const rows = messages.map((m) => ({
            lease_owner: lease?.ids.has(m.id) === true ? lease.owner : null,
            ...messageColumns(m),
            created_by: m.createdBy,
            run_id: m.runId,
            run_depth: m.runDepth
          }))
          yield* sql`INSERT INTO notification_messages (id, workspace, channel, status, to_list, cc_list, bcc_list, from_address,
            subject, text_body, html_body, template_id, template_name, template_version, message_id, created_by, run_id, run_depth,
            lease_owner, lease_expires_at)
          SELECT id, workspace, channel, CASE WHEN lease_owner IS NULL THEN 'queued' ELSE 'sending' END, to_list, cc_list,
            bcc_list, from_address, subject, text_body, html_body, template_id, template_name, template_version, message_id,
            created_by, run_id, run_depth, lease_owner,
            CASE WHEN lease_owner IS NULL THEN NULL ELSE now() + make_interval(secs => ${(lease?.leaseMs ?? 0) / 1000}) END
          FROM jsonb_to_recordset(${JSON.stringify(rows)}::jsonb) AS v(id uuid, workspace text, channel text, to_list jsonb,
            cc_list jsonb, bcc_list jsonb, from_address text, subject text, text_body text, html_body text, template_id uuid,
            template_name text, template_version int, message_id text, created_by text, run_id uuid, run_depth int,
            lease_owner text)`
          if (rows.some((r) => r.lease_owner === null)) yield* notifyAfterCommit(sql, NOTIFICATIONS_CHANNEL)
        })

      const getMessage = (workspace: string, id: string) =>
        isUuid(id)
          ? Effect.map(sql`SELECT * FROM notification_messages WHERE workspace = ${workspace} AND id = ${id}::uuid`, (rows) =>
              rows[0] === undefined ? undefined : decodeMessageRow(rows[0])
            )
          : Effect.succeed(undefined)

      const listMessages = (workspace: string, f: MessageFilter) =>
        Effect.gen(function* () {
          const conditions = [sql`workspace = ${workspace}`]
          if (f.channel !== undefined) conditions.push(sql`channel = ${f.channel}`)
          if (f.status !== undefined) conditions.push(sql`status = ${f.status}`)
          if (f.to !== undefined) {
            const one = JSON.stringify([f.to])
            conditions.push(sql`(to_list @> ${one}::jsonb OR cc_list @> ${one}::jsonb OR bcc_list @> ${one}::jsonb)`)
          }
          const where = sql.and(conditions)
          const rows = yield* sql`SELECT * FROM notification_messages WHERE ${where}
            ORDER BY created_at DESC, id DESC LIMIT ${f.limit} OFFSET ${f.offset}`
          const total = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM notification_messages WHERE ${where}`
          return { rows: rows.map((r) => decodeMessageRow(r)), total: Number(total[0]?.n ?? 0) }
        })

      // One statement visits the workspaces after the cursor, then (wrapping round) those up to it: the same order
      // as a claim from the cursor followed by one from the start, in one round trip. A single workspace with a
      // backlog (the cursor on it, one slot freed at a time) took two statements per claim the other way.
      const claim = (r: ClaimRequest) => {
        if (r.n <= 0) return Effect.succeed([] as ReadonlyArray<MessageRow>)
        const busy = JSON.stringify(Object.fromEntries(r.busy))
        // at most this many workspaces looked at per claim (each costs one index probe)
        const maxWorkspaces = Math.max(16, r.n * 2)
        // The per-workspace cap (the node's setting, so one statement text per node) is written into the statement: as
        // a parameter, PostgreSQL's generic plan guessed the LIMIT at a tenth of the queue and it planned the claim anew
        // on every execution (0.5-0.7 ms of planning for 0.3 ms of execution, at every claim)
        const cap = sql.literal(String(Math.max(1, Math.floor(r.cap))))
        return sql`WITH RECURSIVE after_cursor (workspace, k) AS (
            (SELECT workspace, 1 FROM notification_messages WHERE status = 'queued' AND workspace > ${r.cursor}
              ORDER BY workspace LIMIT 1)
            UNION ALL
            SELECT (SELECT m.workspace FROM notification_messages m WHERE m.status = 'queued' AND m.workspace > a.workspace
              ORDER BY m.workspace LIMIT 1), a.k + 1
            FROM after_cursor a WHERE a.workspace IS NOT NULL AND a.k < ${maxWorkspaces}
          ),
          up_to_cursor (workspace, k) AS (
            (SELECT workspace, 1 FROM notification_messages WHERE status = 'queued' AND workspace <= ${r.cursor}
              ORDER BY workspace LIMIT 1)
            UNION ALL
            SELECT (SELECT m.workspace FROM notification_messages m WHERE m.status = 'queued' AND m.workspace > u.workspace
              AND m.workspace <= ${r.cursor} ORDER BY m.workspace LIMIT 1), u.k + 1
            FROM up_to_cursor u WHERE u.workspace IS NOT NULL AND u.k < ${maxWorkspaces}
          ),
          ws AS (
            SELECT workspace, pass FROM (
              SELECT workspace, 0 AS pass FROM after_cursor WHERE workspace IS NOT NULL
              UNION ALL
              SELECT workspace, 1 AS pass FROM up_to_cursor WHERE workspace IS NOT NULL
            ) both_passes
            ORDER BY pass, workspace LIMIT ${maxWorkspaces}
          ),
          held AS (SELECT key AS workspace, value::int AS busy FROM jsonb_each_text(${busy}::jsonb)),
          cand AS (
            SELECT c.id, c.workspace, c.next_attempt_at, ws.pass FROM ws CROSS JOIN LATERAL (
              SELECT m.id, m.workspace, m.next_attempt_at FROM notification_messages m
              WHERE m.workspace = ws.workspace AND m.status = 'queued' AND m.next_attempt_at <= now()
              ORDER BY m.next_attempt_at LIMIT ${cap}
              FOR UPDATE SKIP LOCKED
            ) c
          ),
          picked AS (
            SELECT id FROM (
              SELECT cand.id, cand.workspace, cand.pass, COALESCE(held.busy, 0) AS busy,
                row_number() OVER (PARTITION BY cand.workspace ORDER BY cand.next_attempt_at) AS rn
              FROM cand LEFT JOIN held ON held.workspace = cand.workspace
            ) ranked
            WHERE ranked.rn + ranked.busy <= ${r.cap}
            ORDER BY ranked.rn, ranked.pass, ranked.workspace
            LIMIT ${r.n}
          )
          UPDATE notification_messages m SET status = 'sending', lease_owner = ${r.owner},
            lease_expires_at = now() + make_interval(secs => ${r.leaseMs / 1000})
          FROM picked WHERE m.id = picked.id
          RETURNING m.*`.pipe(Effect.map((rows) => rows.map((row) => decodeMessageRow(row))))
      }

      const idIn = (ids: ReadonlyArray<string>) =>
        sql`id IN (SELECT value::uuid FROM jsonb_array_elements_text(${JSON.stringify(ids)}::jsonb))`

      const renew = (owner: string, ids: ReadonlyArray<string>, leaseMs: number) =>
        ids.length === 0
          ? Effect.void
          : sql`UPDATE notification_messages SET lease_expires_at = now() + make_interval(secs => ${leaseMs / 1000})
            WHERE ${idIn(ids)} AND status = 'sending' AND lease_owner = ${owner}`.pipe(Effect.asVoid)

      const finish = (owner: string, outcomes: ReadonlyArray<Outcome>) =>
        Effect.gen(function* () {
          if (outcomes.length === 0) return 0
          const payload = outcomes.map((o) => ({
            id: o.id,
            status: o.status,
            error: o.error,
            provider_message_id: o.providerMessageId,
            retry_ms: o.retryInMs ?? 0,
            attempted: o.attempted
          }))
          const rows = yield* sql`WITH v AS (
              SELECT * FROM jsonb_to_recordset(${JSON.stringify(payload)}::jsonb)
                AS v(id uuid, status text, error text, provider_message_id text, retry_ms double precision, attempted boolean)
            ), done AS (
              UPDATE notification_messages m SET status = v.status,
                attempts = m.attempts + CASE WHEN v.attempted THEN 1 ELSE 0 END,
                last_error = v.error,
                provider_message_id = COALESCE(v.provider_message_id, m.provider_message_id),
                sent_at = CASE WHEN v.status = 'sent' THEN now() ELSE m.sent_at END,
                next_attempt_at = CASE WHEN v.status = 'queued' THEN now() + make_interval(secs => v.retry_ms / 1000) ELSE m.next_attempt_at END,
                lease_owner = NULL, lease_expires_at = NULL
              FROM v WHERE m.id = v.id AND m.status = 'sending' AND m.lease_owner = ${owner}
              RETURNING m.*
            ), ev AS (
              INSERT INTO events (workspace, type, payload)
              SELECT workspace, 'notification.' || status, jsonb_build_object('event', 'notification.' || status,
                'timestamp', to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'), 'workspace', workspace,
                'data', jsonb_build_object('id', id, 'channel', channel, 'to', to_list, 'subject', subject, 'status', status,
                  'attempts', attempts, 'error', last_error, 'providerMessageId', provider_message_id,
                  'templateId', template_id, 'templateName', template_name, 'templateVersion', template_version)
                  || CASE WHEN run_id IS NULL THEN '{}'::jsonb
                     ELSE jsonb_build_object('metadata', jsonb_build_object('runId', run_id, 'depth', run_depth)) END)
              FROM done WHERE status IN ('sent', 'failed')
              ORDER BY id
              RETURNING id
            )
            SELECT (SELECT count(*) FROM done)::int AS n, (SELECT count(*) FROM ev)::int AS events`
          const events = Number(rows[0]?.events ?? 0)
          if (events > 0) yield* notifyAfterCommit(sql, EVENTS_CHANNEL)
          return Number(rows[0]?.n ?? 0)
        })

      const requeueLost = (limit: number) =>
        Effect.gen(function* () {
          const rows = yield* sql`UPDATE notification_messages SET status = 'queued', lease_owner = NULL, lease_expires_at = NULL
            WHERE id IN (
              SELECT id FROM notification_messages WHERE status = 'sending' AND lease_expires_at < now()
              ORDER BY lease_expires_at LIMIT ${limit} FOR UPDATE SKIP LOCKED
            )
            RETURNING id`
          if (rows.length > 0) yield* notifyAfterCommit(sql, NOTIFICATIONS_CHANNEL)
          return rows.length
        })

      return NotificationRepo.of({
        settings,
        putSettings,
        insertTemplate,
        updateTemplate,
        deleteTemplate,
        findTemplate,
        listTemplates,
        templateVersions,
        insertMessages,
        getMessage,
        listMessages,
        claim,
        renew,
        finish,
        requeueLost
      })
    })
  )
}
