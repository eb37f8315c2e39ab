// Handlers of the webhooks group: decode (done by the group), call WebhookService, encode.
import { Api } from "@troupe/api/Api"
import { CurrentPrincipal } from "@troupe/api/Authorization"
import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { WebhookService } from "./WebhookService.ts"

export const WebhooksHandlers = HttpApiBuilder.group(
  Api,
  "webhooks",
  Effect.fn(function* (handlers) {
    const webhooks = yield* WebhookService
    return handlers
      .handle("create", ({ params, payload }) =>
        Effect.flatMap(Effect.service(CurrentPrincipal), (p) => webhooks.create(params.workspace, payload, p.id))
      )
      .handle("list", ({ params, query }) => webhooks.list(params.workspace, query.page ?? 1, query.limit ?? 50))
      .handle("get", ({ params }) => webhooks.get(params.workspace, params.id))
      .handle("update", ({ params, payload }) => webhooks.update(params.workspace, params.id, payload))
      .handle("delete", ({ params }) => webhooks.delete(params.workspace, params.id))
      .handle("failures", ({ params, query }) => webhooks.failures(params.workspace, params.id, query.limit ?? 100))
      .handle("test", ({ params, payload }) => webhooks.test(params.workspace, params.id, payload))
      .handle("deliveries", ({ params, query }) =>
        webhooks.deliveries(params.workspace, params.id, { status: query.status, page: query.page ?? 1, limit: query.limit ?? 50 })
      )
      .handle("delivery", ({ params }) => webhooks.delivery(params.workspace, params.id, params.deliveryId))
      .handle("redeliver", ({ params }) => webhooks.redeliver(params.workspace, params.id, params.deliveryId))
  })
)
