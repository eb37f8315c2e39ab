// IAM groups: named sets of workspace members and service accounts holding policies {action, resource, effect}.
// Policies use the actions and resources of README "Roles and permissions" (`read` is not an action) and must
// grant something.
// Nobody climbs through a group: allowing a permission, adding a member to a group that allows it, or lifting a deny
// on it (removing the deny, a member of its group, or the group) needs the caller to hold that permission.
import type { Principal } from "@troupe/api/Authorization"
import type { Group } from "@troupe/api/identity/Identity"
import { type BadRequest, badRequest, type Conflict, conflict, details, type Forbidden, type NotFound, notFound } from "@troupe/api/Errors"
import { isPolicyAction, isPolicyResource, PolicyActions, PolicyResources, policyPermissions } from "@troupe/api/identity/Roles"
import { Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import * as Crypto from "node:crypto"
import { AccessCache } from "./AccessCache.ts"
import { identityChange, iso, type Page, requireHolds, uniqueOr } from "./model.ts"
import type { PolicyStatement } from "./Permissions.ts"

interface GroupRow {
  readonly id: string
  readonly workspace: string
  readonly name: string
  readonly description: string | null
  readonly createdAt: Date
}

interface PolicyRow {
  readonly id: string
  readonly groupId: string
  readonly action: string
  readonly resource: string
  readonly effect: string
  readonly createdAt: Date
}

interface MemberRow {
  readonly groupId: string
  readonly type: "user" | "service-account"
  readonly id: string
  readonly name: string
}

type Policy = Group["policies"][number]

const invalid = (field: string, message: string) => badRequest({ message, code: "VALIDATION_ERROR", details: details([[field, message]]) })

export interface GroupServiceShape {
  readonly create: (
    workspace: string,
    input: { readonly name: string; readonly description?: string | null }
  ) => Effect.Effect<Group, Conflict>
  readonly list: (workspace: string, page: Page) => Effect.Effect<{ data: Array<Group>; total: number; page: number; limit: number }>
  readonly get: (workspace: string, groupId: string) => Effect.Effect<Group, NotFound>
  readonly delete: (workspace: string, by: Principal, groupId: string) => Effect.Effect<void, NotFound | Forbidden>
  readonly addPolicy: (
    workspace: string,
    by: Principal,
    groupId: string,
    input: { readonly action: string; readonly resource: string; readonly effect?: "allow" | "deny" }
  ) => Effect.Effect<Policy, BadRequest | NotFound | Forbidden>
  readonly removePolicy: (workspace: string, by: Principal, groupId: string, policyId: string) => Effect.Effect<void, NotFound | Forbidden>
  readonly addMember: (
    workspace: string,
    by: Principal,
    groupId: string,
    input: { readonly userId?: string; readonly serviceAccountId?: number }
  ) => Effect.Effect<Group, BadRequest | NotFound | Conflict | Forbidden>
  readonly removeMember: (
    workspace: string,
    by: Principal,
    groupId: string,
    type: "user" | "service-account",
    memberId: string
  ) => Effect.Effect<void, NotFound | Forbidden>
}

export class GroupService extends Context.Service<GroupService, GroupServiceShape>()("@troupe/server/identity/GroupService") {
  static readonly layer: Layer.Layer<GroupService, never, SqlClient.SqlClient | AccessCache> = Layer.effect(
    GroupService,
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const cache = yield* AccessCache
      const provide = <A, E>(e: Effect.Effect<A, E, SqlClient.SqlClient | AccessCache>) =>
        e.pipe(Effect.provideService(SqlClient.SqlClient, sql), Effect.provideService(AccessCache, cache))
      const missing = (groupId: string) => notFound(`Group ${groupId} not found`)

      /** Groups with their policies and members, in two extra queries whatever the page size. */
      const hydrate = (groups: ReadonlyArray<GroupRow>) =>
        Effect.gen(function* () {
          if (groups.length === 0) return []
          const ids = groups.map((g) => g.id)
          const policies = yield* sql<PolicyRow>`
            SELECT id::text AS id, group_id::text AS "groupId", action, resource, effect, created_at AS "createdAt"
            FROM policies WHERE ${sql.in("group_id", ids)} ORDER BY created_at, id`
          const members = yield* sql<MemberRow>`
            SELECT gm.group_id::text AS "groupId", 'user' AS type, u.id::text AS id, u.username AS name
            FROM group_members gm JOIN users u ON gm.member_type = 'user' AND u.id::text = gm.member_id
            WHERE ${sql.in("gm.group_id", ids)}
            UNION ALL
            SELECT gm.group_id::text, 'service-account', sa.id::text, sa.name
            FROM group_members gm
              JOIN service_accounts sa ON gm.member_type = 'service-account' AND sa.id::text = gm.member_id
            WHERE ${sql.in("gm.group_id", ids)}
            ORDER BY 2, 4`
          return groups.map(
            (g): Group => ({
              id: g.id,
              workspace: g.workspace,
              name: g.name,
              description: g.description,
              createdAt: iso(g.createdAt),
              policies: policies
                .filter((p) => p.groupId === g.id)
                .map((p) => ({
                  id: p.id,
                  action: p.action,
                  resource: p.resource,
                  effect: p.effect === "deny" ? "deny" : "allow",
                  createdAt: iso(p.createdAt)
                })),
              members: members.filter((m) => m.groupId === g.id).map((m) => ({ type: m.type, id: m.id, name: m.name }))
            })
          )
        })

      const selectGroup = (workspace: string, groupId: string) =>
        sql<GroupRow>`
          SELECT id::text AS id, workspace, name, description, created_at AS "createdAt"
          FROM groups WHERE workspace = ${workspace} AND id = ${groupId}`

      const get = Effect.fn("GroupService.get")(function* (workspace: string, groupId: string) {
        const rows = yield* Effect.orDie(selectGroup(workspace, groupId))
        if (rows.length === 0) return yield* Effect.fail(missing(groupId))
        return (yield* Effect.orDie(hydrate(rows)))[0]!
      })

      /**
       * Inside a change: the group must exist in this workspace, and goes on existing until the change commits. The
       * row lock makes a concurrent delete wait instead of leaving this change's insert to fail its foreign key; a
       * delete takes the update lock at once (two deletes upgrading a shared lock would deadlock).
       */
      const exists = (workspace: string, groupId: string, lock: "share" | "update" = "share") =>
        Effect.flatMap(
          lock === "share"
            ? sql`SELECT 1 FROM groups WHERE workspace = ${workspace} AND id = ${groupId} FOR KEY SHARE`
            : sql`SELECT 1 FROM groups WHERE workspace = ${workspace} AND id = ${groupId} FOR UPDATE`,
          (rows) => (rows.length === 0 ? Effect.fail(missing(groupId)) : Effect.void)
        )

      /** Inside a change: the permissions a set of policies allows and denies. */
      const resolved = (policies: ReadonlyArray<PolicyStatement>) => {
        const allowed = new Set<string>()
        const denied = new Set<string>()
        for (const p of policies) {
          if (!isPolicyAction(p.action) || !isPolicyResource(p.resource)) continue
          const into = p.effect === "deny" ? denied : allowed
          for (const permission of policyPermissions(p.action, p.resource)) into.add(permission)
        }
        return { allowed, denied }
      }
      const policiesOf = (groupId: string) =>
        Effect.map(sql<PolicyStatement>`SELECT action, resource, effect FROM policies WHERE group_id = ${groupId}`, resolved)
      const liftRefusal = "You cannot lift a deny on permissions you do not hold"

      const create = Effect.fn("GroupService.create")(function* (
        workspace: string,
        input: { readonly name: string; readonly description?: string | null }
      ) {
        const id = Crypto.randomUUID()
        const rows = yield* provide(
          identityChange(
            sql<GroupRow>`
          INSERT INTO groups (id, workspace, name, description)
            VALUES (${id}, ${workspace}, ${input.name}, ${input.description ?? null})
          RETURNING id::text AS id, workspace, name, description, created_at AS "createdAt"`.pipe(
              uniqueOr(() => conflict(`A group named "${input.name}" already exists`))
            )
          )
        )
        // the group as created (no policies, no members yet), not read again: a delete may have come in between
        return (yield* Effect.orDie(hydrate(rows)))[0]!
      })

      const list = Effect.fn("GroupService.list")(function* (workspace: string, page: Page) {
        const rows = yield* sql<GroupRow>`
          SELECT id::text AS id, workspace, name, description, created_at AS "createdAt"
          FROM groups WHERE workspace = ${workspace} ORDER BY name LIMIT ${page.limit} OFFSET ${page.offset}`
        const total = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM groups WHERE workspace = ${workspace}`
        return { data: yield* hydrate(rows), total: Number(total[0]?.n ?? 0), page: page.page, limit: page.limit }
      }, Effect.orDie)

      const remove = Effect.fn("GroupService.delete")(function* (workspace: string, by: Principal, groupId: string) {
        yield* provide(
          identityChange(
            Effect.gen(function* () {
              yield* exists(workspace, groupId, "update")
              yield* requireHolds(by, (yield* policiesOf(groupId)).denied, liftRefusal)
              const deleted = yield* sql`DELETE FROM groups WHERE workspace = ${workspace} AND id = ${groupId} RETURNING id`
              if (deleted.length === 0) return yield* Effect.fail(missing(groupId))
            })
          )
        )
      })

      const addPolicy = Effect.fn("GroupService.addPolicy")(function* (
        workspace: string,
        by: Principal,
        groupId: string,
        input: { readonly action: string; readonly resource: string; readonly effect?: "allow" | "deny" }
      ) {
        const action = input.action
        const resource = input.resource
        if (action === "read") {
          return yield* Effect.fail(invalid("action", `the action "read" does not exist; use "retrieve" or "list"`))
        }
        if (!isPolicyAction(action)) {
          return yield* Effect.fail(invalid("action", `unknown action "${action}"; expected one of ${PolicyActions.join(", ")}`))
        }
        if (!isPolicyResource(resource)) {
          return yield* Effect.fail(invalid("resource", `unknown resource "${resource}"; expected one of ${PolicyResources.join(", ")}`))
        }
        if (policyPermissions(action, resource).length === 0) {
          return yield* Effect.fail(invalid("action", `the action "${action}" does not apply to "${resource}"`))
        }
        const id = Crypto.randomUUID()
        const effect = input.effect ?? "allow"
        if (effect === "allow") {
          yield* requireHolds(by, policyPermissions(action, resource), "You cannot grant permissions you do not hold")
        }
        const rows = yield* provide(
          identityChange(
            Effect.gen(function* () {
              yield* exists(workspace, groupId)
              return yield* sql<{ createdAt: Date }>`
            INSERT INTO policies (id, group_id, action, resource, effect)
              VALUES (${id}, ${groupId}, ${action}, ${resource}, ${effect})
            RETURNING created_at AS "createdAt"`
            })
          )
        )
        return { id, action, resource, effect, createdAt: iso(rows[0]!.createdAt) }
      })

      const removePolicy = Effect.fn("GroupService.removePolicy")(function* (
        workspace: string,
        by: Principal,
        groupId: string,
        policyId: string
      ) {
        yield* provide(
          identityChange(
            Effect.gen(function* () {
              yield* exists(workspace, groupId)
              const policy = yield* sql<PolicyStatement>`
            SELECT action, resource, effect FROM policies WHERE group_id = ${groupId} AND id = ${policyId}`
              yield* requireHolds(by, resolved(policy).denied, liftRefusal)
              const deleted = yield* sql`DELETE FROM policies WHERE group_id = ${groupId} AND id = ${policyId} RETURNING id`
              if (deleted.length === 0) {
                return yield* Effect.fail(notFound(`Policy ${policyId} not found in group ${groupId}`))
              }
            })
          )
        )
      })

      const addMember = Effect.fn("GroupService.addMember")(function* (
        workspace: string,
        by: Principal,
        groupId: string,
        input: { readonly userId?: string; readonly serviceAccountId?: number }
      ) {
        if ((input.userId === undefined) === (input.serviceAccountId === undefined)) {
          return yield* Effect.fail(invalid("userId", "give exactly one of userId or serviceAccountId"))
        }
        yield* provide(
          identityChange(
            Effect.gen(function* () {
              yield* exists(workspace, groupId)
              yield* requireHolds(
                by,
                (yield* policiesOf(groupId)).allowed,
                "You cannot add members to a group that grants permissions you do not hold"
              )
              let type: "user" | "service-account"
              let memberId: string
              if (input.userId !== undefined) {
                const found = yield* sql`
              SELECT 1 FROM memberships WHERE workspace = ${workspace} AND user_id = ${input.userId} FOR KEY SHARE`
                if (found.length === 0) {
                  return yield* Effect.fail(notFound(`User ${input.userId} is not a member of this workspace`))
                }
                type = "user"
                memberId = input.userId
              } else {
                const found = yield* sql`
              SELECT 1 FROM service_accounts WHERE workspace = ${workspace} AND id = ${input.serviceAccountId!} FOR KEY SHARE`
                if (found.length === 0) {
                  return yield* Effect.fail(notFound(`Service account ${input.serviceAccountId} not found`))
                }
                type = "service-account"
                memberId = String(input.serviceAccountId)
              }
              yield* sql`
            INSERT INTO group_members (group_id, member_type, member_id)
              VALUES (${groupId}, ${type}, ${memberId})`.pipe(uniqueOr(() => conflict("Already a member of this group")))
            })
          )
        )
        return yield* get(workspace, groupId)
      })

      const removeMember = Effect.fn("GroupService.removeMember")(function* (
        workspace: string,
        by: Principal,
        groupId: string,
        type: "user" | "service-account",
        memberId: string
      ) {
        yield* provide(
          identityChange(
            Effect.gen(function* () {
              yield* exists(workspace, groupId)
              yield* requireHolds(by, (yield* policiesOf(groupId)).denied, liftRefusal)
              const deleted = yield* sql`
            DELETE FROM group_members WHERE group_id = ${groupId} AND member_type = ${type} AND member_id = ${memberId}
            RETURNING member_id`
              if (deleted.length === 0) return yield* Effect.fail(notFound(`Not a member of group ${groupId}`))
            })
          )
        )
      })

      return GroupService.of({ create, list, get, delete: remove, addPolicy, removePolicy, addMember, removeMember })
    })
  )
}
