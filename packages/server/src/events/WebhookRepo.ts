// SQL of webhooks and their deliveries. Rows come back snake_case from either driver; `toWebhook` / `toDelivery`
// shape them for the wire.
import type { DeliveryStatus, Webhook, WebhookDelivery, WebhookFilters, WebhookStatus } from "@troupe/api/events/Webhook"
import { Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import type { SqlError } from "effect/sql/SqlError"
import { iso, isoOrNull, json, num } from "../lib/rows.ts"

export interface WebhookRow {
  readonly id: string
  readonly workspace: string
  readonly name: string
  readonly url: string
  readonly events: ReadonlyArray<string>
  readonly filters: WebhookFilters
  /** as stored: sealed by SigningSecret.ts (plaintext in rows older than that) */
  readonly secret: string
  readonly enabled: boolean
  readonly status: WebhookStatus
  readonly createdBy: string | null
  readonly createdAt: string
  readonly updatedAt: string
}

export interface DeliveryRow {
  readonly id: string
  readonly webhookId: string
  readonly eventId: string | null
  readonly event: string
  readonly payload: unknown
  readonly status: DeliveryStatus
  readonly attempts: number
  readonly nextAttemptAt: string | null
  readonly lastStatus: number | null
  readonly lastError: string | null
  readonly durationMs: number | null
  readonly deliveredAt: string | null
  readonly failedAt: string | null
  readonly redeliveryOf: string | null
  readonly createdAt: string
  readonly updatedAt: string
}

/** A queued delivery with what is needed to send it. */
export interface QueuedDelivery extends DeliveryRow {
  readonly url: string
  readonly secret: string
  readonly workspace: string
  readonly webhookActive: boolean
}

/** A successful delivery to record. */
export interface DeliveredMark {
  readonly id: string
  readonly attempts: number
  readonly status: number | null
  readonly durationMs: number
  /** ISO 8601 */
  readonly at: string
}

/** A new delivery the relay enqueues. */
export interface NewDelivery {
  readonly id: string
  readonly webhookId: string
  readonly eventId: string | null
  readonly event: string
  readonly payload: unknown
}

/** Advisory lock class of webhook creates (second key: the workspace's hash). */
const WEBHOOK_LIMIT_LOCK = 7412021

const webhookRow = (r: any): WebhookRow => ({
  id: String(r.id),
  workspace: r.workspace,
  name: r.name,
  url: r.url,
  events: json<ReadonlyArray<string>>(r.events),
  filters: json<WebhookFilters>(r.filters) ?? {},
  secret: r.secret,
  enabled: r.enabled === true,
  status: r.status,
  createdBy: r.created_by ?? null,
  createdAt: iso(r.created_at),
  updatedAt: iso(r.updated_at)
})

const deliveryRow = (r: any): DeliveryRow => ({
  id: String(r.id),
  webhookId: String(r.webhook_id),
  eventId: r.event_id === null || r.event_id === undefined ? null : String(r.event_id),
  event: r.event,
  payload: json(r.payload),
  status: r.status,
  attempts: num(r.attempts),
  nextAttemptAt: isoOrNull(r.next_attempt_at),
  lastStatus: r.last_status === null || r.last_status === undefined ? null : num(r.last_status),
  lastError: r.last_error ?? null,
  durationMs: r.duration_ms === null || r.duration_ms === undefined ? null : num(r.duration_ms),
  deliveredAt: isoOrNull(r.delivered_at),
  failedAt: isoOrNull(r.failed_at),
  redeliveryOf: r.redelivery_of === null || r.redelivery_of === undefined ? null : String(r.redelivery_of),
  createdAt: iso(r.created_at),
  updatedAt: iso(r.updated_at)
})

/** The wire form (no secret). */
export const toWebhook = (w: WebhookRow): Webhook => ({
  id: w.id,
  name: w.name,
  url: w.url,
  events: w.events,
  filters: w.filters,
  enabled: w.enabled,
  status: w.status,
  createdAt: w.createdAt,
  updatedAt: w.updatedAt,
  createdBy: w.createdBy
})

/** The wire form of a log entry (no payload). */
export const toDelivery = (d: DeliveryRow): WebhookDelivery => ({
  id: d.id,
  webhookId: d.webhookId,
  eventId: d.eventId,
  event: d.event,
  status: d.status,
  attempts: d.attempts,
  lastStatus: d.lastStatus,
  lastError: d.lastError,
  durationMs: d.durationMs,
  nextAttemptAt: d.nextAttemptAt,
  deliveredAt: d.deliveredAt,
  failedAt: d.failedAt,
  redeliveryOf: d.redeliveryOf,
  createdAt: d.createdAt,
  updatedAt: d.updatedAt
})

export interface WebhookPatch {
  readonly name?: string
  readonly url?: string
  readonly events?: ReadonlyArray<string>
  readonly filters?: WebhookFilters
  readonly secret?: string
  readonly enabled?: boolean
}

export interface WebhookRepoShape {
  readonly insert: (row: Omit<WebhookRow, "createdAt" | "updatedAt">) => Effect.Effect<WebhookRow, SqlError>
  /** Inserts unless the workspace holds `limit` webhooks already (then undefined). */
  readonly insertWithin: (
    row: Omit<WebhookRow, "createdAt" | "updatedAt">,
    limit: number
  ) => Effect.Effect<WebhookRow | undefined, SqlError>
  readonly list: (
    workspace: string,
    limit: number,
    offset: number
  ) => Effect.Effect<{ readonly rows: ReadonlyArray<WebhookRow>; readonly total: number }, SqlError>
  readonly get: (workspace: string, id: string) => Effect.Effect<WebhookRow | undefined, SqlError>
  readonly update: (workspace: string, id: string, patch: WebhookPatch) => Effect.Effect<WebhookRow | undefined, SqlError>
  readonly delete: (workspace: string, id: string) => Effect.Effect<boolean, SqlError>
  /** Webhooks that receive events now, in these workspaces. */
  readonly activeIn: (workspaces: ReadonlyArray<string>) => Effect.Effect<ReadonlyArray<WebhookRow>, SqlError>
  readonly insertDeliveries: (rows: ReadonlyArray<NewDelivery>) => Effect.Effect<void, SqlError>
  /** Queues `original` again as a new delivery (at the end of the queue) that keeps its delivery id for receivers. */
  /** The new delivery; undefined when the original is gone */
  readonly insertRedelivery: (id: string, original: DeliveryRow) => Effect.Effect<DeliveryRow | undefined, SqlError>
  readonly failures: (webhookId: string, limit: number) => Effect.Effect<ReadonlyArray<DeliveryRow>, SqlError>
  readonly deliveries: (
    webhookId: string,
    status: DeliveryStatus | undefined,
    limit: number,
    offset: number
  ) => Effect.Effect<{ readonly rows: ReadonlyArray<DeliveryRow>; readonly total: number }, SqlError>
  readonly delivery: (webhookId: string, deliveryId: string) => Effect.Effect<DeliveryRow | undefined, SqlError>
  /** The next queued deliveries of one webhook, in queue order, with its url and secret. */
  readonly queue: (webhookId: string, limit: number) => Effect.Effect<ReadonlyArray<QueuedDelivery>, SqlError>
  /** Webhooks that are active and have queued deliveries. */
  readonly webhooksWithQueue: Effect.Effect<ReadonlyArray<string>, SqlError>
  /** The current url/secret/state of a webhook, for a retry. */
  readonly target: (
    webhookId: string
  ) => Effect.Effect<{ readonly url: string; readonly secret: string; readonly active: boolean } | undefined, SqlError>
  /** Marks many deliveries delivered in one statement (the dispatcher batches these marks). */
  readonly markDelivered: (rows: ReadonlyArray<DeliveredMark>) => Effect.Effect<void, SqlError>
  readonly markRetrying: (
    id: string,
    attempts: number,
    status: number | null,
    error: string | null,
    durationMs: number,
    delayMs: number
  ) => Effect.Effect<void, SqlError>
  /** The last attempt failed: the delivery is failed, the webhook too, and its other queued deliveries skipped. */
  readonly markFailed: (
    id: string,
    webhookId: string,
    attempts: number,
    status: number | null,
    error: string | null,
    durationMs: number
  ) => Effect.Effect<void, SqlError>
}

export class WebhookRepo extends Context.Service<WebhookRepo, WebhookRepoShape>()("@troupe/server/events/WebhookRepo") {
  static readonly layer = Layer.effect(
    WebhookRepo,
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient

      const insert = (row: Omit<WebhookRow, "createdAt" | "updatedAt">) =>
        sql`INSERT INTO webhooks (id, workspace, name, url, events, filters, secret, enabled, status, created_by)
        VALUES (${row.id}::uuid, ${row.workspace}, ${row.name}, ${row.url}, ${JSON.stringify(row.events)}::jsonb,
          ${JSON.stringify(row.filters)}::jsonb, ${row.secret}, ${row.enabled}, ${row.status}, ${row.createdBy})
        RETURNING *`.pipe(Effect.map((rows) => webhookRow(rows[0])))

      const insertWithin = (row: Omit<WebhookRow, "createdAt" | "updatedAt">, limit: number) =>
        sql.withTransaction(
          Effect.gen(function* () {
            // creates in one workspace take turns, so concurrent ones cannot all pass the count
            if (sql.driver !== "pglite") yield* sql`SELECT pg_advisory_xact_lock(${WEBHOOK_LIMIT_LOCK}, hashtext(${row.workspace}))`
            const count = yield* sql`SELECT count(*)::int AS n FROM webhooks WHERE workspace = ${row.workspace}`
            if (num((count[0] as any).n) >= limit) return undefined
            return yield* insert(row)
          })
        )

      const list = (workspace: string, limit: number, offset: number) =>
        Effect.all([
          sql`SELECT * FROM webhooks WHERE workspace = ${workspace} ORDER BY created_at, id LIMIT ${limit} OFFSET ${offset}`,
          sql`SELECT count(*)::int AS n FROM webhooks WHERE workspace = ${workspace}`
        ]).pipe(Effect.map(([rows, count]) => ({ rows: rows.map(webhookRow), total: num((count[0] as any).n) })))

      const get = (workspace: string, id: string) =>
        sql`SELECT * FROM webhooks WHERE workspace = ${workspace} AND id = ${id}::uuid`.pipe(
          Effect.map((rows) => (rows.length > 0 ? webhookRow(rows[0]) : undefined))
        )

      const update = (workspace: string, id: string, patch: WebhookPatch) => {
        const sets = [sql`updated_at = now()`]
        if (patch.name !== undefined) sets.push(sql`name = ${patch.name}`)
        if (patch.url !== undefined) sets.push(sql`url = ${patch.url}`)
        if (patch.events !== undefined) sets.push(sql`events = ${JSON.stringify(patch.events)}::jsonb`)
        if (patch.filters !== undefined) sets.push(sql`filters = ${JSON.stringify(patch.filters)}::jsonb`)
        if (patch.secret !== undefined) sets.push(sql`secret = ${patch.secret}`)
        // enabled:true (re)activates, whatever the state; enabled:false disables.
        if (patch.enabled === true) sets.push(sql`enabled = true`, sql`status = 'active'`)
        if (patch.enabled === false) sets.push(sql`enabled = false`, sql`status = 'disabled'`)
        return sql.withTransaction(
          Effect.gen(function* () {
            const rows = yield* sql`UPDATE webhooks SET ${sql.csv(sets)} WHERE workspace = ${workspace} AND id = ${id}::uuid
          RETURNING *`
            if (rows.length === 0) return undefined
            // A webhook that stops receiving drops its queue: those deliveries stay in the log, redeliverable.
            if (patch.enabled === false) yield* skipQueued(id)
            return webhookRow(rows[0])
          })
        )
      }

      const skipQueued = (webhookId: string) =>
        sql`UPDATE webhook_deliveries SET status = 'skipped', next_attempt_at = NULL, updated_at = now()
        WHERE webhook_id = ${webhookId}::uuid AND status IN ('pending', 'retrying')`

      const del = (workspace: string, id: string) =>
        sql`DELETE FROM webhooks WHERE workspace = ${workspace} AND id = ${id}::uuid RETURNING id`.pipe(
          Effect.map((rows) => rows.length > 0)
        )

      const activeIn = (workspaces: ReadonlyArray<string>) =>
        workspaces.length === 0
          ? Effect.succeed([])
          : sql`SELECT * FROM webhooks WHERE ${sql.in("workspace", workspaces)} AND enabled AND status = 'active'`.pipe(
              Effect.map((rows) => rows.map(webhookRow))
            )

      const insertDeliveries = (rows: ReadonlyArray<NewDelivery>) =>
        rows.length === 0
          ? Effect.void
          : sql`INSERT INTO webhook_deliveries
          (id, webhook_id, event_id, event, payload, status, attempts, next_attempt_at)
        SELECT id, webhook_id, event_id, event, payload, 'pending', 0, now()
        FROM json_to_recordset(${JSON.stringify(
          rows.map((r, i) => ({
            i,
            id: r.id,
            webhook_id: r.webhookId,
            event_id: r.eventId,
            event: r.event,
            payload: r.payload
          }))
        )}::json) AS v(i int, id uuid, webhook_id uuid, event_id bigint, event text, payload json)
        ORDER BY i`.pipe(Effect.asVoid)

      const insertRedelivery = (id: string, original: DeliveryRow) =>
        sql`INSERT INTO webhook_deliveries
          (id, webhook_id, event_id, event, payload, status, attempts, next_attempt_at, redelivery_of)
        SELECT ${id}::uuid, webhook_id, event_id, event, payload, 'pending', 0, now(), coalesce(redelivery_of, id)
        FROM webhook_deliveries WHERE id = ${original.id}::uuid RETURNING *`.pipe(
          Effect.map((rows) => (rows.length > 0 ? deliveryRow(rows[0]) : undefined))
        )

      const failures = (webhookId: string, limit: number) =>
        sql`SELECT * FROM webhook_deliveries WHERE webhook_id = ${webhookId}::uuid AND status = 'failed'
        ORDER BY failed_at DESC, seq DESC LIMIT ${limit}`.pipe(Effect.map((rows) => rows.map(deliveryRow)))

      const deliveries = (webhookId: string, status: DeliveryStatus | undefined, limit: number, offset: number) => {
        const where =
          status === undefined ? sql`webhook_id = ${webhookId}::uuid` : sql`webhook_id = ${webhookId}::uuid AND status = ${status}`
        return Effect.all([
          sql`SELECT * FROM webhook_deliveries WHERE ${where} ORDER BY seq DESC LIMIT ${limit} OFFSET ${offset}`,
          sql`SELECT count(*)::int AS n FROM webhook_deliveries WHERE ${where}`
        ]).pipe(Effect.map(([rows, count]) => ({ rows: rows.map(deliveryRow), total: num((count[0] as any).n) })))
      }

      const delivery = (webhookId: string, deliveryId: string) =>
        sql`SELECT * FROM webhook_deliveries WHERE webhook_id = ${webhookId}::uuid AND id = ${deliveryId}::uuid`.pipe(
          Effect.map((rows) => (rows.length > 0 ? deliveryRow(rows[0]) : undefined))
        )

      const queue = (webhookId: string, limit: number) =>
        sql`SELECT d.*, w.url, w.secret, w.workspace, (w.enabled AND w.status = 'active') AS webhook_active
        FROM webhook_deliveries d JOIN webhooks w ON w.id = d.webhook_id
        WHERE d.webhook_id = ${webhookId}::uuid AND d.status IN ('pending', 'retrying')
        ORDER BY d.seq LIMIT ${limit}`.pipe(
          Effect.map((rows) =>
            rows.map(
              (r: any): QueuedDelivery => ({
                ...deliveryRow(r),
                url: r.url,
                secret: r.secret,
                workspace: r.workspace,
                webhookActive: r.webhook_active === true
              })
            )
          )
        )

      const webhooksWithQueue = sql`SELECT DISTINCT d.webhook_id FROM webhook_deliveries d
        JOIN webhooks w ON w.id = d.webhook_id
        WHERE d.status IN ('pending', 'retrying') AND w.enabled AND w.status = 'active'`.pipe(
        Effect.map((rows) => rows.map((r: any) => String(r.webhook_id)))
      )

      const target = (webhookId: string) =>
        sql`SELECT url, secret, (enabled AND status = 'active') AS active FROM webhooks WHERE id = ${webhookId}::uuid`.pipe(
          Effect.map((rows) => {
            const r = rows[0] as any
            return r === undefined ? undefined : { url: r.url as string, secret: r.secret as string, active: r.active === true }
          })
        )

      const markDelivered = (rows: ReadonlyArray<DeliveredMark>) =>
        rows.length === 0
          ? Effect.void
          : sql`UPDATE webhook_deliveries d SET status = 'delivered', attempts = v.attempts,
          last_status = v.status, last_error = NULL, duration_ms = v.duration_ms, next_attempt_at = NULL,
          delivered_at = v.at, updated_at = now()
        FROM json_to_recordset(${JSON.stringify(
          rows.map((r) => ({
            id: r.id,
            attempts: r.attempts,
            status: r.status,
            duration_ms: Math.round(r.durationMs),
            at: r.at
          }))
        )}::json) AS v(id uuid, attempts int, status int, duration_ms int, at timestamptz)
        WHERE d.id = v.id`.pipe(Effect.asVoid)

      const markRetrying = (
        id: string,
        attempts: number,
        status: number | null,
        error: string | null,
        durationMs: number,
        delayMs: number
      ) =>
        sql`UPDATE webhook_deliveries SET status = 'retrying', attempts = ${attempts}, last_status = ${status},
          last_error = ${error}, duration_ms = ${Math.round(durationMs)},
          next_attempt_at = now() + make_interval(secs => ${delayMs / 1000}), updated_at = now()
        WHERE id = ${id}::uuid AND status IN ('pending', 'retrying')`.pipe(Effect.asVoid)

      const markFailed = (
        id: string,
        webhookId: string,
        attempts: number,
        status: number | null,
        error: string | null,
        durationMs: number
      ) =>
        sql.withTransaction(
          Effect.gen(function* () {
            yield* sql`UPDATE webhook_deliveries SET status = 'failed', attempts = ${attempts}, last_status = ${status},
            last_error = ${error}, duration_ms = ${Math.round(durationMs)}, next_attempt_at = NULL,
            failed_at = now(), updated_at = now()
          WHERE id = ${id}::uuid`
            const changed = yield* sql`UPDATE webhooks SET status = 'failed', updated_at = now()
          WHERE id = ${webhookId}::uuid AND status = 'active' RETURNING id`
            if (changed.length > 0) yield* skipQueued(webhookId)
          })
        )

      return WebhookRepo.of({
        insert,
        insertWithin,
        list,
        get,
        update,
        delete: del,
        activeIn,
        insertDeliveries,
        insertRedelivery,
        failures,
        deliveries,
        delivery,
        queue,
        webhooksWithQueue,
        target,
        markDelivered,
        markRetrying,
        markFailed
      })
    })
  )
}
