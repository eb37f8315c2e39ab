// Stored data follows a structure's secret fields. Run by StructureService inside the transaction of the update
// that changes them, so the definition and the data change together:
// - a field that becomes secret (`isSecret` set on a property that may already hold values): every plaintext value
//   is encrypted, in the records and in every version, and the values in the versions' and changelog's `changes`
//   are replaced by the mask;
// - a secret field renamed (same property id, top level or inside an object): values are encrypted again under
//   the new path, which is part of their associated data;
// - a field that stops being secret: values are decrypted back to plaintext (the masked `changes` stay masked).
// Values are encrypted exactly as the record engine encrypts them (RecordPrepare) (context `<structure id>:<dotted path>`).
import type { PropertyDefinition, Structure } from "@troupe/api/structures/Structure"
import { Effect } from "effect"
import type { SqlClient } from "effect/sql"
import { json } from "../lib/rows.ts"
import type { SecretsShape } from "../platform/Secrets.ts"
import { getAt, setAt } from "../lib/JsonPath.ts"
import { maskChangesAt } from "./SecretPaths.ts"

type Path = ReadonlyArray<string>

/** What happens to the value at `at` (where the data holds it after the update). */
interface SecretStep {
  readonly op: "seal" | "move" | "open"
  readonly at: Path
  /** the path the stored ciphertext was encrypted under (move, open) */
  readonly from?: Path | undefined
}

/** Every string property, by its chain of ids (names where a property has none): its path and whether it is secret. */
const stringFields = (properties: ReadonlyArray<PropertyDefinition>) => {
  const out = new Map<string, { readonly path: Path; readonly secret: boolean }>()
  const walk = (props: ReadonlyArray<PropertyDefinition>, ids: Path, path: Path) => {
    for (const p of props) {
      const key = [...ids, p.id ?? `name:${p.name}`]
      if (p.type === "string") out.set(key.join("/"), { path: [...path, p.name], secret: p.isSecret === true })
      else if (p.type === "object") walk(p.properties ?? [], key, [...path, p.name])
    }
  }
  walk(properties, [], [])
  return out
}

const samePath = (a: Path, b: Path) => a.length === b.length && a.every((x, i) => x === b[i])

/** What the change from `before` to `after` asks of the stored data (empty: nothing). */
export const secretSteps = (before: Structure, after: Structure): ReadonlyArray<SecretStep> => {
  const was = stringFields(before.properties)
  const now = stringFields(after.properties)
  const steps: Array<SecretStep> = []
  for (const [key, field] of now) {
    const old = was.get(key)
    if (field.secret && (old === undefined || !old.secret)) steps.push({ op: "seal", at: field.path })
    else if (field.secret && old !== undefined && !samePath(old.path, field.path)) {
      steps.push({ op: "move", at: field.path, from: old.path })
    } else if (!field.secret && old?.secret === true) steps.push({ op: "open", at: field.path, from: old.path })
  }
  return steps
}

const PAGE = 500

