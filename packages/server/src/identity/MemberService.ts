// Workspace members: Owners add users (creating them when new), set roles and remove members. A workspace always
// keeps at least one Owner. Also the caller's own view (`/me`) and password change.
// Usernames are global, but who exists elsewhere is not an owner's business: an existing user is added (without a
// password) only by someone who already sees them (a platform administrator, or an owner of a workspace the user is
// in). To anyone else an existing username answers like a new one would without a password (400), and with one
// like any name that cannot be taken (409, the same words whatever the reason).
import type { Principal, Role } from "@troupe/api/Authorization"
import {
  type BadRequest,
  badRequest,
  type Conflict,
  conflict,
  details,
  type Forbidden,
  forbidden,
  type NotFound,
  notFound
} from "@troupe/api/Errors"
import type { Member } from "@troupe/api/identity/Identity"
import { rolePermissions } from "@troupe/api/identity/Roles"
import { Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import * as Crypto from "node:crypto"
import { AccessCache } from "./AccessCache.ts"
import { hashPassword, verifyPassword } from "./Credentials.ts"
import { identityChange, iso, type Page, requireHolds, uniqueOr } from "./model.ts"

interface Row {
  readonly userId: string
  readonly username: string
  readonly role: Role
  readonly createdAt: Date
}

const toMember = (r: Row): Member => ({
  userId: r.userId,
  username: r.username,
  role: r.role,
  createdAt: iso(r.createdAt)
})

export interface MemberServiceShape {
  readonly list: (workspace: string, page: Page) => Effect.Effect<{ data: Array<Member>; total: number; page: number; limit: number }>
  readonly add: (
    workspace: string,
    by: Principal,
    input: { readonly username: string; readonly password?: string; readonly role: Role }
  ) => Effect.Effect<Member, BadRequest | Conflict | Forbidden>
  readonly get: (workspace: string, userId: string) => Effect.Effect<Member, NotFound>
  readonly setRole: (workspace: string, by: Principal, userId: string, role: Role) => Effect.Effect<Member, NotFound | Conflict | Forbidden>
  readonly remove: (workspace: string, userId: string) => Effect.Effect<void, NotFound | Conflict>
  readonly changePassword: (
    principal: Principal,
    input: { readonly currentPassword: string; readonly newPassword: string }
  ) => Effect.Effect<void, BadRequest | Forbidden>
}

export class MemberService extends Context.Service<MemberService, MemberServiceShape>()("@troupe/server/identity/MemberService") {
  static readonly layer: Layer.Layer<MemberService, never, SqlClient.SqlClient | AccessCache> = Layer.effect(
    MemberService,
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const cache = yield* AccessCache
      const provide = <A, E>(e: Effect.Effect<A, E, SqlClient.SqlClient | AccessCache>) =>
        e.pipe(Effect.provideService(SqlClient.SqlClient, sql), Effect.provideService(AccessCache, cache))

      const select = (workspace: string, userId: string) =>
        sql<Row>`
          SELECT m.user_id::text AS "userId", u.username, m.role, m.created_at AS "createdAt"
          FROM memberships m JOIN users u ON u.id = m.user_id
          WHERE m.workspace = ${workspace} AND m.user_id = ${userId}`

      const missing = (userId: string) => notFound(`User ${userId} is not a member of this workspace`)

      const list = Effect.fn("MemberService.list")(function* (workspace: string, page: Page) {
        const rows = yield* sql<Row>`
          SELECT m.user_id::text AS "userId", u.username, m.role, m.created_at AS "createdAt"
          FROM memberships m JOIN users u ON u.id = m.user_id
          WHERE m.workspace = ${workspace}
          ORDER BY m.created_at, u.username LIMIT ${page.limit} OFFSET ${page.offset}`
        const total = yield* sql<{ n: number }>`
          SELECT count(*)::int AS n FROM memberships WHERE workspace = ${workspace}`
        return { data: rows.map(toMember), total: Number(total[0]?.n ?? 0), page: page.page, limit: page.limit }
      }, Effect.orDie)

      const passwordNeeded = badRequest({
        message: "A password is required to create a new user",
        code: "VALIDATION_ERROR",
        details: details([["password", "required for a new user"]])
      })
      const roleRefusal = "You cannot give a role holding permissions you do not hold"
      const unavailable = (username: string) => conflict(`The username "${username}" cannot be used; choose another`)

      const add = Effect.fn("MemberService.add")(function* (
        workspace: string,
        by: Principal,
        input: { readonly username: string; readonly password?: string; readonly role: Role }
      ) {
        yield* requireHolds(by, rolePermissions[input.role], roleRefusal)
        // Hash outside the transaction: scrypt takes a good part of a second.
        const hash = input.password === undefined ? undefined : yield* hashPassword(input.password)
        const caller = by.kind === "user" ? by.id : ""
        const member = yield* provide(
          identityChange(
            Effect.gen(function* () {
              // one query whether or not the name exists, so the answer's timing tells no more than its words
              const existing = yield* sql<{ id: string; visible: boolean }>`
            SELECT u.id::text AS id, EXISTS (
              SELECT 1 FROM memberships theirs JOIN memberships mine ON mine.workspace = theirs.workspace
              WHERE theirs.user_id = u.id AND mine.user_id::text = ${caller} AND mine.role = 'owner'
            ) AS visible
            FROM users u WHERE u.username = ${input.username}`
              const found = existing[0]
              const visible = found !== undefined && (by.isPlatformAdmin || found.visible === true)
              if (found !== undefined && !visible) {
                return yield* Effect.fail(hash === undefined ? passwordNeeded : unavailable(input.username))
              }
              let id = found?.id
              if (id !== undefined && hash !== undefined) {
                return yield* Effect.fail(conflict(`User "${input.username}" already exists; add them without a password`))
              }
              if (id === undefined) {
                if (hash === undefined) return yield* Effect.fail(passwordNeeded)
                id = Crypto.randomUUID()
                yield* sql`INSERT INTO users (id, username, password_hash) VALUES (${id}, ${input.username}, ${hash})`.pipe(
                  uniqueOr(() => unavailable(input.username))
                )
              }
              const rows = yield* sql<{ createdAt: Date }>`
            INSERT INTO memberships (workspace, user_id, role) VALUES (${workspace}, ${id}, ${input.role})
            RETURNING created_at AS "createdAt"`.pipe(
                uniqueOr(() => conflict(`User "${input.username}" is already a member of this workspace`))
              )
              return { userId: id, username: input.username, role: input.role, createdAt: rows[0]!.createdAt }
            })
          )
        )
        // the member as added, not read again: a concurrent remove may have taken it away since
        return toMember(member)
      })

      const get = Effect.fn("MemberService.get")(function* (workspace: string, userId: string) {
        const rows = yield* Effect.orDie(select(workspace, userId))
        if (rows[0] === undefined) return yield* Effect.fail(missing(userId))
        return toMember(rows[0])
      })

      /** Fails when `userId` is the last owner and would stop being one. Locks the owner rows first. */
      const keepAnOwner = (workspace: string, userId: string) =>
        Effect.gen(function* () {
          const owners = yield* sql<{ userId: string }>`
            SELECT user_id::text AS "userId" FROM memberships
              WHERE workspace = ${workspace} AND role = 'owner' FOR UPDATE`
          if (owners.length === 1 && owners[0]!.userId === userId) {
            return yield* Effect.fail(conflict({ message: "A workspace must keep at least one owner" }))
          }
        })

      const setRole = Effect.fn("MemberService.setRole")(function* (workspace: string, by: Principal, userId: string, role: Role) {
        yield* requireHolds(by, rolePermissions[role], roleRefusal)
        yield* provide(
          identityChange(
            Effect.gen(function* () {
              if (role !== "owner") yield* keepAnOwner(workspace, userId)
              const updated = yield* sql`
            UPDATE memberships SET role = ${role}
              WHERE workspace = ${workspace} AND user_id = ${userId} RETURNING user_id`
              if (updated.length === 0) return yield* Effect.fail(missing(userId))
            })
          )
        )
        return yield* get(workspace, userId)
      })

      const remove = Effect.fn("MemberService.remove")(function* (workspace: string, userId: string) {
        yield* provide(
          identityChange(
            Effect.gen(function* () {
              yield* keepAnOwner(workspace, userId)
              const deleted = yield* sql`
            DELETE FROM memberships WHERE workspace = ${workspace} AND user_id = ${userId} RETURNING user_id`
              if (deleted.length === 0) return yield* Effect.fail(missing(userId))
              yield* sql`
            DELETE FROM group_members WHERE member_type = 'user' AND member_id = ${userId}
              AND group_id IN (SELECT id FROM groups WHERE workspace = ${workspace})`
            })
          )
        )
      })

      const changePassword = Effect.fn("MemberService.changePassword")(function* (
        principal: Principal,
        input: { readonly currentPassword: string; readonly newPassword: string }
      ) {
        if (principal.kind !== "user") return yield* Effect.fail(forbidden("Only users have passwords"))
        const rows = yield* Effect.orDie(sql<{ hash: string }>`
          SELECT password_hash AS hash FROM users WHERE id = ${principal.id}`)
        const ok = yield* verifyPassword(input.currentPassword, rows[0]?.hash)
        if (!ok) {
          return yield* Effect.fail(
            badRequest({
              message: "The current password is wrong",
              code: "VALIDATION_ERROR",
              details: details([["currentPassword", "does not match"]])
            })
          )
        }
        const hash = yield* hashPassword(input.newPassword)
        // an identity change: tokens issued under the old password are refused from the answer on (AccessCache)
        yield* provide(identityChange(sql`UPDATE users SET password_hash = ${hash} WHERE id = ${principal.id}`))
      })

      return MemberService.of({ list, add, get, setRole, remove, changePassword })
    })
  )
}
