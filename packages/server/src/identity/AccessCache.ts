// Every node's in-memory picture of who may do what: users (and their password version), memberships, service
// accounts (status and secret version), groups and their policies. Requests are authorized against it without a
// query. It is rebuilt
//   - on this node right after each identity change commits (so a revoke/rotate/delete holds from the response on),
//   - on every other node when PostgreSQL NOTIFYs `troupe_identity` (sent by that same transaction; a request that
//     arrives once the notification has been read waits for that reload),
//   - and by a poll of the `identity_version` counter every second, should a notification be missed.
// On PostgreSQL every node records the version it holds (table identity_acks, refreshed with the poll), and a node
// that made a change waits, up to 2 s, until every node seen in the last 5 s holds it before answering.
import type { Principal, Role } from "@troupe/api/Authorization"
import { PgClient } from "@effect/sql-pg"
import { Clock, Context, Deferred, Effect, Layer, Option, Queue, Schedule, Semaphore } from "effect"
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
  readonly passwordVersion: string
}

/**
 * A user's password version, as SQL over `users`: a short digest of the stored hash, which a password change (new
 * salt) always changes. User tokens carry it (`pv`); one issued under another password is refused. The digest of a
 * salted scrypt hash tells nothing about the password.
 */
export const passwordVersionColumn = `substr(md5(password_hash), 1, 16)`

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
  /** users: the password version the token was issued under (`pv`); a token without one is refused */
  readonly passwordVersion?: string | undefined
}

export interface AccessCacheShape {
  /**
   * The caller a verified token stands for, or undefined when it no longer may act (revoked, removed...). Waits
   * for a reload another node has just announced, so its change holds here from the moment it was answered there.
   */
  readonly principal: (subject: TokenSubject) => Effect.Effect<Principal | undefined>
  /**
   * Who a stored principal is now, whatever secret version its tokens carry: a function run acting as its trigger's
   * creator or as the caller that queued it (undefined once revoked, deleted or removed from the workspace).
   */
  readonly actor: (kind: "user" | "service", id: string, workspace: string) => Effect.Effect<Principal | undefined>
  /** Reloads now and waits for the other live nodes to hold the change too (after a local change, before answering). */
  readonly refresh: Effect.Effect<void>
}

