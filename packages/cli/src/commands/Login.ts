/**
 * `troupe login`, `logout`, `whoami`: getting a token (password or client-credentials grant) and keeping it in the
 * config file.
 *
 * @since 0.1.0
 */
import { Config, Effect, Option, Redacted, Schema, Stdio, Stream } from "effect"
import { Command, Flag } from "effect/cli"
import { FetchHttpClient, HttpClient } from "effect/http"
import { configPath, currentSession, type Profile, readProfile, writeProfile } from "../Config.ts"
import { CliFailure, orUndefined, result, usage } from "../Output.ts"
import { callUrl, TroupeApi } from "../TroupeApi.ts"

const TokenAnswer = Schema.Struct({
  access_token: Schema.String,
  expires_in: Schema.optionalKey(Schema.Number),
  scope: Schema.optionalKey(Schema.String)
})

const Claims = Schema.Struct({
  sub: Schema.optionalKey(Schema.String),
  workspace: Schema.optionalKey(Schema.String),
  exp: Schema.optionalKey(Schema.Number),
  preferred_username: Schema.optionalKey(Schema.String),
  client_id: Schema.optionalKey(Schema.String)
})

/** The claims of a JWT, unverified (the server verified it; the CLI only reads its workspace and expiry). */
const readClaims = (token: string) => {
  const payload = token.split(".")[1] ?? ""
  return Effect.try(() => JSON.parse(Buffer.from(payload, "base64url").toString("utf8")) as unknown).pipe(
    Effect.flatMap(Schema.decodeUnknownEffect(Claims)),
    Effect.orElseSucceed(() => ({}) as typeof Claims.Type)
  )
}

/** A secret from its flag, else from an environment variable, else from stdin when stdin is not a terminal. */
const secret = (flag: Option.Option<Redacted.Redacted<string>>, envName: string, what: string, flagName: string) =>
  Effect.gen(function* () {
    if (Option.isSome(flag)) return Redacted.value(flag.value)
    const fromEnv = yield* Config.String(envName).pipe(Config.option, Effect.orDie)
    if (Option.isSome(fromEnv) && fromEnv.value.length > 0) return fromEnv.value
    const stdio = yield* Stdio.Stdio
    if (yield* stdio.stdinIsTerminal) {
      return yield* usage(`no ${what}: give ${flagName}, set ${envName}, or pipe it on stdin`)
    }
    const text = yield* stdio.stdin.pipe(Stream.decodeText, Stream.mkString)
    const value = text.replace(/\r?\n$/, "")
    if (value.length === 0) return yield* usage(`no ${what}: stdin was empty (give ${flagName} or set ${envName})`)
    return value
  })

const flags = {
  url: Flag.String("url").pipe(
    Flag.withDescription("Troupe's origin, e.g. http://127.0.0.1:8080 (default: the stored one, then that)"),
    Flag.optional
  ),
  workspace: Flag.String("workspace").pipe(
    Flag.withAlias("w"),
    Flag.withDescription("Workspace slug (default: the server's default workspace, or the service account's)"),
    Flag.optional
  ),
  username: Flag.String("username").pipe(Flag.withAlias("u"), Flag.withDescription("Password grant: the user"), Flag.optional),
  password: Flag.Redacted("password").pipe(
    Flag.withDescription("Password grant: the password (else TROUPE_PASSWORD, else read from stdin)"),
    Flag.optional
  ),
  clientId: Flag.String("client-id").pipe(Flag.withDescription("Client-credentials grant: the service account's client id"), Flag.optional),
  clientSecret: Flag.Redacted("client-secret").pipe(
    Flag.withDescription("Client-credentials grant: its secret (else TROUPE_CLIENT_SECRET, else read from stdin)"),
    Flag.optional
  )
}

