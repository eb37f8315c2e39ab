/**
 * The webhook routes (README "Webhooks") and the delivery log, served under both `/workspace/{ws}/api/v1` and
 * `/data/workspace/{ws}/api/v1` (the edge rewrites the second). Reading needs `read:webhooks`, changing needs
 * `write:webhooks`.
 *
 * @since 0.1.0
 */
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import { Authorization, RateClass, RequiredPermission } from "../Authorization.ts"
import { BadRequest, Conflict, NotFound } from "../Errors.ts"
import { workspaceBase, WorkspaceParams } from "../Workspace.ts"
import {
  DeliveryListQuery,
  PageQuery,
  Webhook,
  WebhookCreate,
  WebhookDeliveryDetail,
  WebhookDeliveryList,
  WebhookFailures,
  WebhookList,
  WebhookTestRequest,
  WebhookTestResult,
  WebhookUpdate,
  WebhookWithSecret
} from "./Webhook.ts"

const idParams = { ...WorkspaceParams, id: Schema.String }
const deliveryParams = { ...idParams, deliveryId: Schema.String }

/** @category groups */
export class WebhooksApi extends HttpApiGroup.make("webhooks")
  .add(
    HttpApiEndpoint.post("create", "/", {
      params: WorkspaceParams,
      payload: WebhookCreate,
      success: WebhookWithSecret.pipe(HttpApiSchema.status(201)),
      error: [BadRequest, Conflict]
    })
      .annotate(RequiredPermission, "write:webhooks")
      .annotate(RateClass, "writes"),
    HttpApiEndpoint.get("list", "/", {
      params: WorkspaceParams,
      query: PageQuery,
      success: WebhookList
    })
      .annotate(RequiredPermission, "read:webhooks")
      .annotate(RateClass, "reads"),
    HttpApiEndpoint.get("get", "/:id", {
      params: idParams,
      success: Webhook,
      error: [NotFound, BadRequest]
    })
      .annotate(RequiredPermission, "read:webhooks")
      .annotate(RateClass, "reads"),
    HttpApiEndpoint.patch("update", "/:id", {
      params: idParams,
      payload: WebhookUpdate,
      success: WebhookWithSecret,
      error: [NotFound, BadRequest]
    })
      .annotate(RequiredPermission, "write:webhooks")
      .annotate(RateClass, "writes"),
    HttpApiEndpoint.delete("delete", "/:id", {
      params: idParams,
      success: HttpApiSchema.NoContent,
      error: [NotFound, BadRequest]
    })
      .annotate(RequiredPermission, "write:webhooks")
      .annotate(RateClass, "writes"),
    HttpApiEndpoint.get("failures", "/:id/failures", {
      params: idParams,
      query: { limit: PageQuery.limit },
      success: WebhookFailures,
      error: [NotFound, BadRequest]
    })
      .annotate(RequiredPermission, "read:webhooks")
      .annotate(RateClass, "reads"),
    HttpApiEndpoint.post("test", "/:id/test", {
      params: idParams,
      payload: [WebhookTestRequest, Schema.Null],
      success: WebhookTestResult,
      error: [NotFound, BadRequest]
    })
      .annotate(RequiredPermission, "write:webhooks")
      .annotate(RateClass, "writes"),
    HttpApiEndpoint.get("deliveries", "/:id/deliveries", {
      params: idParams,
      query: DeliveryListQuery,
      success: WebhookDeliveryList,
      error: [NotFound, BadRequest]
    })
      .annotate(RequiredPermission, "read:webhooks")
      .annotate(RateClass, "reads"),
    HttpApiEndpoint.get("delivery", "/:id/deliveries/:deliveryId", {
      params: deliveryParams,
      success: WebhookDeliveryDetail,
      error: [NotFound, BadRequest]
    })
      .annotate(RequiredPermission, "read:webhooks")
      .annotate(RateClass, "reads"),
    HttpApiEndpoint.post("redeliver", "/:id/deliveries/:deliveryId/redeliver", {
      params: deliveryParams,
      success: WebhookDeliveryDetail.pipe(HttpApiSchema.status(202)),
      error: [NotFound, BadRequest, Conflict]
    })
      .annotate(RequiredPermission, "write:webhooks")
      .annotate(RateClass, "writes")
  )
  .middleware(Authorization)
  .prefix(`${workspaceBase}/webhooks`)
  .annotateMerge(
    OpenApi.annotations({
      title: "Webhooks",
      description:
        "Signed HTTP POSTs for record and compute events, retried after 1, 5 and 15 s by default. " +
        "After the last failure the delivery is listed under /failures and the webhook's status becomes failed " +
        "until PATCH {enabled: true}."
    })
  ) {}
