// GET /realtime/workspace/{ws}/api/v1/events: server-sent events of one workspace (CONTRACT.md §2). A raw route
// (not HttpApi) because the body is an endless stream.
// - Token: `Authorization: Bearer` or `?access_token=`; needs `read:records` in that workspace.
// - Filters: `?structure=a,b` (slugs or ids), `?events=record.created,record.*`.
// - Each message: `id: <event id>` and `data: <JSON>` (no `event:` line, so `EventSource.onmessage` sees all);
//   a `retry:` hint first, `: heartbeat` comments every TROUPE_SSE_HEARTBEAT_SECONDS (default 15).
// - Resume: `Last-Event-ID` header (or `?lastEventId=`) replays what came after that event.
import { badRequest, unauthorized } from "@troupe/api/Errors"
import { Effect, Stream } from "effect"
import { AppConfig } from "../platform/AppConfig.ts"
import { HttpRouter, HttpServerRequest, HttpServerResponse } from "effect/http"
import { authenticate, Authenticator } from "../identity/Authenticate.ts"
import { validateEvents } from "./EventFilter.ts"
import { realtimeMessage } from "./Payloads.ts"
import { type HubEvent, RealtimeHub } from "./RealtimeHub.ts"

export const REALTIME_PATH = "/realtime/workspace/:workspace/api/v1/events" as const

/** The client's reconnect delay suggested in the `retry:` field. */
const RETRY_MS = 2000

const list = (values: ReadonlyArray<string>) =>
  values.flatMap((v) => v.split(",")).map((s) => s.trim()).filter((s) => s.length > 0)

export const formatEvent = (e: HubEvent): string => `id: ${e.event.id}\ndata: ${JSON.stringify(realtimeMessage(e.event))}\n\n`


export const RealtimeRoute = HttpRouter.use((router) =>
  Effect.gen(function*() {
    const hub = yield* RealtimeHub
    const authenticator = yield* Authenticator
    const heartbeat = Math.max(0.05, (yield* AppConfig).sseHeartbeatSeconds)
    yield* router.add("GET", REALTIME_PATH, (request) =>
      Effect.gen(function*() {
        const params = yield* HttpRouter.params
        const workspace = params.workspace ?? ""
        const url = new URL(request.url, "http://localhost")
        const header = request.headers["authorization"]
        const bearer = header !== undefined && /^bearer\s+/i.test(header) ? header.replace(/^bearer\s+/i, "").trim() : undefined
        const token = bearer ?? url.searchParams.get("access_token") ?? undefined
        if (token === undefined || token.length === 0) {
          return yield* Effect.fail(unauthorized("Missing token: send Authorization: Bearer <token> or ?access_token="))
        }
        yield* authenticate(token, workspace, "read:records").pipe(Effect.provideService(Authenticator, authenticator))

        const events = list(url.searchParams.getAll("events"))
        const problems = validateEvents(events)
        if (problems.length > 0) {
          return yield* Effect.fail(badRequest({
            message: problems.map((p) => p.message).join("; "),
            code: "VALIDATION_ERROR",
            details: problems.map((p) => ({ ...p, field: p.field.replace(/^events/, "query.events"), property: p.field.replace(/^events/, "query.events") }))
          }))
        }
        const structures = new Set(list([...url.searchParams.getAll("structure"), ...url.searchParams.getAll("structureId")]))
        const lastEventId = request.headers["last-event-id"] ?? url.searchParams.get("lastEventId") ?? undefined

        const messages = hub.subscribe({
          workspace,
          structures,
          events,
          lastEventId: lastEventId !== undefined && lastEventId.trim().length > 0 ? lastEventId.trim() : undefined
        }).pipe(Stream.map(formatEvent))
        const heartbeats = Stream.tick(`${heartbeat} seconds`).pipe(Stream.drop(1), Stream.map(() => ": heartbeat\n\n"))
        const body = Stream.concat(
          Stream.make(`retry: ${RETRY_MS}\n: connected\n\n`),
          Stream.merge(messages, heartbeats, { haltStrategy: "left" })
        )
        return HttpServerResponse.stream(Stream.encodeText(body), {
          contentType: "text/event-stream",
          headers: {
            "cache-control": "no-cache, no-transform",
            "x-accel-buffering": "no"
          }
        })
      }))
  })
)

/** For the edge's 405 detection: the route's method and path. */
export const realtimeRoutes: ReadonlyArray<readonly [string, string]> = [["GET", REALTIME_PATH]]
