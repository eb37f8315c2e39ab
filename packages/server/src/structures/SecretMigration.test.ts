// What a change of `isSecret` does to the stored rows (PGlite, or PostgreSQL when DATABASE_URL is set): the values
// are encrypted at rest in records and versions and masked in the stored changes, in the structure update's
// transaction; renames re-encrypt, unsetting decrypts.
import type { PropertyDefinition, Structure } from "@troupe/api/structures/Structure"
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { TEST_WORKSPACE } from "../../../../test/support/TestDatabase.ts"
import { json } from "../lib/rows.ts"
import { Secrets } from "../platform/Secrets.ts"
import { RecordService } from "../records/RecordService.ts"
import { RecordEngine } from "../records/write/Engine.ts"
import { secretSteps } from "./SecretMigration.ts"
import { StructureService } from "./StructureService.ts"
import { owner, RecordServices, writer } from "../../../../test/support/TestRecords.ts"

const Services = RecordServices()

/** Every stored text of one record: its row, versions and changelog entries. */
const storedText = (sql: SqlClient.SqlClient, id: string) =>
  Effect.gen(function* () {
    const rows = yield* sql`SELECT data::text AS t FROM records WHERE id = ${id}
      UNION ALL SELECT data::text || changes::text FROM record_versions WHERE record_id = ${id}
      UNION ALL SELECT changes::text FROM record_changelog WHERE record_id = ${id}`
    return rows.map((r: any) => r.t as string).join("\n")
  }).pipe(Effect.orDie)

const stringProp = (name: string, extra: Partial<PropertyDefinition> = {}) => ({ name, type: "string", ...extra }) as PropertyDefinition

layer(Services)("secret fields follow the definition", (it) => {
  it("secretSteps: seal on set, move on rename, open on unset, nothing otherwise", () => {
    const base = { id: "s" } as unknown as Structure
    const before = {
      ...base,
      properties: [stringProp("a", { id: "1" }), stringProp("b", { id: "2", isSecret: true }), stringProp("c", { id: "3", isSecret: true })]
    } as Structure
    const after = {
      ...base,
      properties: [
        stringProp("a", { id: "1", isSecret: true }),
        stringProp("b2", { id: "2", isSecret: true }),
        stringProp("c", { id: "3" })
      ]
    } as Structure
    expect(secretSteps(before, after)).toStrictEqual([
      { op: "seal", at: ["a"] },
      { op: "move", at: ["b2"], from: ["b"] },
      { op: "open", at: ["c"], from: ["c"] }
    ])
    expect(secretSteps(before, before)).toStrictEqual([])
  })

  it.effect("setting isSecret encrypts the stored values in records and versions and masks stored changes", () =>
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const structures = yield* StructureService
      const records = yield* RecordService
      const engine = yield* RecordEngine
      const secrets = yield* Secrets
      const s = yield* structures
        .create(
          TEST_WORKSPACE,
          {
            name: "Accounts",
            recordSlug: "accounts",
            properties: [
              stringProp("label"),
              stringProp("pin"),
              {
                name: "creds",
                type: "object",
                properties: [stringProp("key")]
              } as PropertyDefinition
            ]
          },
          owner
        )
        .pipe(Effect.orDie)
      const created = yield* engine
        .create({ structure: s, input: { data: { label: "x", pin: "pin-1111", creds: { key: "key-2222" } } }, writer })
        .pipe(Effect.orDie)
      const id = created.row.id
      yield* engine
        .update({ workspace: TEST_WORKSPACE, id, input: { data: { pin: "pin-3333", creds: { key: "key-4444" } } }, writer })
        .pipe(Effect.orDie)
      expect(yield* storedText(sql, id)).toContain("pin-1111")

      const pin = s.properties.find((p) => p.name === "pin")!
      const creds = s.properties.find((p) => p.name === "creds")! as Extract<PropertyDefinition, { type: "object" }>
      const updated = yield* structures
        .update(
          TEST_WORKSPACE,
          s.id,
          {
            properties: [
              { ...pin, isSecret: true },
              { ...creds, properties: (creds.properties ?? []).map((p) => ({ ...p, isSecret: true })) }
            ]
          } as any,
          owner
        )
        .pipe(Effect.orDie)

      const text = yield* storedText(sql, id)
      for (const plain of ["pin-1111", "pin-3333", "key-2222", "key-4444"]) expect(text).not.toContain(plain)
      const row = (yield* sql`SELECT data FROM records WHERE id = ${id}`.pipe(Effect.orDie))[0] as any
      const data = json<any>(row.data)
      expect(data.pin).toMatch(/^enc:v1:/)
      expect(data.label).toBe("x")
      // encrypted as RecordService encrypts: it decrypts (reveal) to the stored plaintext
      const shown = yield* records.reveal(updated, data)
      expect(shown.pin).toBe("pin-3333")
      expect((shown.creds as any).key).toBe("key-4444")
      const v1 = (yield* sql`SELECT data FROM record_versions WHERE record_id = ${id} AND version = 1`.pipe(Effect.orDie))[0] as any
      expect(yield* secrets.decrypt(json<any>(v1.data).pin, `${s.id}:pin`).pipe(Effect.orDie)).toBe("pin-1111")

      // a second update that changes nothing secret leaves the ciphertexts alone
      yield* structures.update(TEST_WORKSPACE, s.id, { description: "d" } as any, owner).pipe(Effect.orDie)
      const again = json<any>(((yield* sql`SELECT data FROM records WHERE id = ${id}`.pipe(Effect.orDie))[0] as any).data)
      expect(again.pin).toBe(data.pin)

      // rename: re-encrypted under the new path; unset: decrypted back
      yield* structures
        .update(TEST_WORKSPACE, s.id, { properties: [{ ...pin, name: "code", isSecret: true }] } as any, owner)
        .pipe(Effect.orDie)
      const renamed = json<any>(((yield* sql`SELECT data FROM records WHERE id = ${id}`.pipe(Effect.orDie))[0] as any).data)
      expect(yield* secrets.decrypt(renamed.code, `${s.id}:code`).pipe(Effect.orDie)).toBe("pin-3333")
      yield* structures
        .update(TEST_WORKSPACE, s.id, { properties: [{ ...pin, name: "code", isSecret: false }] } as any, owner)
        .pipe(Effect.orDie)
      const opened = json<any>(((yield* sql`SELECT data FROM records WHERE id = ${id}`.pipe(Effect.orDie))[0] as any).data)
      expect(opened.code).toBe("pin-3333")
      const openedV1 = (yield* sql`SELECT data FROM record_versions WHERE record_id = ${id} AND version = 1`.pipe(Effect.orDie))[0] as any
      expect(json<any>(openedV1.data).code).toBe(undefined) // versions keep the shape they were written with
      expect(json<any>(openedV1.data).pin).toMatch(/^enc:v1:/)
    })
  )
})
