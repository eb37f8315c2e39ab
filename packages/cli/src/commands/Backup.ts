/**
 * `troupe backup` and `troupe restore`: the whole database of a node, not one workspace.
 *
 * - PostgreSQL (`--database-url`, default `$DATABASE_URL`): `pg_dump --format=custom` / `pg_restore`, which must be
 *   on PATH (the PostgreSQL client package of the server's major version or newer). The node may keep running:
 *   pg_dump reads one consistent snapshot.
 * - Embedded PGlite (`--data-dir`, the node's TROUPE_DATA_DIR): a tar of the data directory. PGlite is one process
 *   with no snapshot mechanism, so the node must be stopped first; a data directory holding `postmaster.pid` belongs
 *   to a running node (or one that was killed) and is refused.
 *
 * @since 0.1.0
 */
import { Effect, FileSystem, type Option, Path, type PlatformError, Stream } from "effect"
import { Command, Flag } from "effect/cli"
import { Tar } from "effect/encoding"
import { spawn } from "node:child_process"
import * as NodePath from "node:path"
import { CliFailure, orUndefined, progress, progressDone, result, usage } from "../Output.ts"

const contents = [
  "What a backup holds: the whole database of the node: every workspace with its structures (and their versions),",
  "records with their versions, changelog, unique-value claims and TTLs, queries' indexes, webhooks and their",
  "delivery log, functions, triggers and runs, drafts, users (password hashes), members, IAM groups, service",
  "accounts (secret digests), the JWT signing keys (private halves encrypted), events kept for SSE resume (3 days),",
  "rate-limit counters, and, when TROUPE_ENCRYPTION_KEY was never set, the generated encryption key. Not in it:",
  "TROUPE_ENCRYPTION_KEY itself when it is set (keep it apart: without it secret fields, encrypted trigger",
  "params, webhook secrets and signing keys cannot be decrypted), the other environment variables, and anything",
  "outside the database (the node's logs, in-flight requests and runs, open SSE streams)."
].join(" ")

const which = (command: string) =>
  Effect.gen(function* () {
    const fs = yield* FileSystem.FileSystem
    const path = yield* Path.Path
    for (const dir of (process.env.PATH ?? "").split(NodePath.delimiter)) {
      if (dir.length === 0) continue
      const candidate = path.join(dir, command)
      if (yield* fs.exists(candidate)) return candidate
    }
    return yield* new CliFailure({
      message:
        `${command} is not on PATH: install the PostgreSQL client tools (e.g. apt-get install postgresql-client) ` +
        `of the server's major version or newer`
    })
  })

/** Runs a program with inherited stderr; fails with its exit code. */
const run = (program: string, args: ReadonlyArray<string>) =>
  Effect.callback<void, CliFailure>((resume) => {
    const child = spawn(program, args, { stdio: ["ignore", "ignore", "inherit"] })
    child.on("error", (e) => resume(Effect.fail(new CliFailure({ message: `${program}: ${e.message}` }))))
    child.on("exit", (code, signal) =>
      resume(code === 0 ? Effect.void : Effect.fail(new CliFailure({ message: `${program} failed (${signal ?? `exit code ${code}`})` })))
    )
    return Effect.sync(() => child.kill())
  })

const databaseUrlFlag = Flag.String("database-url").pipe(
  Flag.withDescription("PostgreSQL: the node's DATABASE_URL (default: $DATABASE_URL); needs pg_dump / pg_restore"),
  Flag.optional
)
const dataDirFlag = Flag.String("data-dir").pipe(
  Flag.withDescription("Embedded PGlite: the node's TROUPE_DATA_DIR (the node must be stopped)"),
  Flag.optional
)

