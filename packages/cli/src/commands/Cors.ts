/**
 * `troupe cors get|set`: the browser origins the workspace allows (CONTRACT §9, GET/PUT `/settings/cors`;
 * docs/browser.md). `set` replaces the whole list with the origins given; `set --clear` empties it. The server
 * validates and canonicalizes each origin (a bad one is a 400 naming the entry; the list is then unchanged).
 *
 * @since 0.1.0
 */
import { Effect } from "effect"
import { Argument, Command, Flag } from "effect/cli"
import { result, usage } from "../Output.ts"
import { TroupeApi } from "../TroupeApi.ts"

interface CorsSettings {
  readonly allowedOrigins: ReadonlyArray<string>
}

const PATH = "/settings/cors"

const human = (s: CorsSettings) =>
  s.allowedOrigins.length === 0 ? ["no origin allowed (only the node-wide TROUPE_CORS_ORIGINS apply)"] : s.allowedOrigins

const get = Command.make("get", {}, () =>
  Effect.gen(function* () {
    const api = yield* TroupeApi
    return yield* result((yield* api.call("GET", PATH)) as CorsSettings, human)
  })
).pipe(Command.withDescription("List the origins the workspace allows (GET /settings/cors)"))

const set = Command.make(
  "set",
  {
    origins: Argument.String("origin").pipe(
      Argument.withDescription("An origin, scheme://host[:port], e.g. https://app.example.com (several allowed)"),
      Argument.variadic()
    ),
    clear: Flag.Boolean("clear").pipe(Flag.withDefault(false), Flag.withDescription("Allow no origin (an empty list)"))
  },
  (input) =>
    Effect.gen(function* () {
      if (input.clear && input.origins.length > 0) return yield* usage("give origins or --clear, not both")
      if (!input.clear && input.origins.length === 0) return yield* usage("give at least one origin, or --clear to empty the list")
      const api = yield* TroupeApi
      const stored = (yield* api.call("PUT", PATH, { body: { allowedOrigins: input.clear ? [] : input.origins } })) as CorsSettings
      return yield* result(stored, human)
    })
).pipe(Command.withDescription("Replace the origins the workspace allows (PUT /settings/cors); --clear empties the list"))

/** @category commands */
export const cors = Command.make("cors").pipe(
  Command.withDescription("The browser origins (CORS) the workspace allows; reading and changing them needs read:cors / write:cors"),
  Command.withSubcommands([get, set]),
  Command.provide(TroupeApi.layer)
)
