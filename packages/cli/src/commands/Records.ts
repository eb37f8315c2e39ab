/**
 * `troupe export` and `troupe import`: a workspace's records as JSON Lines, one `<recordSlug>.jsonl` per structure.
 *
 * Both are resumable through a state file in the directory. Export keeps, per structure, the keyset cursor of the
 * next page and the byte length of what it wrote: a resumed export cuts the file back to that length (dropping a
 * page written after the state was last saved) and asks for that cursor, so every record appears exactly once.
 * Import keeps the number of lines sent: it sends chunks of at most 1,000 records to `POST /records/bulk` as
 * atomic batches (a chunk is stored whole or not at all), or upserts each record on a business key (`--match`).
 *
 * @since 0.1.0
 */
import { Effect, FileSystem, Option, Path, Schema, Stream } from "effect"
import { Command, Flag } from "effect/cli"
import { CliFailure, orUndefined, progress, progressDone, result, usage } from "../Output.ts"
import { type ApiError, TroupeApi } from "../TroupeApi.ts"
import { decode, listStructures } from "../Workspace.ts"

const ExportState = Schema.Struct({
  version: Schema.Literal(1),
  url: Schema.String,
  workspace: Schema.String,
  structures: Schema.Record(
    Schema.String,
    Schema.Struct({ cursor: Schema.NullOr(Schema.String), count: Schema.Number, bytes: Schema.Number, done: Schema.Boolean })
  )
})
type ExportState = typeof ExportState.Type

const ImportState = Schema.Struct({
  version: Schema.Literal(1),
  url: Schema.String,
  workspace: Schema.String,
  files: Schema.Record(Schema.String, Schema.Struct({ line: Schema.Number, records: Schema.Number, done: Schema.Boolean }))
})
type ImportState = typeof ImportState.Type

const RecordPage = Schema.Struct({
  results: Schema.Array(Schema.Unknown),
  pagination: Schema.Struct({ nextCursor: Schema.optionalKey(Schema.NullOr(Schema.String)) })
})

const EXPORT_STATE = ".troupe-export-state.json"
const IMPORT_STATE = ".troupe-import-state.json"

const dirFlag = (fallback: string) =>
  Flag.String("dir").pipe(Flag.withAlias("d"), Flag.withDescription("Directory of the .jsonl files"), Flag.withDefault(fallback))

const structureFlag = Flag.String("structure").pipe(
  Flag.withAlias("s"),
  Flag.withDescription("Only these structures (record slugs, comma-separated)"),
  Flag.optional
)

const restartFlag = Flag.Boolean("restart").pipe(Flag.withDefault(false), Flag.withDescription("Ignore the state file and start over"))

const slugList = (flag: Option.Option<string>) =>
  Option.map(flag, (s) =>
    s
      .split(",")
      .map((x) => x.trim())
      .filter((x) => x.length > 0)
  )

/** Reads a state file, or none; a state of another server or workspace is refused. */
const readState = <S extends Schema.Constraint & Schema.ConstraintDecoder<unknown>>(
  schema: S,
  file: string,
  session: { readonly url: string; readonly workspace: string }
) =>
  Effect.gen(function* () {
    const fs = yield* FileSystem.FileSystem
    if (!(yield* fs.exists(file))) return Option.none<S["Type"]>()
    const text = yield* fs.readFileString(file)
    const state = (yield* Effect.try(() => JSON.parse(text) as unknown).pipe(
      Effect.flatMap(decode(schema, file)),
      Effect.mapError(() => new CliFailure({ message: `${file} is not a state file of this command: use --restart` }))
    )) as { url: string; workspace: string }
    if (state.url !== session.url || state.workspace !== session.workspace) {
      return yield* new CliFailure({
        message: `${file} belongs to ${state.url} workspace ${state.workspace}: use --restart, or another --dir`
      })
    }
    return Option.some(state as S["Type"])
  })

const saveState = (file: string, state: unknown) =>
  Effect.gen(function* () {
    const fs = yield* FileSystem.FileSystem
    yield* fs.writeFileString(`${file}.tmp`, `${JSON.stringify(state, null, 2)}\n`)
    yield* fs.rename(`${file}.tmp`, file)
  })