const target = (input: { readonly databaseUrl: Option.Option<string>; readonly dataDir: Option.Option<string> }) =>
  Effect.gen(function* () {
    const dataDir = orUndefined(input.dataDir)
    const url = orUndefined(input.databaseUrl) ?? (dataDir === undefined ? process.env.DATABASE_URL : undefined)
    if (dataDir !== undefined && orUndefined(input.databaseUrl) !== undefined) {
      return yield* usage("give --database-url or --data-dir, not both")
    }
    if (dataDir !== undefined) return { _tag: "pglite" as const, dataDir }
    if (url !== undefined && url.length > 0) return { _tag: "postgres" as const, url }
    return yield* usage("give --database-url (PostgreSQL; or set DATABASE_URL) or --data-dir (embedded PGlite)")
  })

const refuseRunning = (dataDir: string, force: boolean) =>
  Effect.gen(function* () {
    const fs = yield* FileSystem.FileSystem
    const path = yield* Path.Path
    if (!(yield* fs.exists(path.join(dataDir, "PG_VERSION")))) {
      return yield* new CliFailure({ message: `${dataDir} is not a PGlite data directory (no PG_VERSION)` })
    }
    if (!force && (yield* fs.exists(path.join(dataDir, "postmaster.pid")))) {
      return yield* new CliFailure({
        message:
          `${dataDir} is in use: stop the Troupe node first (SIGTERM, then wait for it to exit). ` +
          `A node that was killed leaves postmaster.pid behind: if you are sure none runs, pass --force.`
      })
    }
  })

/** @category commands */
export const backup = Command.make(
  "backup",
  {
    databaseUrl: databaseUrlFlag,
    dataDir: dataDirFlag,
    out: Flag.String("out").pipe(Flag.withAlias("o"), Flag.withDescription("The backup file to write")),
    force: Flag.Boolean("force").pipe(Flag.withDefault(false), Flag.withDescription("PGlite: back up although postmaster.pid is there"))
  },
  (input) =>
    Effect.gen(function* () {
      const fs = yield* FileSystem.FileSystem
      const path = yield* Path.Path
      const where = yield* target(input)
      if (yield* fs.exists(input.out)) return yield* usage(`${input.out} exists: choose another --out`)
      if (where._tag === "postgres") {
        const pgDump = yield* which("pg_dump")
        yield* run(pgDump, ["--format=custom", "--no-owner", "--no-privileges", `--file=${input.out}`, `--dbname=${where.url}`])
      } else {
        yield* refuseRunning(where.dataDir, input.force)
        const names = (yield* fs.readDirectory(where.dataDir, { recursive: true })).sort()
        const entries: Array<Tar.Entry<PlatformError.PlatformError>> = []
        for (const name of names) {
          if (name === "postmaster.pid") continue
          const full = path.join(where.dataDir, name)
          const info = yield* fs.stat(full)
          const entryPath = name.split(path.sep).join("/")
          if (info.type === "Directory") entries.push(Tar.directory(entryPath, { mode: info.mode & 0o777 }))
          else if (info.type === "File") {
            entries.push(Tar.fileStream(entryPath, Number(info.size), fs.stream(full), { mode: info.mode & 0o777 }))
          }
        }
        yield* progress(`backup: ${entries.length} entries of ${where.dataDir}`)
        yield* Stream.fromIterable(entries).pipe(Stream.pipeThroughChannel(Tar.encode()), Stream.run(fs.sink(input.out)))
        yield* progressDone
      }
      const size = Number((yield* fs.stat(input.out)).size)
      yield* result(
        { kind: where._tag, file: input.out, bytes: size },
        (r) => `Backed up ${where._tag === "postgres" ? "the PostgreSQL database" : where.dataDir} to ${r.file} (${r.bytes} bytes)`
      )
    })
).pipe(
  Command.withDescription(
    "Back up a node's database. PostgreSQL (--database-url or $DATABASE_URL): pg_dump --format=custom, which " +
      "must be on PATH; the node may run. Embedded PGlite (--data-dir): a tar of the data directory; STOP THE NODE " +
      "FIRST (a directory with postmaster.pid is refused). " +
      contents
  ),
  Command.withExamples([
    { command: "troupe backup --database-url postgres://troupe@db/troupe --out troupe.dump" },
    { command: "troupe backup --data-dir ./.troupe --out troupe-data.tar   # after stopping the node" }
  ])
)

