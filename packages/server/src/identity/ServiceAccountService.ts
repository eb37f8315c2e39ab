// Service accounts (README "Identity and access"): a client id (`ci_` + 24 hex) and a secret (`sk_` + 64 hex),
// of which only a SHA-256 digest is stored; the secret is shown at creation and rotation only. Rotation bumps the
// secret version (tokens carry it as `sv`), so tokens issued before are refused at once, as are a revoked or
// deleted account's. Managed with a user token; nobody can grant permissions they do not hold themselves, nor manage
// (rename, rotate, revoke, delete) an account holding more than they do: a new secret would let them act as it.
import type { Permission, Principal, Role } from "@troupe/api/Authorization"
import { type BadRequest, badRequest, details, type Forbidden, type NotFound, notFound } from "@troupe/api/Errors"
import type { ServiceAccount } from "@troupe/api/identity/Identity"
import { rolePermissions } from "@troupe/api/identity/Roles"
import { Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { AccessCache } from "./AccessCache.ts"
import { hashClientSecret, newClientId, newClientSecret } from "./Credentials.ts"
import { identityChange, iso, jsonStrings, type Page, requireHolds, requireUser } from "./model.ts"
import { isRole, type PolicyStatement, resolvePermissions } from "./Permissions.ts"

interface Row {
  readonly id: number
  readonly workspace: string
  readonly clientId: string
  readonly name: string
  readonly description: string | null
  readonly grantTypes: unknown
  readonly scope: string
  readonly role: string | null
  readonly permissions: unknown
  readonly status: string
  readonly createdBy: string | null
  readonly createdAt: Date
  readonly updatedAt: Date
}

const columns = `id, workspace, client_id AS "clientId", name, description, grant_types AS "grantTypes", scope, role,
  permissions, status, created_by AS "createdBy", created_at AS "createdAt", updated_at AS "updatedAt"`

export const toAccount = (r: Row): ServiceAccount => ({
  id: Number(r.id),
  clientId: r.clientId,
  name: r.name,
  description: r.description,
  workspace: r.workspace,
  grant_types: jsonStrings(r.grantTypes),
  scope: r.scope,
  role: isRole(r.role) ? r.role : null,
  permissions: jsonStrings(r.permissions),
  status: r.status === "revoked" ? "revoked" : "active",
  createdAt: iso(r.createdAt),
  createdBy: r.createdBy,
  updatedAt: iso(r.updatedAt)
})

export interface ServiceAccountInput {
  readonly name: string
  readonly description?: string | null
  readonly grant_types?: string | ReadonlyArray<string>
  readonly scope?: string
  readonly role?: Role
  readonly permissions?: ReadonlyArray<Permission>
}

export const supportedGrantTypes: ReadonlySet<string> = new Set(["client_credentials"])

/** The scopes a service account of `workspace` may hold or ask for: `openid` and `workspace:<its workspace>`. */
export const isAccountScope = (scope: string, workspace: string) => scope === "openid" || scope === `workspace:${workspace}`

const invalid = (field: string, message: string) => badRequest({ message, code: "VALIDATION_ERROR", details: details([[field, message]]) })

export interface ServiceAccountServiceShape {
  readonly create: (
    workspace: string,
    by: Principal,
    input: ServiceAccountInput
  ) => Effect.Effect<ServiceAccount & { clientSecret: string }, BadRequest | Forbidden>
  readonly list: (
    workspace: string,
    by: Principal,
    page: Page
  ) => Effect.Effect<{ data: Array<ServiceAccount>; total: number; page: number; limit: number }, Forbidden>
  readonly get: (workspace: string, by: Principal, id: number) => Effect.Effect<ServiceAccount, NotFound | Forbidden>
  readonly setName: (workspace: string, by: Principal, id: number, name: string) => Effect.Effect<ServiceAccount, NotFound | Forbidden>
  readonly setDescription: (
    workspace: string,
    by: Principal,
    id: number,
    description: string | null
  ) => Effect.Effect<ServiceAccount, NotFound | Forbidden>
  readonly rotate: (
    workspace: string,
    by: Principal,
    id: number
  ) => Effect.Effect<
    { id: number; clientId: string; clientSecret: string; name: string; workspace: string; updatedAt: string },
    NotFound | Forbidden
  >
  readonly revoke: (workspace: string, by: Principal, id: number) => Effect.Effect<ServiceAccount, NotFound | Forbidden>
  readonly delete: (workspace: string, by: Principal, id: number) => Effect.Effect<void, NotFound | Forbidden>
}

export class ServiceAccountService extends Context.Service<ServiceAccountService, ServiceAccountServiceShape>()(
  "@troupe/server/identity/ServiceAccountService"
) {
  static readonly layer: Layer.Layer<ServiceAccountService, never, SqlClient.SqlClient | AccessCache> = Layer.effect(
    ServiceAccountService,
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const cache = yield* AccessCache
      const provide = <A, E>(e: Effect.Effect<A, E, SqlClient.SqlClient | AccessCache>) =>
        e.pipe(Effect.provideService(SqlClient.SqlClient, sql), Effect.provideService(AccessCache, cache))
      const missing = (id: number) => notFound(`Service account ${id} not found`)

      const create = Effect.fn("ServiceAccountService.create")(function* (workspace: string, by: Principal, input: ServiceAccountInput) {
        yield* requireUser(by)
        if (input.role !== undefined && input.permissions !== undefined) {
          return yield* Effect.fail(invalid("permissions", "give either role or permissions, not both"))
        }
        const grantTypes =
          input.grant_types === undefined
            ? ["client_credentials"]
            : [...new Set(typeof input.grant_types === "string" ? input.grant_types.split(/[\s,]+/) : input.grant_types)].filter(
                (g) => g.length > 0
              )
        const unsupported = grantTypes.find((g) => !supportedGrantTypes.has(g))
        if (unsupported !== undefined || grantTypes.length === 0) {
          return yield* Effect.fail(invalid("grant_types", `unsupported grant type "${unsupported ?? ""}"; use client_credentials`))
        }
        const scope = (input.scope ?? "openid")
          .trim()
          .split(/\s+/)
          .filter((s) => s.length > 0)
        const foreign = scope.find((s) => s.startsWith("workspace:") && s !== `workspace:${workspace}`)
        if (foreign !== undefined) {
          return yield* Effect.fail(invalid("scope", `scope "${foreign}" names another workspace`))
        }
        const unknown = scope.find((s) => !isAccountScope(s, workspace))
        if (unknown !== undefined) {
          return yield* Effect.fail(invalid("scope", `unknown scope "${unknown}"; use openid and workspace:${workspace}`))
        }
        const permissions = [...new Set(input.permissions ?? [])]
        const granted = input.role !== undefined ? rolePermissions[input.role] : permissions
        yield* requireHolds(by, granted, "You cannot grant permissions you do not hold")
        const clientId = newClientId()
        const clientSecret = newClientSecret()
        const row = yield* provide(
          identityChange(sql<Row>`
          INSERT INTO service_accounts
            (workspace, client_id, secret_hash, name, description, grant_types, scope, role, permissions, created_by)
          VALUES (${workspace}, ${clientId}, ${hashClientSecret(clientSecret)}, ${input.name.trim()},
            ${input.description ?? null}, ${JSON.stringify(grantTypes)}::jsonb, ${scope.join(" ") || "openid"},
            ${input.role ?? null}, ${JSON.stringify(permissions)}::jsonb, ${by.id})
          RETURNING ${sql.literal(columns)}`)
        )
        return { ...toAccount(row[0]!), clientSecret }
      })

      const list = Effect.fn("ServiceAccountService.list")(function* (workspace: string, by: Principal, page: Page) {
        yield* requireUser(by)
        const rows = yield* Effect.orDie(sql<Row>`
          SELECT ${sql.literal(columns)} FROM service_accounts WHERE workspace = ${workspace}
          ORDER BY id LIMIT ${page.limit} OFFSET ${page.offset}`)
        const total = yield* Effect.orDie(
          sql<{ n: number }>`SELECT count(*)::int AS n FROM service_accounts WHERE workspace = ${workspace}`
        )
        return { data: rows.map(toAccount), total: Number(total[0]?.n ?? 0), page: page.page, limit: page.limit }
      })

      const get = Effect.fn("ServiceAccountService.get")(function* (workspace: string, by: Principal, id: number) {
        yield* requireUser(by)
        const rows = yield* Effect.orDie(
          sql<Row>`SELECT ${sql.literal(columns)} FROM service_accounts WHERE workspace = ${workspace} AND id = ${id}`
        )
        if (rows[0] === undefined) return yield* Effect.fail(missing(id))
        return toAccount(rows[0])
      })

      /**
       * Inside a change: 404 when the account is not in this workspace, 403 when it holds (role, explicit permissions
       * and group policies resolved) a permission the caller does not. Locks the row until the change commits.
       */
      const mayManage = (workspace: string, by: Principal, id: number) =>
        Effect.gen(function* () {
          const rows = yield* sql<{ role: string | null; permissions: unknown }>`
            SELECT role, permissions FROM service_accounts WHERE workspace = ${workspace} AND id = ${id} FOR UPDATE`
          const account = rows[0]
          if (account === undefined) return yield* Effect.fail(missing(id))
          const policies = yield* sql<PolicyStatement>`
            SELECT p.action, p.resource, p.effect
            FROM policies p JOIN groups g ON g.id = p.group_id JOIN group_members gm ON gm.group_id = p.group_id
            WHERE g.workspace = ${workspace} AND gm.member_type = 'service-account' AND gm.member_id = ${String(id)}`
          const holds = resolvePermissions(isRole(account.role) ? account.role : undefined, jsonStrings(account.permissions), policies)
          yield* requireHolds(by, holds, `You cannot manage service account ${id}: it holds more than you do`)
        })

      /** One UPDATE ... RETURNING as an identity change, on an account the caller may manage. */
      const update = (workspace: string, by: Principal, id: number, statement: Effect.Effect<ReadonlyArray<Row>, unknown>) =>
        Effect.gen(function* () {
          yield* requireUser(by)
          const rows = yield* provide(
            identityChange(
              Effect.gen(function* () {
                yield* mayManage(workspace, by, id)
                const rows = yield* Effect.orDie(statement)
                return rows[0] === undefined ? yield* Effect.fail(missing(id)) : rows[0]
              })
            )
          )
          return rows
        })

      const setName = Effect.fn("ServiceAccountService.setName")(function* (workspace: string, by: Principal, id: number, name: string) {
        const row = yield* update(
          workspace,
          by,
          id,
          sql<Row>`
          UPDATE service_accounts SET name = ${name.trim()}, updated_at = now()
          WHERE workspace = ${workspace} AND id = ${id} RETURNING ${sql.literal(columns)}`
        )
        return toAccount(row)
      })

      const setDescription = Effect.fn("ServiceAccountService.setDescription")(function* (
        workspace: string,
        by: Principal,
        id: number,
        description: string | null
      ) {
        const row = yield* update(
          workspace,
          by,
          id,
          sql<Row>`
          UPDATE service_accounts SET description = ${description}, updated_at = now()
          WHERE workspace = ${workspace} AND id = ${id} RETURNING ${sql.literal(columns)}`
        )
        return toAccount(row)
      })

      // Rotation also reactivates a revoked account: whatever its status, a new secret makes it active.
      const rotate = Effect.fn("ServiceAccountService.rotate")(function* (workspace: string, by: Principal, id: number) {
        const clientSecret = newClientSecret()
        const row = yield* update(
          workspace,
          by,
          id,
          sql<Row>`
          UPDATE service_accounts
          SET secret_hash = ${hashClientSecret(clientSecret)}, secret_version = secret_version + 1, status = 'active',
            updated_at = now()
          WHERE workspace = ${workspace} AND id = ${id} RETURNING ${sql.literal(columns)}`
        )
        return {
          id: Number(row.id),
          clientId: row.clientId,
          clientSecret,
          name: row.name,
          workspace: row.workspace,
          updatedAt: iso(row.updatedAt)
        }
      })

      const revoke = Effect.fn("ServiceAccountService.revoke")(function* (workspace: string, by: Principal, id: number) {
        const row = yield* update(
          workspace,
          by,
          id,
          sql<Row>`
          UPDATE service_accounts SET status = 'revoked', updated_at = now()
          WHERE workspace = ${workspace} AND id = ${id} RETURNING ${sql.literal(columns)}`
        )
        return toAccount(row)
      })

      const remove = Effect.fn("ServiceAccountService.delete")(function* (workspace: string, by: Principal, id: number) {
        yield* requireUser(by)
        yield* provide(
          identityChange(
            Effect.gen(function* () {
              yield* mayManage(workspace, by, id)
              const deleted = yield* sql`
            DELETE FROM service_accounts WHERE workspace = ${workspace} AND id = ${id} RETURNING id`
              if (deleted.length === 0) return yield* Effect.fail(missing(id))
              yield* sql`DELETE FROM group_members WHERE member_type = 'service-account' AND member_id = ${String(id)}`
            })
          )
        )
      })

      return ServiceAccountService.of({ create, list, get, setName, setDescription, rotate, revoke, delete: remove })
    })
  )
}
