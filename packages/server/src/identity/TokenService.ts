// The token endpoint's logic (RFC 6749): client_credentials for service accounts, password for users. Failures
// are RFC 6749 §5.2 errors; bad credentials answer 401 invalid_client (README "Getting a token") and feed the login
// throttle, which answers 429 slow_down once a client id / username from an address, or an address, has failed
// too often. User tokens carry the password version (`pv`): a password change refuses the tokens issued before.
import type { TokenResponse } from "@troupe/api/identity/Identity"
import { Context, Data, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { AppConfig } from "../platform/AppConfig.ts"
import { passwordVersionColumn } from "./AccessCache.ts"
import { clientSecretMatches, hashClientSecret, verifyPassword } from "./Credentials.ts"
import { addressKey, addressRule, clientKey, clientRule, makeLoginThrottle, type Throttled } from "./LoginThrottle.ts"
import { jsonStrings } from "./model.ts"
import { isAccountScope } from "./ServiceAccountService.ts"
import { SigningKeys, tokenLifetimeSeconds } from "./SigningKeys.ts"

export class OAuthError extends Data.TaggedError("OAuthError")<{
  readonly status: 400 | 401 | 429
  readonly error: string
  readonly description: string
  readonly retryAfter?: number
}> {}

const badRequest = (error: string, description: string) => new OAuthError({ status: 400, error, description })
const invalidClient = (description: string) => new OAuthError({ status: 401, error: "invalid_client", description })

export interface TokenRequestInput {
  readonly params: Readonly<Record<string, string>>
  /** client credentials from an HTTP Basic header (RFC 6749 §2.3.1) */
  readonly basic: { readonly clientId: string; readonly clientSecret: string } | undefined
  readonly address: string | undefined
}

export interface TokenServiceShape {
  readonly token: (input: TokenRequestInput) => Effect.Effect<TokenResponse, OAuthError>
}

// Compared against when the client id is unknown, so unknown and known ids cost the same.
const decoySecretHash = hashClientSecret("sk_decoy")

const scopeWorkspaces = (scope: string | undefined) =>
  (scope ?? "")
    .split(/\s+/)
    .filter((s) => s.startsWith("workspace:"))
    .map((s) => s.slice("workspace:".length))

export class TokenService extends Context.Service<TokenService, TokenServiceShape>()("@troupe/server/identity/TokenService") {
  static readonly layer: Layer.Layer<TokenService, never, AppConfig | SqlClient.SqlClient | SigningKeys> = Layer.effect(
    TokenService,
    Effect.gen(function* () {
      const config = yield* AppConfig
      const sql = yield* SqlClient.SqlClient
      const keys = yield* SigningKeys
      const throttle = makeLoginThrottle()

      const slowDown = ({ retryAfter }: Throttled) =>
        Effect.fail(
          new OAuthError({
            status: 429,
            error: "slow_down",
            description: `Too many failed attempts; retry in ${retryAfter} s`,
            retryAfter
          })
        )

      const clientCredentials = (input: TokenRequestInput) =>
        Effect.gen(function* () {
          const fromBody = input.params.client_id !== undefined || input.params.client_secret !== undefined
          if (fromBody && input.basic !== undefined) {
            return yield* Effect.fail(badRequest("invalid_request", "Use one client authentication method, not two"))
          }
          const clientId = input.basic?.clientId ?? input.params.client_id ?? ""
          const clientSecret = input.basic?.clientSecret ?? input.params.client_secret ?? ""
          if (clientId.length === 0 || clientSecret.length === 0) {
            return yield* Effect.fail(badRequest("invalid_request", "client_id and client_secret are required"))
          }
          const keyed = [
            [clientKey("client", clientId, input.address), clientRule],
            [addressKey(input.address), addressRule]
          ] as const
          const lookup = Effect.map(
            Effect.orDie(sql<{
              id: number
              workspace: string
              secretHash: string
              grantTypes: unknown
              scope: string
              status: string
              secretVersion: number
            }>`
            SELECT id, workspace, secret_hash AS "secretHash", grant_types AS "grantTypes", scope, status,
              secret_version AS "secretVersion"
            FROM service_accounts WHERE client_id = ${clientId}`),
            (rows) => {
              const account = rows[0]
              const secretOk = clientSecretMatches(clientSecret, account?.secretHash ?? decoySecretHash)
              return secretOk ? account : undefined
            }
          )
          const account = yield* throttle.attempt(keyed, lookup, (a) => a !== undefined).pipe(Effect.catchTag("Throttled", slowDown))
          if (account === undefined) return yield* Effect.fail(invalidClient("Invalid client credentials"))
          if (account.status !== "active") return yield* Effect.fail(invalidClient("The service account is revoked"))
          if (!jsonStrings(account.grantTypes).includes("client_credentials")) {
            return yield* Effect.fail(badRequest("unauthorized_client", "This client may not use the client_credentials grant"))
          }
          const foreign = scopeWorkspaces(input.params.scope).find((w) => w !== account.workspace)
          if (foreign !== undefined) {
            return yield* Effect.fail(badRequest("invalid_scope", `This client belongs to another workspace than "${foreign}"`))
          }
          const unknown = (input.params.scope ?? "").split(/\s+/).find((s) => s.length > 0 && !isAccountScope(s, account.workspace))
          if (unknown !== undefined) {
            return yield* Effect.fail(
              badRequest("invalid_scope", `Unknown scope "${unknown}"; use openid and workspace:${account.workspace}`)
            )
          }
          const groups = yield* Effect.orDie(sql<{ name: string }>`
            SELECT g.name FROM groups g JOIN group_members gm ON gm.group_id = g.id
            WHERE gm.member_type = 'service-account' AND gm.member_id = ${String(account.id)} ORDER BY g.name`)
          const scope = input.params.scope?.trim() || account.scope
          const accessToken = yield* keys.sign({
            sub: clientId,
            workspace: account.workspace,
            isServiceAccount: "true",
            groups: groups.map((g) => g.name),
            client_id: clientId,
            scope,
            sv: Number(account.secretVersion)
          })
          return { access_token: accessToken, token_type: "Bearer" as const, expires_in: tokenLifetimeSeconds, scope }
        })

      const password = (input: TokenRequestInput) =>
        Effect.gen(function* () {
          const username = input.params.username ?? ""
          const pass = input.params.password ?? ""
          if (username.length === 0 || pass.length === 0) {
            return yield* Effect.fail(badRequest("invalid_request", "username and password are required"))
          }
          const keyed = [
            [clientKey("user", username, input.address), clientRule],
            [addressKey(input.address), addressRule]
          ] as const
          const check = Effect.gen(function* () {
            const rows = yield* Effect.orDie(sql<{ id: string; hash: string; isPlatformAdmin: boolean; pv: string }>`
              SELECT id::text AS id, password_hash AS hash, is_platform_admin AS "isPlatformAdmin",
                ${sql.literal(passwordVersionColumn)} AS pv
              FROM users WHERE username = ${username}`)
            const user = rows[0]
            const ok = yield* verifyPassword(pass, user?.hash)
            return ok ? user : undefined
          })
          const user = yield* throttle.attempt(keyed, check, (u) => u !== undefined).pipe(Effect.catchTag("Throttled", slowDown))
          if (user === undefined) return yield* Effect.fail(invalidClient("Invalid username or password"))
          const requested = [...new Set(scopeWorkspaces(input.params.scope))]
          if (requested.length > 1) {
            return yield* Effect.fail(badRequest("invalid_scope", "Ask for one workspace per token"))
          }
          const memberships = yield* Effect.orDie(sql<{ workspace: string; role: string }>`
            SELECT workspace, role FROM memberships WHERE user_id = ${user.id} ORDER BY workspace`)
          let workspace = requested[0]
          if (workspace === undefined) {
            // No workspace asked for: the bootstrap workspace, else the user's only one.
            if (memberships.some((m) => m.workspace === config.workspace)) workspace = config.workspace
            else if (memberships.length === 1) workspace = memberships[0]!.workspace
            else {
              return yield* Effect.fail(badRequest("invalid_scope", "Add scope workspace:<slug> to choose a workspace"))
            }
          }
          const role = memberships.find((m) => m.workspace === workspace)?.role
          if (role === undefined) {
            // Platform administrators may act in any existing workspace.
            const exists = user.isPlatformAdmin
              ? (yield* Effect.orDie(sql`SELECT 1 FROM workspaces WHERE slug = ${workspace}`)).length > 0
              : false
            if (!exists) {
              return yield* Effect.fail(badRequest("invalid_scope", `Not a member of workspace "${workspace}"`))
            }
          }
          const groups = yield* Effect.orDie(sql<{ name: string }>`
            SELECT g.name FROM groups g JOIN group_members gm ON gm.group_id = g.id
            WHERE g.workspace = ${workspace} AND gm.member_type = 'user' AND gm.member_id = ${user.id} ORDER BY g.name`)
          const scope = `openid workspace:${workspace}`
          const accessToken = yield* keys.sign({
            sub: user.id,
            preferred_username: username,
            workspace,
            isServiceAccount: "false",
            groups: groups.map((g) => g.name),
            ...(role === undefined ? {} : { role }),
            scope,
            pv: user.pv
          })
          return { access_token: accessToken, token_type: "Bearer" as const, expires_in: tokenLifetimeSeconds, scope }
        })

      const token = (input: TokenRequestInput) => {
        const grant = input.params.grant_type
        if (grant === undefined || grant.length === 0) {
          return Effect.fail(badRequest("invalid_request", "grant_type is required"))
        }
        if (grant === "client_credentials") return clientCredentials(input)
        if (grant === "password") return password(input)
        return Effect.fail(badRequest("unsupported_grant_type", `Unsupported grant_type "${grant}"; use client_credentials or password`))
      }

      return TokenService.of({ token: (input) => Effect.withSpan(token(input), "TokenService.token") })
    })
  )
}
