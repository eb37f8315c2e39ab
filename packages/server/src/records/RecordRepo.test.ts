// The guard of RecordRepo.updateRecordsWithHistory against a real database (PGlite, or PostgreSQL when DATABASE_URL
// is set): the group commit plans updates on rows read without a lock (write/Update.ts), so the statement must write an
// update only while the record is the very row that was read, and nothing of it otherwise.
import type { Structure } from "@troupe/api/structures/Structure"
import { expect, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { TEST_WORKSPACE } from "../../../../test/support/TestDatabase.ts"
import { owner, RecordServices, writer } from "../../../../test/support/TestRecords.ts"
import type { RecordRow } from "../query/RecordRow.ts"
import { StructureService } from "../structures/StructureService.ts"
import { RecordRepo } from "./RecordRepo.ts"
import { changelogRow, eventOf } from "./RecordRows.ts"
import { RecordService } from "./RecordService.ts"
import { RecordEngine } from "./write/Engine.ts"

const Services = RecordRepo.layer.pipe(Layer.provideMerge(RecordServices()))

const counts = (sql: SqlClient.SqlClient, id: string) =>
  Effect.map(
    sql`SELECT (SELECT count(*) FROM record_versions WHERE record_id = ${id}) AS versions,
        (SELECT count(*) FROM record_changelog WHERE record_id = ${id}) AS changelog,
        (SELECT count(*) FROM events WHERE record_id = ${id}) AS events`,
    (rows: ReadonlyArray<any>) => ({
      versions: Number(rows[0].versions),
      changelog: Number(rows[0].changelog),
      events: Number(rows[0].events)
    })
  ).pipe(Effect.orDie)

layer(Services)("RecordRepo.updateRecordsWithHistory", (it) => {
  it.effect("writes an update only while its record is the row that was read; otherwise nothing of it", () =>
    Effect.gen(function* () {
      const records = yield* RecordService
      const engine = yield* RecordEngine
      const repo = yield* RecordRepo
      const sql = yield* SqlClient.SqlClient
      const structure: Structure = yield* Effect.orDie(
        (yield* StructureService).create(
          TEST_WORKSPACE,
          { name: "Guarded", recordSlug: "guarded", properties: [{ name: "n", type: "number" }] },
          owner
        )
      )
      const { row } = yield* engine.create({ structure, input: { data: { n: 1 } }, writer })
      const update = (read: RecordRow, xmin: string, n: number) => {
        const next = { id: read.id, workspace: read.workspace, data: { n }, version: read.version + 1 }
        const changes = { n: { old: read.data.n, new: n } }
        return repo.updateRecordsWithHistory([
          {
            update: { id: read.id, data: { n }, metadata: {}, version: next.version, updatedBy: writer.userId, expiresAt: null },
            before: read,
            workspace: read.workspace,
            structureId: structure.id,
            prevVersion: read.version,
            prevXmin: xmin,
            changes,
            log: changelogRow(next, "update", changes, writer),
            event: eventOf("record.updated", structure, next, read.data, changes, writer, new Date().toISOString())
          }
        ])
      }
      const first = (yield* repo.findMany([row.id])).get(row.id)!
      // someone writes the record keeping its version (createVersion: false): only the row version (xmin) tells
      yield* engine.update({ workspace: TEST_WORKSPACE, id: row.id, input: { data: { n: 2 }, createVersion: false }, writer })
      const before = yield* counts(sql, row.id)
      expect((yield* update(first.row, first.xmin, 3)).has(row.id)).toBe(false)
      expect(yield* counts(sql, row.id)).toStrictEqual(before)
      expect((yield* records.get(TEST_WORKSPACE, row.id)).row.data.n).toBe(2)

      const current = (yield* repo.findMany([row.id])).get(row.id)!
      const written = (yield* update(current.row, current.xmin, 3)).get(row.id)
      expect(written?.row.version).toBe(2)
      expect(written?.row.data.n).toBe(3)
      // the row written, with its new xmin, is the one a fresh read finds
      const reread = (yield* repo.findMany([row.id])).get(row.id)!
      expect(written?.xmin).toBe(reread.xmin)
      expect(written?.row).toStrictEqual(reread.row)
      expect(written?.xmin).not.toBe(current.xmin)
      expect(yield* counts(sql, row.id)).toStrictEqual({
        versions: before.versions + 1,
        changelog: before.changelog + 1,
        events: before.events + 1
      })
      // the same read again: the version moved on, so the guard refuses it too
      expect((yield* update(current.row, current.xmin, 4)).has(row.id)).toBe(false)
      // a deleted record is no longer live: skipped as well
      yield* engine.remove({ workspace: TEST_WORKSPACE, id: row.id, permanent: false, writer })
      const deleted = (yield* repo.findMany([row.id])).get(row.id)!
      expect((yield* update(deleted.row, deleted.xmin, 5)).has(row.id)).toBe(false)
      expect((yield* counts(sql, row.id)).versions).toBe(before.versions + 1)
    })
  )
})

layer(Services)("RecordRepo.createRecords and a structure deleted for good", (it) => {
  const countOf = (sql: SqlClient.SqlClient, query: string, id: string) =>
    Effect.map(sql.unsafe(query, [id]), (rows: ReadonlyArray<any>) => Number(rows[0].n)).pipe(Effect.orDie)

  it.effect("the delete takes the records, their history and their unique values; a create naming it then fails whole, with 404", () =>
    Effect.gen(function* () {
      const engine = yield* RecordEngine
      const repo = yield* RecordRepo
      const structures = yield* StructureService
      const sql = yield* SqlClient.SqlClient
      const make = (slug: string) =>
        Effect.orDie(
          structures.create(
            TEST_WORKSPACE,
            { name: slug, recordSlug: slug, properties: [{ name: "u", type: "string", isUnique: true }] },
            owner
          )
        )
      const doomed = yield* make("doomed-keys")
      const kept = yield* make("kept-keys")
      const a = yield* engine.create({ structure: doomed, input: { data: { u: "a" } }, writer })
      yield* engine.create({ structure: doomed, input: { data: { u: "b" } }, writer })
      const other = yield* engine.create({ structure: kept, input: { data: { u: "a" } }, writer })
      yield* Effect.orDie(structures.remove(TEST_WORKSPACE, doomed.id, true, owner))

      expect(yield* countOf(sql, "SELECT count(*) AS n FROM records WHERE structure_id = $1", doomed.id)).toBe(0)
      expect(yield* countOf(sql, "SELECT count(*) AS n FROM record_unique_values WHERE structure_id = $1", doomed.id)).toBe(0)
      expect(yield* counts(sql, a.row.id)).toStrictEqual({ versions: 0, changelog: 0, events: 1 })
      expect(yield* countOf(sql, "SELECT count(*) AS n FROM record_unique_values WHERE structure_id = $1", kept.id)).toBe(1)
      expect((yield* repo.findMany([other.row.id])).get(other.row.id)?.row.data).toStrictEqual({ u: "a" })

      // one statement for both structures: the deleted one fails it, so the other's record is not written either
      const item = (structure: Structure, u: string) => {
        const id = crypto.randomUUID()
        const data = { u }
        const changes = { u: { old: null, new: u } }
        const row = { id, workspace: TEST_WORKSPACE, data, version: 1 }
        return {
          record: {
            id,
            workspace: TEST_WORKSPACE,
            structure_id: structure.id,
            data,
            metadata: {},
            created_by: writer.userId,
            expires_at: null
          },
          changes,
          log: changelogRow(row, "create", changes, writer),
          event: eventOf("record.created", structure, row, null, changes, writer, new Date().toISOString())
        }
      }
      const failed = yield* Effect.flip(repo.atomic(repo.createRecords([item(kept, "x"), item(doomed, "y")], [])))
      expect(failed).toMatchObject({ statusCode: 404, code: "STRUCTURE_NOT_FOUND" })
      expect(yield* countOf(sql, "SELECT count(*) AS n FROM records WHERE structure_id = $1", kept.id)).toBe(1)
      // and through the service, with the structure as it was read before the delete
      expect(yield* Effect.flip(engine.create({ structure: doomed, input: { data: { u: "c" } }, writer }))).toMatchObject({
        code: "STRUCTURE_NOT_FOUND"
      })
    })
  )
})
