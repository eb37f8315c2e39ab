/**
 * `troupe types` and `troupe structures pull|push`.
 *
 * @since 0.1.0
 */
import { Console, Effect, FileSystem, Path, Stdio, Stream } from "effect"
import { Command, Flag } from "effect/cli"
import { Json, orUndefined, result, usage } from "../Output.ts"
import { inDependencyOrder, plan, type Plan, toFile } from "../StructureDiff.ts"
import { type StructureLike, structureSchema, structuresToTypeScript } from "../StructureTypes.ts"
import { TroupeApi } from "../TroupeApi.ts"
import { listStructures } from "../Workspace.ts"

const dirFlag = Flag.String("dir").pipe(
  Flag.withAlias("d"),
  Flag.withDescription("Directory of structure files, one <recordSlug>.json each"),
  Flag.withDefault("structures")
)

/** @category commands */
export const types = Command.make(
  "types",
  {
    out: Flag.String("out").pipe(Flag.withAlias("o"), Flag.withDescription("TypeScript file to write (default: stdout)"), Flag.optional),
    jsonSchema: Flag.String("json-schema").pipe(
      Flag.withDescription("Also write the JSON Schemas (one object keyed by record slug) to this file"),
      Flag.optional
    )
  },
  (input) =>
    Effect.gen(function* () {
      const api = yield* TroupeApi
      const fs = yield* FileSystem.FileSystem
      const path = yield* Path.Path
      const structures = (yield* listStructures) as unknown as ReadonlyArray<StructureLike>
      const text = structuresToTypeScript(structures, api.session)
      const out = orUndefined(input.out)
      const schemaFile = orUndefined(input.jsonSchema)
      if (schemaFile !== undefined) {
        const schemas = Object.fromEntries(structures.map((s) => [s.recordSlug, structureSchema(s)]))
        yield* fs.makeDirectory(path.dirname(path.resolve(schemaFile)), { recursive: true })
        yield* fs.writeFileString(schemaFile, `${JSON.stringify(schemas, null, 2)}\n`)
      }
      if (out === undefined && !(yield* Json)) return yield* Console.log(text)
      if (out !== undefined) {
        yield* fs.makeDirectory(path.dirname(path.resolve(out)), { recursive: true })
        yield* fs.writeFileString(out, text)
      }
      yield* result(
        {
          file: out ?? null,
          jsonSchema: schemaFile ?? null,
          structures: structures.map((s) => s.recordSlug),
          ...(out === undefined ? { types: text } : {})
        },
        (r) => `Wrote types of ${r.structures.length} structures to ${r.file}`
      )
    })
).pipe(
  Command.withDescription(
    "TypeScript types of every structure's record data, for app code: each structure becomes a JSON Schema " +
      "(draft 2020-12) and the schema a TypeScript interface, all in one file, plus TroupeStructures (slug -> type)."
  ),
  Command.withExamples([{ command: "troupe types --out src/troupe-types.ts --json-schema schemas.json" }]),
  Command.provide(TroupeApi.layer)
)

const pull = Command.make("pull", { dir: dirFlag }, (input) =>
  Effect.gen(function* () {
    const fs = yield* FileSystem.FileSystem
    const path = yield* Path.Path
    const structures = yield* listStructures
    yield* fs.makeDirectory(input.dir, { recursive: true })
    const files: Array<string> = []
    for (const s of structures) {
      const file = path.join(input.dir, `${String(s.recordSlug)}.json`)
      yield* fs.writeFileString(file, `${JSON.stringify(toFile(s), null, 2)}\n`)
      files.push(file)
    }
    yield* result({ dir: input.dir, files }, (r) => [...r.files.map((f) => `wrote ${f}`), `${r.files.length} structures`])
  })
).pipe(
  Command.withDescription(
    "Write every structure of the workspace to <dir>/<recordSlug>.json: its definition without server-managed " +
      "fields (id, dates, version, metadata), properties with their ids."
  )
)

const confirm = Effect.gen(function* () {
  const stdio = yield* Stdio.Stdio
  if (!(yield* stdio.stdinIsTerminal)) return false
  process.stderr.write("Apply these changes? [y/N] ")
  const line = yield* stdio.stdin.pipe(Stream.decodeText, Stream.splitLines, Stream.runHead)
  return line._tag === "Some" && /^y(es)?$/i.test(line.value.trim())
})

const push = Command.make(
  "push",
  {
    dir: dirFlag,
    yes: Flag.Boolean("yes").pipe(Flag.withDefault(false), Flag.withAlias("y"), Flag.withDescription("Apply without asking"))
  },
  (input) =>
    Effect.gen(function* () {
      const fs = yield* FileSystem.FileSystem
      const path = yield* Path.Path
      const api = yield* TroupeApi
      if (!(yield* fs.exists(input.dir))) return yield* usage(`no directory ${input.dir} (run troupe structures pull first)`)
      const names = (yield* fs.readDirectory(input.dir)).filter((f) => f.endsWith(".json")).sort()
      const remote = yield* listStructures
      const bySlug = new Map(remote.map((s) => [String(s.recordSlug), s]))
      const plans: Array<Plan> = []
      for (const name of names) {
        const file = path.join(input.dir, name)
        const text = yield* fs.readFileString(file)
        const local = yield* Effect.try({
          try: () => JSON.parse(text) as Record<string, unknown>,
          catch: () => usage(`${file} is not JSON`)
        })
        if (typeof local !== "object" || local === null || Array.isArray(local)) return yield* usage(`${file}: not an object`)
        const slug = typeof local.recordSlug === "string" ? local.recordSlug : name.replace(/\.json$/, "")
        plans.push(plan(file, { ...local, recordSlug: slug }, bySlug.get(slug)))
      }
      const ordered = inDependencyOrder(plans)
      const pending = ordered.filter((p) => p.action !== "unchanged")
      const json = yield* Json
      if (!json) {
        for (const p of ordered) {
          yield* Console.log(`${p.recordSlug} (${p.file}): ${p.action}`)
          for (const c of p.changes) yield* Console.log(`  ${c}`)
        }
      }
      const apply = pending.length > 0 && (input.yes || (!json && (yield* confirm)))
      const applied: Array<string> = []
      if (apply) {
        for (const p of pending) {
          if (p.action === "create") yield* api.call("POST", "/structures", { body: p.body })
          else yield* api.call("PUT", `/structures/${encodeURIComponent(p.id ?? p.recordSlug)}`, { body: p.body })
          applied.push(p.recordSlug)
        }
      }
      yield* result(
        {
          dir: input.dir,
          applied: apply,
          plans: ordered.map((p) => ({ recordSlug: p.recordSlug, file: p.file, action: p.action, changes: p.changes }))
        },
        (r) =>
          pending.length === 0
            ? "Nothing to push: the server has these definitions."
            : r.applied
              ? `Pushed ${applied.length} structures (${pending.filter((p) => p.action === "create").length} created).`
              : "Not applied: run again with --yes to push these changes."
      )
    })
).pipe(
  Command.withDescription(
    "Show what the files in <dir> would change on the server, then create the missing structures (POST) and " +
      "update the changed ones (PUT), referenced structures first. Keys and properties a file leaves out are kept " +
      "on the server: push never deletes. Without --yes it asks on a terminal, and otherwise only shows the diff."
  )
)

/** @category commands */
export const structures = Command.make("structures").pipe(
  Command.withDescription("Structures as JSON files in a directory: pull them, edit them, push them back."),
  Command.withSubcommands([pull, push]),
  Command.provide(TroupeApi.layer)
)
