// The two statements of a batch of record writes (write/: the group commit, bulk): creates, and guarded updates, each ONE
// statement that writes the record rows and every history row beside them (versions, changelog, outbox events, and
// for creates the unique claims), atomic without a transaction. A write's data and changes travel once in the
// statement's JSON; the changelog stores the very `changes` of the version, and the event's copy is built in SQL
// (historyOf).
import type { SqlClient } from "effect/sql"
import { Effect } from "effect"
import { EVENTS_CHANNEL, type EventPayload, type OutboxEvent } from "../events/Outbox.ts"
import { notifyAfterCommit } from "../events/Wake.ts"
import { liveRecord } from "../query/Live.ts"
import { decodeRecordRow, type RecordRow } from "../query/RecordRow.ts"
import { iso } from "../lib/rows.ts"
import type { RecordUpdate } from "./RecordRepo.ts"
import type { ChangelogRow, NewRecord } from "./RecordRows.ts"

/** A record write with the history rows it adds: its version, its changelog entry and its outbox event. */
export interface WithHistory {
  readonly changes: Record<string, unknown>
  readonly log: ChangelogRow
  readonly event: OutboxEvent
}

/**
 * The columns every history row takes from the JSON of a record write (`v` in createRecords, updateRecordsWithHistory).
 * The record's data and its changes go once: the changelog stores `changes` as the version does (historyOf),
 * and an event payload that carries this very data and these very changes (no secret masked, see eventOf) goes
 * without them, put back in SQL. A third of the JSON of a create, parsed on both sides of the wire.
 */
const historyColumns = (w: WithHistory, data: Record<string, unknown>) => {
  const payload = (w.event.payload ?? {}) as EventPayload
  const body = (payload.data ?? {}) as { readonly record?: { readonly data?: unknown }; readonly changes?: unknown }
  const slim = body.changes === w.changes && body.record?.data === data
  return {
    changes: w.changes,
    log_id: w.log.id,
    log_action: w.log.action,
    log_user_name: w.log.user_name,
    log_metadata: w.log.metadata,
    ev_type: w.event.type,
    ev_slug: w.event.recordSlug ?? null,
    ev_slim: slim,
    payload: slim ? { ...payload, data: { ...body, changes: undefined, record: { ...body.record, data: undefined } } } : payload
  }
}

/** A record row with its xmin: the row version read or written, which the next guarded update names. */
export interface Versioned {
  readonly row: RecordRow
  readonly xmin: string
}

/** One unique value a record claims. */
export interface Claim {
  readonly structure_id: string
  readonly field: string
  readonly value: string
  readonly record_id: string
}

/** Rows with their xmin (`row_xmin`), by id. */
export const withXmin = (rows: ReadonlyArray<any>) =>
  new Map(rows.map((r): [string, Versioned] => [String(r.id), { row: decodeRecordRow(r), xmin: String(r.row_xmin) }]))

/**
 * The row a create wrote, from what it sent and its `created_at`: the statement returns no more (the data going back
 * over the wire and through both JSON codecs again cost both sides more than the rest of the answer). Only the key
 * order of `data` may differ from a read's (jsonb sorts keys); a reader of JSON sees the same record.
 */
const createdRow = (record: NewRecord, createdAt: string): RecordRow => ({
  id: record.id,
  workspace: record.workspace,
  structureId: record.structure_id,
  data: record.data,
  metadata: record.metadata,
  version: 1,
  status: "active",
  createdBy: record.created_by,
  updatedBy: record.created_by,
  createdAt,
  updatedAt: createdAt,
  deletedAt: null,
  expiresAt: record.expires_at
})

/**
 * A created row's search vector, from its structure's configuration (`c`, share-locked) and its data (`v.data`):
 * what troupe_search_vector_of (migration 0011) makes, in one query of the statement instead of a row trigger
 * (migration 0018), which cost PGlite twice the rest of the statement. No configuration, no vector (the insert
 * trigger then looks once more).
 */
const SEARCH_VECTOR = `CASE WHEN c.structure_id IS NOT NULL THEN (
    SELECT troupe_tsvector_agg(setweight(to_tsvector(c.language, left(v.data ->> (f ->> 'name'), 100000)), (f ->> 'weight')::"char") ORDER BY o)
    FROM jsonb_array_elements(c.fields) WITH ORDINALITY AS e(f, o)
    WHERE jsonb_typeof(v.data -> (f ->> 'name')) = 'string' AND v.data ->> (f ->> 'name') <> '') END`

