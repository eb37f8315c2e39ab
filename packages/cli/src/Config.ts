/**
 * The CLI's config file: where `troupe login` keeps the server, the workspace and the token. It is
 * `$TROUPE_CONFIG`, else `$XDG_CONFIG_HOME/troupe/config.json`, else `~/.config/troupe/config.json`, written with
 * mode 600 in a directory of mode 700 (a token is a password for 7 hours). `TROUPE_URL`, `TROUPE_WORKSPACE` and
 * `TROUPE_TOKEN` override what the file says (CI jobs need no file at all).
 *
 * @since 0.1.0
 */
import { Config, Effect, FileSystem, Option, Path, Schema } from "effect"
import * as Os from "node:os"
import { CliFailure } from "./Output.ts"

/** What `login` stores. @category models */
export const Profile = Schema.Struct({
  url: Schema.String,
  workspace: Schema.String,
  token: Schema.String,
  /** ISO 8601; the token's `exp` */
  expiresAt: Schema.optionalKey(Schema.String),
  /** who the token is for: a user id or a client id */
  subject: Schema.optionalKey(Schema.String),
  grant: Schema.optionalKey(Schema.Literals(["password", "client_credentials", "token"])),
  username: Schema.optionalKey(Schema.String),
  clientId: Schema.optionalKey(Schema.String)
})
/** @category models */
export type Profile = typeof Profile.Type

const ConfigFile = Schema.Struct({ version: Schema.Literal(1), profile: Schema.optionalKey(Profile) })

const env = (name: string) => Config.String(name).pipe(Config.option, Effect.map(Option.filter((s) => s.trim().length > 0)), Effect.orDie)

/** The config file's path. @category config */
export const configPath = Effect.gen(function* () {
  const path = yield* Path.Path
  const explicit = yield* env("TROUPE_CONFIG")
  if (Option.isSome(explicit)) return path.resolve(explicit.value)
  const xdg = yield* env("XDG_CONFIG_HOME")
  const base = Option.getOrElse(xdg, () => path.join(Os.homedir(), ".config"))
  return path.join(base, "troupe", "config.json")
})

/** The stored profile, if any. @category config */
export const readProfile = Effect.gen(function* () {
  const fs = yield* FileSystem.FileSystem
  const file = yield* configPath
  if (!(yield* fs.exists(file))) return Option.none<Profile>()
  const text = yield* fs.readFileString(file)
  const parsed = yield* Effect.try({
    try: () => JSON.parse(text) as unknown,
    catch: () => new CliFailure({ message: `${file} is not JSON: fix or delete it, then run troupe login` })
  })
  const config = yield* Schema.decodeUnknownEffect(ConfigFile)(parsed).pipe(
    Effect.mapError((e) => new CliFailure({ message: `${file} is not a troupe config: ${e.message}` }))
  )
  return Option.fromUndefinedOr(config.profile)
})

/** Stores the profile (mode 600, written to a temporary file and renamed over the old one). @category config */
export const writeProfile = (profile: Profile | undefined) =>
  Effect.gen(function* () {
    const fs = yield* FileSystem.FileSystem
    const path = yield* Path.Path
    const file = yield* configPath
    const dir = path.dirname(file)
    if (!(yield* fs.exists(dir))) yield* fs.makeDirectory(dir, { recursive: true, mode: 0o700 })
    const temp = `${file}.${process.pid}.tmp`
    const body = `${JSON.stringify(profile === undefined ? { version: 1 } : { version: 1, profile }, null, 2)}\n`
    yield* fs.writeFileString(temp, body, { mode: 0o600 })
    yield* fs.chmod(temp, 0o600) // the umask may have taken bits away, never added: this is for an existing file
    yield* fs.rename(temp, file)
    return file
  })

/** The server, workspace and token a command uses: the stored profile overridden by the environment. @category config */
export const currentSession = Effect.gen(function* () {
  const stored = yield* readProfile
  const url = yield* env("TROUPE_URL")
  const workspace = yield* env("TROUPE_WORKSPACE")
  const token = yield* env("TROUPE_TOKEN")
  const pick = (fromEnv: Option.Option<string>, key: "url" | "workspace" | "token") =>
    Option.orElse(fromEnv, () => Option.map(stored, (p) => p[key]))
  const session = {
    url: pick(url, "url"),
    workspace: pick(workspace, "workspace"),
    token: pick(token, "token")
  }
  if (Option.isNone(session.url) || Option.isNone(session.workspace) || Option.isNone(session.token)) {
    return yield* new CliFailure({
      message:
        "not logged in: run `troupe login --url <url> --workspace <ws> --username <user>` " +
        "(or set TROUPE_URL, TROUPE_WORKSPACE and TROUPE_TOKEN)"
    })
  }
  const expiresAt = Option.isNone(token) ? Option.flatMap(stored, (p) => Option.fromUndefinedOr(p.expiresAt)) : Option.none()
  return {
    url: session.url.value.replace(/\/+$/, ""),
    workspace: session.workspace.value,
    token: session.token.value,
    expiresAt: Option.getOrUndefined(expiresAt)
  }
})

/** @category models */
export type Session = Effect.Success<typeof currentSession>
