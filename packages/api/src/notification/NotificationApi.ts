/**
 * The notification service's routes (CONTRACT §8.3) under `/notification/workspace/{ws}/api/v1`: provider
 * settings (`manage:notifications`, admin and up), templates (`read:` / `write:notifications`), sends (`POST
 * /email`, `POST /sms`: 202, counted against the workspace's `notifications` rate class) and the message log.
 *
 * @since 0.1.0
 */
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import { Authorization, RateClass, RequiredPermission } from "../Authorization.ts"
import { BadRequest, Conflict, NotFound, Unprocessable } from "../Errors.ts"
import { WorkspaceParams } from "../Workspace.ts"
import {
  Accepted,
  DraftPreviewRequest,
  EmailRequest,
  MessageDetail,
  MessageList,
  MessageListQuery,
  NotificationSettings,
  NotificationSettingsInput,
  PageQuery,
  PreviewRequest,
  Rendered,
  SendHeaders,
  SmsRequest,
  Template,
  TemplateInput,
  TemplateList,
  TemplateVersionList,
  TestSendRequest,
  TestSendResult
} from "./Notification.ts"

/** The base path of the notification service. */
export const notificationBase = "/notification/workspace/:workspace/api/v1" as const

const idParams = { ...WorkspaceParams, id: Schema.String }

/** @category groups */
export class NotificationApi extends HttpApiGroup.make("notification")
  .add(
    HttpApiEndpoint.get("getSettings", "/settings", { params: WorkspaceParams, success: NotificationSettings })
      .annotate(RequiredPermission, "manage:notifications")
      .annotate(RateClass, "reads"),
    HttpApiEndpoint.put("putSettings", "/settings", {
      params: WorkspaceParams,
      payload: NotificationSettingsInput,
      success: NotificationSettings,
      error: BadRequest
    })
      .annotate(RequiredPermission, "manage:notifications")
      .annotate(RateClass, "writes"),
    HttpApiEndpoint.post("testSettings", "/settings/test", {
      params: WorkspaceParams,
      payload: TestSendRequest,
      success: TestSendResult,
      error: BadRequest
    })
      .annotate(RequiredPermission, "manage:notifications")
      .annotate(RateClass, "notifications"),
    HttpApiEndpoint.get("listTemplates", "/templates", { params: WorkspaceParams, query: PageQuery, success: TemplateList })
      .annotate(RequiredPermission, "read:notifications")
      .annotate(RateClass, "reads"),
    HttpApiEndpoint.post("createTemplate", "/templates", {
      params: WorkspaceParams,
      payload: TemplateInput,
      success: Template.pipe(HttpApiSchema.status(201)),
      error: [BadRequest, Conflict]
    })
      .annotate(RequiredPermission, "write:notifications")
      .annotate(RateClass, "writes"),
    HttpApiEndpoint.post("previewDraft", "/templates/preview", {
      params: WorkspaceParams,
      payload: DraftPreviewRequest,
      success: Rendered,
      error: BadRequest
    })
      .annotate(RequiredPermission, "read:notifications")
      .annotate(RateClass, "reads"),
    HttpApiEndpoint.get("getTemplate", "/templates/:id", { params: idParams, success: Template, error: NotFound })
      .annotate(RequiredPermission, "read:notifications")
      .annotate(RateClass, "reads"),
    HttpApiEndpoint.put("updateTemplate", "/templates/:id", {
      params: idParams,
      payload: TemplateInput,
      success: Template,
      error: [BadRequest, NotFound, Conflict]
    })
      .annotate(RequiredPermission, "write:notifications")
      .annotate(RateClass, "writes"),
    HttpApiEndpoint.delete("deleteTemplate", "/templates/:id", { params: idParams, success: HttpApiSchema.NoContent, error: NotFound })
      .annotate(RequiredPermission, "write:notifications")
      .annotate(RateClass, "writes"),
    HttpApiEndpoint.get("templateVersions", "/templates/:id/versions", { params: idParams, success: TemplateVersionList, error: NotFound })
      .annotate(RequiredPermission, "read:notifications")
      .annotate(RateClass, "reads"),
    HttpApiEndpoint.post("previewTemplate", "/templates/:id/preview", {
      params: idParams,
      payload: [PreviewRequest, Schema.Null],
      success: Rendered,
      error: [BadRequest, NotFound]
    })
      .annotate(RequiredPermission, "read:notifications")
      .annotate(RateClass, "reads"),
    HttpApiEndpoint.post("email", "/email", {
      params: WorkspaceParams,
      headers: SendHeaders,
      payload: EmailRequest,
      success: Accepted.pipe(HttpApiSchema.status(202)),
      error: [BadRequest, Unprocessable]
    })
      .annotate(RequiredPermission, "write:notifications")
      .annotate(RateClass, "notifications"),
    HttpApiEndpoint.post("sms", "/sms", {
      params: WorkspaceParams,
      headers: SendHeaders,
      payload: SmsRequest,
      success: Accepted.pipe(HttpApiSchema.status(202)),
      error: [BadRequest, Unprocessable]
    })
      .annotate(RequiredPermission, "write:notifications")
      .annotate(RateClass, "notifications"),
    HttpApiEndpoint.get("listMessages", "/messages", { params: WorkspaceParams, query: MessageListQuery, success: MessageList })
      .annotate(RequiredPermission, "read:notifications")
      .annotate(RateClass, "reads"),
    HttpApiEndpoint.get("getMessage", "/messages/:id", { params: idParams, success: MessageDetail, error: [BadRequest, NotFound] })
      .annotate(RequiredPermission, "read:notifications")
      .annotate(RateClass, "reads")
  )
  .middleware(Authorization)
  .prefix(notificationBase)
  .annotateMerge(
    OpenApi.annotations({
      title: "Notifications",
      description:
        "Email (SMTP) and SMS (an HTTP provider in Twilio's form) through a durable outbox: a send answers 202 and is " +
        "delivered by any node, retried after TROUPE_WEBHOOK_RETRY_DELAYS on temporary failures. With no provider " +
        "configured, messages are captured: kept and readable, never sent (the development inbox)."
    })
  ) {}
