// Structures: definitions stored as one jsonb document per structure (plus the columns queries need), checked by
// rules.ts, versioned when `enableVersioning` is on, and cached per node. Every write publishes the id on the
// Notifier so every node drops its cached copy and compiled validator.
//
// Decisions (the README's "Structures" section has the full list):
// - A soft-deleted structure is gone for everything but the structure routes: `get`, `getBySlug`, `resolve` and
//   `all` (what record routes use) answer 404 STRUCTURE_NOT_FOUND for it; `getAny` (GET /structures/{id}, versions)
//   still shows it with `isDeleted: true`, and `?hard=true` removes it (its versions by FK cascade, its records and claims by a trigger, migration 0009).
// - A structure another live structure references cannot be deleted, nor change its recordSlug (409): the
//   reference would dangle. Renaming or removing a property that another structure's reference names as
//   targetField / displayField is refused the same way.
// - Renaming a property (same id, new name) and deleting properties migrate the stored records' top-level data in
//   the same transaction, so records stay valid under strict mode.
// - Setting `isSecret` on a property that already holds values encrypts them in the same transaction (records and
//   versions; the versions' and changelog's `changes` are masked); renaming a secret re-encrypts it under its new
//   path, and unsetting `isSecret` decrypts the values (SecretMigration.ts).
// Around it: rows and versions in StructureRows.ts and StructureVersions.ts, the list in StructureList.ts, the records'
// side of a definition change in StructureDataMigration.ts and SecretMigration.ts, definition checks beside rules.ts
// (ids, references other structures hold) in DefinitionChecks.ts.
import {
  type BadRequest,
  badRequest,
  type Conflict,
  conflict,
  type ErrorDetail,
  type Locked,
  locked,
  type NotFound,
  notFound,
  errorDetail
} from "@troupe/api/Errors"
import type { Principal } from "@troupe/api/Authorization"
import {
  type Structure,
  StructureInput,
  type StructureList,
  type StructureMetadataUpdate,
  type StructureUpdate,
  type StructureValidation
} from "@troupe/api/structures/Structure"
import { Context, DateTime, Effect, Layer, Schedule, Schema, Stream } from "effect"
import { SqlClient } from "effect/sql"
import { isSqlError, type SqlError } from "effect/sql/SqlError"
import * as Crypto from "node:crypto"
import { schemaDetails } from "../platform/HttpEdge.ts"
import { Notifier } from "../platform/Notifier.ts"
import { isCollision } from "../platform/sqlErrors.ts"
import { Secrets } from "../platform/Secrets.ts"
import { brokenReferences, idProblems } from "./DefinitionChecks.ts"
import type { DefinitionProblem } from "./RuleProblems.ts"
import { checkStructure, slugify } from "./rules.ts"
import { mergeStructureUpdate, normalizeStructure } from "./StructureDefaults.ts"
import { makeDataMigration } from "./StructureDataMigration.ts"
import { type ListQuery, makeStructureList } from "./StructureList.ts"
import { migrateSecrets, secretSteps } from "./SecretMigration.ts"
import { canonical, defaultMetadata, definitionOf, toStructure } from "./StructureRows.ts"
import { syncSearchConfig } from "./SearchSettings.ts"
import { pruneVersions, type StructureVersionEntry, versionReads } from "./StructureVersions.ts"
import { clearValidatorCache } from "./Validator.ts"
import { isUuid } from "../lib/Uuid.ts"
import { isObject } from "../lib/JsonPath.ts"

const notFoundError = (what: string) => notFound({ message: `Structure ${what} not found`, code: "STRUCTURE_NOT_FOUND" })

const toDetails = (problems: ReadonlyArray<DefinitionProblem>): Array<ErrorDetail> => problems.map((d) => errorDetail(d.field, d.message))

const invalid = (problems: ReadonlyArray<DefinitionProblem>) =>
  badRequest({ message: "The structure definition is invalid", code: "VALIDATION_ERROR", details: toDetails(problems) })

const slugConflict = (slug: string) =>
  conflict({
    message: `A structure with recordSlug "${slug}" already exists in this workspace`,
    code: "DUPLICATE_KEY",
    details: [errorDetail("recordSlug", "already in use")]
  })

const writesLocked = () => locked({ message: "Structure writes are locked while a migration runs", code: "STRUCTURE_WRITES_LOCKED" })

type ServiceError = BadRequest | Conflict | NotFound | Locked

