// `api.sendEmail(message, options?)` and `api.sendSms(message, options?)` in functions (compute/ApiBridge.ts):
// the bodies of POST /email and POST /sms, sent as the run's principal (who needs write:notifications), counted
// against the workspace's notifications limit, answered `{id, status: "queued"}`. `options.idempotencyKey` makes a
// re-run send once. The message carries the run's id and depth into its notification.* event.
import { can, type Principal } from "@troupe/api/Authorization"
import { badRequest, forbidden } from "@troupe/api/Errors"
import { EmailRequest, SmsRequest } from "@troupe/api/notification/Notification"
import { Effect, Schema } from "effect"
import { RateLimiter } from "../identity/RateLimiter.ts"
import { schemaDetails } from "../platform/HttpEdge.ts"
import { NotificationService } from "./NotificationService.ts"
import { invalid } from "./Problems.ts"

/** Who a run's calls act as. */
export interface CallContext {
  readonly workspace: string
  readonly principal: Principal
  readonly runId: string
  readonly depth: number
}

const decodeEmail = Schema.decodeUnknownEffect(EmailRequest)
const decodeSms = Schema.decodeUnknownEffect(SmsRequest)

/** The functions' calls, made once per node; `for(context)` gives one run's. */
export const makeNotificationCalls = Effect.gen(function* () {
  const service = yield* NotificationService
  const limiter = yield* RateLimiter

  return (ctx: CallContext) => {
    const sender = { id: ctx.principal.id, runId: ctx.runId, depth: ctx.depth }

    const prepare = <A>(
      decode: (u: unknown, o: { errors: "all" }) => Effect.Effect<A, Schema.SchemaError>,
      message: unknown,
      options: unknown
    ) =>
      Effect.gen(function* () {
        if (!can(ctx.principal, "write:notifications")) {
          return yield* forbidden(`This function acts as ${ctx.principal.name}, who lacks the permission "write:notifications"`)
        }
        const body = yield* decode(message, { errors: "all" }).pipe(
          Effect.mapError((e) => badRequest({ message: "Invalid message", code: "VALIDATION_ERROR", details: schemaDetails(e) }))
        )
        const o = (typeof options === "object" && options !== null ? options : {}) as { idempotencyKey?: unknown }
        const key = o.idempotencyKey
        if (key !== undefined && (typeof key !== "string" || key.length === 0 || key.length > 255)) {
          return yield* invalid("idempotencyKey", "idempotencyKey must be 1 to 255 characters")
        }
        yield* limiter.hit(ctx.workspace, "notifications")
        return { body, key: key as string | undefined }
      })

    const answer = ({ id, status }: { readonly id: string; readonly status: string }) => ({ id, status })

    return {
      sendEmail: (message: unknown, options: unknown) =>
        Effect.flatMap(prepare(decodeEmail, message, options), ({ body, key }) =>
          Effect.map(service.sendEmail(ctx.workspace, body, sender, key), answer)
        ),
      sendSms: (message: unknown, options: unknown) =>
        Effect.flatMap(prepare(decodeSms, message, options), ({ body, key }) =>
          Effect.map(service.sendSms(ctx.workspace, body, sender, key), answer)
        )
    }
  }
})