/** In a transaction that changes identity data: bump the counter and notify other nodes (delivered at commit). */
export const markIdentityChanged = Effect.gen(function* () {
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
  Effect.gen(function* () {
    const versions = yield* sql<{ value: string }>`SELECT value FROM settings WHERE key = 'identity_version'`
    const version = versions[0]?.value ?? "0"
    const [users, memberships, accounts, groups, members, policies] = yield* Effect.all(
      [
        sql<{ id: string; username: string; isPlatformAdmin: boolean; passwordVersion: string }>`
        SELECT id::text AS id, username, is_platform_admin AS "isPlatformAdmin",
          ${sql.literal(passwordVersionColumn)} AS "passwordVersion"
        FROM users`,
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
      ],
      { concurrency: 1 }
    )
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
      users: new Map(
        users.map((u) => [
          u.id,
          {
            id: u.id,
            username: u.username,
            isPlatformAdmin: u.isPlatformAdmin === true,
            passwordVersion: u.passwordVersion
          }
        ])
      ),
      memberships: new Map(memberships.filter((m) => isRole(m.role)).map((m) => [key(m.workspace, m.userId), m.role as Role])),
      accounts: new Map(
        accounts.map((a) => [
          a.clientId,
          {
            id: Number(a.id),
            clientId: a.clientId,
            workspace: a.workspace,
            name: a.name,
            role: isRole(a.role) ? a.role : undefined,
            permissions: jsonArray(a.permissions),
            status: a.status,
            secretVersion: Number(a.secretVersion)
          }
        ])
      ),
      groupsOf,
      principals: new Map()
    }
    return snapshot
  })

/** `fromToken`: the subject is a token's, so a user's must carry the current password version (not a stored actor). */
const resolve = (snapshot: Snapshot, subject: TokenSubject, fromToken: boolean): Principal | undefined => {
  if (subject.kind === "service") {
    const account = snapshot.accounts.get(subject.sub)
    if (
      account === undefined ||
      account.status !== "active" ||
      account.workspace !== subject.workspace ||
      account.secretVersion !== subject.secretVersion
    )
      return undefined
    const groups = snapshot.groupsOf.get(key(account.workspace, "service-account", String(account.id))) ?? []
    return {
      kind: "service",
      id: account.clientId,
      name: account.name,
      workspace: account.workspace,
      role: account.role,
      permissions: resolvePermissions(
        account.role,
        account.permissions,
        groups.flatMap((g) => g.policies)
      ),
      isPlatformAdmin: false,
      groups: groups.map((g) => g.name)
    }
  }
  const user = snapshot.users.get(subject.sub)
  if (user === undefined || (fromToken && subject.passwordVersion !== user.passwordVersion)) return undefined
  const role = snapshot.memberships.get(key(subject.workspace, user.id))
  if (role === undefined && !user.isPlatformAdmin) return undefined
  const groups = snapshot.groupsOf.get(key(subject.workspace, "user", user.id)) ?? []
  return {
    kind: "user",
    id: user.id,
    name: user.username,
    workspace: subject.workspace,
    role,
    permissions: resolvePermissions(
      role,
      [],
      groups.flatMap((g) => g.policies)
    ),
    isPlatformAdmin: user.isPlatformAdmin,
    groups: groups.map((g) => g.name)
  }
}

export class AccessCache extends Context.Service<AccessCache, AccessCacheShape>()("@troupe/server/identity/AccessCache") {
  static readonly layer: Layer.Layer<AccessCache, never, SqlClient.SqlClient> = Layer.effect(
    AccessCache,
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      let current = yield* Effect.orDie(load(sql))
      const lock = yield* Semaphore.make(1)
      const clustered = sql.driver !== "pglite"
      /** Tells the other nodes which version this one holds (and that it is alive). */
      const acknowledge = (version: string) =>
        clustered
          ? sql`INSERT INTO identity_acks (node, version, seen_at) VALUES (${nodeTag}, ${version}::bigint, now())
              ON CONFLICT (node) DO UPDATE SET version = EXCLUDED.version, seen_at = now()`.pipe(Effect.catchCause(() => Effect.void))
          : Effect.void
      let pending: Deferred.Deferred<void> | undefined
      /** the LISTEN queue: a notification read off the socket sits here until the listener below takes it */
      let notes: Queue.Dequeue<unknown, unknown> | undefined
      const reload = lock
        .withPermits(1)(
          Effect.flatMap(load(sql), (next) =>
            Effect.andThen(
              Effect.sync(() => void (current = next)),
              acknowledge(next.version)
            )
          )
        )
        .pipe(Effect.orDie, Effect.withSpan("AccessCache.reload"))
      yield* acknowledge(current.version)

      /** Every node seen in the last 5 s holds at least this node's version (or 2 s passed: the laggards are logged). */
      const awaitOthers = Effect.gen(function* () {
        const version = current.version
        const lagging = sql<{ node: string }>`SELECT node FROM identity_acks
          WHERE seen_at > now() - interval '5 seconds' AND version < ${version}::bigint`
        const deadline = (yield* Clock.currentTimeMillis) + 2000
        let behind = yield* lagging
        while (behind.length > 0 && (yield* Clock.currentTimeMillis) < deadline) {
          yield* Effect.sleep("10 millis")
          behind = yield* lagging
        }
        if (behind.length > 0) {
          yield* Effect.logWarning(`identity: ${behind.length} node(s) did not load version ${version} within 2 s`)
        }
      }).pipe(Effect.catchCause((cause) => Effect.logWarning("identity: could not check other nodes", cause)))

      const refresh = clustered ? Effect.andThen(reload, awaitOthers) : reload

      // A missed notification costs at most one poll interval.
      const poll = Effect.gen(function* () {
        const rows = yield* sql<{ value: string }>`SELECT value FROM settings WHERE key = 'identity_version'`
        if ((rows[0]?.value ?? "0") !== current.version) yield* reload
        else yield* acknowledge(current.version)
      }).pipe(Effect.catchCause(() => Effect.void))
      yield* Effect.forkScoped(Effect.repeat(poll, Schedule.spaced("1 second")))

      const pg = yield* Effect.serviceOption(PgClient.PgClient)
      if (Option.isSome(pg)) {
        const listen = Effect.scoped(
          Effect.gen(function* () {
            const queue = yield* pg.value.listen(identityChannel)
            notes = queue
            yield* Effect.addFinalizer(() => Effect.sync(() => void (notes = undefined)))
            const announced = Effect.gen(function* () {
              // Requests arriving from now on wait for the reload instead of using what is about to be stale.
              const done = yield* Deferred.make<void>()
              pending = done
              yield* Effect.catchCause(reload, () => Effect.void)
              if (pending === done) pending = undefined
              yield* Deferred.succeed(done, undefined)
            })
            yield* announced // changes made while (re)connecting
            while (true) {
              const note = yield* Queue.take(queue)
              // this node's own changes were applied before they were answered
              if (note.payload !== nodeTag) yield* announced
            }
          })
        )
        yield* Effect.forkScoped(Effect.retry(listen, Schedule.spaced("2 seconds")))
      }

      const lookup = (subject: TokenSubject, fromToken: boolean) => {
        const snapshot = current
        const k = key(
          subject.kind,
          subject.sub,
          subject.workspace,
          String(subject.secretVersion ?? ""),
          fromToken ? `pv:${subject.passwordVersion ?? ""}` : "actor"
        )
        const memo = snapshot.principals.get(k)
        if (memo !== undefined) return memo ?? undefined
        const resolved = resolve(snapshot, subject, fromToken)
        if (snapshot.principals.size > 50_000) snapshot.principals.clear()
        snapshot.principals.set(k, resolved ?? null)
        return resolved
      }

      const principal = (subject: TokenSubject, fromToken: boolean, turns = 0): Effect.Effect<Principal | undefined> =>
        Effect.suspend(() => {
          const waiting = pending
          if (waiting !== undefined) {
            return Effect.andThen(
              Deferred.await(waiting),
              Effect.sync(() => lookup(subject, fromToken))
            )
          }
          // A notification already read but not yet taken by the listener (it runs on a later scheduler turn): let it
          // announce its reload first, so a change answered by another node holds here for a request right behind it.
          // (A few turns at most: a listener gone with notes left must not hold requests.)
          if (turns < 8 && notes !== undefined && Queue.sizeUnsafe(notes) > 0) {
            return Effect.andThen(Effect.yieldNow, principal(subject, fromToken, turns + 1))
          }
          return Effect.sync(() => lookup(subject, fromToken))
        })

      const actor = (kind: "user" | "service", id: string, workspace: string) =>
        Effect.suspend(() => {
          const secretVersion = kind === "service" ? current.accounts.get(id)?.secretVersion : undefined
          return principal({ kind, sub: id, workspace, secretVersion }, false)
        })

      yield* Effect.addFinalizer(() =>
        clustered ? sql`DELETE FROM identity_acks WHERE node = ${nodeTag}`.pipe(Effect.ignore) : Effect.void
      )

      return AccessCache.of({ principal: (subject) => principal(subject, true), actor, refresh })
    })
  )
}
