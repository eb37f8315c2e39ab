/**
 * `troupe resolve suggestion|correction|insight`: acting on what `troupe health <structure>` lists (CONTRACT §8.4,
 * docs/intelligence.md). A schema suggestion is accepted (a new structure version) or rejected (never offered
 * again); a correction is accepted (a record update) or rejected; an insight is acknowledged or dismissed (its
 * signature never raised again). The server's answer is printed; a conflict (already resolved) exits 1.
 *
 * @since 0.1.0
 */
import { Effect } from "effect"
import { Argument, Command, Flag } from "effect/cli"
import { result } from "../Output.ts"
import { TroupeApi } from "../TroupeApi.ts"

const idArg = (what: string) => Argument.String("id").pipe(Argument.withDescription(`The ${what}'s id (as troupe health lists it)`))

/** POSTs the action and prints `label` and the answer's status (and the structure's new version, if any). */
const act = (path: string, label: string) =>
  Effect.gen(function* () {
    const api = yield* TroupeApi
    const answer = (yield* api.call("POST", path)) as Record<string, any>
    return yield* result(answer, (a) => {
      const status = (a.suggestion ?? a).status as string | undefined
      const version = a.structure?.version as number | undefined
      return `${label}: ${status ?? "done"}${version === undefined ? "" : ` (structure now at version ${version})`}`
    })
  })

const suggestion = Command.make(
  "suggestion",
  {
    structure: Argument.String("structure").pipe(Argument.withDescription("The structure's recordSlug or id")),
    id: idArg("schema suggestion"),
    reject: Flag.Boolean("reject").pipe(Flag.withDefault(false), Flag.withDescription("Reject instead of accepting"))
  },
  (input) => {
    const verb = input.reject ? "reject" : "accept"
    const path = `/collections/${encodeURIComponent(input.structure)}/schema-suggestions/${encodeURIComponent(input.id)}/${verb}`
    return act(path, `schema suggestion ${input.id}`)
  }
).pipe(Command.withDescription("Accept a schema suggestion into the structure (a new version), or --reject it"))

const correction = Command.make(
  "correction",
  {
    id: idArg("correction"),
    reject: Flag.Boolean("reject").pipe(Flag.withDefault(false), Flag.withDescription("Reject instead of accepting"))
  },
  (input) =>
    act(`/ai-validation/suggestions/${encodeURIComponent(input.id)}/${input.reject ? "reject" : "accept"}`, `correction ${input.id}`)
).pipe(Command.withDescription("Accept a correction (the record is updated: a new version), or --reject it"))

const insight = Command.make(
  "insight",
  {
    id: idArg("insight"),
    dismiss: Flag.Boolean("dismiss").pipe(Flag.withDefault(false), Flag.withDescription("Dismiss instead of acknowledging"))
  },
  (input) => act(`/anomaly-insights/${encodeURIComponent(input.id)}/${input.dismiss ? "dismiss" : "acknowledge"}`, `insight ${input.id}`)
).pipe(Command.withDescription("Acknowledge an anomaly insight, or --dismiss it (never raised again)"))

/** @category commands */
export const resolve = Command.make("resolve").pipe(
  Command.withDescription("Act on what troupe health lists: schema suggestions, corrections, anomaly insights"),
  Command.withSubcommands([suggestion, correction, insight]),
  Command.provide(TroupeApi.layer)
)
