// Every node's in-memory picture of who may do what: users, memberships, service accounts (status and secret
// version), groups and their policies. Requests are authorized against it without a query. It is rebuilt
//   - on this node right after each identity change commits (so a revoke/rotate/delete holds from the response on),
//   - on every other node when PostgreSQL NOTIFYs `troupe_identity` (sent by that same transaction; a request that
//     arrives once the notification has been read waits for that reload),
//   - and by a poll of the `identity_version` counter every second, should a notification be missed.
import type { Principal, Role } from "@troupe/api/Authorization"
import { PgClient } from "@effect/sql-pg"
import { Context, Deferred, Effect, Layer, Option, Queue, Schedule, Semaphore } from "effect"
import { SqlClient } from "effect/sql"
import * as Crypto from "node:crypto"
import { isRole, type PolicyStatement, resolvePermissions } from "./Permissions.ts"

export const identityChannel = "troupe_identity"

/** Tags this process's notifications, so it does not reload for its own changes twice. */
const nodeTag = Crypto.randomUUID()

interface UserEntry {
  readonly id: string
  readonly username: string
  readonly isPlatformAdmin: boolean
}

interface AccountEntry {
  readonly id: number
  readonly clientId: string
  readonly workspace: string
  readonly name: string
  readonly role: Role | undefined
  readonly permissions: ReadonlyArray<string>
  readonly status: string
  readonly secretVersion: number
}

interface GroupEntry {
  readonly name: string
  readonly policies: Array<PolicyStatement>
}

interface Snapshot {
  readonly version: string
  readonly users: Map<string, UserEntry>
  readonly memberships: Map<string, Role>
  readonly accounts: Map<string, AccountEntry>
  /** `${workspace}\0${memberType}\0${memberId}` -> groups */
  readonly groupsOf: Map<string, Array<GroupEntry>>
  /** resolved principals, memoised for this snapshot */
  readonly principals: Map<string, Principal | null>
}

const key = (...parts: ReadonlyArray<string>) => parts.join("\u0000")

const jsonArray = (u: unknown): Array<string> => {
  const v = typeof u === "string" ? JSON.parse(u) : u
  return Array.isArray(v) ? v.filter((x): x is string => typeof x === "string") : []
}

export interface TokenSubject {
  readonly kind: "user" | "service"
  readonly sub: string
  readonly workspace: string
  /** service accounts: the secret version the token was issued under */
  readonly secretVersion?: number | undefined
}

export interface AccessCacheShape {
  /**
   * The caller a verified token stands for, or undefined when it no longer may act (revoked, removed...). Waits
   * for a reload another node has just announced, so its change holds here from the moment it was answered there.
   */
  readonly principal: (subject: TokenSubject) => Effect.Effect<Principal | undefined>
  /** Reloads now (after a local change, before answering). */
  readonly refresh: Effect.Effect<void>
}

/** In a transaction that changes identity data: bump the counter and notify other nodes (delivered at commit). */
export const markIdentityChanged = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`UPDATE settings SET value = (value::bigint + 1)::text WHERE key = 'identity_version'`
  if (sql.driver !== "pglite") yield* sql`SELECT pg_notify(${identityChannel}, ${nodeTag})`
})

interface AccountRow {
  readonly id: number
  readonly clientId: string
  readonly workspace: string
  readonly name: string
  readonly role: string | null
  readonly permissions: unknown
  readonly status: string
  readonly secretVersion: number
}

const load = (sql: SqlClient.SqlClient) =>
  Effect.gen(function*() {
    const versions = yield* sql<{ value: string }>`SELECT value FROM settings WHERE key = 'identity_version'`
    const version = versions[0]?.value ?? "0"
    const [users, memberships, accounts, groups, members, policies] = yield* Effect.all([
      sql<{ id: string; username: string; isPlatformAdmin: boolean }>`
        SELECT id::text AS id, username, is_platform_admin AS "isPlatformAdmin" FROM users`,
      sql<{ workspace: string; userId: string; role: string }>`
        SELECT workspace, user_id::text AS "userId", role FROM memberships`,
      sql<AccountRow>`
        SELECT id, client_id AS "clientId", workspace, name, role, permissions, status,
          secret_version AS "secretVersion"
        FROM service_accounts`,
      sql<{ id: string; workspace: string; name: string }>`SELECT id::text AS id, workspace, name FROM groups`,
      sql<{ groupId: string; memberType: string; memberId: string }>`
        SELECT group_id::text AS "groupId", member_type AS "memberType", member_id AS "memberId" FROM group_members`,
      sql<{ groupId: string; action: string; resource: string; effect: string }>`
        SELECT group_id::text AS "groupId", action, resource, effect FROM policies ORDER BY created_at`
    ], { concurrency: 1 })
    const groupById = new Map<string, GroupEntry & { workspace: string }>()
    for (const g of groups) groupById.set(g.id, { name: g.name, workspace: g.workspace, policies: [] })
    for (const p of policies) groupById.get(p.groupId)?.policies.push(p)
    const groupsOf = new Map<string, Array<GroupEntry>>()
    for (const m of members) {
      const g = groupById.get(m.groupId)
      if (g === undefined) continue
      const k = key(g.workspace, m.memberType, m.memberId)
      const list = groupsOf.get(k) ?? []
      list.push(g)
      groupsOf.set(k, list)
    }
    const snapshot: Snapshot = {
      version,
      users: new Map(users.map((u) => [u.id, {
        id: u.id,
        username: u.username,
        isPlatformAdmin: u.isPlatformAdmin === true
      }])),
      memberships: new Map(
        memberships.filter((m) => isRole(m.role)).map((m) => [key(m.workspace, m.userId), m.role as Role])
      ),
      accounts: new Map(accounts.map((a) => [a.clientId, {
        id: Number(a.id),
        clientId: a.clientId,
        workspace: a.workspace,
        name: a.name,
        role: isRole(a.role) ? a.role : undefined,
        permissions: jsonArray(a.permissions),
        status: a.status,
        secretVersion: Number(a.secretVersion)
      }])),
      groupsOf,
      principals: new Map()
    }
    return snapshot
  })

