/**
 * `troupe files ls|upload|download|rm`: the workspace's storage service (`/storage/workspace/{ws}/api/v1`,
 * docs/storage.md). Upload and download stream the file (never read whole into memory) and draw a progress line
 * on stderr; upload sends the multipart body itself, so its length is known and its progress is the bytes sent.
 *
 * @since 0.1.0
 */
import { Effect } from "effect"
import { Argument, Command, Flag } from "effect/cli"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { Readable } from "node:stream"
import { pipeline } from "node:stream/promises"
import { orUndefined, progress, progressDone, result } from "../Output.ts"
import { ApiError, toApiError, TroupeApi } from "../TroupeApi.ts"

interface StoredFile {
  readonly id: string
  readonly name: string
  readonly folder: string
  readonly contentType: string
  readonly size: number
  readonly createdAt: string
}

const base = (workspace: string) => `/storage/workspace/${encodeURIComponent(workspace)}/api/v1`

const human = (n: number) =>
  n < 1024
    ? `${n} B`
    : n < 1024 ** 2
      ? `${(n / 1024).toFixed(1)} KiB`
      : n < 1024 ** 3
        ? `${(n / 1024 ** 2).toFixed(1)} MiB`
        : `${(n / 1024 ** 3).toFixed(2)} GiB`

const bar = (done: number, total: number) => {
  const ratio = total > 0 ? Math.min(1, done / total) : 1
  const width = 30
  const full = Math.round(ratio * width)
  return `[${"#".repeat(full)}${" ".repeat(width - full)}] ${(ratio * 100).toFixed(0).padStart(3)}% ${human(done)} of ${human(total)}`
}

/** Draws at most ~10 progress lines a second. */
const throttled = () => {
  let last = 0
  return (line: string) => {
    const now = Date.now()
    if (now - last < 100) return
    last = now
    Effect.runSync(progress(line))
  }
}

const fail = (method: string, path: string) => (cause: unknown) =>
  cause instanceof ApiError
    ? cause
    : new ApiError({
        method,
        path,
        status: 0,
        code: "NETWORK",
        message: `${method} ${path}: ${cause instanceof Error ? cause.message : String(cause)}`
      })

const ls = Command.make(
  "ls",
  {
    folder: Flag.String("folder").pipe(Flag.withDescription("Only files in exactly this folder"), Flag.optional),
    prefix: Flag.String("prefix").pipe(Flag.withDescription("Only names starting with this"), Flag.optional),
    search: Flag.String("search").pipe(Flag.withDescription("Name or folder contains this"), Flag.optional),
    limit: Flag.Int("limit").pipe(Flag.withDefault(50)),
    page: Flag.Int("page").pipe(Flag.withDefault(1))
  },
  (input) =>
    Effect.gen(function* () {
      const api = yield* TroupeApi
      const list = (yield* api.call("GET", `${base(api.session.workspace)}/files`, {
        root: true,
        query: {
          folder: orUndefined(input.folder),
          prefix: orUndefined(input.prefix),
          search: orUndefined(input.search),
          limit: input.limit,
          page: input.page
        }
      })) as { data: ReadonlyArray<StoredFile>; total: number }
      return yield* result(list, (l) =>
        l.data
          .map(
            (f) => `${f.id}  ${human(f.size).padStart(10)}  ${f.contentType.padEnd(24)}  ${f.folder === "" ? "" : `${f.folder}/`}${f.name}`
          )
          .concat([`${l.data.length} of ${l.total} file(s)`])
      )
    })
).pipe(Command.withDescription("List files (newest first)"))

