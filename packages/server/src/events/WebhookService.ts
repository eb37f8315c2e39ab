// Webhook management (README "Webhooks"): create, list, get, update, delete, failures, the delivery log,
// redelivery and test sends. Deliveries themselves are made by WebhookDispatcher; this service only queues them and
// signals the dispatcher (which may run on another node) through the Notifier.
// - A workspace holds at most TROUPE_WEBHOOKS_PER_WORKSPACE webhooks (100): one more is 409 CONFLICT.
// - Signing secrets are stored encrypted (SigningSecret.ts); the plaintext is answered once, on create or when a
//   PATCH sets it, and decrypted again only to sign.
import type {
  DeliveryStatus,
  Webhook,
  WebhookCreate,
  WebhookDeliveryDetail,
  WebhookFailure,
  WebhookTestResult,
  WebhookUpdate,
  WebhookWithSecret
} from "@troupe/api/events/Webhook"
import {
  type BadRequest,
  badRequest,
  type Conflict,
  conflict,
  details,
  type ErrorDetail,
  malformedId,
  type NotFound,
  notFound
} from "@troupe/api/Errors"
import { Clock, Context, DateTime, Effect, Layer, Result } from "effect"
import * as Crypto from "node:crypto"
import { AppConfig } from "../platform/AppConfig.ts"
import { Notifier } from "../platform/Notifier.ts"
import { Secrets } from "../platform/Secrets.ts"
import { isForeignKeyViolation } from "../platform/sqlErrors.ts"
import { validateEvents, validateFilters } from "./EventFilter.ts"
import { post } from "./HttpPost.ts"
import { deliveryHeaders, generateSecret } from "./Signature.ts"
import { encryptStoredSecrets, openSigningSecret, sealSigningSecret } from "./SigningSecret.ts"
import { checkWebhookUrl } from "./UrlPolicy.ts"
import { type DeliveryRow, toDelivery, toWebhook, type WebhookPatch, WebhookRepo } from "./WebhookRepo.ts"
import { isUuid } from "../lib/Uuid.ts"

/** Notifier topic: "these webhooks have queued deliveries" (payload: webhook id). */
export const KICK_TOPIC = "webhooks.kick"

/** Per attempt: only a 2xx within this time is a success. */
export const DELIVERY_TIMEOUT_MS = 30_000

const toDetail = (d: DeliveryRow): WebhookDeliveryDetail => ({ ...toDelivery(d), payload: d.payload as any })

export interface WebhookServiceShape {
  readonly create: (
    workspace: string,
    input: WebhookCreate,
    createdBy: string | null
  ) => Effect.Effect<WebhookWithSecret, BadRequest | Conflict>
  readonly list: (
    workspace: string,
    page: number,
    limit: number
  ) => Effect.Effect<{ data: ReadonlyArray<Webhook>; total: number; page: number; limit: number }>
  readonly get: (workspace: string, id: string) => Effect.Effect<Webhook, NotFound | BadRequest>
  readonly update: (workspace: string, id: string, input: WebhookUpdate) => Effect.Effect<WebhookWithSecret, NotFound | BadRequest>
  readonly delete: (workspace: string, id: string) => Effect.Effect<void, NotFound | BadRequest>
  readonly failures: (
    workspace: string,
    id: string,
    limit: number
  ) => Effect.Effect<{ failures: ReadonlyArray<WebhookFailure> }, NotFound | BadRequest>
  readonly deliveries: (
    workspace: string,
    id: string,
    options: { readonly status?: DeliveryStatus | undefined; readonly page: number; readonly limit: number }
  ) => Effect.Effect<
    { data: ReadonlyArray<ReturnType<typeof toDelivery>>; total: number; page: number; limit: number },
    NotFound | BadRequest
  >
  readonly delivery: (workspace: string, id: string, deliveryId: string) => Effect.Effect<WebhookDeliveryDetail, NotFound | BadRequest>
  readonly redeliver: (
    workspace: string,
    id: string,
    deliveryId: string
  ) => Effect.Effect<WebhookDeliveryDetail, NotFound | BadRequest | Conflict>
  readonly test: (
    workspace: string,
    id: string,
    input: { readonly event?: string | undefined; readonly data?: unknown } | null | undefined
  ) => Effect.Effect<WebhookTestResult, NotFound | BadRequest>
}

