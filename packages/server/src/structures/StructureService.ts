// Structures: definitions stored as one jsonb document per structure (plus the columns queries need), checked by
// rules.ts, versioned when `enableVersioning` is on, and cached per node. Every write publishes the id on the
// Notifier so every node drops its cached copy and compiled validator.
import { badRequest, conflict, type ErrorDetail, locked, notFound } from "@troupe/api/Errors"
import type { Principal } from "@troupe/api/Authorization"
import {
  type PropertyDefinition,
  type Structure,
  StructureInput,
  type StructureList,
  type StructureUpdate,
  type StructureValidation
} from "@troupe/api/structures/Structure"
import { Context, Effect, Layer, Schema, Stream } from "effect"
import { SqlClient } from "effect/sql"
import * as Crypto from "node:crypto"
import { flag, iso, isoOrNull, json, num } from "../lib/rows.ts"
import { Notifier } from "../platform/Notifier.ts"
import { schemaDetails } from "../platform/HttpEdge.ts"
import { checkStructure, normalizeStructure, slugify } from "./rules.ts"
import { clearValidatorCache } from "./Validator.ts"

export interface ListQuery {
  readonly page?: number | undefined
  readonly limit?: number | undefined
  readonly search?: string | undefined
  readonly searchField?: string | undefined
  readonly "sort[field]"?: string | undefined
  readonly "sort[direction]"?: string | undefined
  readonly "filter[status]"?: string | undefined
  readonly "filter[isDeleted]"?: string | undefined
}

export interface StructureVersionEntry {
  readonly structureId: string
  readonly version: number
  readonly definition: Structure
  readonly createdAt: string
  readonly createdBy: string | null
}

const notFoundError = (what: string) => notFound({ message: `Structure ${what} not found`, code: "STRUCTURE_NOT_FOUND" })
const invalid = (details: ReadonlyArray<{ field: string; message: string }>) =>
  badRequest({
    message: "The structure definition is invalid",
    code: "VALIDATION_ERROR",
    details: details.map((d): ErrorDetail => ({ field: d.field, property: d.field, message: d.message }))
  })

const slugPattern = /^[a-z0-9]+(-[a-z0-9]+)*$/

/** Columns stored outside the definition document. */
const rowColumns = ["id", "workspaceSlug", "recordSlug", "name", "isDeleted", "version", "createdAt", "updatedAt", "createdBy", "lastUpdatedBy"] as const

const toStructure = (row: any): Structure => ({
  ...json<Record<string, unknown>>(row.definition),
  id: row.id,
  workspaceSlug: row.workspace,
  recordSlug: row.record_slug,
  name: row.name,
  isDeleted: row.is_deleted,
  version: num(row.version),
  createdAt: iso(row.created_at),
  updatedAt: iso(row.updated_at),
  createdBy: row.created_by ?? null,
  lastUpdatedBy: row.updated_by ?? null
}) as Structure

const definitionOf = (s: Structure): Record<string, unknown> => {
  const doc: Record<string, unknown> = { ...s }
  for (const key of rowColumns) delete doc[key]
  return doc
}

/** Property updates: an existing id replaces that property, `new` or no id appends, omission keeps. */
const mergeProperties = (
  existing: ReadonlyArray<PropertyDefinition>,
  incoming: ReadonlyArray<PropertyDefinition>
): { properties: Array<PropertyDefinition>; unknownIds: Array<[number, string]> } => {
  const result = [...existing]
  const unknownIds: Array<[number, string]> = []
  incoming.forEach((p, i) => {
    if (p.id === undefined || p.id === "new") {
      result.push(p)
      return
    }
    const at = result.findIndex((e) => e.id === p.id)
    if (at < 0) unknownIds.push([i, p.id])
    else result[at] = p
  })
  return { properties: result, unknownIds }
}

