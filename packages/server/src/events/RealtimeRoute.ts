// GET /realtime/workspace/{ws}/api/v1/events: server-sent events of one workspace (README "Realtime"). A raw route
// (not HttpApi) because the body is an endless stream.
// - Token: `Authorization: Bearer` or `?access_token=`; needs `read:records` in that workspace.
// - Filters: `?structure=a,b` (slugs or ids), `?events=record.created,record.*`. Compute events (`function.*`,
//   `trigger.fired`) reach only callers who hold `read:functions`.
// - Each message: `id: <event id>` and `data: <JSON>` (no `event:` line, so `EventSource.onmessage` sees all);
//   a `retry:` hint first, `: heartbeat` comments every TROUPE_SSE_HEARTBEAT_SECONDS (default 15).
// - Resume: `Last-Event-ID` header (or `?lastEventId=`) replays what came after that event.
// - The caller is checked again while the stream is open (RealtimeSessions.ts): at the token's expiry, and once a
//   second against the node's AccessCache (which follows identity changes); a stream whose caller may no longer
//   read ends with a last `{"event": "stream.closed", reason}` message. TROUPE_SSE_MAX_CONNECTIONS streams per
//   workspace per node (1000); one more is 429.
import { can, type Principal } from "@troupe/api/Authorization"
import { badRequest, unauthorized, errorDetail } from "@troupe/api/Errors"
import { Effect, Schedule, Stream } from "effect"
import { AppConfig } from "../platform/AppConfig.ts"
import { HttpRouter, HttpServerResponse } from "effect/http"
import { AccessCache } from "../identity/AccessCache.ts"
import { authenticate, Authenticator } from "../identity/Authenticate.ts"
import { validateEvents } from "./EventFilter.ts"
import { realtimeMessage } from "./Payloads.ts"
import { type HubEvent, RealtimeHub } from "./RealtimeHub.ts"
import { closedBecause, formatClosed, makeRealtimeSessions, RECHECK_INTERVAL, type StreamClosed } from "./RealtimeSessions.ts"

export const REALTIME_PATH = "/realtime/workspace/:workspace/api/v1/events" as const

/** The client's reconnect delay suggested in the `retry:` field. */
const RETRY_MS = 2000

const list = (values: ReadonlyArray<string>) =>
  values
    .flatMap((v) => v.split(","))
    .map((s) => s.trim())
    .filter((s) => s.length > 0)

export const formatEvent = (e: HubEvent): string => `id: ${e.event.id}\ndata: ${JSON.stringify(realtimeMessage(e.event))}\n\n`

/** When a (verified) JWT expires, from its standard `exp` claim (ms since the epoch); undefined when it has none. */
const expiryOf = (token: string): number | undefined => {
  try {
    const exp = JSON.parse(Buffer.from(token.split(".")[1] ?? "", "base64url").toString("utf8")).exp
    return typeof exp === "number" ? exp * 1000 : undefined
  } catch {
    return undefined
  }
}

/** Whether `principal` (undefined: gone) may still read a stream opened with `computeEvents` / `notificationEvents`. */
const stillAllowed = (principal: Principal | undefined, computeEvents: boolean, notificationEvents: boolean): StreamClosed | undefined =>
  principal === undefined
    ? closedBecause("access_revoked")
    : !can(principal, "read:records") ||
        (computeEvents && !can(principal, "read:functions")) ||
        (notificationEvents && !can(principal, "read:notifications"))
      ? closedBecause("permission_removed")
      : undefined

