/**
 * `troupe functions deploy <dir>`: every `<name>.js` in a directory becomes the function `<name>`.
 *
 * @since 0.1.0
 */
import { Effect, FileSystem, Path, Schema } from "effect"
import { Argument, Command, Flag } from "effect/cli"
import { CliFailure, progress, progressDone, result, usage } from "../Output.ts"
import { TroupeApi } from "../TroupeApi.ts"
import { decode } from "../Workspace.ts"

const FunctionSummary = Schema.Struct({ id: Schema.String, name: Schema.String })
const FunctionList = Schema.Struct({ functions: Schema.Array(FunctionSummary), total: Schema.Number })
const FunctionFull = Schema.Struct({
  id: Schema.String,
  name: Schema.String,
  code: Schema.String,
  version: Schema.optionalKey(Schema.Number)
})
const Draft = Schema.Struct({ id: Schema.String })

const listFunctions = Effect.gen(function* () {
  const api = yield* TroupeApi
  const all: Array<typeof FunctionSummary.Type> = []
  for (let page = 1; ; page++) {
    const answer = yield* api
      .call("GET", "/compute-functions", { query: { limit: 1000, page } })
      .pipe(Effect.flatMap(decode(FunctionList, "GET /compute-functions")))
    all.push(...answer.functions)
    if (answer.functions.length < 1000 || all.length >= answer.total) return all
  }
})

const deploy = Command.make(
  "deploy",
  {
    dir: Argument.String("dir").pipe(Argument.withDescription("Directory holding <name>.js files")),
    dryRun: Flag.Boolean("dry-run").pipe(Flag.withDefault(false), Flag.withDescription("Only say what would be created or updated"))
  },
  (input) =>
    Effect.gen(function* () {
      const api = yield* TroupeApi
      const fs = yield* FileSystem.FileSystem
      const path = yield* Path.Path
      if (!(yield* fs.exists(input.dir))) return yield* usage(`no directory ${input.dir}`)
      const files = (yield* fs.readDirectory(input.dir)).filter((f) => f.endsWith(".js")).sort()
      if (files.length === 0) return yield* new CliFailure({ message: `no .js file in ${input.dir}` })
      const existing = new Map((yield* listFunctions).map((f) => [f.name, f]))
      const outcome: Array<{ name: string; action: "created" | "updated" | "unchanged"; id: string | null; version: number | null }> = []
      const one = (file: string) =>
        Effect.gen(function* () {
          const name = file.slice(0, -".js".length)
          const code = yield* fs.readFileString(path.join(input.dir, file))
          const found = existing.get(name)
          if (found !== undefined) {
            const current = yield* api
              .call("GET", `/compute-functions/${found.id}`)
              .pipe(Effect.flatMap(decode(FunctionFull, "GET /compute-functions/{id}")))
            if (current.code === code) {
              outcome.push({ name, action: "unchanged", id: found.id, version: current.version ?? null })
              return
            }
            if (input.dryRun) {
              outcome.push({ name, action: "updated", id: found.id, version: null })
              return
            }
            const updated = yield* api
              .call("PUT", `/compute-functions/${found.id}`, { body: { code } })
              .pipe(Effect.flatMap(decode(FunctionFull, "PUT /compute-functions/{id}")))
            outcome.push({ name, action: "updated", id: updated.id, version: updated.version ?? null })
          } else {
            if (input.dryRun) {
              outcome.push({ name, action: "created", id: null, version: null })
              return
            }
            // new functions go through a draft, checked as a create would be when published
            const draft = yield* api
              .call("POST", "/drafts", {
                body: { resourceType: "compute-functions", data: { name, code } }
              })
              .pipe(Effect.flatMap(decode(Draft, "POST /drafts")))
            const published = yield* api.call("POST", `/compute-functions/${draft.id}/publish`).pipe(
              // a refused publish keeps its draft on the server: remove it, the file is the source
              Effect.tapError(() => Effect.ignore(api.call("DELETE", `/drafts/${draft.id}`))),
              Effect.flatMap(decode(FunctionFull, "POST /compute-functions/{draftId}/publish"))
            )
            outcome.push({ name, action: "created", id: published.id, version: published.version ?? null })
          }
        }).pipe(
          Effect.mapError((e) => new CliFailure({ message: `${file}: ${e.message}`, ...("details" in e ? { details: e.details } : {}) }))
        )
      for (const file of files) {
        yield* one(file)
        yield* progress(`deploy: ${outcome.length}/${files.length}`)
      }
      yield* progressDone
      yield* result({ dir: input.dir, dryRun: input.dryRun, functions: outcome }, (r) => [
        ...r.functions.map(
          (f) => `${f.name}: ${f.action}${f.id === null ? "" : ` (${f.id}${f.version === null ? "" : ` v${f.version}`})`}`
        ),
        ...(r.dryRun ? ["dry run: nothing changed"] : [])
      ])
    })
).pipe(
  Command.withDescription(
    "Deploy every <name>.js of a directory as the function <name>: a new one is created through a draft " +
      "(POST /drafts, then POST /compute-functions/{draftId}/publish), an existing one whose code differs is " +
      "updated (PUT, version + 1), an identical one is left alone. Functions not in the directory are kept."
  ),
  Command.withExamples([{ command: "troupe functions deploy ./functions" }])
)

/** @category commands */
export const functions = Command.make("functions").pipe(
  Command.withDescription("Functions as files: deploy a directory of <name>.js."),
  Command.withSubcommands([deploy]),
  Command.provide(TroupeApi.layer)
)