export class StructureService extends Context.Service<StructureService, {
  readonly list: (workspace: string, query: ListQuery) => Effect.Effect<StructureList, ReturnType<typeof badRequest>>
  readonly get: (workspace: string, id: string) => Effect.Effect<Structure, ReturnType<typeof notFound>>
  readonly getBySlug: (workspace: string, slug: string) => Effect.Effect<Structure, ReturnType<typeof notFound>>
  /** A live (not deleted) structure by id or slug: what record routes use. */
  readonly resolve: (workspace: string, idOrSlug: string) => Effect.Effect<Structure, ReturnType<typeof notFound>>
  readonly create: (workspace: string, input: StructureInput, by: Principal) => Effect.Effect<Structure, ReturnType<typeof badRequest> | ReturnType<typeof conflict>>
  readonly update: (workspace: string, id: string, patch: StructureUpdate, by: Principal) => Effect.Effect<Structure, ReturnType<typeof badRequest> | ReturnType<typeof conflict> | ReturnType<typeof notFound> | ReturnType<typeof locked>>
  readonly remove: (workspace: string, id: string, hard: boolean, by: Principal) => Effect.Effect<Structure, ReturnType<typeof notFound>>
  readonly deleteProperties: (workspace: string, id: string, ids: ReadonlyArray<string>, by: Principal) => Effect.Effect<Structure, ReturnType<typeof badRequest> | ReturnType<typeof notFound> | ReturnType<typeof locked> | ReturnType<typeof conflict>>
  readonly validate: (workspace: string, body: unknown) => Effect.Effect<StructureValidation>
  readonly versions: (workspace: string, id: string) => Effect.Effect<ReadonlyArray<StructureVersionEntry>, ReturnType<typeof notFound>>
  readonly version: (workspace: string, id: string, version: number) => Effect.Effect<StructureVersionEntry, ReturnType<typeof notFound>>
  /** Every live structure of a workspace (rules need the whole graph for references). */
  readonly all: (workspace: string) => Effect.Effect<ReadonlyArray<Structure>>
}>()("@troupe/server/structures/StructureService") {
  static readonly layer = Layer.effect(StructureService, Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const notifier = yield* Notifier
    const byId = new Map<string, Structure>()
    const bySlug = new Map<string, string>()

    const forget = (id: string) => {
      const s = byId.get(id)
      if (s !== undefined) bySlug.delete(`${s.workspaceSlug}/${s.recordSlug}`)
      byId.delete(id)
      clearValidatorCache(id)
    }
    yield* notifier.subscribe("structures").pipe(Stream.runForEach((id) => Effect.sync(() => forget(id))), Effect.forkScoped)
    const changed = (id: string) => Effect.andThen(Effect.sync(() => forget(id)), notifier.publish("structures", id))

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

    const isUuid = (s: string) => /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(s)

    const get = (workspace: string, id: string) =>
      Effect.suspend(() => {
        const cached = byId.get(id)
        if (cached !== undefined && cached.workspaceSlug === workspace) return Effect.succeed(cached)
        if (!isUuid(id)) return Effect.fail(notFoundError(id))
        return Effect.flatMap(fetchById(workspace, id), (s) =>
          s === undefined ? Effect.fail(notFoundError(id)) : Effect.succeed(remember(s)))
      })

    const getBySlug = (workspace: string, slug: string) =>
      Effect.suspend(() => {
        const id = bySlug.get(`${workspace}/${slug}`)
        if (id !== undefined) {
          const cached = byId.get(id)
          if (cached !== undefined) return Effect.succeed(cached)
        }
        return sql`SELECT * FROM structures WHERE workspace = ${workspace} AND record_slug = ${slug} AND NOT is_deleted`.pipe(
          Effect.orDie,
          Effect.flatMap((rows) =>
            rows[0] ? Effect.succeed(remember(toStructure(rows[0]))) : Effect.fail(notFoundError(slug)))
        )
      })

    const resolve = (workspace: string, idOrSlug: string) =>
      (isUuid(idOrSlug) ? get(workspace, idOrSlug) : getBySlug(workspace, idOrSlug)).pipe(
        Effect.flatMap((s) => (s.isDeleted ? Effect.fail(notFoundError(idOrSlug)) : Effect.succeed(s)))
      )

    const all = (workspace: string) =>
      sql`SELECT * FROM structures WHERE workspace = ${workspace} AND NOT is_deleted`.pipe(
        Effect.orDie,
        Effect.map((rows) => rows.map(toStructure))
      )

    /** Rules with the workspace's structure graph; `self` replaces its stored version in the graph. */
    const check = (workspace: string, candidate: Structure | Record<string, unknown>, selfId?: string) =>
      Effect.map(all(workspace), (structures) => {
        const graph = new Map<string, Structure>()
        for (const s of structures) if (s.id !== selfId) graph.set(s.recordSlug, s)
        const selfSlug = (candidate as any).recordSlug as string | undefined
        if (selfSlug !== undefined) graph.set(selfSlug, candidate as Structure)
        return checkStructure(candidate as any, {
          findStructureBySlug: (slug: string) => graph.get(slug) as any,
          ...(selfSlug !== undefined ? { selfSlug } : {})
        })
      })

    const saveVersion = (s: Structure, by: string) =>
      s.enableVersioning
        ? Effect.gen(function*() {
          yield* sql`INSERT INTO structure_versions (structure_id, version, definition, created_by)
            VALUES (${s.id}, ${s.version}, ${JSON.stringify(s)}::jsonb, ${by})
            ON CONFLICT (structure_id, version) DO NOTHING`
          const policy = s.retentionPolicy
          if (policy?.maxVersions !== undefined && policy.maxVersions > 0) {
            yield* sql`DELETE FROM structure_versions WHERE structure_id = ${s.id} AND version <= ${s.version - policy.maxVersions}
              AND NOT (pinned AND ${policy.pinnedVersionsRetained === true})`
          }
          if (policy?.maxAgeDays !== undefined && policy.maxAgeDays > 0) {
            yield* sql`DELETE FROM structure_versions WHERE structure_id = ${s.id} AND version < ${s.version}
              AND created_at < now() - make_interval(days => ${Math.floor(policy.maxAgeDays)})
              AND NOT (pinned AND ${policy.pinnedVersionsRetained === true})`
          }
        })
        : Effect.void

    const slugConflict = (slug: string) =>
      conflict({ message: `A structure with recordSlug "${slug}" already exists in this workspace`, code: "DUPLICATE_KEY", details: [{ field: "recordSlug", property: "recordSlug", message: "already in use" }] })

    const create = Effect.fn("StructureService.create")(function*(workspace: string, input: StructureInput, by: Principal) {
      const recordSlug = input.recordSlug ?? slugify(input.name)
      if (input.name.trim().length === 0) return yield* invalid([{ field: "name", message: "name must not be empty" }])
      if (!slugPattern.test(recordSlug)) {
        return yield* invalid([{ field: "recordSlug", message: "recordSlug must be lowercase and hyphen-separated (a-z, 0-9, -)" }])
      }
      const now = new Date().toISOString()
      const normalized = normalizeStructure({ ...input, recordSlug }) as Record<string, unknown>
      const structure = {
        ...normalized,
        id: Crypto.randomUUID(),
        workspaceSlug: workspace,
        recordSlug,
        name: input.name,
        metadata: { recordWritesLocked: false, structureWritesLocked: false, migrationInProgress: false },
        tags: input.tags ?? [],
        createdBy: by.id,
        lastUpdatedBy: by.id,
        createdAt: now,
        updatedAt: now,
        isDeleted: false,
        version: 1
      } as unknown as Structure
      const problems = yield* check(workspace, structure)
      if (problems.length > 0) return yield* invalid(problems)
      const row = yield* sql.withTransaction(Effect.gen(function*() {
        const rows = yield* sql`INSERT INTO structures (id, workspace, record_slug, name, definition, version, created_by, updated_by, created_at, updated_at)
          VALUES (${structure.id}, ${workspace}, ${recordSlug}, ${structure.name}, ${JSON.stringify(definitionOf(structure))}::jsonb, 1, ${by.id}, ${by.id}, ${now}, ${now})
          RETURNING *`
        yield* saveVersion(structure, by.id)
        return rows[0]
      })).pipe(
        Effect.catchTag("SqlError", (e) => e.reason._tag === "UniqueViolation" ? Effect.fail(slugConflict(recordSlug)) : Effect.die(e))
      )
      yield* changed(structure.id)
      return toStructure(row)
    })

    const persistUpdate = (existing: Structure, next: Structure, by: Principal) =>
      Effect.gen(function*() {
        const problems = yield* check(existing.workspaceSlug, next, existing.id)
        if (problems.length > 0) return yield* invalid(problems)
        const row = yield* sql.withTransaction(Effect.gen(function*() {
          const rows = yield* sql`UPDATE structures SET record_slug = ${next.recordSlug}, name = ${next.name},
              definition = ${JSON.stringify(definitionOf(next))}::jsonb, version = version + 1, updated_by = ${by.id}, updated_at = now()
            WHERE id = ${existing.id} AND version = ${existing.version} RETURNING *`
          if (rows.length === 0) {
            return yield* Effect.fail(conflict({ message: "The structure was changed concurrently; retry", code: "VERSION_CONFLICT" }))
          }
          yield* saveVersion(toStructure(rows[0]), by.id)
          return rows[0]
        })).pipe(
          Effect.catchTag("SqlError", (e) => e.reason._tag === "UniqueViolation" ? Effect.fail(slugConflict(next.recordSlug)) : Effect.die(e))
        )
        yield* changed(existing.id)
        return toStructure(row)
      })

    const live = (workspace: string, id: string) =>
      Effect.flatMap(get(workspace, id), (s) => (s.isDeleted ? Effect.fail(notFoundError(id)) : Effect.succeed(s)))

    const writable = (s: Structure) =>
      s.metadata?.structureWritesLocked
        ? Effect.fail(locked({ message: "Structure writes are locked while a migration runs", code: "STRUCTURE_WRITES_LOCKED" }))
        : Effect.succeed(s)

    const update = Effect.fn("StructureService.update")(function*(workspace: string, id: string, patch: StructureUpdate, by: Principal) {
      const existing = yield* Effect.flatMap(live(workspace, id), writable)
      const next: Record<string, unknown> = { ...existing }
      for (const [key, value] of Object.entries(patch)) {
        if (key === "properties" || value === undefined) continue
        if (value === null) delete next[key]
        else next[key] = value
      }
      if (patch.name !== undefined && patch.name.trim().length === 0) {
        return yield* invalid([{ field: "name", message: "name must not be empty" }])
      }
      if (patch.recordSlug !== undefined && !slugPattern.test(patch.recordSlug)) {
        return yield* invalid([{ field: "recordSlug", message: "recordSlug must be lowercase and hyphen-separated (a-z, 0-9, -)" }])
      }
      if (patch.properties !== undefined) {
        const merged = mergeProperties(existing.properties, patch.properties)
        if (merged.unknownIds.length > 0) {
          return yield* invalid(merged.unknownIds.map(([i, pid]) => ({ field: `properties[${i}].id`, message: `no property with id "${pid}" (use "new" to add one)` })))
        }
        next.properties = merged.properties
      }
      const normalized = normalizeStructure(next as any) as unknown as Structure
      return yield* persistUpdate(existing, { ...next, ...normalized } as Structure, by)
    })

    const deleteProperties = Effect.fn("StructureService.deleteProperties")(function*(workspace: string, id: string, ids: ReadonlyArray<string>, by: Principal) {
      const existing = yield* Effect.flatMap(live(workspace, id), writable)
      const missing = ids.filter((pid) => !existing.properties.some((p) => p.id === pid))
      if (missing.length > 0) {
        return yield* invalid(missing.map((pid) => ({ field: "ids", message: `no property with id "${pid}"` })))
      }
      const next = { ...existing, properties: existing.properties.filter((p) => !ids.includes(p.id ?? "")) }
      return yield* persistUpdate(existing, next, by)
    })

    const remove = Effect.fn("StructureService.remove")(function*(workspace: string, id: string, hard: boolean, by: Principal) {
      const existing = yield* get(workspace, id)
      if (hard) {
        yield* sql`DELETE FROM structures WHERE id = ${existing.id}`.pipe(Effect.orDie)
        yield* changed(existing.id)
        return { ...existing, isDeleted: true }
      }
      if (existing.isDeleted) return yield* notFoundError(id)
      const rows = yield* sql`UPDATE structures SET is_deleted = true, updated_by = ${by.id}, updated_at = now()
        WHERE id = ${existing.id} RETURNING *`.pipe(Effect.orDie)
      yield* changed(existing.id)
      return toStructure(rows[0])
    })

    const list = Effect.fn("StructureService.list")(function*(workspace: string, q: ListQuery) {
      const page = Math.max(1, Math.floor(q.page ?? 1))
      const limit = Math.min(500, Math.max(1, Math.floor(q.limit ?? 500)))
      if (!Number.isFinite(page) || !Number.isFinite(limit)) return yield* badRequest({ message: "page and limit must be numbers", code: "VALIDATION_ERROR" })
      const searchable: Record<string, string> = { name: "name", recordSlug: "record_slug", description: "description", id: "id" }
      const searchField = q.searchField ?? "name"
      if (!(searchField in searchable)) {
        return yield* badRequest({ message: `searchField must be one of ${Object.keys(searchable).join(", ")}`, code: "VALIDATION_ERROR", details: [{ field: "searchField", property: "searchField", message: "unsupported" }] })
      }
      const sortable: Record<string, string> = { name: "name", recordSlug: "record_slug", createdAt: "created_at", updatedAt: "updated_at", version: "version" }
      const sortField = q["sort[field]"] ?? "createdAt"
      if (!(sortField in sortable)) {
        return yield* badRequest({ message: `sort[field] must be one of ${Object.keys(sortable).join(", ")}`, code: "VALIDATION_ERROR", details: [{ field: "sort[field]", property: "sort[field]", message: "unsupported" }] })
      }
      const desc = (q["sort[direction]"] ?? "asc").toLowerCase() === "desc"
      const conditions = [sql`workspace = ${workspace}`]
      conditions.push(sql`is_deleted = ${q["filter[isDeleted]"] === undefined ? false : flag(q["filter[isDeleted]"])}`)
      if (q["filter[status]"] !== undefined) conditions.push(sql`definition->>'status' = ${q["filter[status]"]}`)
      if (q.search !== undefined && q.search.length > 0) {
        const column = searchField === "description" ? sql`definition->>'description'` : searchField === "id" ? sql`id::text` : sql(searchable[searchField]!)
        conditions.push(sql`${column} ILIKE ${"%" + q.search.replace(/[\\%_]/g, (c) => "\\" + c) + "%"}`)
      }
      const where = sql.and(conditions)
      const order = sql.literal(`${sortable[sortField]} ${desc ? "DESC" : "ASC"}, id ASC`)
      const [rows, count] = yield* Effect.all([
        sql`SELECT * FROM structures WHERE ${where} ORDER BY ${order} LIMIT ${limit} OFFSET ${(page - 1) * limit}`,
        sql`SELECT count(*)::int AS n FROM structures WHERE ${where}`
      ], { concurrency: 1 }).pipe(Effect.orDie)
      return { data: rows.map(toStructure), meta: { total: num(count[0]!.n), page, pageSize: limit } }
    })

    const validate = (workspace: string, body: unknown) =>
      Effect.gen(function*() {
        const decoded = Schema.decodeUnknownExit(StructureInput)(body)
        if (decoded._tag === "Failure") {
          const error = decoded.cause.reasons.find((r) => r._tag === "Fail")
          const details = error && Schema.isSchemaError((error as any).error) ? schemaDetails((error as any).error) : [{ field: "body", message: "invalid structure" }]
          return { valid: false, errors: details.map((d) => ({ field: d.field, message: d.message })) }
        }
        const input = decoded.value
        const recordSlug = input.recordSlug ?? slugify(input.name)
        const problems: Array<{ field: string; message: string }> = []
        if (input.name.trim().length === 0) problems.push({ field: "name", message: "name must not be empty" })
        if (!slugPattern.test(recordSlug)) problems.push({ field: "recordSlug", message: "recordSlug must be lowercase and hyphen-separated" })
        const normalized = normalizeStructure({ ...input, recordSlug }) as Record<string, unknown>
        problems.push(...(yield* check(workspace, { ...normalized, recordSlug })))
        return { valid: problems.length === 0, errors: problems }
      })

    const toVersion = (row: any): StructureVersionEntry => ({
      structureId: row.structure_id,
      version: num(row.version),
      definition: json<Structure>(row.definition),
      createdAt: iso(row.created_at),
      createdBy: row.created_by ?? null
    })

    const versions = (workspace: string, id: string) =>
      Effect.flatMap(get(workspace, id), (s) =>
        sql`SELECT * FROM structure_versions WHERE structure_id = ${s.id} ORDER BY version DESC`.pipe(
          Effect.orDie,
          Effect.map((rows) => rows.map(toVersion))
        ))

    const version = (workspace: string, id: string, n: number) =>
      Effect.flatMap(get(workspace, id), (s) =>
        sql`SELECT * FROM structure_versions WHERE structure_id = ${s.id} AND version = ${n}`.pipe(
          Effect.orDie,
          Effect.flatMap((rows) =>
            rows[0] ? Effect.succeed(toVersion(rows[0])) : Effect.fail(notFound({ message: `Structure version ${n} not found`, code: "NOT_FOUND" })))
        ))

    void isoOrNull
    return StructureService.of({ list, get, getBySlug, resolve, create, update, remove, deleteProperties, validate, versions, version, all })
  }))
}