export const RealtimeRoute = HttpRouter.use((router) =>
  Effect.gen(function* () {
    const hub = yield* RealtimeHub
    const authenticator = yield* Authenticator
    const access = yield* AccessCache
    const config = yield* AppConfig
    const heartbeat = Math.max(0.05, config.sseHeartbeatSeconds)
    const sessions = makeRealtimeSessions(config.sseMaxConnections)
    yield* Effect.forkScoped(Effect.repeat(sessions.recheck, Schedule.spaced(RECHECK_INTERVAL)))
    yield* router.add("GET", REALTIME_PATH, (request) =>
      Effect.gen(function* () {
        const params = yield* HttpRouter.params
        const workspace = params.workspace ?? ""
        const url = new URL(request.url, "http://localhost")
        const header = request.headers.authorization
        const bearer = header !== undefined && /^bearer\s+/i.test(header) ? header.replace(/^bearer\s+/i, "").trim() : undefined
        const token = bearer ?? url.searchParams.get("access_token") ?? undefined
        if (token === undefined || token.length === 0) {
          return yield* Effect.fail(unauthorized("Missing token: send Authorization: Bearer <token> or ?access_token="))
        }
        const principal = yield* authenticate(token, workspace, "read:records").pipe(Effect.provideService(Authenticator, authenticator))

        const events = list(url.searchParams.getAll("events"))
        const problems = validateEvents(events)
        if (problems.length > 0) {
          return yield* Effect.fail(
            badRequest({
              message: problems.map((p) => p.message).join("; "),
              code: "VALIDATION_ERROR",
              details: problems.map((p) => ({
                ...p,
                field: p.field.replace(/^events/, "query.events"),
                property: p.field.replace(/^events/, "query.events")
              }))
            })
          )
        }
        const structures = new Set(list([...url.searchParams.getAll("structure"), ...url.searchParams.getAll("structureId")]))
        const fromHeader = request.headers["last-event-id"]
        const lastEventId = (fromHeader ?? url.searchParams.get("lastEventId") ?? "").trim() || undefined
        // an event id is the decimal id this stream sent; anything else would silently replay nothing
        if (lastEventId !== undefined && !/^\d{1,18}$/.test(lastEventId)) {
          const field = fromHeader !== undefined ? "headers.last-event-id" : "query.lastEventId"
          const message = "must be the id of an event this stream sent (a whole number)"
          return yield* Effect.fail(
            badRequest({ message: `${field} ${message}`, code: "VALIDATION_ERROR", details: [errorDetail(field, message)] })
          )
        }

        const computeEvents = can(principal, "read:functions")
        const notificationEvents = can(principal, "read:notifications")
        // Once a second: the caller as the node's AccessCache sees it now. Gone: the stream ends. A new picture
        // (the cache reloaded after some identity change): this token is verified again in full, which also catches
        // what concerns the token alone (a rotated secret, a changed password).
        let seen: Principal | undefined = principal
        const check = Effect.gen(function* () {
          const now = yield* access.actor(principal.kind, principal.id, workspace)
          if (now === undefined) return closedBecause("access_revoked")
          if (now === seen) return undefined
          seen = now
          return yield* authenticator.authenticate(token, { workspace, permission: "read:records" }).pipe(
            Effect.map((p) => stillAllowed(p, computeEvents, notificationEvents)),
            Effect.catch((e) => Effect.succeed(closedBecause(e.statusCode === 401 ? "access_revoked" : "permission_removed")))
          )
        })
        const ended = yield* sessions.open({ workspace, expiresAt: expiryOf(token), check })

        const messages = hub
          .subscribe({
            workspace,
            structures,
            events,
            lastEventId,
            computeEvents,
            notificationEvents
          })
          .pipe(Stream.map(formatEvent))
        const heartbeats = Stream.tick(`${heartbeat} seconds`).pipe(
          Stream.drop(1),
          Stream.map(() => ": heartbeat\n\n")
        )
        const closing = Stream.fromEffect(Effect.map(ended, formatClosed))
        const body = Stream.concat(
          Stream.make(`retry: ${RETRY_MS}\n: connected\n\n`),
          Stream.merge(Stream.merge(messages, heartbeats, { haltStrategy: "left" }), closing, { haltStrategy: "either" })
        )
        return HttpServerResponse.stream(Stream.encodeText(body), {
          contentType: "text/event-stream",
          headers: {
            "cache-control": "no-cache, no-transform",
            "x-accel-buffering": "no"
          }
        })
      })
    )
  })
)

/** For the edge's 405 detection: the route's method and path. */
export const realtimeRoutes: ReadonlyArray<readonly [string, string]> = [["GET", REALTIME_PATH]]
