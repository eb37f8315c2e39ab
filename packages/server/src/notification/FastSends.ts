// Sends in the fast lane (platform/FastRoutes.ts): `notification.email` (POST /email) and `notification.sms`
// (POST /sms) with the same service calls and answers as their ordinary handlers (notification/http.ts), after the
// lane's authentication, rate count and payload decoding. A send is a row and an answer, like a record create, and the
// Effect stack's generic per-request work was most of its cost on the node (docs/notifications.md "Figures"). A
// request whose Idempotency-Key the endpoint's schema refuses is left to the stack, which answers the 400.
import { Effect } from "effect"
import type * as Http from "node:http"
import type { FastAnswer, FastTable } from "../platform/FastRoutes.ts"
import { type AcceptedSend, NotificationService } from "./NotificationService.ts"

/** The 202 of a send, as either lane answers it (`idempotent-replayed` when a key answered an earlier message). */
export const acceptedAnswer = (a: AcceptedSend): FastAnswer => ({
  status: 202,
  body: { id: a.id, status: a.status },
  headers: a.replayed ? { "idempotent-replayed": "true" } : undefined
})

const keyOf = (headers: Http.IncomingHttpHeaders) => {
  const key = headers["idempotency-key"]
  return typeof key === "string" ? key : undefined
}

export const fastSendRoutes: Effect.Effect<FastTable, never, NotificationService> = Effect.gen(function* () {
  const messages = yield* NotificationService
  return {
    "notification.email": ({ headers, params, payload, principal }) =>
      Effect.map(messages.sendEmail(params.workspace, payload, principal, keyOf(headers)), acceptedAnswer),
    "notification.sms": ({ headers, params, payload, principal }) =>
      Effect.map(messages.sendSms(params.workspace, payload, principal, keyOf(headers)), acceptedAnswer)
  }
})