/** Applies `steps` to every record, version and changelog entry of `structureId`, in the caller's transaction. */
export const migrateSecrets = (sql: SqlClient.SqlClient, secrets: SecretsShape, structureId: string, steps: ReadonlyArray<SecretStep>) =>
  Effect.gen(function* () {
    if (steps.length === 0) return
    const context = (path: Path) => `${structureId}:${path.join(".")}`
    const sealed = steps.filter((s) => s.op === "seal").map((s) => s.at)

    /** The data with every step applied; undefined when nothing changed. */
    const transform = (data: Record<string, unknown>) =>
      Effect.gen(function* () {
        let out = data
        for (const step of steps) {
          const v = getAt(out, step.at)
          if (typeof v !== "string") continue
          if (step.op === "seal") {
            // already sealed under this path (a value written while the update waited): keep it
            if (secrets.isEncrypted(v) && (yield* Effect.option(secrets.decrypt(v, context(step.at))))._tag === "Some") {
              continue
            }
            out = setAt(out, step.at, secrets.encrypt(v, context(step.at)))
            continue
          }
          if (!secrets.isEncrypted(v)) continue
          // a value that cannot be decrypted (its key is gone) is left as it is
          const plain = yield* Effect.option(secrets.decrypt(v, context(step.from!)))
          if (plain._tag === "None") continue
          out = setAt(out, step.at, step.op === "move" ? secrets.encrypt(plain.value, context(step.at)) : plain.value)
        }
        return out === data ? undefined : out
      })

    // records
    let after = "00000000-0000-0000-0000-000000000000"
    while (true) {
      const rows = yield* sql`SELECT id::text AS id, data FROM records WHERE structure_id = ${structureId}
        AND id > ${after}::uuid ORDER BY id LIMIT ${PAGE}`
      const updates: Array<{ id: string; data: unknown }> = []
      for (const row of rows as ReadonlyArray<any>) {
        const next = yield* transform(json<Record<string, unknown>>(row.data))
        if (next !== undefined) updates.push({ id: row.id, data: next })
      }
      if (updates.length > 0) {
        yield* sql`UPDATE records r SET data = v.data
          FROM jsonb_to_recordset(${JSON.stringify(updates)}::jsonb) AS v(id uuid, data jsonb) WHERE r.id = v.id`
      }
      if (rows.length < PAGE) break
      after = (rows[rows.length - 1] as any).id
    }

    // versions: their data as the records', their changes masked
    let cursor: readonly [string, number] = ["00000000-0000-0000-0000-000000000000", 0]
    while (true) {
      const rows = yield* sql`SELECT v.record_id::text AS record_id, v.version, v.data, v.changes
        FROM record_versions v JOIN records r ON r.id = v.record_id
        WHERE r.structure_id = ${structureId} AND (v.record_id, v.version) > (${cursor[0]}::uuid, ${cursor[1]})
        ORDER BY v.record_id, v.version LIMIT ${PAGE}`
      const updates: Array<{ record_id: string; version: number; data: unknown; changes: unknown }> = []
      for (const row of rows as ReadonlyArray<any>) {
        const data = json<Record<string, unknown>>(row.data)
        const changes = json<unknown>(row.changes)
        const nextData = yield* transform(data)
        const nextChanges = maskChangesAt(changes, sealed)
        if (nextData !== undefined || nextChanges !== changes) {
          updates.push({ record_id: row.record_id, version: Number(row.version), data: nextData ?? data, changes: nextChanges })
        }
      }
      if (updates.length > 0) {
        yield* sql`UPDATE record_versions t SET data = v.data, changes = v.changes
          FROM jsonb_to_recordset(${JSON.stringify(updates)}::jsonb)
            AS v(record_id uuid, version int, data jsonb, changes jsonb)
          WHERE t.record_id = v.record_id AND t.version = v.version`
      }
      if (rows.length < PAGE) break
      const last = rows[rows.length - 1] as any
      cursor = [last.record_id, Number(last.version)]
    }

    // the changelog keeps no data, only changes: masked
    if (sealed.length === 0) return
    let entry = "00000000-0000-0000-0000-000000000000"
    while (true) {
      const rows = yield* sql`SELECT c.id::text AS id, c.changes FROM record_changelog c JOIN records r ON r.id = c.record_id
        WHERE r.structure_id = ${structureId} AND c.id > ${entry}::uuid ORDER BY c.id LIMIT ${PAGE}`
      const updates: Array<{ id: string; changes: unknown }> = []
      for (const row of rows as ReadonlyArray<any>) {
        const changes = json<unknown>(row.changes)
        const next = maskChangesAt(changes, sealed)
        if (next !== changes) updates.push({ id: row.id, changes: next })
      }
      if (updates.length > 0) {
        yield* sql`UPDATE record_changelog t SET changes = v.changes
          FROM jsonb_to_recordset(${JSON.stringify(updates)}::jsonb) AS v(id uuid, changes jsonb) WHERE t.id = v.id`
      }
      if (rows.length < PAGE) break
      entry = (rows[rows.length - 1] as any).id
    }
  })
