// What a definition change does to the records it holds, inside the structure update's transaction: renamed and
// removed properties move or leave the records' top-level data (with their unique claims and counters), and
// `record_unique_values` follows the definition (reclaim). StructureService.store calls both.
import { conflict, errorDetail } from "@troupe/api/Errors"
import type { Structure } from "@troupe/api/structures/Structure"
import { Effect } from "effect"
import type { SqlClient } from "effect/sql"
import { json } from "../lib/rows.ts"
import { claimKeyOf, claimsOf } from "./StructureFacts.ts"

export const makeDataMigration = (sql: SqlClient.SqlClient) => {
  /** Moves record data when properties are renamed or removed (top level only; see the header). */
  const migrateRecords = (structureId: string, renames: ReadonlyArray<readonly [string, string]>, removed: ReadonlyArray<string>) =>
    Effect.gen(function* () {
      for (const [from, to] of renames) {
        yield* sql`UPDATE records SET data = (data - ${from}) || jsonb_build_object(${to}::text, data -> ${from})
        WHERE structure_id = ${structureId} AND data ? ${from}`
        yield* sql`UPDATE record_unique_values SET field = CASE WHEN field = ${from} THEN ${to} ELSE ${`ref:${to}`} END
        WHERE structure_id = ${structureId} AND field IN (${from}, ${`ref:${from}`})`
        yield* sql`UPDATE auto_increments SET field = ${to} WHERE structure_id = ${structureId} AND field = ${from}`
      }
      for (const name of removed) {
        yield* sql`UPDATE records SET data = data - ${name} WHERE structure_id = ${structureId} AND data ? ${name}`
        yield* sql`DELETE FROM record_unique_values WHERE structure_id = ${structureId} AND field = ${name}`
        yield* sql`DELETE FROM auto_increments WHERE structure_id = ${structureId} AND field = ${name}`
      }
    }).pipe(Effect.orDie)

  /**
   * Keeps `record_unique_values` in step with the definition (after migrateRecords moved renamed claims): a
   * property that stops claiming gives its claims up, and one that starts (isUnique set, a reference made
   * one-to-one) claims the values of every live record now, or the update fails with 409 when records already
   * share a value.
   */
  const reclaim = (before: Structure, after: Structure) =>
    Effect.gen(function* () {
      const keyOf = (s: Structure) =>
        new Map(
          s.properties.flatMap((p) => {
            const key = claimKeyOf(p)
            return key !== undefined ? [[p.id ?? p.name, key.startsWith("ref:") ? "ref" : "value"] as const] : []
          })
        )
      const was = keyOf(before)
      const kept: Array<string> = []
      const added: Array<{ key: string; name: string; index: number }> = []
      after.properties.forEach((p, index) => {
        const key = claimKeyOf(p)
        if (key === undefined) return
        const kind = key.startsWith("ref:") ? "ref" : "value"
        if (was.get(p.id ?? p.name) === kind) kept.push(key)
        else added.push({ key, name: p.name, index })
      })
      yield* kept.length === 0
        ? sql`DELETE FROM record_unique_values WHERE structure_id = ${after.id}`
        : sql`DELETE FROM record_unique_values WHERE structure_id = ${after.id} AND NOT (field IN ${sql.in(kept)})`
      const claims: Array<{ field: string; value: string; record_id: string }> = []
      for (const { key, name, index } of added) {
        // only the field's values, not whole records: the structure may be large
        const live = yield* sql`SELECT id, jsonb_build_object(${name}::text, data -> ${name}::text) AS v FROM records
        WHERE structure_id = ${after.id} AND deleted_at IS NULL AND (expires_at IS NULL OR expires_at > now())
          AND data ? ${name}::text`
        const holder = new Map<string, string>()
        for (const row of live) {
          for (const [k, value] of claimsOf(after, json<Record<string, unknown>>(row.v))) {
            if (k !== key) continue
            if (holder.has(value)) {
              return yield* conflict({
                message: `Records already share a value of "${name}", so it cannot become unique`,
                code: "DUPLICATE_KEY",
                details: [errorDetail(`properties[${index}]`, `records ${holder.get(value)} and ${row.id} share a value`)]
              })
            }
            holder.set(value, row.id as string)
            claims.push({ field: key, value, record_id: row.id as string })
          }
        }
      }
      for (let at = 0; at < claims.length; at += 5000) {
        yield* sql`INSERT INTO record_unique_values (structure_id, field, value, record_id)
        SELECT ${after.id}::uuid, field, value, record_id FROM jsonb_to_recordset(${JSON.stringify(claims.slice(at, at + 5000))}::jsonb)
          AS v(field text, value text, record_id uuid)`
      }
    })

  return { migrateRecords, reclaim }
}
