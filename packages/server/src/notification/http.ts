// Handlers of the notification group: the caller from CurrentPrincipal, then one service call each. A send answers
// 202 itself so that a replayed Idempotency-Key can say so (`idempotent-replayed: true`, as record upserts do); sends
// usually take the fast lane (FastSends.ts), which answers the same.
import { Api } from "@troupe/api/Api"
import { CurrentPrincipal, type Principal } from "@troupe/api/Authorization"
import { Effect } from "effect"
import { HttpServerResponse } from "effect/http"
import { HttpApiBuilder } from "effect/http-api"
import { acceptedAnswer } from "./FastSends.ts"
import { type AcceptedSend, NotificationService } from "./NotificationService.ts"
import { SettingsService } from "./SettingsService.ts"
import { TemplateService } from "./TemplateService.ts"

const as = <A, E, R>(f: (p: Principal) => Effect.Effect<A, E, R>) => Effect.flatMap(Effect.service(CurrentPrincipal), f)

const accepted = (a: AcceptedSend) => {
  const { status, body, headers } = acceptedAnswer(a)
  return HttpServerResponse.jsonUnsafe(body, { status, headers: headers ?? {} })
}

export const NotificationHandlers = HttpApiBuilder.group(
  Api,
  "notification",
  Effect.fn(function* (handlers) {
    const settings = yield* SettingsService
    const templates = yield* TemplateService
    const messages = yield* NotificationService
    return handlers
      .handle("getSettings", ({ params }) => settings.get(params.workspace))
      .handle("putSettings", ({ params, payload }) => settings.put(params.workspace, payload))
      .handle("testSettings", ({ params, payload }) => settings.test(params.workspace, payload.channel, payload.to))
      .handle("listTemplates", ({ params, query }) => templates.list(params.workspace, query.page ?? 1, query.limit ?? 50))
      .handle("createTemplate", ({ params, payload }) => as((p) => templates.create(params.workspace, payload, p)))
      .handle("previewDraft", ({ payload }) => templates.previewDraft(payload))
      .handle("getTemplate", ({ params }) => templates.get(params.workspace, params.id))
      .handle("updateTemplate", ({ params, payload }) => as((p) => templates.update(params.workspace, params.id, payload, p)))
      .handle("deleteTemplate", ({ params }) => templates.remove(params.workspace, params.id))
      .handle("templateVersions", ({ params }) => templates.versions(params.workspace, params.id))
      .handle("previewTemplate", ({ params, payload }) => templates.preview(params.workspace, params.id, payload?.variables ?? {}))
      .handle("email", ({ headers, params, payload }) =>
        as((p) => Effect.map(messages.sendEmail(params.workspace, payload, p, headers["idempotency-key"]), accepted))
      )
      .handle("sms", ({ headers, params, payload }) =>
        as((p) => Effect.map(messages.sendSms(params.workspace, payload, p, headers["idempotency-key"]), accepted))
      )
      .handle("listMessages", ({ params, query }) =>
        messages.list(params.workspace, {
          channel: query.channel,
          status: query.status,
          to: query.to,
          page: query.page ?? 1,
          limit: query.limit ?? 50
        })
      )
      .handle("getMessage", ({ params }) => messages.get(params.workspace, params.id))
  })
)