export class WebhookService extends Context.Service<WebhookService, WebhookServiceShape>()("@troupe/server/events/WebhookService") {
  static readonly layerNoDeps = Layer.effect(
    WebhookService,
    Effect.gen(function* () {
      const repo = yield* WebhookRepo
      const config = yield* AppConfig
      const notifier = yield* Notifier
      const secrets = yield* Secrets
      const sealed = yield* encryptStoredSecrets(secrets).pipe(Effect.orDie)
      if (sealed > 0) yield* Effect.logInfo(`webhooks: encrypted ${sealed} signing secret(s) stored in plaintext`)

      const webhookNotFound = (id: string) => notFound({ message: `Webhook ${id} not found` })
      const invalid = (problems: ReadonlyArray<ErrorDetail>) =>
        badRequest({ message: problems.map((p) => `${p.field}: ${p.message}`).join("; "), code: "VALIDATION_ERROR", details: problems })

      const checkUrl = (url: string) => {
        const reason = checkWebhookUrl(url, config.production)
        return reason === undefined ? Effect.void : Effect.fail(invalid(details([["url", reason]])))
      }
      const checkFilters = (raw: Readonly<Record<string, unknown>> | null | undefined) => {
        const result = validateFilters(raw)
        return Result.isSuccess(result) ? Effect.succeed(result.success) : Effect.fail(invalid(result.failure))
      }
      const checkEvents = (events: ReadonlyArray<string>) => {
        const problems = validateEvents(events)
        return problems.length === 0 ? Effect.void : Effect.fail(invalid(problems))
      }

      /** The webhook, 404 when unknown, 400 when its id is malformed. */
      const find = (workspace: string, id: string) =>
        isUuid(id)
          ? repo.get(workspace, id).pipe(
              Effect.orDie,
              Effect.flatMap((w) => (w === undefined ? Effect.fail(webhookNotFound(id)) : Effect.succeed(w)))
            )
          : Effect.fail(malformedId("id", id))

      const create = Effect.fn("WebhookService.create")(function* (workspace: string, input: WebhookCreate, createdBy: string | null) {
        yield* checkUrl(input.url)
        yield* checkEvents(input.events)
        const filters = yield* checkFilters(input.filters)
        const secret = input.secret ?? generateSecret()
        const enabled = input.enabled ?? true
        const id = Crypto.randomUUID()
        const row = yield* repo
          .insertWithin(
            {
              id,
              workspace,
              name: input.name ?? defaultName(input.url),
              url: input.url,
              events: dedupe(input.events),
              filters,
              secret: sealSigningSecret(secrets, id, secret),
              enabled,
              status: enabled ? "active" : "disabled",
              createdBy
            },
            config.webhooksPerWorkspace
          )
          .pipe(Effect.orDie)
        if (row === undefined) {
          return yield* Effect.fail(
            conflict({
              message:
                `This workspace already has ${config.webhooksPerWorkspace} webhooks, the most it may hold; ` +
                "delete one before creating another"
            })
          )
        }
        return { ...toWebhook(row), secret }
      })

      const list = Effect.fn("WebhookService.list")(function* (workspace: string, page: number, limit: number) {
        const { rows, total } = yield* repo.list(workspace, limit, (page - 1) * limit).pipe(Effect.orDie)
        return { data: rows.map(toWebhook), total, page, limit }
      })

      const get = Effect.fn("WebhookService.get")(function* (workspace: string, id: string) {
        return toWebhook(yield* find(workspace, id))
      })

      const update = Effect.fn("WebhookService.update")(function* (workspace: string, id: string, input: WebhookUpdate) {
        yield* find(workspace, id)
        if (input.url !== undefined) yield* checkUrl(input.url)
        if (input.events !== undefined) yield* checkEvents(input.events)
        const patch: { -readonly [K in keyof WebhookPatch]: WebhookPatch[K] } = {}
        if (input.filters !== undefined) patch.filters = yield* checkFilters(input.filters)
        if (input.name !== undefined) patch.name = input.name
        if (input.url !== undefined) patch.url = input.url
        if (input.events !== undefined) patch.events = dedupe(input.events)
        if (input.secret !== undefined) patch.secret = sealSigningSecret(secrets, id, input.secret)
        if (input.enabled !== undefined) patch.enabled = input.enabled
        const row = yield* repo.update(workspace, id, patch).pipe(Effect.orDie)
        if (row === undefined) return yield* Effect.fail(webhookNotFound(id))
        return input.secret !== undefined ? { ...toWebhook(row), secret: input.secret } : toWebhook(row)
      })

      const del = Effect.fn("WebhookService.delete")(function* (workspace: string, id: string) {
        yield* find(workspace, id)
        const deleted = yield* repo.delete(workspace, id).pipe(Effect.orDie)
        if (!deleted) return yield* Effect.fail(webhookNotFound(id))
      })

      const failures = Effect.fn("WebhookService.failures")(function* (workspace: string, id: string, limit: number) {
        yield* find(workspace, id)
        const rows = yield* repo.failures(id, limit).pipe(Effect.orDie)
        return {
          failures: rows.map(
            (d): WebhookFailure => ({
              id: d.id,
              event: d.event,
              payload: d.payload as any,
              attempts: d.attempts,
              lastStatus: d.lastStatus,
              lastError: d.lastError,
              failedAt: d.failedAt ?? d.updatedAt
            })
          )
        }
      })

      const deliveries = Effect.fn("WebhookService.deliveries")(function* (
        workspace: string,
        id: string,
        options: { readonly status?: DeliveryStatus | undefined; readonly page: number; readonly limit: number }
      ) {
        yield* find(workspace, id)
        const { rows, total } = yield* repo
          .deliveries(id, options.status, options.limit, (options.page - 1) * options.limit)
          .pipe(Effect.orDie)
        return { data: rows.map(toDelivery), total, page: options.page, limit: options.limit }
      })

      const deliveryNotFound = (deliveryId: string) => notFound({ message: `Delivery ${deliveryId} not found` })
      const findDelivery = (id: string, deliveryId: string) =>
        isUuid(deliveryId)
          ? repo.delivery(id, deliveryId).pipe(
              Effect.orDie,
              Effect.flatMap((d) => (d === undefined ? Effect.fail(deliveryNotFound(deliveryId)) : Effect.succeed(d)))
            )
          : Effect.fail(malformedId("deliveryId", deliveryId))

      const delivery = Effect.fn("WebhookService.delivery")(function* (workspace: string, id: string, deliveryId: string) {
        yield* find(workspace, id)
        return toDetail(yield* findDelivery(id, deliveryId))
      })

      const redeliver = Effect.fn("WebhookService.redeliver")(function* (workspace: string, id: string, deliveryId: string) {
        const hook = yield* find(workspace, id)
        const original = yield* findDelivery(id, deliveryId)
        if (!hook.enabled || hook.status !== "active") {
          return yield* Effect.fail(
            conflict({
              message: `Webhook ${id} is ${hook.status}; PATCH {"enabled": true} before redelivering`
            })
          )
        }
        const row = yield* repo.insertRedelivery(Crypto.randomUUID(), original).pipe(
          // the webhook was deleted meanwhile: its key fails the insert
          Effect.catchIf(isForeignKeyViolation, () => Effect.fail(webhookNotFound(id))),
          Effect.orDie
        )
        // the original was deleted meanwhile (with its webhook, or by retention)
        if (row === undefined) return yield* Effect.fail(deliveryNotFound(deliveryId))
        yield* notifier.publish(KICK_TOPIC, id)
        return toDetail(row)
      })

      const test = Effect.fn("WebhookService.test")(function* (
        workspace: string,
        id: string,
        input: { readonly event?: string | undefined; readonly data?: unknown } | null | undefined
      ) {
        const hook = yield* find(workspace, id)
        const now = yield* DateTime.now
        const event = input?.event ?? "webhook.test"
        const body = JSON.stringify({
          event,
          workspace,
          timestamp: DateTime.formatIso(now),
          data: input?.data ?? { webhookId: hook.id, message: "Test delivery from Troupe" }
        })
        const deliveryId = Crypto.randomUUID()
        const seconds = Math.floor((yield* Clock.currentTimeMillis) / 1000)
        const secret = yield* openSigningSecret(secrets, hook.id, hook.secret).pipe(Effect.orDie)
        const headers = deliveryHeaders({ secret, deliveryId, event, body, timestampSeconds: seconds })
        const result = yield* post(hook.url, body, headers, { timeoutMs: DELIVERY_TIMEOUT_MS, allowPrivate: !config.production })
        return result.ok
          ? { delivered: true, status: result.status, durationMs: result.durationMs }
          : { delivered: false, status: result.status, durationMs: result.durationMs, error: result.error ?? "failed" }
      })

      return WebhookService.of({
        create,
        list,
        get,
        update,
        delete: del,
        failures,
        deliveries,
        delivery,
        redeliver,
        test
      })
    })
  )

  static readonly layer = this.layerNoDeps.pipe(Layer.provide(WebhookRepo.layer))
}

const dedupe = (events: ReadonlyArray<string>) => [...new Set(events)]

const defaultName = (url: string) => {
  try {
    return `Webhook to ${new URL(url).host}`
  } catch {
    return "Webhook"
  }
}