/** @category commands */
export const exportRecords = Command.make(
  "export",
  {
    dir: dirFlag("export"),
    structure: structureFlag,
    reveal: Flag.Boolean("reveal").pipe(
      Flag.withDefault(false),
      Flag.withDescription('Export secret fields in plaintext (needs secrets:reveal); without it they read "********"')
    ),
    restart: restartFlag
  },
  (input) =>
    Effect.gen(function* () {
      const api = yield* TroupeApi
      const fs = yield* FileSystem.FileSystem
      const path = yield* Path.Path
      const all = (yield* listStructures).map((s) => String(s.recordSlug)).sort()
      const wanted = slugList(input.structure)
      if (Option.isSome(wanted)) {
        const unknown = wanted.value.filter((s) => !all.includes(s))
        if (unknown.length > 0) return yield* new CliFailure({ message: `no structure ${unknown.join(", ")} in this workspace` })
      }
      const slugs = Option.getOrElse(wanted, () => all)
      yield* fs.makeDirectory(input.dir, { recursive: true })
      const stateFile = path.join(input.dir, EXPORT_STATE)
      const previous = input.restart ? Option.none() : yield* readState(ExportState, stateFile, api.session)
      const state: { -readonly [K in keyof ExportState]: ExportState[K] } = Option.getOrElse(previous, () => ({
        version: 1 as const,
        url: api.session.url,
        workspace: api.session.workspace,
        structures: {}
      }))
      state.structures = { ...state.structures }
      const summary: Array<{ structure: string; file: string; records: number; resumed: boolean }> = []
      for (const slug of slugs) {
        const file = path.join(input.dir, `${slug}.jsonl`)
        const at = state.structures[slug] ?? { cursor: null, count: 0, bytes: 0, done: false }
        const resumed = at.count > 0 || at.done
        if (at.done && (yield* fs.exists(file))) {
          summary.push({ structure: slug, file, records: at.count, resumed })
          continue
        }
        // whatever follows the last saved length was written after the state: it comes again from the cursor
        if (at.bytes === 0 || !(yield* fs.exists(file))) yield* fs.writeFileString(file, "")
        else yield* fs.truncate(file, at.bytes)
        let cursor = at.bytes === 0 ? null : at.cursor
        let count = at.bytes === 0 ? 0 : at.count
        let bytes = at.bytes
        while (true) {
          const page = yield* api
            .call("GET", "/records", {
              query: {
                structureId: slug,
                limit: 100,
                ...(cursor === null ? {} : { cursor }),
                ...(input.reveal ? { reveal: "true" } : {})
              }
            })
            .pipe(Effect.flatMap(decode(RecordPage, "GET /records")))
          const text = page.results.map((r) => `${JSON.stringify(r)}\n`).join("")
          if (text.length > 0) yield* fs.writeFileString(file, text, { flag: "a" })
          bytes += Buffer.byteLength(text)
          count += page.results.length
          cursor = page.pagination.nextCursor ?? null
          state.structures = { ...state.structures, [slug]: { cursor, count, bytes, done: cursor === null } }
          yield* saveState(stateFile, state)
          yield* progress(`export ${slug}: ${count} records`)
          if (cursor === null) break
        }
        summary.push({ structure: slug, file, records: count, resumed })
      }
      yield* progressDone
      yield* result({ dir: input.dir, state: stateFile, structures: summary }, (r) => [
        ...r.structures.map((s) => `${s.structure}: ${s.records} records -> ${s.file}`),
        `state: ${r.state}`
      ])
    })
).pipe(
  Command.withDescription(
    "Write every record of the workspace (or of --structure) to <dir>/<recordSlug>.jsonl, one record per line as " +
      "GET /records answers it, paging with the keyset cursor (100 per page). Resumable: the cursor and the bytes " +
      "written are saved in <dir>/" +
      EXPORT_STATE +
      " after every page, and a second run goes on from there " +
      "(--restart starts over). Structures themselves: troupe structures pull."
  ),
  Command.provide(TroupeApi.layer)
)

/** What one exported line sends: the record's `data` (and `metadata`), or the whole line when it has no `data`. */
const toInput = (line: unknown): { data: Record<string, unknown>; metadata?: unknown } | undefined => {
  if (typeof line !== "object" || line === null || Array.isArray(line)) return undefined
  const o = line as Record<string, unknown>
  if (typeof o.data === "object" && o.data !== null && !Array.isArray(o.data)) {
    const data = { ...(o.data as Record<string, unknown>) }
    delete data._expanded
    return o.metadata === undefined || o.metadata === null ? { data } : { data, metadata: o.metadata }
  }
  return { data: o }
}