const resolve = (snapshot: Snapshot, subject: TokenSubject): Principal | undefined => {
  if (subject.kind === "service") {
    const account = snapshot.accounts.get(subject.sub)
    if (
      account === undefined || account.status !== "active" || account.workspace !== subject.workspace ||
      account.secretVersion !== subject.secretVersion
    ) return undefined
    const groups = snapshot.groupsOf.get(key(account.workspace, "service-account", String(account.id))) ?? []
    return {
      kind: "service",
      id: account.clientId,
      name: account.name,
      workspace: account.workspace,
      role: account.role,
      permissions: resolvePermissions(account.role, account.permissions, groups.flatMap((g) => g.policies)),
      isPlatformAdmin: false,
      groups: groups.map((g) => g.name)
    }
  }
  const user = snapshot.users.get(subject.sub)
  if (user === undefined) return undefined
  const role = snapshot.memberships.get(key(subject.workspace, user.id))
  if (role === undefined && !user.isPlatformAdmin) return undefined
  const groups = snapshot.groupsOf.get(key(subject.workspace, "user", user.id)) ?? []
  return {
    kind: "user",
    id: user.id,
    name: user.username,
    workspace: subject.workspace,
    role,
    permissions: resolvePermissions(role, [], groups.flatMap((g) => g.policies)),
    isPlatformAdmin: user.isPlatformAdmin,
    groups: groups.map((g) => g.name)
  }
}

export class AccessCache extends Context.Service<AccessCache, AccessCacheShape>()(
  "@troupe/server/identity/AccessCache"
) {
  static readonly layer: Layer.Layer<AccessCache, never, SqlClient.SqlClient> = Layer.effect(
    AccessCache,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      let current = yield* Effect.orDie(load(sql))
      const lock = yield* Semaphore.make(1)
      let pending: Deferred.Deferred<void> | undefined
      /** the LISTEN queue: a notification read off the socket sits here until the listener below takes it */
      let notes: Queue.Dequeue<unknown, unknown> | undefined
      const refresh = lock.withPermits(1)(
        Effect.flatMap(load(sql), (next) => Effect.sync(() => void (current = next)))
      ).pipe(Effect.orDie, Effect.withSpan("AccessCache.refresh"))

      // A missed notification costs at most one poll interval.
      const poll = Effect.gen(function*() {
        const rows = yield* sql<{ value: string }>`SELECT value FROM settings WHERE key = 'identity_version'`
        if ((rows[0]?.value ?? "0") !== current.version) yield* refresh
      }).pipe(Effect.catchCause(() => Effect.void))
      yield* Effect.forkScoped(Effect.repeat(poll, Schedule.spaced("1 second")))

      const pg = yield* Effect.serviceOption(PgClient.PgClient)
      if (Option.isSome(pg)) {
        const listen = Effect.scoped(Effect.gen(function*() {
          const queue = yield* pg.value.listen(identityChannel)
          notes = queue
          yield* Effect.addFinalizer(() => Effect.sync(() => void (notes = undefined)))
          const announced = Effect.gen(function*() {
            // Requests arriving from now on wait for the reload instead of using what is about to be stale.
            const done = yield* Deferred.make<void>()
            pending = done
            yield* Effect.catchCause(refresh, () => Effect.void)
            if (pending === done) pending = undefined
            yield* Deferred.succeed(done, undefined)
          })
          yield* announced // changes made while (re)connecting
          while (true) {
            const note = yield* Queue.take(queue)
            // this node's own changes were applied before they were answered
            if (note.payload !== nodeTag) yield* announced
          }
        }))
        yield* Effect.forkScoped(Effect.retry(listen, Schedule.spaced("2 seconds")))
      }

      const lookup = (subject: TokenSubject) => {
        const snapshot = current
        const k = key(subject.kind, subject.sub, subject.workspace, String(subject.secretVersion ?? ""))
        const memo = snapshot.principals.get(k)
        if (memo !== undefined) return memo ?? undefined
        const resolved = resolve(snapshot, subject)
        if (snapshot.principals.size > 50_000) snapshot.principals.clear()
        snapshot.principals.set(k, resolved ?? null)
        return resolved
      }

      const principal = (subject: TokenSubject, turns = 0): Effect.Effect<Principal | undefined> =>
        Effect.suspend(() => {
          const waiting = pending
          if (waiting !== undefined) return Effect.andThen(Deferred.await(waiting), Effect.sync(() => lookup(subject)))
          // A notification already read but not yet taken by the listener (it runs on a later scheduler turn): let it
          // announce its reload first, so a change answered by another node holds here for a request right behind it.
          // (A few turns at most: a listener gone with notes left must not hold requests.)
          if (turns < 8 && notes !== undefined && Queue.sizeUnsafe(notes) > 0) {
            return Effect.andThen(Effect.yieldNow, principal(subject, turns + 1))
          }
          return Effect.sync(() => lookup(subject))
        })

      return AccessCache.of({ principal: (subject) => principal(subject), refresh })
    })
  )
}