export class StructureService extends Context.Service<
  StructureService,
  {
    readonly list: (workspace: string, query: ListQuery) => Effect.Effect<StructureList, BadRequest>
    /** A live structure by id; soft-deleted ones are not found. */
    readonly get: (workspace: string, id: string) => Effect.Effect<Structure, NotFound>
    /** A structure by id, soft-deleted ones included (the structure routes show them with `isDeleted: true`). */
    readonly getAny: (workspace: string, id: string) => Effect.Effect<Structure, NotFound>
    /** A live structure by recordSlug. */
    readonly getBySlug: (workspace: string, slug: string) => Effect.Effect<Structure, NotFound>
    /** A live (not deleted) structure by id or slug: what record routes use. */
    readonly resolve: (workspace: string, idOrSlug: string) => Effect.Effect<Structure, NotFound>
    /** Creates from a create body; the body is checked in full here, whatever decoded it before. */
    readonly create: (workspace: string, input: unknown, by: Principal) => Effect.Effect<Structure, BadRequest | Conflict>
    readonly update: (workspace: string, id: string, patch: StructureUpdate, by: Principal) => Effect.Effect<Structure, ServiceError>
    readonly remove: (workspace: string, id: string, hard: boolean, by: Principal) => Effect.Effect<Structure, NotFound | Conflict | Locked>
    readonly deleteProperties: (
      workspace: string,
      id: string,
      ids: ReadonlyArray<string>,
      by: Principal
    ) => Effect.Effect<Structure, ServiceError>
    /** Every problem of a would-be create body; never fails. */
    readonly validate: (workspace: string, body: unknown) => Effect.Effect<StructureValidation>
    readonly versions: (workspace: string, id: string) => Effect.Effect<ReadonlyArray<StructureVersionEntry>, NotFound>
    readonly version: (workspace: string, id: string, version: number) => Effect.Effect<StructureVersionEntry, NotFound>
    readonly pinVersion: (workspace: string, id: string, version: number, pinned: boolean) => Effect.Effect<StructureVersionEntry, NotFound>
    /** Sets the read-only migration metadata (platform admins, migration tooling). */
    readonly setMetadata: (
      workspace: string,
      id: string,
      patch: StructureMetadataUpdate,
      by: Principal
    ) => Effect.Effect<Structure, NotFound>
    /** Every live structure of a workspace (rules need the whole graph for references). */
    readonly all: (workspace: string) => Effect.Effect<ReadonlyArray<Structure>>
  }