/** @category commands */
export const restore = Command.make(
  "restore",
  {
    databaseUrl: databaseUrlFlag,
    dataDir: dataDirFlag,
    from: Flag.String("in").pipe(Flag.withAlias("i"), Flag.withDescription("The backup file to read")),
    clean: Flag.Boolean("clean").pipe(
      Flag.withDefault(false),
      Flag.withDescription("PostgreSQL: drop the objects the backup holds before recreating them (pg_restore --clean)")
    ),
    force: Flag.Boolean("force").pipe(Flag.withDefault(false), Flag.withDescription("PGlite: replace a data directory that is not empty"))
  },
  (input) =>
    Effect.gen(function* () {
      const fs = yield* FileSystem.FileSystem
      const path = yield* Path.Path
      const where = yield* target(input)
      if (!(yield* fs.exists(input.from))) return yield* usage(`no file ${input.from}`)
      if (where._tag === "postgres") {
        const pgRestore = yield* which("pg_restore")
        yield* run(pgRestore, [
          "--no-owner",
          "--no-privileges",
          "--exit-on-error",
          ...(input.clean ? ["--clean", "--if-exists"] : []),
          `--dbname=${where.url}`,
          input.from
        ])
      } else {
        if (yield* fs.exists(where.dataDir)) {
          const inside = yield* fs.readDirectory(where.dataDir)
          if (inside.length > 0) {
            if (!input.force) {
              return yield* new CliFailure({
                message: `${where.dataDir} is not empty: restore into a new directory, or pass --force (with the node stopped)`
              })
            }
            yield* refuseRunning(where.dataDir, false)
            yield* fs.remove(where.dataDir, { recursive: true })
          }
        }
        yield* fs.makeDirectory(where.dataDir, { recursive: true, mode: 0o700 })
        const root = path.resolve(where.dataDir)
        let count = 0
        yield* fs.stream(input.from).pipe(
          Stream.pipeThroughChannel(Tar.decode()),
          Stream.runForEach((entry) =>
            Effect.gen(function* () {
              const full = path.resolve(root, entry.header.path)
              if (full !== root && !full.startsWith(root + path.sep)) {
                return yield* new CliFailure({ message: `${input.from}: entry ${entry.header.path} leaves the directory` })
              }
              if (entry.header.type === "Directory") {
                yield* fs.makeDirectory(full, { recursive: true })
                yield* Stream.runDrain(entry.body)
              } else if (entry.header.type === "File") {
                yield* fs.makeDirectory(path.dirname(full), { recursive: true })
                yield* entry.body.pipe(Stream.run(fs.sink(full)))
                yield* fs.chmod(full, entry.header.mode & 0o777 || 0o600)
              } else {
                yield* Stream.runDrain(entry.body)
              }
              count++
            })
          )
        )
        if (!(yield* fs.exists(path.join(root, "PG_VERSION")))) {
          return yield* new CliFailure({ message: `${input.from} is not a PGlite data directory backup (no PG_VERSION)` })
        }
        yield* progress(`restore: ${count} entries into ${where.dataDir}`)
        yield* progressDone
      }
      yield* result(
        { kind: where._tag, file: input.from, target: where._tag === "postgres" ? "database" : where.dataDir },
        (r) => `Restored ${r.file} into ${r.target === "database" ? "the PostgreSQL database" : r.target}`
      )
    })
).pipe(
  Command.withDescription(
    "Restore a backup of troupe backup. PostgreSQL: pg_restore into --database-url (best an empty database; " +
      "--clean replaces what exists), then start the nodes. PGlite: unpack into --data-dir (a new or empty " +
      "directory; --force replaces one, the node stopped), then start the node with TROUPE_DATA_DIR there. Set " +
      "the same TROUPE_ENCRYPTION_KEY as the backed-up node had. " +
      contents
  )
)