const upload = Command.make(
  "upload",
  {
    file: Argument.String("file").pipe(Argument.withDescription("Path of the file to upload")),
    folder: Flag.String("folder").pipe(Flag.withDescription('Folder, e.g. "reports/2026"'), Flag.optional),
    name: Flag.String("name").pipe(Flag.withDescription("Stored name (default: the file's name)"), Flag.optional),
    type: Flag.String("type").pipe(Flag.withDescription("Content type (default: sniffed by the server)"), Flag.optional),
    metadata: Flag.String("metadata").pipe(Flag.withDescription("A JSON object kept with the file"), Flag.optional)
  },
  (input) =>
    Effect.gen(function* () {
      const api = yield* TroupeApi
      const path = `${base(api.session.workspace)}/upload`
      const size = yield* Effect.try({ try: () => Fs.statSync(input.file).size, catch: fail("POST", path) })
      const boundary = `troupe-${Math.random().toString(36).slice(2)}${Date.now().toString(36)}`
      const field = (name: string, value: string) => `--${boundary}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`
      const fileName = orUndefined(input.name) ?? Path.basename(input.file)
      const head = Buffer.from(
        [
          ...(orUndefined(input.folder) === undefined ? [] : [field("folder", orUndefined(input.folder)!)]),
          ...(orUndefined(input.name) === undefined ? [] : [field("name", orUndefined(input.name)!)]),
          ...(orUndefined(input.metadata) === undefined ? [] : [field("metadata", orUndefined(input.metadata)!)]),
          `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="${fileName.replace(/["\r\n]/g, (c) => encodeURIComponent(c))}"\r\n`,
          `Content-Type: ${orUndefined(input.type) ?? "application/octet-stream"}\r\n\r\n`
        ].join("")
      )
      const tail = Buffer.from(`\r\n--${boundary}--\r\n`)
      const draw = throttled()
      const body = Readable.from(
        (async function* () {
          yield head
          let sent = 0
          for await (const chunk of Fs.createReadStream(input.file, { highWaterMark: 256 * 1024 })) {
            sent += (chunk as Buffer).length
            draw(`uploading ${fileName} ${bar(sent, size)}`)
            yield chunk as Buffer
          }
          yield tail
        })()
      )
      const response = yield* Effect.tryPromise({
        try: () =>
          fetch(api.session.url + path, {
            method: "POST",
            headers: {
              authorization: `Bearer ${api.session.token}`,
              "content-type": `multipart/form-data; boundary=${boundary}`,
              "content-length": String(head.length + size + tail.length)
            },
            body: Readable.toWeb(body) as unknown as ReadableStream,
            duplex: "half"
          } as RequestInit),
        catch: fail("POST", path)
      })
      const text = yield* Effect.tryPromise({ try: () => response.text(), catch: fail("POST", path) })
      yield* progressDone
      if (response.status !== 201) return yield* toApiError("POST", path, response.status, text)
      return yield* result(
        JSON.parse(text) as StoredFile,
        (f) => `${f.id} ${f.folder === "" ? "" : `${f.folder}/`}${f.name} (${human(f.size)}, ${f.contentType})`
      )
    })
).pipe(Command.withDescription("Upload a file (streamed, with a progress line)"))

const download = Command.make(
  "download",
  {
    id: Argument.String("id").pipe(Argument.withDescription("The file's id")),
    output: Flag.String("output").pipe(
      Flag.withAlias("o"),
      Flag.withDescription("Where to write it (default: its name, here)"),
      Flag.optional
    ),
    width: Flag.Int("width").pipe(Flag.withDescription("Images: a resized variant this wide (a size the server allows)"), Flag.optional),
    height: Flag.Int("height").pipe(Flag.withDescription("Images: a resized variant this high"), Flag.optional),
    fit: Flag.String("fit").pipe(Flag.withDescription("With both: cover (default), contain, fill, inside, outside"), Flag.optional)
  },
  (input) =>
    Effect.gen(function* () {
      const api = yield* TroupeApi
      const files = base(api.session.workspace)
      const meta = (yield* api.call("GET", `${files}/files/${encodeURIComponent(input.id)}/metadata`, { root: true })) as StoredFile
      const target = orUndefined(input.output) ?? meta.name
      const variant = new URLSearchParams()
      for (const key of ["width", "height", "fit"] as const) {
        const value = orUndefined<string | number>(input[key])
        if (value !== undefined) variant.set(key, String(value))
      }
      const path = `${files}/files/${encodeURIComponent(input.id)}${variant.toString() === "" ? "" : `?${variant}`}`
      const response = yield* Effect.tryPromise({
        try: () => fetch(api.session.url + path, { headers: { authorization: `Bearer ${api.session.token}` } }),
        catch: fail("GET", path)
      })
      if (response.status !== 200 || response.body === null) {
        return yield* toApiError("GET", path, response.status, yield* Effect.promise(() => response.text()))
      }
      // a variant's size is its own
      const total = Number(response.headers.get("content-length")) || meta.size
      const draw = throttled()
      let received = 0
      const counted = async function* (source: AsyncIterable<Uint8Array>) {
        for await (const chunk of source) {
          received += chunk.byteLength
          draw(`downloading ${meta.name} ${bar(received, total)}`)
          yield chunk
        }
      }
      // written beside the target and renamed when complete: an interrupted download never looks finished
      const partial = `${target}.part`
      yield* Effect.tryPromise({
        try: async () => {
          await pipeline(Readable.fromWeb(response.body as any), counted, Fs.createWriteStream(partial))
          Fs.renameSync(partial, target)
        },
        catch: fail("GET", path)
      })
      yield* progressDone
      return yield* result({ id: meta.id, path: target, size: received }, (r) => `${r.path} (${human(r.size)})`)
    })
).pipe(Command.withDescription("Download a file (streamed to disk, with a progress line)"))

const rm = Command.make("rm", { id: Argument.String("id").pipe(Argument.withDescription("The file's id")) }, (input) =>
  Effect.gen(function* () {
    const api = yield* TroupeApi
    const answer = yield* api.call("DELETE", `${base(api.session.workspace)}/files/${encodeURIComponent(input.id)}`, { root: true })
    return yield* result(answer as { message: string }, (a) => a.message)
  })
).pipe(Command.withDescription("Delete a file for good"))

/** @category commands */
export const files = Command.make("files").pipe(
  Command.withDescription("Files of the workspace's storage service: ls, upload, download, rm"),
  Command.withSubcommands([ls, upload, download, rm]),
  Command.provide(TroupeApi.layer)
)
