// SQL of the storage service: file metadata, the per-workspace usage row the quota is checked against, and the
// file.* events. An upload's metadata row, its usage increment and its `file.uploaded` event commit together,
// after the usage row is locked (`FOR UPDATE`): two uploads racing for the last bytes of a quota are serialised
// there, so the sum of committed files never passes it. A delete removes the row, gives the bytes back and
// appends `file.deleted` in one transaction.
import type { StoredFile } from "@troupe/api/storage/Storage"
import { Context, Data, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import type { SqlError } from "effect/sql/SqlError"
import { appendEvent, appendEvents, EVENTS_CHANNEL } from "../events/Outbox.ts"
import { notifyAfterCommit } from "../events/Wake.ts"
import { isUuid } from "../lib/Uuid.ts"

export class QuotaExceeded extends Data.TaggedError("QuotaExceeded")<{ readonly used: number; readonly quota: number }> {}

export interface FileRow extends StoredFile {
  readonly workspace: string
  readonly blobKey: string
}

export interface NewFile {
  readonly id: string
  readonly workspace: string
  readonly name: string
  readonly folder: string
  readonly contentType: string
  readonly size: number
  readonly sha256: string
  readonly metadata: Record<string, unknown>
  readonly blobKey: string
  readonly createdBy: string | null
}

export interface FileFilter {
  readonly folder?: string | undefined
  readonly prefix?: string | undefined
  readonly contentType?: string | undefined
  readonly search?: string | undefined
  readonly limit: number
  readonly offset: number
}

const iso = (v: unknown) => (v instanceof Date ? v : new Date(String(v))).toISOString()
const jsonObject = (v: unknown): Record<string, unknown> => (typeof v === "string" ? JSON.parse(v) : (v ?? {})) as Record<string, unknown>

const toRow = (r: any): FileRow => ({
  id: String(r.id),
  workspace: r.workspace,
  name: r.name,
  folder: r.folder,
  contentType: r.content_type,
  size: Number(r.size),
  checksum: `sha256:${r.sha256}`,
  metadata: jsonObject(r.metadata) as StoredFile["metadata"],
  createdAt: iso(r.created_at),
  createdBy: r.created_by ?? null,
  blobKey: r.blob_key
})

/** A resized image of a file (ImageVariants.ts): `variant` names the size and fit. */
export interface Variant {
  readonly variant: string
  readonly blobKey: string
  readonly contentType: string
  readonly size: number
  /** hex */
  readonly sha256: string
}

const toVariant = (r: any): Variant => ({
  variant: r.variant,
  blobKey: r.blob_key,
  contentType: r.content_type,
  size: Number(r.size),
  sha256: r.sha256
})

/** The wire form (CONTRACT §8.1). */
export const toFile = (r: FileRow): StoredFile => ({
  id: r.id,
  name: r.name,
  folder: r.folder,
  contentType: r.contentType,
  size: r.size,
  checksum: r.checksum,
  metadata: r.metadata,
  createdAt: r.createdAt,
  createdBy: r.createdBy
})

const event = (type: "file.uploaded" | "file.deleted", row: FileRow) => ({
  workspace: row.workspace,
  type,
  payload: { event: type, timestamp: new Date().toISOString(), workspace: row.workspace, data: toFile(row) }
})

/** The files of `workspace` among `ids`, keyed by lowercase id (query/FileLookup.ts says why `lock`). */
export const filesById = (
  sql: SqlClient.SqlClient,
  workspace: string,
  ids: ReadonlyArray<string>,
  lock = false
): Effect.Effect<Map<string, StoredFile>, SqlError> => {
  const wanted = [...new Set(ids.filter(isUuid).map((id) => id.toLowerCase()))]
  if (wanted.length === 0) return Effect.succeed(new Map())
  const query = lock
    ? sql`SELECT * FROM storage_files WHERE workspace = ${workspace} AND id IN ${sql.in(wanted)} FOR KEY SHARE`
    : sql`SELECT * FROM storage_files WHERE workspace = ${workspace} AND id IN ${sql.in(wanted)}`
  return Effect.map(query, (rows) => new Map(rows.map((r) => [String(r.id), toFile(toRow(r))] as const)))
}

/** `LIKE` pattern text with its wildcards escaped. */
const likeEscape = (s: string) => s.replace(/[\\%_]/g, (c) => `\\${c}`)

type Sql<A> = Effect.Effect<A, SqlError>

/** New files as the JSON rows of `jsonb_to_recordset(...) AS FILE_ROW`, `i` their order in the batch. */
const fileRows = (files: ReadonlyArray<NewFile>) =>
  JSON.stringify(
    files.map((f, i) => ({
      i,
      id: f.id,
      workspace: f.workspace,
      name: f.name,
      folder: f.folder,
      content_type: f.contentType,
      size: f.size,
      sha256: f.sha256,
      metadata: f.metadata,
      blob_key: f.blobKey,
      created_by: f.createdBy
    }))
  )
const FILE_ROW = `v(i int, id uuid, workspace text, name text, folder text, content_type text, size bigint, sha256 text,
  metadata jsonb, blob_key text, created_by text)`

export class StorageRepo extends Context.Service<
  StorageRepo,
  {
    /** Inserts the file within the quota (0 = none), with its usage and event, or fails with QuotaExceeded. */
    readonly insert: (file: NewFile, quota: number) => Effect.Effect<FileRow, SqlError | QuotaExceeded>
    /**
     * Inserts several uploads' files in one transaction (the group commit of StorageService): each within its
     * workspace's quota in the order given (or its QuotaExceeded), their events, and one usage change per workspace.
     */
    readonly insertMany: (files: ReadonlyArray<NewFile>, quota: number) => Sql<ReadonlyArray<FileRow | QuotaExceeded>>
    /** The files of these ids (lower-case UUIDs), by id, whatever their workspace: one statement for a batch of reads. */
    readonly findMany: (ids: ReadonlyArray<string>) => Sql<Map<string, FileRow>>
    readonly list: (workspace: string, filter: FileFilter) => Sql<{ rows: ReadonlyArray<FileRow>; total: number }>
    readonly update: (
      workspace: string,
      id: string,
      patch: { name?: string | undefined; folder?: string | undefined; metadata?: Record<string, unknown> | undefined }
    ) => Sql<FileRow | undefined>
    /**
     * Deletes the file with its variants in one transaction: the row locked first, then `before` (the referring
     * records' onDelete, FileReferrers), then the rows. The blob keys to remove once committed (the file's first).
     */
    readonly remove: <E>(
      workspace: string,
      id: string,
      before: (row: FileRow) => Effect.Effect<void, E>
    ) => Effect.Effect<{ row: FileRow; blobKeys: ReadonlyArray<string> } | undefined, SqlError | E>
    readonly usage: (workspace: string) => Sql<{ files: number; bytes: number }>
    readonly findVariant: (fileId: string, variant: string) => Sql<Variant | undefined>
    /**
     * Records a variant made by this node unless one was recorded first (then that one is answered, and the caller
     * removes its own blob); undefined when the file is gone meanwhile.
     */
    readonly insertVariant: (fileId: string, v: Variant) => Sql<Variant | undefined>
    /** The URL-signing key (settings row, encrypted by the caller), made by the first node that asks. */
    readonly signingKey: (make: () => string) => Sql<string>
  }
>()("@troupe/server/storage/StorageRepo") {
  static readonly layer = Layer.effect(
    StorageRepo,
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      // Without a quota nothing is read before the batch is written: its rows, their events and the usage change
      // go in one statement (atomic without a transaction of its own), one trip to PGlite's worker instead of five
      // statements (BEGIN, three inserts, COMMIT). The event's `data` is toFile's shape built from the inserted row
      // (storage-batch.test.ts compares the two).
      const insertUnlimited = (files: ReadonlyArray<NewFile>) =>
        sql`WITH v AS (
            SELECT * FROM jsonb_to_recordset(${fileRows(files)}::jsonb) AS ${sql.unsafe(FILE_ROW)}
          ), ins AS (
            INSERT INTO storage_files (id, workspace, name, folder, content_type, size, sha256, metadata, blob_key, created_by, created_at)
            SELECT id, workspace, name, folder, content_type, size, sha256, metadata, blob_key, created_by, clock_timestamp()
            FROM v ORDER BY i
            RETURNING *
          ), ev AS (
            INSERT INTO events (workspace, type, payload)
            SELECT ins.workspace, 'file.uploaded', jsonb_build_object('event', 'file.uploaded', 'timestamp', ${new Date().toISOString()}::text,
              'workspace', ins.workspace, 'data', jsonb_build_object('id', ins.id, 'name', ins.name, 'folder', ins.folder,
                'contentType', ins.content_type, 'size', ins.size, 'checksum', 'sha256:' || ins.sha256, 'metadata', ins.metadata,
                'createdAt', to_char(ins.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'), 'createdBy', ins.created_by))
            FROM ins JOIN v ON v.id = ins.id ORDER BY v.i
          ), used AS (
            INSERT INTO storage_usage (workspace, files, bytes)
            SELECT workspace, count(*), sum(size) FROM v GROUP BY workspace ORDER BY workspace
            ON CONFLICT (workspace) DO UPDATE SET files = storage_usage.files + excluded.files, bytes = storage_usage.bytes + excluded.bytes
          )
          SELECT * FROM ins`.pipe(
          Effect.tap(() => notifyAfterCommit(sql, EVENTS_CHANNEL)),
          Effect.map((inserted) => {
            const byId = new Map(inserted.map((r) => [String(r.id), toRow(r)] as const))
            return files.map((f) => byId.get(f.id)!)
          })
        )
      return StorageRepo.of({
        // the usage row is updated last, under its quota, so its lock (every upload of the workspace takes it) is
        // held only until the commit that follows; its first upload creates it
        insert: (f, quota) =>
          sql.withTransaction(
            Effect.gen(function* () {
              const rows =
                yield* sql`INSERT INTO storage_files (id, workspace, name, folder, content_type, size, sha256, metadata, blob_key, created_by)
                VALUES (${f.id}, ${f.workspace}, ${f.name}, ${f.folder}, ${f.contentType}, ${f.size}, ${f.sha256},
                  ${JSON.stringify(f.metadata)}::jsonb, ${f.blobKey}, ${f.createdBy})
                RETURNING *`
              const row = toRow(rows[0])
              yield* appendEvent(sql, event("file.uploaded", row))
              const count = () =>
                sql<{ bytes: unknown }>`UPDATE storage_usage SET files = files + 1, bytes = bytes + ${f.size}
                WHERE workspace = ${f.workspace} AND (${quota}::bigint = 0 OR bytes + ${f.size} <= ${quota}::bigint) RETURNING bytes`
              if ((yield* count()).length > 0) return row
              yield* sql`INSERT INTO storage_usage (workspace) VALUES (${f.workspace}) ON CONFLICT (workspace) DO NOTHING`
              if ((yield* count()).length > 0) return row
              const used = yield* sql<{ bytes: unknown }>`SELECT bytes FROM storage_usage WHERE workspace = ${f.workspace}`
              return yield* new QuotaExceeded({ used: Number(used[0]?.bytes ?? 0), quota })
            })
          ),
        insertMany: (files, quota) =>
          quota === 0
            ? insertUnlimited(files)
            : sql.withTransaction(
                Effect.gen(function* () {
                  const workspaces = [...new Set(files.map((f) => f.workspace))].sort()
                  // the usage rows are locked first (in one order: two batches never deadlock) and each file is taken
                  // while its workspace stays within the quota
                  const used = new Map<string, number>()
                  yield* sql`INSERT INTO storage_usage (workspace)
                    SELECT w FROM jsonb_array_elements_text(${JSON.stringify(workspaces)}::jsonb) AS w ORDER BY w
                    ON CONFLICT (workspace) DO NOTHING`
                  const locked = yield* sql<{ workspace: string; bytes: unknown }>`SELECT workspace, bytes FROM storage_usage
                    WHERE workspace IN ${sql.in(workspaces)} ORDER BY workspace FOR UPDATE`
                  for (const r of locked) used.set(r.workspace, Number(r.bytes))
                  const outcome: Array<NewFile | QuotaExceeded> = files.map((f) => {
                    const before = used.get(f.workspace) ?? 0
                    if (before + f.size > quota) return new QuotaExceeded({ used: before, quota })
                    used.set(f.workspace, before + f.size)
                    return f
                  })
                  const taken = outcome.filter((o): o is NewFile => !(o instanceof QuotaExceeded))
                  if (taken.length === 0) return outcome as ReadonlyArray<QuotaExceeded>
                  const inserted =
                    // clock_timestamp(): each file of a batch keeps a creation time of its own, in the batch's order
                    // (now() would give them all the transaction's, and lists order by it)
                    yield* sql`INSERT INTO storage_files (id, workspace, name, folder, content_type, size, sha256, metadata, blob_key, created_by, created_at)
                SELECT id, workspace, name, folder, content_type, size, sha256, metadata, blob_key, created_by, clock_timestamp()
                FROM jsonb_to_recordset(${fileRows(taken)}::jsonb) AS ${sql.unsafe(FILE_ROW)}
                ORDER BY i
                RETURNING *`
                  const byId = new Map(inserted.map((r) => [String(r.id), toRow(r)] as const))
                  const rows = taken.map((f) => byId.get(f.id)!)
                  yield* appendEvents(
                    sql,
                    rows.map((row) => event("file.uploaded", row))
                  )
                  const sums = workspaces.flatMap((workspace) => {
                    const mine = rows.filter((r) => r.workspace === workspace)
                    return mine.length === 0 ? [] : [{ workspace, files: mine.length, bytes: mine.reduce((n, r) => n + r.size, 0) }]
                  })
                  yield* sql`INSERT INTO storage_usage (workspace, files, bytes)
                SELECT workspace, files, bytes FROM jsonb_to_recordset(${JSON.stringify(sums)}::jsonb)
                  AS v(workspace text, files bigint, bytes bigint) ORDER BY workspace
                ON CONFLICT (workspace) DO UPDATE SET files = storage_usage.files + excluded.files,
                  bytes = storage_usage.bytes + excluded.bytes`
                  return outcome.map((o) => (o instanceof QuotaExceeded ? o : byId.get(o.id)!))
                })
              ),
        findMany: (ids) =>
          Effect.map(
            sql`SELECT * FROM storage_files WHERE id IN ${sql.in(ids)}`,
            (rows) => new Map(rows.map((r) => [String(r.id), toRow(r)] as const))
          ),
        list: (workspace, f) =>
          Effect.gen(function* () {
            const conditions = [sql`workspace = ${workspace}`]
            if (f.folder !== undefined) conditions.push(sql`folder = ${f.folder}`)
            if (f.prefix !== undefined) conditions.push(sql`name LIKE ${`${likeEscape(f.prefix)}%`}`)
            if (f.contentType !== undefined) {
              conditions.push(
                f.contentType.endsWith("/")
                  ? sql`content_type LIKE ${`${likeEscape(f.contentType)}%`}`
                  : sql`(content_type = ${f.contentType} OR content_type LIKE ${`${likeEscape(f.contentType)};%`})`
              )
            }
            if (f.search !== undefined) {
              const pattern = `%${likeEscape(f.search.toLowerCase())}%`
              conditions.push(sql`(lower(name) LIKE ${pattern} OR lower(folder) LIKE ${pattern})`)
            }
            const where = sql.and(conditions)
            const rows = yield* sql`SELECT * FROM storage_files WHERE ${where}
              ORDER BY created_at DESC, id DESC LIMIT ${f.limit} OFFSET ${f.offset}`
            const count = yield* sql<{ n: unknown }>`SELECT count(*)::int AS n FROM storage_files WHERE ${where}`
            return { rows: rows.map(toRow), total: Number(count[0]?.n ?? 0) }
          }),
        update: (workspace, id, patch) =>
          Effect.map(
            sql`UPDATE storage_files SET
                name = COALESCE(${patch.name ?? null}, name),
                folder = COALESCE(${patch.folder ?? null}, folder),
                metadata = COALESCE(${patch.metadata === undefined ? null : JSON.stringify(patch.metadata)}::jsonb, metadata),
                updated_at = now()
              WHERE workspace = ${workspace} AND id = ${id}::uuid RETURNING *`,
            (rows) => (rows[0] === undefined ? undefined : toRow(rows[0]))
          ),
        remove: (workspace, id, before) =>
          sql.withTransaction(
            Effect.gen(function* () {
              const locked = yield* sql`SELECT * FROM storage_files WHERE workspace = ${workspace} AND id = ${id}::uuid FOR UPDATE`
              if (locked[0] === undefined) return undefined
              const row = toRow(locked[0])
              yield* before(row)
              const variants = yield* sql<{ blob_key: string }>`DELETE FROM storage_variants WHERE file_id = ${id}::uuid RETURNING blob_key`
              yield* sql`DELETE FROM storage_files WHERE id = ${id}::uuid`
              yield* sql`UPDATE storage_usage SET files = GREATEST(files - 1, 0), bytes = GREATEST(bytes - ${row.size}, 0)
                WHERE workspace = ${workspace}`
              yield* appendEvent(sql, event("file.deleted", row))
              return { row, blobKeys: [row.blobKey, ...variants.map((v) => v.blob_key)] }
            })
          ),
        usage: (workspace) =>
          Effect.map(
            sql<{ files: unknown; bytes: unknown }>`SELECT files, bytes FROM storage_usage WHERE workspace = ${workspace}`,
            (rows) => ({ files: Number(rows[0]?.files ?? 0), bytes: Number(rows[0]?.bytes ?? 0) })
          ),
        findVariant: (fileId, variant) =>
          Effect.map(sql`SELECT * FROM storage_variants WHERE file_id = ${fileId}::uuid AND variant = ${variant}`, (rows) =>
            rows[0] === undefined ? undefined : toVariant(rows[0])
          ),
        insertVariant: (fileId, v) =>
          sql.withTransaction(
            Effect.gen(function* () {
              // the file row key-share locked: its delete waits for this insert, then removes the variant's blob too
              const file = yield* sql`SELECT id FROM storage_files WHERE id = ${fileId}::uuid FOR KEY SHARE`
              if (file[0] === undefined) return undefined
              yield* sql`INSERT INTO storage_variants (file_id, variant, blob_key, content_type, size, sha256)
                VALUES (${fileId}::uuid, ${v.variant}, ${v.blobKey}, ${v.contentType}, ${v.size}, ${v.sha256})
                ON CONFLICT (file_id, variant) DO NOTHING`
              const rows = yield* sql`SELECT * FROM storage_variants WHERE file_id = ${fileId}::uuid AND variant = ${v.variant}`
              return rows[0] === undefined ? undefined : toVariant(rows[0])
            })
          ),
        signingKey: (make) =>
          Effect.gen(function* () {
            yield* sql`INSERT INTO settings (key, value) VALUES ('storage_url_key', ${make()}) ON CONFLICT (key) DO NOTHING`
            const rows = yield* sql<{ value: string }>`SELECT value FROM settings WHERE key = 'storage_url_key'`
            return rows[0]!.value
          })
      })
    })
  )
}