export const makeBatchStatements = (sql: SqlClient.SqlClient) => {
  /**
   * The history rows of a record write, as the last CTEs of its statement: from `source` (a CTE with the columns of
   * historyColumns, `id`, `workspace`, `structure_id`, `data`, `version`, `i`), a version, a changelog entry a
   * microsecond apart per row (they keep their order; an update's `after` the transaction's now(), where a create
   * of the same transaction put its entry) and an outbox event per row, written by `writer`'s column.
   */
  const historyOf = (source: "v" | "w", writer: "created_by" | "updated_by", after: 0 | 1) =>
    sql`versioned AS (INSERT INTO record_versions (record_id, version, data, changes, created_by)
      SELECT id, version, data, changes, ${sql(writer)} FROM ${sql(source)}),
    logged AS (INSERT INTO record_changelog (id, record_id, workspace, action, user_id, user_name, changes, metadata, created_at)
      SELECT log_id, id, workspace, log_action, ${sql(writer)}, log_user_name, changes, log_metadata, now() + (i + ${after}) * interval '1 microsecond'
      FROM ${sql(source)}),
    published AS (INSERT INTO events (workspace, type, structure_id, record_slug, record_id, payload)
      SELECT workspace, ev_type, structure_id, ev_slug, id,
        CASE WHEN ev_slim THEN jsonb_set(jsonb_set(payload, '{data,changes}', changes), '{data,record,data}', data) ELSE payload END
      FROM ${sql(source)} ORDER BY i)`

  /**
   * New records and everything a create writes beside them in ONE statement (outside a transaction it needs no
   * BEGIN/COMMIT): the rows with their search vectors, their unique claims, version 1, changelog entries and outbox
   * events. The vectors follow the structures' search configurations, share-locked (migration 0018). A value someone
   * holds, or two items claim, fails the whole statement with a unique violation: nothing is written. Each structure
   * written to is share-locked once (`structs`: a delete for good waits for the statement, or the statement for the
   * delete); one deleted for good leaves its records a null `structure_id`, which fails the whole statement as a
   * foreign key did row by row (sqlErrors.isStructureGone; migration 0009). The rows of a
   * statement share now(): a microsecond apart, they keep their order in `createdAt`, their changelog and the
   * outbox. Returned in the order given.
   */
  const createRecords = (items: ReadonlyArray<WithHistory & { readonly record: NewRecord }>, claims: ReadonlyArray<Claim>) =>
    sql`WITH v AS (SELECT * FROM jsonb_to_recordset(${JSON.stringify(items.map((item, i) => ({ i, version: 1, ...item.record, ...historyColumns(item, item.record.data) })))}::jsonb)
      AS v(i int, version int, id uuid, workspace text, structure_id uuid, data jsonb, metadata jsonb, created_by text,
        expires_at timestamptz, changes jsonb, log_id uuid, log_action text, log_user_name text,
        log_metadata jsonb, ev_type text, ev_slug text, ev_slim boolean, payload jsonb)),
    structs AS (SELECT id FROM structures WHERE id IN (SELECT DISTINCT structure_id FROM v) FOR KEY SHARE),
    searched AS (SELECT structure_id, language, fields FROM search_configs WHERE structure_id IN (SELECT DISTINCT structure_id FROM v) FOR SHARE),
    inserted AS (INSERT INTO records (id, workspace, structure_id, data, metadata, created_by, updated_by, expires_at, created_at, updated_at, search_vector)
      SELECT v.id, workspace, s.id, data, metadata, created_by, created_by, expires_at,
        now() + i * interval '1 microsecond', now() + i * interval '1 microsecond',
        ${sql.unsafe(SEARCH_VECTOR)}
      FROM v LEFT JOIN structs s ON s.id = v.structure_id LEFT JOIN searched c ON c.structure_id = v.structure_id
      ORDER BY i RETURNING id, created_at),
    claimed AS (INSERT INTO record_unique_values (structure_id, field, value, record_id)
      SELECT structure_id, field, value, record_id FROM jsonb_to_recordset(${JSON.stringify(claims)}::jsonb)
        AS c(structure_id uuid, field text, value text, record_id uuid)),
    ${historyOf("v", "created_by", 0)}
    SELECT id, created_at FROM inserted`.pipe(
      Effect.map((returned) => {
        const createdAt = new Map(returned.map((r: any) => [String(r.id), iso(r.created_at)]))
        return items.map(({ record }) => createdRow(record, createdAt.get(record.id)!))
      }),
      Effect.tap(() => notifyAfterCommit(sql, EVENTS_CHANNEL))
    )

  /**
   * Updates and their history rows (a new version each, a changelog entry, an outbox event) in ONE statement; the
   * new rows by id. A record may have several updates in a row, each planned on the one before (`prevVersion` is
   * the version before it): the record is written once, with its last. The write is guarded: it happens only to a
   * live record still at its first update's `prevVersion` and, when `prevXmin` is given, still the very row version
   * that was read (its xmin: any write since, even one keeping the version, changes it). A record the guard skips
   * gets no history rows and is missing from the answer: nothing of it was written. The rows written come with
   * their new xmin, the guard of the record's next update. Each is the record's last update applied to the row it
   * was planned on (`before`): the statement returns only the id, xmin and `updated_at` (the whole row back through
   * PGlite's output functions, the worker's message and both JSON codecs was a fifth of the embedded worker's time
   * per patch); as for creates, only the key order of `data` may differ from a read's.
   */
  const updateRecordsWithHistory = (
    items: ReadonlyArray<
      WithHistory & {
        readonly update: RecordUpdate
        /** the row this update was planned on */
        readonly before: RecordRow
        readonly workspace: string
        readonly structureId: string
        readonly prevVersion: number
        readonly prevXmin?: string | undefined
      }
    >
  ) => {
    // a record's first update holds the guard, its last the state written
    const guard = new Map<string, { readonly version: number; readonly xmin: string | undefined }>()
    const last = new Map<string, number>()
    items.forEach((item, i) => {
      if (!guard.has(item.update.id)) guard.set(item.update.id, { version: item.prevVersion, xmin: item.prevXmin })
      last.set(item.update.id, i)
    })
    return sql`WITH v AS (SELECT * FROM jsonb_to_recordset(${JSON.stringify(
      items.map((item, i) => ({
        i,
        id: item.update.id,
        last: last.get(item.update.id) === i,
        guard_version: guard.get(item.update.id)!.version,
        guard_xmin: guard.get(item.update.id)!.xmin ?? null,
        workspace: item.workspace,
        structure_id: item.structureId,
        data: item.update.data,
        metadata: item.update.metadata,
        version: item.update.version,
        updated_by: item.update.updatedBy,
        expires_at: item.update.expiresAt,
        ...historyColumns(item, item.update.data)
      }))
    )}::jsonb)
      AS v(i int, id uuid, last boolean, guard_version int, guard_xmin text, workspace text, structure_id uuid,
        data jsonb, metadata jsonb, version int, updated_by text, expires_at timestamptz, changes jsonb, log_id uuid,
        log_action text, log_user_name text, log_metadata jsonb, ev_type text, ev_slug text, ev_slim boolean,
        payload jsonb)),
    updated AS (UPDATE records r SET data = v.data, metadata = v.metadata, version = v.version,
        updated_by = v.updated_by, updated_at = now(), expires_at = v.expires_at
      FROM v WHERE v.last AND r.id = v.id AND r.version = v.guard_version
        AND (v.guard_xmin IS NULL OR r.xmin::text = v.guard_xmin) AND ${liveRecord(sql, "r")}
      RETURNING r.id, r.xmin::text AS row_xmin, r.updated_at),
    w AS (SELECT v.* FROM v JOIN updated u ON u.id = v.id),
    ${historyOf("w", "updated_by", 1)}
    SELECT * FROM updated`.pipe(
      Effect.map(
        (returned) =>
          new Map(
            returned.map((r: any): [string, Versioned] => {
              const { before, update } = items[last.get(String(r.id))!]!
              // RecordUpdate's fields are RecordRow's (write/Common.ts afterUpdate)
              const row: RecordRow = { ...before, ...update, updatedAt: iso(r.updated_at) }
              return [row.id, { row, xmin: String(r.row_xmin) }]
            })
          )
      ),
      Effect.tap(() => notifyAfterCommit(sql, EVENTS_CHANNEL))
    )
  }

  return { createRecords, updateRecordsWithHistory }
}
