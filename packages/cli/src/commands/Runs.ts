/**
 * `troupe runs tail`: function runs as they happen, from the workspace's server-sent events.
 *
 * @since 0.1.0
 */
import { Console, Data, Duration, Effect, Option, Ref, Stream } from "effect"
import { Command, Flag } from "effect/cli"
import { Sse } from "effect/encoding"
import { CliFailure, Json, orUndefined, usage } from "../Output.ts"
import { type ApiError, TroupeApi } from "../TroupeApi.ts"

/** One line for an event: time, name, and what it is about. */
const formatRunEvent = (e: Record<string, unknown>): string => {
  const d = (typeof e.data === "object" && e.data !== null ? e.data : {}) as Record<string, unknown>
  const time = typeof e.timestamp === "string" ? e.timestamp : ""
  const parts = [time, String(e.event)]
  if (e.event === "trigger.fired") {
    parts.push(`trigger=${String(d.triggerName ?? d.triggerId)}`, `run=${String(d.runId)}`, `source=${String(d.executionSource)}`)
  } else {
    parts.push(`run=${String(d.runId)}`, `function=${String(d.functionId)}`, `status=${String(d.status)}`)
    if (typeof d.durationMs === "number") parts.push(`${Math.round(d.durationMs)}ms`)
    if (typeof d.error === "string" && d.error.length > 0) parts.push(`error=${JSON.stringify(d.error)}`)
  }
  return parts.join("  ")
}

const parseObject = (text: string): Record<string, unknown> | undefined => {
  try {
    const value = JSON.parse(text) as unknown
    return typeof value === "object" && value !== null ? (value as Record<string, unknown>) : undefined
  } catch {
    return undefined
  }
}

class StreamClosed extends Data.TaggedError("StreamClosed")<{ readonly reason: string; readonly message: string }> {}

const tail = Command.make(
  "tail",
  {
    events: Flag.String("events").pipe(
      Flag.withDescription("Event names or families to follow"),
      Flag.withDefault("function.*,trigger.fired")
    ),
    since: Flag.String("since").pipe(
      Flag.withDescription("Start after this event id (0: everything still kept, 3 days); default: from now on"),
      Flag.optional
    ),
    limit: Flag.Int("limit").pipe(Flag.withDescription("Stop after this many events"), Flag.optional)
  },
  (input) =>
    Effect.gen(function* () {
      const api = yield* TroupeApi
      const json = yield* Json
      const limit = orUndefined(input.limit)
      if (limit !== undefined && limit < 1) return yield* usage("--limit must be at least 1")
      const lastId = yield* Ref.make<string | undefined>(orUndefined(input.since))
      const seen = yield* Ref.make(0)
      const path = `/realtime/workspace/${encodeURIComponent(api.session.workspace)}/api/v1/events?events=${encodeURIComponent(
        input.events
      )}`

      // One connection: events until the server ends the stream or it breaks.
      const connection = Effect.gen(function* () {
        const last = yield* Ref.get(lastId)
        const body = yield* api.stream(path, last === undefined ? {} : { "last-event-id": last })
        // the parser, not Sse.decode: decode ends the stream with a `Retry` failure at the server's `retry:` line
        const parsed: Array<Sse.Event> = []
        const parser = Sse.makeParser((event) => {
          if (event._tag === "Event") parsed.push(event)
        })
        yield* body.pipe(
          Stream.decodeText,
          Stream.flatMap((chunk) => {
            parser.feed(chunk)
            return Stream.fromIterable(parsed.splice(0))
          }),
          Stream.runForEachWhile((event) =>
            Effect.gen(function* () {
              const value = parseObject(event.data)
              if (value === undefined) return true
              if (value.event === "stream.closed") {
                return yield* new StreamClosed({ reason: String(value.reason), message: String(value.message ?? value.reason) })
              }
              if (event.id !== undefined) yield* Ref.set(lastId, event.id)
              yield* Console.log(json ? JSON.stringify(value) : formatRunEvent(value))
              const n = yield* Ref.updateAndGet(seen, (x) => x + 1)
              return limit === undefined || n < limit
            })
          )
        )
      })

      // Reconnect after a break or the end of a stream, resuming after the last event seen (Last-Event-ID).
      while (true) {
        const outcome = yield* Effect.result(connection)
        if (limit !== undefined && (yield* Ref.get(seen)) >= limit) return
        if (outcome._tag === "Failure") {
          const error = outcome.failure as ApiError | StreamClosed | { _tag: string; message: string }
          if (error._tag === "StreamClosed") {
            return yield* new CliFailure({ message: `the server closed the stream: ${(error as StreamClosed).message} (run troupe login)` })
          }
          const status = (error as ApiError).status
          if (status === 401 || status === 403 || status === 400) {
            return yield* new CliFailure({ message: error.message })
          }
          yield* Console.error(`troupe: ${error.message ?? error._tag}; reconnecting in 2 s`)
        }
        yield* Effect.sleep(Duration.seconds(2))
        const last = yield* Ref.get(lastId)
        if (!json) yield* Console.error(`troupe: reconnecting${Option.isSome(Option.fromUndefinedOr(last)) ? ` after event ${last}` : ""}`)
      }
    })
).pipe(
  Command.withDescription(
    "Follow function runs live: one line per function.completed, function.failed and trigger.fired event " +
      "(--json: the event's JSON per line), from GET /realtime/workspace/{ws}/api/v1/events with the token as a " +
      "bearer header. A dropped connection is reopened with Last-Event-ID, so nothing is missed or repeated. " +
      "Ctrl-C stops."
  ),
  Command.withExamples([{ command: "troupe runs tail" }, { command: "troupe runs tail --since 0 --limit 20 --json" }])
)

/** @category commands */
export const runs = Command.make("runs").pipe(
  Command.withDescription("Function runs."),
  Command.withSubcommands([tail]),
  Command.provide(TroupeApi.layer)
)