>()("@troupe/server/structures/StructureService") {
  static readonly layer = Layer.effect(
    StructureService,
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const notifier = yield* Notifier
      const secrets = yield* Secrets
      const { migrateRecords, reclaim } = makeDataMigration(sql)
      const byId = new Map<string, Structure>()
      const bySlug = new Map<string, string>()

      const forget = (id: string) => {
        const s = byId.get(id)
        if (s !== undefined) bySlug.delete(`${s.workspaceSlug}/${s.recordSlug}`)
        byId.delete(id)
        clearValidatorCache(id)
      }
      yield* notifier.subscribe("structures").pipe(
        Stream.runForEach((id) => Effect.sync(() => forget(id))),
        Effect.forkScoped
      )
      const changed = (id: string) =>
        Effect.andThen(
          Effect.sync(() => forget(id)),
          notifier.publish("structures", id)
        )

      const remember = (s: Structure) => {
        if (!s.isDeleted) {
          byId.set(s.id, s)
          bySlug.set(`${s.workspaceSlug}/${s.recordSlug}`, s.id)
        }
        return s
      }

      const fetchById = (workspace: string, id: string) =>
        sql`SELECT * FROM structures WHERE workspace = ${workspace} AND id = ${id}`.pipe(
          Effect.orDie,
          Effect.map((rows) => (rows[0] ? toStructure(rows[0]) : undefined))
        )

      const getAny = (workspace: string, id: string): Effect.Effect<Structure, NotFound> =>
        Effect.suspend(() => {
          const cached = byId.get(id)
          if (cached !== undefined && cached.workspaceSlug === workspace) return Effect.succeed(cached)
          if (!isUuid(id)) return Effect.fail(notFoundError(id))
          return Effect.flatMap(fetchById(workspace, id), (s) =>
            s === undefined ? Effect.fail(notFoundError(id)) : Effect.succeed(remember(s))
          )
        })

      const get = (workspace: string, id: string): Effect.Effect<Structure, NotFound> =>
        Effect.flatMap(getAny(workspace, id), (s) => (s.isDeleted ? Effect.fail(notFoundError(id)) : Effect.succeed(s)))

      const getBySlug = (workspace: string, slug: string): Effect.Effect<Structure, NotFound> =>
        Effect.suspend(() => {
          const id = bySlug.get(`${workspace}/${slug}`)
          const cached = id === undefined ? undefined : byId.get(id)
          if (cached !== undefined) return Effect.succeed(cached)
          return sql`SELECT * FROM structures
            WHERE workspace = ${workspace} AND record_slug = ${slug} AND NOT is_deleted`.pipe(
            Effect.orDie,
            Effect.flatMap((rows) => (rows[0] ? Effect.succeed(remember(toStructure(rows[0]))) : Effect.fail(notFoundError(slug))))
          )
        })

      const resolve = (workspace: string, idOrSlug: string) =>
        isUuid(idOrSlug) ? get(workspace, idOrSlug) : getBySlug(workspace, idOrSlug)

      const all = (workspace: string) =>
        sql`SELECT * FROM structures WHERE workspace = ${workspace} AND NOT is_deleted`.pipe(
          Effect.orDie,
          Effect.map((rows) => rows.map(toStructure))
        )

      /** Rules against the workspace's structure graph; `selfId` (on update) is left out of the graph. */
      const problemsOf = (workspace: string, candidate: unknown, selfId?: string) =>
        Effect.map(all(workspace), (structures) => {
          const graph = new Map<string, Structure>()
          for (const s of structures) if (s.id !== selfId) graph.set(s.recordSlug, s)
          const problems = checkStructure(candidate, { findStructureBySlug: (slug) => graph.get(slug) })
          problems.push(...idProblems(isObject(candidate) ? candidate.properties : undefined))
          return { problems, others: structures.filter((s) => s.id !== selfId) }
        })

      const referencedConflict = (details: ReadonlyArray<ErrorDetail>) =>
        conflict({ message: "Other structures reference this structure or its fields", code: "CONFLICT", details })

      const saveVersion = (s: Structure, by: string) =>
        s.enableVersioning
          ? Effect.gen(function* () {
              yield* sql`INSERT INTO structure_versions (structure_id, version, definition, created_by)
            VALUES (${s.id}, ${s.version}, ${JSON.stringify(s)}::jsonb, ${by})
            ON CONFLICT (structure_id, version) DO NOTHING`
              if (s.retentionPolicy) yield* pruneVersions(sql, s.id, s.retentionPolicy)
            })
          : Effect.void

      /** Unique violations on the slug index become 409; any other database failure is a defect. */
      const slugUnique =
        (slug: () => string) =>
        <A, E, R>(effect: Effect.Effect<A, E | SqlError, R>): Effect.Effect<A, Exclude<E, SqlError> | Conflict, R> =>
          Effect.catchIf(effect, isSqlError, (e) =>
            e.reason._tag === "UniqueViolation" ? Effect.fail(slugConflict(slug())) : Effect.die(e)
          ) as Effect.Effect<A, Exclude<E, SqlError> | Conflict, R>

      const decodeInput = (body: unknown): { input: StructureInput } | { problems: Array<DefinitionProblem> } => {
        const decoded = Schema.decodeUnknownExit(StructureInput)(body, { errors: "all" })
        if (decoded._tag === "Success") return { input: decoded.value }
        const error = decoded.cause.reasons.find((r) => r._tag === "Fail") as { error?: unknown } | undefined
        return {
          problems:
            error !== undefined && Schema.isSchemaError(error.error)
              ? schemaDetails(error.error).map((d) => ({ field: d.field, message: d.message }))
              : [{ field: "body", message: "is not a structure definition" }]
        }
      }

      const create = Effect.fn("StructureService.create")(function* (workspace: string, body: unknown, by: Principal) {
        const { problems } = yield* problemsOf(workspace, body)
        if (problems.length > 0) return yield* invalid(problems)
        const decoded = decodeInput(body)
        if ("problems" in decoded) return yield* invalid(decoded.problems)
        const normalized = normalizeStructure(decoded.input)
        const now = DateTime.formatIso(yield* DateTime.now)
        const structure = {
          ...normalized,
          id: Crypto.randomUUID(),
          workspaceSlug: workspace,
          metadata: defaultMetadata,
          createdBy: by.id,
          lastUpdatedBy: by.id,
          createdAt: now,
          updatedAt: now,
          isDeleted: false,
          version: 1
        } as unknown as Structure
        const row = yield* sql
          .withTransaction(
            Effect.gen(function* () {
              const definition = JSON.stringify(definitionOf(structure))
              const rows = yield* sql`INSERT INTO structures
            (id, workspace, record_slug, name, definition, version, created_by, updated_by, created_at, updated_at)
          VALUES (${structure.id}, ${workspace}, ${structure.recordSlug}, ${structure.name}, ${definition}::jsonb,
            1, ${by.id}, ${by.id}, ${now}, ${now})
          RETURNING *`
              yield* saveVersion(toStructure(rows[0]), by.id)
              yield* syncSearchConfig(sql, toStructure(rows[0]), true)
              return rows[0]
            })
          )
          .pipe(slugUnique(() => structure.recordSlug))
        yield* changed(structure.id)
        return remember(toStructure(row))
      })

      /** The live row, locked for the rest of the transaction. */
      const lockLive = (workspace: string, id: string) =>
        Effect.gen(function* () {
          if (!isUuid(id)) return yield* notFoundError(id)
          const rows = yield* sql`SELECT * FROM structures WHERE workspace = ${workspace} AND id = ${id} FOR UPDATE`.pipe(Effect.orDie)
          const s = rows[0] ? toStructure(rows[0]) : undefined
          if (s === undefined || s.isDeleted) return yield* notFoundError(id)
          return s
        })

      /**
       * Checks `candidate` (a full create-shaped body) as the next definition of `existing` and stores it as a new
       * version, inside the caller's transaction.
       */
      const store = (existing: Structure, candidate: StructureInput, by: Principal, removed: ReadonlyArray<string> = []) =>
        Effect.gen(function* () {
          const { problems, others } = yield* problemsOf(existing.workspaceSlug, candidate, existing.id)
          if (problems.length > 0) return yield* invalid(problems)
          const normalized = normalizeStructure(candidate)
          const merged: Record<string, unknown> = { ...existing, ...normalized }
          // Optional fields cleared by the update are absent from `normalized`: drop them from the stored document.
          for (const key of [
            "description",
            "retentionPolicy",
            "defaultSearchField",
            "searchFields",
            "searchLanguage",
            "defaultTtlSeconds"
          ] as const) {
            if (!(key in normalized)) delete merged[key]
          }
          const next = merged as unknown as Structure
          if (
            canonical(definitionOf(next)) === canonical(definitionOf(existing)) &&
            next.name === existing.name &&
            next.recordSlug === existing.recordSlug
          ) {
            return existing // nothing changed: no new version
          }
          const broken = brokenReferences(others, existing, next)
          if (broken.length > 0) return yield* referencedConflict(broken)
          const renames = existing.properties.flatMap((p) => {
            const now = next.properties.find((q) => q.id === p.id)
            return now !== undefined && now.name !== p.name ? [[p.name, now.name] as const] : []
          })
          const rows = yield* sql`UPDATE structures SET record_slug = ${next.recordSlug}, name = ${next.name},
            definition = ${JSON.stringify(definitionOf(next))}::jsonb, version = version + 1,
            updated_by = ${by.id}, updated_at = now()
          WHERE id = ${existing.id} RETURNING *`
          const stored = toStructure(rows[0])
          if (renames.length > 0 || removed.length > 0) yield* migrateRecords(existing.id, renames, removed)
          yield* reclaim(existing, stored)
          yield* migrateSecrets(sql, secrets, existing.id, secretSteps(existing, stored))
          yield* saveVersion(stored, by.id)
          yield* syncSearchConfig(sql, stored, false)
          return stored
        })

      const transact = <A>(id: string, slug: () => string, effect: Effect.Effect<A, ServiceError | SqlError>) =>
        sql.withTransaction(effect).pipe(
          slugUnique(slug),
          Effect.tap(() => changed(id))
        ) as Effect.Effect<A, ServiceError>

      const update = Effect.fn("StructureService.update")(function* (workspace: string, id: string, patch: StructureUpdate, by: Principal) {
        let slug = patch.recordSlug ?? ""
        return yield* transact(
          id,
          () => slug,
          Effect.gen(function* () {
            const existing = yield* lockLive(workspace, id)
            if (existing.metadata.structureWritesLocked) return yield* writesLocked()
            // The older isStrict, sent alone, still switches the mode (true: strict, false: auto-evolving).
            const withMode: StructureUpdate =
              patch.isStrict !== undefined && patch.schemaDiscoveryMode === undefined
                ? { ...patch, schemaDiscoveryMode: patch.isStrict ? "strict" : "auto-evolving" }
                : patch
            const candidate = mergeStructureUpdate(existing, withMode)
            slug = candidate.recordSlug ?? existing.recordSlug
            return yield* store(existing, candidate, by)
          })
        )
      })

      const deleteProperties = Effect.fn("StructureService.deleteProperties")(function* (
        workspace: string,
        id: string,
        ids: ReadonlyArray<string>,
        by: Principal
      ) {
        if (ids.length === 0) return yield* invalid([{ field: "ids", message: "must list at least one property id" }])
        return yield* transact(
          id,
          () => "",
          Effect.gen(function* () {
            const existing = yield* lockLive(workspace, id)
            if (existing.metadata.structureWritesLocked) return yield* writesLocked()
            const missing = ids.flatMap((pid, i) =>
              existing.properties.some((p) => p.id === pid) ? [] : [{ field: `ids[${i}]`, message: `no property with id "${pid}"` }]
            )
            if (missing.length > 0) return yield* invalid(missing)
            const removed = existing.properties.filter((p) => ids.includes(p.id ?? ""))
            const kept = existing.properties.filter((p) => !ids.includes(p.id ?? ""))
            const candidate = { ...mergeStructureUpdate(existing, {}), properties: kept }
            return yield* store(
              existing,
              candidate,
              by,
              removed.map((p) => p.name)
            )
          })
        )
      })

      const remove = Effect.fn("StructureService.remove")(function* (workspace: string, id: string, hard: boolean, by: Principal) {
        const existing = yield* getAny(workspace, id)
        if (!existing.isDeleted) {
          if (existing.metadata.structureWritesLocked) return yield* writesLocked()
          const others = (yield* all(workspace)).filter((s) => s.id !== existing.id)
          const broken = brokenReferences(others, existing, undefined)
          if (broken.length > 0) return yield* referencedConflict(broken)
        } else if (!hard) {
          return yield* notFoundError(id)
        }
        if (hard) {
          // the structure's versions go by FK cascade; its records (with their history) and unique values by the
          // trigger of migration 0009. The trigger locks the records while writes to them wait on the structure's key: PostgreSQL breaks such a
          // deadlock by failing one side, and this side tries again (the writes are then answered 404)
          yield* sql`DELETE FROM structures WHERE id = ${existing.id}`.pipe(
            Effect.retry({
              while: isCollision,
              times: 5,
              schedule: Schedule.exponential("20 millis")
            }),
            Effect.catchIf(isCollision, () =>
              Effect.fail(
                conflict({ message: "Writes to the structure's records kept the delete from finishing; retry it", code: "CONFLICT" })
              )
            ),
            Effect.orDie
          )
          yield* changed(existing.id)
          return { ...existing, isDeleted: true }
        }
        const rows = yield* sql`UPDATE structures SET is_deleted = true, updated_by = ${by.id}, updated_at = now()
        WHERE id = ${existing.id} RETURNING *`.pipe(Effect.orDie)
        // none: deleted for good since it was read
        if (rows[0] === undefined) return yield* notFoundError(id)
        yield* changed(existing.id)
        return toStructure(rows[0])
      })

      const setMetadata = Effect.fn("StructureService.setMetadata")(function* (
        workspace: string,
        id: string,
        patch: StructureMetadataUpdate,
        by: Principal
      ) {
        const existing = yield* get(workspace, id)
        const metadata: Record<string, unknown> = { ...existing.metadata }
        for (const [key, value] of Object.entries(patch)) {
          if (value === null) delete metadata[key]
          else if (value !== undefined) metadata[key] = value
        }
        // Metadata is not part of the definition: no new version, so compiled validators stay valid.
        const rows = yield* sql`UPDATE structures
          SET definition = jsonb_set(definition, '{metadata}', ${JSON.stringify(metadata)}::jsonb),
          updated_by = ${by.id}, updated_at = now()
        WHERE id = ${existing.id} RETURNING *`.pipe(Effect.orDie)
        // none: deleted for good since it was read
        if (rows[0] === undefined) return yield* notFoundError(id)
        yield* changed(existing.id)
        return toStructure(rows[0])
      })

      const list = makeStructureList(sql)

      const validate = (workspace: string, body: unknown): Effect.Effect<StructureValidation> =>
        Effect.gen(function* () {
          const { problems, others } = yield* problemsOf(workspace, body)
          if (problems.length === 0) {
            const decoded = decodeInput(body)
            if ("problems" in decoded) problems.push(...decoded.problems)
            else {
              const slug = decoded.input.recordSlug ?? slugify(decoded.input.name)
              if (others.some((s) => s.recordSlug === slug)) {
                problems.push({
                  field: "recordSlug",
                  message: `'${slug}' is already used by another structure of this workspace`
                })
              }
            }
          }
          return { valid: problems.length === 0, errors: problems }
        })

      const { versions, version, pinVersion } = versionReads(sql, getAny, get)

      return StructureService.of({
        list,
        get,
        getAny,
        getBySlug,
        resolve,
        create,
        update,
        remove,
        deleteProperties,
        validate,
        versions,
        version,
        pinVersion,
        setMetadata,
        all
      })
    })
  )
}
