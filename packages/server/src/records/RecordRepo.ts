// The SQL of the record engine: record rows, their versions, changelog entries, unique claims, auto-increment
// counters, idempotency keys, and the outbox events written in the same transactions. Rows are decoded with Schema
// (model.ts). Batches cost the statements of one write whatever their size (jsonb_to_recordset); a batch of creates
// or of updates is a single statement that writes every table (createRecords, updateRecordsWithHistory, built in
// RecordBatchSql.ts), atomic without a transaction. Statements fail with SqlError; `atomic` and `transaction` map those of a write, and those
// of a plain read are turned into defects.
import { conflict, notFound } from "@troupe/api/Errors"
import { Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { isSqlError, type SqlError } from "effect/sql/SqlError"
import { appendEvent, appendEvents, type OutboxEvent } from "../events/Outbox.ts"
import { iso } from "../lib/rows.ts"
import * as IdempotencyKeys from "../platform/IdempotencyKeys.ts"
import { isCollision, isStructureGone } from "../platform/sqlErrors.ts"
import { liveRecord } from "../query/Live.ts"
import { FileLookup } from "../query/FileLookup.ts"
import { decodeRecordRow, type RecordRow } from "../query/RecordRow.ts"
import { decodeChangelogRow, decodeVersionRow, type StoredChangelogEntry, type StoredVersion } from "./model.ts"
import { makeBatchStatements, type Claim, type Versioned, withXmin } from "./RecordBatchSql.ts"
import type { ChangelogRow, VersionRow } from "./RecordRows.ts"

export type { Claim, Versioned, WithHistory } from "./RecordBatchSql.ts"

/** The new state of a record an update writes. */
export interface RecordUpdate {
  readonly id: string
  readonly data: Record<string, unknown>
  readonly metadata: Record<string, unknown>
  readonly version: number
  readonly updatedBy: string
  readonly expiresAt: string | null
}

type Sql<A> = Effect.Effect<A, SqlError>

const make = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  const files = yield* FileLookup

  /**
   * A write that is atomic by itself (one statement, or a transaction): unique violations no check foresaw are 409s,
   * collisions with a concurrent write too. A structure deleted for good while the write was on its way
   * (isStructureGone) is a 404, as if the write had come a moment later. Other SQL failures are defects (the write may have committed: no caller may retry it blindly).
   */
  const atomic = <A, E, R>(
    effect: Effect.Effect<A, E, R>
  ): Effect.Effect<A, Exclude<E, SqlError> | ReturnType<typeof conflict> | ReturnType<typeof notFound>, R> =>
    effect.pipe(
      Effect.catch((e: any) =>
        isSqlError(e)
          ? e.reason._tag === "UniqueViolation"
            ? Effect.fail(conflict({ message: "A unique constraint was violated", code: "DUPLICATE_KEY" }))
            : isCollision(e) || e.reason._tag === "LockTimeoutError"
              ? Effect.fail(conflict({ message: "The write collided with a concurrent write; retry it", code: "CONFLICT" }))
              : isStructureGone(e)
                ? Effect.fail(notFound({ message: "Structure not found: it was deleted", code: "STRUCTURE_NOT_FOUND" }))
                : Effect.die(e)
          : Effect.fail(e)
      )
    ) as any

  const transaction = <A, E, R>(effect: Effect.Effect<A, E, R>) => atomic(sql.withTransaction(effect))

  const first = (rows: ReadonlyArray<unknown>) => (rows[0] === undefined ? undefined : decodeRecordRow(rows[0]))
  const byId = (rows: ReadonlyArray<any>) => new Map(rows.map((r) => [String(r.id), decodeRecordRow(r)]))

  // ---------------------------------------------------------------- record rows

  const find = (workspace: string, id: string): Sql<RecordRow | undefined> =>
    Effect.map(sql`SELECT * FROM records WHERE id = ${id} AND workspace = ${workspace}`, first)

  const lock = (workspace: string, id: string): Sql<RecordRow | undefined> =>
    Effect.map(sql`SELECT * FROM records WHERE id = ${id} AND workspace = ${workspace} FOR UPDATE`, first)

  /** Rows of any workspace by id, locked in id order (so two batches cannot deadlock). */
  const lockMany = (ids: ReadonlyArray<string>): Sql<Map<string, RecordRow>> =>
    Effect.map(sql`SELECT * FROM records WHERE id IN ${sql.in([...ids].sort())} ORDER BY id FOR UPDATE`, byId)

  /** Locks the rows of a workspace in id order, reading nothing. */
  const lockIds = (workspace: string, ids: ReadonlyArray<string>): Sql<void> =>
    ids.length === 0
      ? Effect.void
      : Effect.asVoid(
          sql`SELECT id FROM records WHERE workspace = ${workspace} AND id IN ${sql.in([...ids].sort())} ORDER BY id FOR UPDATE`
        )

  const { createRecords, updateRecordsWithHistory } = makeBatchStatements(sql)

  /** Rows of any workspace by id, unlocked, each with its xmin (the guard of updateRecordsWithHistory). */
  const findMany = (ids: ReadonlyArray<string>): Sql<Map<string, Versioned>> =>
    Effect.map(sql`SELECT *, xmin::text AS row_xmin FROM records WHERE id IN ${sql.in(ids)}`, withXmin)

  /** Rows of any workspace by id, for reads: each with the version it was restored from when its current version is a restore. */
  const findShown = (ids: ReadonlyArray<string>): Sql<Map<string, { row: RecordRow; restoredFrom: number | null }>> =>
    Effect.map(
      sql`SELECT r.*, v.restored_from AS current_restored_from FROM records r
        LEFT JOIN record_versions v ON v.record_id = r.id AND v.version = r.version AND v.restored_from IS NOT NULL
        WHERE r.id IN ${sql.in(ids)}`,
      (rows: ReadonlyArray<any>) =>
        new Map(
          rows.map((r) => [
            String(r.id),
            { row: decodeRecordRow(r), restoredFrom: r.current_restored_from == null ? null : Number(r.current_restored_from) }
          ])
        )
    )

  const updateRecord = (u: RecordUpdate): Sql<RecordRow> =>
    Effect.map(
      sql`UPDATE records SET data = ${JSON.stringify(u.data)}::jsonb, metadata = ${JSON.stringify(u.metadata)}::jsonb,
          version = ${u.version}, updated_by = ${u.updatedBy}, updated_at = now(), expires_at = ${u.expiresAt}
        WHERE id = ${u.id} RETURNING *`,
      (rows) => decodeRecordRow(rows[0])
    )

  /** The last of several updates of one record planned in memory (metadata untouched), read back by no one. */
  const writeRecordState = (row: RecordRow): Sql<void> =>
    Effect.asVoid(sql`UPDATE records SET data = ${JSON.stringify(row.data)}::jsonb, version = ${row.version},
        updated_by = ${row.updatedBy}, updated_at = now(), expires_at = ${row.expiresAt}
      WHERE id = ${row.id}`)

  /** Restore or revert: the data back, the next version, the record undeleted. */
  const rewindRecord = (id: string, data: Record<string, unknown>, updatedBy: string): Sql<RecordRow> =>
    Effect.map(
      sql`UPDATE records SET data = ${JSON.stringify(data)}::jsonb, version = version + 1,
          updated_by = ${updatedBy}, updated_at = now(), deleted_at = NULL
        WHERE id = ${id} RETURNING *`,
      (rows) => decodeRecordRow(rows[0])
    )

  const deleteRecords = (ids: ReadonlyArray<string>): Sql<void> =>
    ids.length === 0 ? Effect.void : Effect.asVoid(sql`DELETE FROM records WHERE id IN ${sql.in(ids)}`)

  /** Soft deletes at `deletedAt`, each by its writer, and the unique values the records held given up. */
  const softDeleteRecords = (items: ReadonlyArray<{ readonly id: string; readonly updatedBy: string }>, deletedAt: string): Sql<void> =>
    items.length === 0
      ? Effect.void
      : Effect.gen(function* () {
          if (items.length === 1) {
            yield* sql`UPDATE records SET deleted_at = ${deletedAt}, updated_by = ${items[0]!.updatedBy}, updated_at = now() WHERE id = ${items[0]!.id}`
            yield* sql`DELETE FROM record_unique_values WHERE record_id = ${items[0]!.id}`
            return
          }
          yield* sql`UPDATE records r SET deleted_at = ${deletedAt}, updated_by = v.updated_by, updated_at = now()
        FROM jsonb_to_recordset(${JSON.stringify(items.map((i) => ({ id: i.id, updated_by: i.updatedBy })))}::jsonb)
          AS v(id uuid, updated_by text)
        WHERE r.id = v.id`
          yield* sql`DELETE FROM record_unique_values WHERE record_id IN ${sql.in(items.map((i) => i.id))}`
        })

  /** Live records of a structure holding `single` or `many` (jsonb containment), other than `except`, locked. */
  const lockReferencing = (structureId: string, except: string, single: string, many: string): Sql<Array<RecordRow>> =>
    Effect.map(
      sql`SELECT * FROM records WHERE structure_id = ${structureId} AND ${liveRecord(sql)} AND id <> ${except}
        AND (data @> ${single}::jsonb OR data @> ${many}::jsonb) ORDER BY id FOR UPDATE`,
      (rows) => rows.map(decodeRecordRow)
    )

  /** Which of `wanted` name live records of a structure, by id or by a data field. */
  const existingKeys = (structureId: string, field: string, wanted: ReadonlyArray<string>): Sql<Set<string>> =>
    Effect.map(
      field === "id"
        ? sql`SELECT id AS v FROM records WHERE structure_id = ${structureId} AND ${liveRecord(sql)} AND id IN ${sql.in(wanted)}`
        : sql`SELECT data->>${field} AS v FROM records WHERE structure_id = ${structureId} AND ${liveRecord(sql)}
            AND data->>${field} IN ${sql.in(wanted)}`,
      (rows) => new Set(rows.map((r: any) => String(r.v)))
    )

  /** Which of `ids` name files of the workspace (lowercase), key-share locked until the transaction ends. */
  const existingFiles = (workspace: string, ids: ReadonlyArray<string>): Sql<Set<string>> =>
    Effect.map(files.byIds(workspace, ids, true), (found) => new Set(found.keys()))

  /**
   * The live record a match finds, locked, with the transaction's now(). A match on a unique property goes through
   * its claim (one index lookup, whatever the table's statistics say); any other match through the containment index.
   */
  const lockMatch = (
    structureId: string,
    claim: readonly [string, string] | undefined,
    contains: string
  ): Sql<{ row: RecordRow; now: string } | undefined> =>
    Effect.map(
      claim !== undefined
        ? sql`SELECT r.*, now() AS tx_now FROM record_unique_values u JOIN records r ON r.id = u.record_id
            WHERE u.structure_id = ${structureId} AND u.field = ${claim[0]} AND u.value = ${claim[1]}
              AND ${liveRecord(sql, "r")} AND r.data @> ${contains}::jsonb
            FOR UPDATE OF r`
        : sql`SELECT *, now() AS tx_now FROM records WHERE structure_id = ${structureId} AND ${liveRecord(sql)}
            AND data @> ${contains}::jsonb
          ORDER BY created_at, id LIMIT 1 FOR UPDATE`,
      (found) => (found[0] ? { row: decodeRecordRow(found[0]), now: iso(found[0].tx_now) } : undefined)
    )

  /**
   * The live records that matches on a unique property find, in one statement: each match by its claim and data
   * containment; the rows by the match's index. `lock`: locked, in id order (inside a transaction).
   */
  const findMatches = (
    matches: ReadonlyArray<{ readonly structureId: string; readonly claim: readonly [string, string]; readonly contains: unknown }>,
    lock: boolean
  ): Sql<Map<number, RecordRow>> =>
    Effect.map(
      sql`SELECT r.*, v.k AS match_index
        FROM jsonb_to_recordset(${JSON.stringify(
          matches.map((m, k) => ({ k, structure_id: m.structureId, field: m.claim[0], value: m.claim[1], contains: m.contains }))
        )}::jsonb) AS v(k int, structure_id uuid, field text, value text, contains jsonb)
        JOIN record_unique_values u ON u.structure_id = v.structure_id AND u.field = v.field AND u.value = v.value
        JOIN records r ON r.id = u.record_id
        WHERE ${liveRecord(sql, "r")} AND r.data @> v.contains
        ORDER BY r.id ${lock ? sql`FOR UPDATE OF r` : sql``}`,
      (rows) => new Map(rows.map((r: any) => [Number(r.match_index), decodeRecordRow(r)]))
    )

  // ---------------------------------------------------------------- versions and changelog

  /** Version rows in one statement. */
  const insertVersions = (rows: ReadonlyArray<VersionRow>): Sql<void> =>
    Effect.asVoid(
      rows.length === 1
        ? sql`INSERT INTO record_versions (record_id, version, data, changes, restored_from, created_by)
        VALUES (${rows[0]!.record_id}, ${rows[0]!.version}, ${JSON.stringify(rows[0]!.data)}::jsonb,
          ${JSON.stringify(rows[0]!.changes)}::jsonb, ${rows[0]!.restored_from}, ${rows[0]!.created_by})`
        : sql`INSERT INTO record_versions (record_id, version, data, changes, restored_from, created_by)
        SELECT record_id, version, data, changes, restored_from, created_by
        FROM jsonb_to_recordset(${JSON.stringify(rows)}::jsonb) AS v(record_id uuid, version int, data jsonb,
          changes jsonb, restored_from int, created_by text)`
    )

  /** An update that keeps its version rewrites that version's data. */
  /**
   * An update that keeps its version (`createVersion: false`) rewrites that version: its data, who wrote it and when,
   * and its changes, each field's `old` still the value before the version and `new` the value now.
   */
  const rewriteVersion = (
    recordId: string,
    version: number,
    data: Record<string, unknown>,
    changes: Record<string, unknown>,
    by: string
  ): Sql<void> =>
    Effect.asVoid(
      sql`UPDATE record_versions SET data = ${JSON.stringify(data)}::jsonb, created_by = ${by}, created_at = now(),
        changes = coalesce(changes, '{}'::jsonb) || (SELECT coalesce(jsonb_object_agg(e.key, jsonb_build_object(
            'old', coalesce(record_versions.changes -> e.key -> 'old', e.value -> 'old'), 'new', e.value -> 'new')), '{}'::jsonb)
          FROM jsonb_each(${JSON.stringify(changes)}::jsonb) AS e)
      WHERE record_id = ${recordId} AND version = ${version}`
    )

  const findVersion = (recordId: string, version: number): Sql<StoredVersion | undefined> =>
    Effect.map(sql`SELECT * FROM record_versions WHERE record_id = ${recordId} AND version = ${version}`, (rows) =>
      rows[0] === undefined ? undefined : decodeVersionRow(rows[0])
    )

  /** The newest version before `version`. */
  const previousVersion = (recordId: string, version: number): Sql<StoredVersion | undefined> =>
    Effect.map(
      sql`SELECT * FROM record_versions WHERE record_id = ${recordId} AND version < ${version} ORDER BY version DESC LIMIT 1`,
      (rows) => (rows[0] === undefined ? undefined : decodeVersionRow(rows[0]))
    )

  const versions = (recordId: string): Sql<Array<StoredVersion>> =>
    Effect.map(sql`SELECT * FROM record_versions WHERE record_id = ${recordId} ORDER BY version DESC`, (rows) =>
      rows.map((r) => decodeVersionRow(r))
    )

  /** Changelog rows in one statement. */
  const insertChangelog = (rows: ReadonlyArray<ChangelogRow>): Sql<void> =>
    Effect.asVoid(
      rows.length === 1
        ? sql`INSERT INTO record_changelog (id, record_id, workspace, action, user_id, user_name, changes, metadata)
        VALUES (${rows[0]!.id}, ${rows[0]!.record_id}, ${rows[0]!.workspace}, ${rows[0]!.action}, ${rows[0]!.user_id},
          ${rows[0]!.user_name}, ${JSON.stringify(rows[0]!.changes)}::jsonb, ${JSON.stringify(rows[0]!.metadata)}::jsonb)`
        : // a transaction's entries share now(): a microsecond apart (after any single entry of the same transaction),
          // they keep their order in the changelog
          sql`INSERT INTO record_changelog (id, record_id, workspace, action, user_id, user_name, changes, metadata, created_at)
        SELECT id, record_id, workspace, action, user_id, user_name, changes, metadata, now() + i * interval '1 microsecond'
        FROM jsonb_to_recordset(${JSON.stringify(rows.map((r, i) => ({ ...r, i: i + 1 })))}::jsonb) AS v(i int, id uuid,
          record_id uuid, workspace text, action text, user_id text, user_name text, changes jsonb, metadata jsonb)`
    )

  /** Changelog entries of a record, newest first; `from`/`to` are ISO timestamps. */
  const changelog = (
    recordId: string,
    options: { readonly limit: number; readonly from?: string | undefined; readonly to?: string | undefined }
  ): Sql<Array<StoredChangelogEntry>> => {
    const conditions = [sql`record_id = ${recordId}`]
    if (options.from !== undefined) conditions.push(sql`created_at >= ${options.from}`)
    if (options.to !== undefined) conditions.push(sql`created_at <= ${options.to}`)
    return Effect.map(
      sql`SELECT * FROM record_changelog WHERE ${sql.and(conditions)} ORDER BY created_at DESC, id LIMIT ${options.limit}`,
      (rows) => rows.map((r) => decodeChangelogRow(r))
    )
  }

  // ---------------------------------------------------------------- unique claims and counters

  const releaseClaim = (structureId: string, field: string, recordId: string): Sql<void> =>
    Effect.asVoid(
      sql`DELETE FROM record_unique_values WHERE structure_id = ${structureId} AND field = ${field} AND record_id = ${recordId}`
    )

  /** Takes a unique value; false when someone holds it. */
  const claim = (c: Claim): Sql<boolean> =>
    Effect.map(
      sql`INSERT INTO record_unique_values (structure_id, field, value, record_id)
      VALUES (${c.structure_id}, ${c.field}, ${c.value}, ${c.record_id}) ON CONFLICT DO NOTHING RETURNING record_id`,
      (rows) => rows.length > 0
    )

  /** Frees a unique value held by a record that is no longer live; true when one was freed. */
  const freeStaleClaim = (structureId: string, field: string, value: string): Sql<boolean> =>
    Effect.map(
      sql`DELETE FROM record_unique_values u USING records r
      WHERE u.structure_id = ${structureId} AND u.field = ${field} AND u.value = ${value} AND r.id = u.record_id
        AND NOT (${liveRecord(sql, "r")}) RETURNING u.record_id`,
      (rows) => rows.length > 0
    )

  /** The next value of an auto-increment field (the counter starts at `startAt`). */
  const nextCounter = (structureId: string, field: string, startAt: number, incrementBy: number): Sql<number> =>
    Effect.map(
      sql`INSERT INTO auto_increments (structure_id, field, next_value)
      VALUES (${structureId}, ${field}, ${startAt + incrementBy})
      ON CONFLICT (structure_id, field) DO UPDATE SET next_value = auto_increments.next_value + ${incrementBy}
      RETURNING next_value - ${incrementBy} AS value`,
      (rows) => Number(rows[0]!.value)
    )

  // ---------------------------------------------------------------- idempotency keys (platform/IdempotencyKeys.ts)

  const claimIdempotencyKey = (workspace: string, key: string, requestHash: string): Sql<boolean> =>
    IdempotencyKeys.claimIdempotencyKey(sql, workspace, key, requestHash)
  const storedOutcome = (workspace: string, key: string) => IdempotencyKeys.storedOutcome(sql, workspace, key)
  const storeOutcome = (workspace: string, key: string, status: number, body: unknown): Sql<void> =>
    IdempotencyKeys.storeOutcome(sql, workspace, key, status, body)

  return {
    /** The client's own: `driver` and `withTransaction` for callers that need them. */
    sql,
    atomic,
    transaction,
    find,
    lock,
    lockMany,
    findMany,
    findShown,
    lockIds,
    createRecords,
    updateRecordsWithHistory,
    updateRecord,
    writeRecordState,
    rewindRecord,
    deleteRecords,
    softDeleteRecords,
    lockReferencing,
    existingKeys,
    existingFiles,
    lockMatch,
    findMatches,
    insertVersions,
    rewriteVersion,
    findVersion,
    previousVersion,
    versions,
    insertChangelog,
    changelog,
    releaseClaim,
    claim,
    freeStaleClaim,
    nextCounter,
    claimIdempotencyKey,
    storedOutcome,
    storeOutcome,
    appendEvent: (event: OutboxEvent): Sql<void> => appendEvent(sql, event),
    appendEvents: (events: ReadonlyArray<OutboxEvent>): Sql<void> => (events.length === 0 ? Effect.void : appendEvents(sql, events))
  }
})

export class RecordRepo extends Context.Service<RecordRepo, Effect.Success<typeof make>>()("@troupe/server/records/RecordRepo") {
  static readonly layer = Layer.effect(RecordRepo, make)
}