/** @category commands */
export const login = Command.make("login", flags, (input) =>
  Effect.gen(function* () {
    const stored = yield* readProfile
    const fromEnv = yield* Config.String("TROUPE_URL").pipe(Config.option, Effect.orDie)
    const url = Option.getOrElse(
      Option.orElse(input.url, () => Option.orElse(fromEnv, () => Option.map(stored, (p) => p.url))),
      () => "http://127.0.0.1:8080"
    ).replace(/\/+$/, "")
    const workspace = orUndefined(input.workspace)
    const scope = workspace === undefined ? undefined : `openid workspace:${workspace}`
    let form: Record<string, string>
    let grant: Profile["grant"]
    if (Option.isSome(input.clientId)) {
      if (Option.isSome(input.username)) return yield* usage("give either --username or --client-id, not both")
      const clientSecret = yield* secret(input.clientSecret, "TROUPE_CLIENT_SECRET", "client secret", "--client-secret")
      grant = "client_credentials"
      form = { grant_type: "client_credentials", client_id: input.clientId.value, client_secret: clientSecret }
    } else if (Option.isSome(input.username)) {
      const password = yield* secret(input.password, "TROUPE_PASSWORD", "password", "--password")
      grant = "password"
      form = { grant_type: "password", username: input.username.value, password }
    } else {
      return yield* usage("give --username (password grant) or --client-id (client credentials)")
    }
    if (scope !== undefined) form.scope = scope

    const http = yield* HttpClient.HttpClient
    const answer = yield* callUrl(http, "POST", `${url}/oidc/token`, "/oidc/token", { form })
    const token = yield* Schema.decodeUnknownEffect(TokenAnswer)(answer).pipe(
      Effect.mapError(() => new CliFailure({ message: `${url}/oidc/token answered no access_token` }))
    )
    const claims = yield* readClaims(token.access_token)
    const ws = workspace ?? claims.workspace
    if (ws === undefined) return yield* new CliFailure({ message: "the token names no workspace: give --workspace" })
    // prove the token works on that workspace before storing it
    const me = yield* callUrl(http, "GET", `${url}/workspace/${encodeURIComponent(ws)}/api/v1/me`, "/me", {
      headers: { authorization: `Bearer ${token.access_token}` }
    })
    const expiresAt = claims.exp === undefined ? undefined : new Date(claims.exp * 1000).toISOString()
    const profile: Profile = {
      url,
      workspace: ws,
      token: token.access_token,
      grant,
      ...(expiresAt === undefined ? {} : { expiresAt }),
      ...(claims.sub === undefined ? {} : { subject: claims.sub }),
      ...(Option.isSome(input.username) ? { username: input.username.value } : {}),
      ...(Option.isSome(input.clientId) ? { clientId: input.clientId.value } : {})
    }
    const file = yield* writeProfile(profile)
    const who = Option.getOrElse(
      Option.orElse(input.username, () => input.clientId),
      () => claims.sub ?? "?"
    )
    yield* result(
      { url, workspace: ws, subject: claims.sub ?? null, grant, expiresAt: expiresAt ?? null, config: file, me },
      (r) => `Logged in to ${r.url} (workspace ${r.workspace}) as ${who}; token valid until ${r.expiresAt ?? "?"}; saved in ${r.config}`
    )
  }).pipe(Effect.provide(FetchHttpClient.layer))
).pipe(
  Command.withDescription(
    "Get a token and keep it in the config file ($TROUPE_CONFIG, else ~/.config/troupe/config.json, mode 600). " +
      "Password grant: --username with --password, TROUPE_PASSWORD or the password on stdin. Client credentials: " +
      "--client-id with --client-secret, TROUPE_CLIENT_SECRET or the secret on stdin. Tokens last 7 hours; " +
      "there is no refresh token: log in again."
  ),
  Command.withExamples([
    { command: "troupe login --url http://127.0.0.1:8080 --workspace default --username admin < password.txt" },
    { command: "TROUPE_CLIENT_SECRET=sk_... troupe login --client-id ci_... --url https://troupe.example.com" }
  ])
)

/** @category commands */
export const logout = Command.make("logout", {}, () =>
  Effect.gen(function* () {
    const file = yield* configPath
    yield* writeProfile(undefined)
    yield* result({ config: file }, (r) => `Token removed from ${r.config}`)
  })
).pipe(Command.withDescription("Forget the stored token (the server keeps honouring it until it expires)."))

/** @category commands */
export const whoami = Command.make("whoami", {}, () =>
  Effect.gen(function* () {
    const api = yield* TroupeApi
    const me = yield* api.call("GET", "/me")
    const session = yield* currentSession
    yield* result({ url: session.url, workspace: session.workspace, expiresAt: session.expiresAt ?? null, me }, (r) => [
      `${r.url} workspace ${r.workspace}`,
      JSON.stringify(r.me),
      `token valid until ${r.expiresAt ?? "?"}`
    ])
  })
).pipe(Command.withDescription("Show who the stored token is for (GET /me)."), Command.provide(TroupeApi.layer))