/** @category commands */
export const importRecords = Command.make(
  "import",
  {
    dir: dirFlag("export"),
    structure: structureFlag,
    match: Flag.String("match").pipe(
      Flag.withDescription(
        "Upsert each record on this field (POST /records/slug/{slug}/upsert) instead of creating it: " +
          "a re-run updates rather than duplicates"
      ),
      Flag.optional
    ),
    chunk: Flag.Int("chunk").pipe(Flag.withDescription("Records per POST /records/bulk (1-1000)"), Flag.withDefault(500)),
    restart: restartFlag
  },
  (input) =>
    Effect.gen(function* () {
      const api = yield* TroupeApi
      const fs = yield* FileSystem.FileSystem
      const path = yield* Path.Path
      if (input.chunk < 1 || input.chunk > 1000) return yield* usage("--chunk must be between 1 and 1000")
      if (!(yield* fs.exists(input.dir))) return yield* usage(`no directory ${input.dir}`)
      const available = (yield* fs.readDirectory(input.dir))
        .filter((f) => f.endsWith(".jsonl"))
        .map((f) => f.slice(0, -".jsonl".length))
        .sort()
      const wanted = slugList(input.structure)
      const slugs = Option.getOrElse(wanted, () => available)
      const missing = slugs.filter((s) => !available.includes(s))
      if (missing.length > 0) return yield* usage(`no file ${missing.map((s) => `${s}.jsonl`).join(", ")} in ${input.dir}`)
      const stateFile = path.join(input.dir, IMPORT_STATE)
      const previous = input.restart ? Option.none() : yield* readState(ImportState, stateFile, api.session)
      const state: { -readonly [K in keyof ImportState]: ImportState[K] } = Option.getOrElse(previous, () => ({
        version: 1 as const,
        url: api.session.url,
        workspace: api.session.workspace,
        files: {}
      }))
      state.files = { ...state.files }
      const match = orUndefined(input.match)
      const summary: Array<{ structure: string; records: number; resumedAt: number }> = []
      for (const slug of slugs) {
        const file = path.join(input.dir, `${slug}.jsonl`)
        const at = state.files[slug] ?? { line: 0, records: 0, done: false }
        if (at.done) {
          summary.push({ structure: slug, records: at.records, resumedAt: at.line })
          continue
        }
        let line = at.line
        let records = at.records
        const send = (batch: ReadonlyArray<{ readonly index: number; readonly text: string }>) =>
          Effect.gen(function* () {
            const inputs = []
            for (const { index, text } of batch) {
              const parsed = yield* Effect.try({
                try: () => JSON.parse(text) as unknown,
                catch: () => new CliFailure({ message: `${file}:${index + 1}: not JSON` })
              })
              const one = toInput(parsed)
              if (one === undefined) return yield* new CliFailure({ message: `${file}:${index + 1}: not an object` })
              inputs.push({ index, one })
            }
            const where = (e: ApiError) =>
              new CliFailure({
                message:
                  `${file}: lines ${batch[0]!.index + 1}-${batch[batch.length - 1]!.index + 1}: ${e.message}` +
                  (e.status === 404 ? " (create the structure first: troupe structures push)" : "") +
                  ` — fix and run the import again: it resumes at line ${batch[0]!.index + 1}`,
                details: e.details
              })
            if (match === undefined) {
              if (inputs.length > 0) {
                yield* api
                  .call("POST", "/records/bulk", {
                    body: {
                      structureId: slug,
                      records: inputs.map((i) => i.one),
                      options: { atomic: true, returnRecords: false }
                    }
                  })
                  .pipe(Effect.mapError(where))
              }
            } else {
              yield* Effect.forEach(
                inputs,
                ({ index, one }) => {
                  if (!(match in one.data)) {
                    return Effect.fail(new CliFailure({ message: `${file}:${index + 1}: no field ${match} to match on` }))
                  }
                  return api
                    .call("POST", `/records/slug/${encodeURIComponent(slug)}/upsert`, {
                      body: { match: { [match]: one.data[match] }, data: one.data }
                    })
                    .pipe(Effect.mapError(where))
                },
                { concurrency: 8, discard: true }
              )
            }
            line = batch[batch.length - 1]!.index + 1
            records += inputs.length
            state.files = { ...state.files, [slug]: { line, records, done: false } }
            yield* saveState(stateFile, state)
            yield* progress(`import ${slug}: ${records} records (line ${line})`)
          })
        yield* fs.stream(file).pipe(
          Stream.decodeText,
          Stream.splitLines,
          Stream.zipWithIndex,
          Stream.drop(at.line),
          Stream.filter(([text]) => text.trim().length > 0),
          Stream.map(([text, index]) => ({ text, index })),
          Stream.grouped(input.chunk),
          Stream.runForEach(send)
        )
        state.files = { ...state.files, [slug]: { line, records, done: true } }
        yield* saveState(stateFile, state)
        summary.push({ structure: slug, records, resumedAt: at.line })
      }
      yield* progressDone
      yield* result({ dir: input.dir, state: stateFile, structures: summary }, (r) => [
        ...r.structures.map((s) => `${s.structure}: ${s.records} records imported`),
        `state: ${r.state}`
      ])
    })
).pipe(
  Command.withDescription(
    "Send <dir>/<recordSlug>.jsonl files (troupe export's, or any JSON Lines: a line with a `data` object sends " +
      "that, any other object is the data itself) to the workspace: atomic POST /records/bulk batches of --chunk " +
      "records, or one upsert per record with --match <field>. Records get new ids (references between imported " +
      "records are not rewritten). Resumable: lines done are saved in <dir>/" +
      IMPORT_STATE +
      "; a run that " +
      "stopped (or failed on a bad line) goes on from the first batch not stored; only a crash between a batch " +
      "being stored and the state being saved sends that batch twice (--match makes re-sends harmless). The " +
      "structures must exist (troupe structures push)."
  ),
  Command.provide(TroupeApi.layer)
)
