// Stored versions of a structure (`enableVersioning`): reading and pinning them, and the retention policy that ages
// them out (applied by the VersionRetention singleton).
import type { NotFound } from "@troupe/api/Errors"
import { notFound } from "@troupe/api/Errors"
import type { Structure } from "@troupe/api/structures/Structure"
import { Effect } from "effect"
import type { SqlClient } from "effect/sql"
import { iso, json, num } from "../lib/rows.ts"

export interface StructureVersionEntry {
  readonly structureId: string
  readonly version: number
  readonly definition: Structure
  readonly pinned: boolean
  readonly createdAt: string
  readonly createdBy: string | null
}

/** The retention policy as applied: defaults filled in. */
export interface EffectiveRetention {
  readonly maxVersions: number | undefined
  readonly maxAgeDays: number | undefined
  readonly cleanupIntervalHours: number
  readonly pinnedVersionsRetained: boolean
}

/** Defaults of a retention policy: clean up daily; pinned versions are kept unless the policy says otherwise. */
export const effectiveRetention = (policy: Structure["retentionPolicy"]): EffectiveRetention => ({
  maxVersions: policy?.maxVersions,
  maxAgeDays: policy?.maxAgeDays,
  cleanupIntervalHours: policy?.cleanupIntervalHours ?? 24,
  pinnedVersionsRetained: policy?.pinnedVersionsRetained ?? true
})

/**
 * Applies a retention policy to the stored versions of one structure: beyond the newest `maxVersions`, and older
 * than `maxAgeDays`, versions are removed, except the newest one (the current definition) and, while
 * `pinnedVersionsRetained`, pinned ones. Answers how many were removed.
 */
export const pruneVersions = (sql: SqlClient.SqlClient, structureId: string, policy: Structure["retentionPolicy"]) =>
  Effect.gen(function* () {
    const p = effectiveRetention(policy)
    const keepPinned = p.pinnedVersionsRetained
    let removed = 0
    if (p.maxVersions !== undefined && p.maxVersions > 0) {
      const rows = yield* sql`DELETE FROM structure_versions WHERE structure_id = ${structureId}
        AND version NOT IN (SELECT version FROM structure_versions WHERE structure_id = ${structureId}
          ORDER BY version DESC LIMIT ${Math.floor(p.maxVersions)})
        AND NOT (pinned AND ${keepPinned}) RETURNING version`
      removed += rows.length
    }
    if (p.maxAgeDays !== undefined && p.maxAgeDays > 0) {
      const seconds = p.maxAgeDays * 86_400
      const rows = yield* sql`DELETE FROM structure_versions WHERE structure_id = ${structureId}
        AND version < (SELECT max(version) FROM structure_versions WHERE structure_id = ${structureId})
        AND created_at < now() - make_interval(secs => ${seconds})
        AND NOT (pinned AND ${keepPinned}) RETURNING version`
      removed += rows.length
    }
    return removed
  })

/** The version routes of one node's StructureService: `getAny` sees soft-deleted structures, `get` does not. */
export const versionReads = (
  sql: SqlClient.SqlClient,
  getAny: (workspace: string, id: string) => Effect.Effect<Structure, NotFound>,
  get: (workspace: string, id: string) => Effect.Effect<Structure, NotFound>
) => {
  const toVersion = (row: any): StructureVersionEntry => ({
    structureId: row.structure_id,
    version: num(row.version),
    definition: json<Structure>(row.definition),
    pinned: row.pinned === true,
    createdAt: iso(row.created_at),
    createdBy: row.created_by ?? null
  })

  const versionNotFound = (n: number) => notFound({ message: `Structure version ${n} not found`, code: "NOT_FOUND" })

  const versions = (workspace: string, id: string) =>
    Effect.flatMap(getAny(workspace, id), (s) =>
      sql`SELECT * FROM structure_versions WHERE structure_id = ${s.id} ORDER BY version DESC`.pipe(
        Effect.orDie,
        Effect.map((rows) => rows.map(toVersion))
      )
    )

  const version = (workspace: string, id: string, n: number) =>
    Effect.flatMap(getAny(workspace, id), (s) =>
      sql`SELECT * FROM structure_versions WHERE structure_id = ${s.id} AND version = ${n}`.pipe(
        Effect.orDie,
        Effect.flatMap((rows) => (rows[0] ? Effect.succeed(toVersion(rows[0])) : Effect.fail(versionNotFound(n))))
      )
    )

  const pinVersion = (workspace: string, id: string, n: number, pinned: boolean) =>
    Effect.flatMap(get(workspace, id), (s) =>
      sql`UPDATE structure_versions SET pinned = ${pinned}
        WHERE structure_id = ${s.id} AND version = ${n} RETURNING *`.pipe(
        Effect.orDie,
        Effect.flatMap((rows) => (rows[0] ? Effect.succeed(toVersion(rows[0])) : Effect.fail(versionNotFound(n))))
      )
    )

  return { versions, version, pinVersion }
}
