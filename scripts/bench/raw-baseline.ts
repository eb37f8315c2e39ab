// The raw baseline of `npm run bench`: plain node:http + postgres.js (max_pipeline 1, one pool of 10), running the
// same SQL Troupe runs for each benchmarked endpoint (the record engine, records/write/: record row, unique values, version row,
// changelog row, outbox event + pg_notify, in one transaction). It is the ceiling Troupe's figures are divided by,
// so it must be the strongest plain setup: no framework, no validation, no auth, no actors (row locks only).
import * as Crypto from "node:crypto"
import postgres from "postgres"
import { healthRoute, HttpError, readBody, type Route, send, serve } from "./raw-http.ts"
import { queryRoutes } from "./raw-query.ts"

const sql = postgres(process.env.DATABASE_URL!, { max: 10, max_pipeline: 1, onnotice: () => {} } as any)
const port = Number(process.env.PORT)
const WORKSPACE = "default"
const USER = "bench"
const EVENTS_CHANNEL = "troupe_events"
/** A jsonb parameter. (`${JSON.stringify(x)}::jsonb` would be encoded twice by postgres.js: a jsonb string.) */
const json = (value: unknown) => sql.json(value as any)

type Tx = postgres.TransactionSql<{}>
type Data = Record<string, unknown>

// ------------------------------------------------------------------ what Troupe caches: the structure

interface StructureInfo {
  readonly id: string
  readonly slug: string
  readonly unique: ReadonlyArray<string>
}
const structures = new Map<string, Promise<StructureInfo>>()
const structureOf = (id: string) => {
  let s = structures.get(id)
  if (s === undefined) {
    s = sql`SELECT record_slug, definition FROM structures WHERE id = ${id}`.then(([row]) => {
      if (!row) throw new HttpError(404, "structure not found")
      const definition = typeof row.definition === "string" ? JSON.parse(row.definition) : row.definition
      const unique = (definition.properties ?? []).filter((p: any) => p.isUnique === true).map((p: any) => p.name)
      return { id, slug: row.record_slug as string, unique }
    })
    structures.set(id, s)
  }
  return s
}

// ------------------------------------------------------------------ the pieces of a write (the record engine's SQL)

const canonicalJson = (v: unknown): string => {
  if (typeof v !== "object" || v === null) return JSON.stringify(v) ?? "null"
  if (Array.isArray(v)) return `[${v.map(canonicalJson).join(",")}]`
  const keys = Object.keys(v).sort()
  return `{${keys.map((k) => `${JSON.stringify(k)}:${canonicalJson((v as Data)[k])}`).join(",")}}`
}

const diff = (before: Data, after: Data) => {
  const changes: Record<string, { old: unknown; new: unknown }> = {}
  for (const key of new Set([...Object.keys(before), ...Object.keys(after)])) {
    const a = before[key] ?? null
    const b = after[key] ?? null
    if (canonicalJson(a) !== canonicalJson(b)) changes[key] = { old: a, new: b }
  }
  return changes
}

const changelogChanges = (changes: ReturnType<typeof diff>) =>
  Object.fromEntries(Object.entries(changes).map(([field, c]) => [field, { field, oldValue: c.old, newValue: c.new }]))

const claimUnique = async (tx: Tx, s: StructureInfo, recordId: string, data: Data, previous: Data | undefined) => {
  const valuesOf = (d: Data) => s.unique.flatMap((f) => (d[f] !== undefined && d[f] !== null ? [[f, canonicalJson(d[f])] as const] : []))
  const before = new Map(previous ? valuesOf(previous) : [])
  const after = valuesOf(data)
  for (const [field, value] of before) {
    if (!after.some(([f, v]) => f === field && v === value)) {
      await tx`DELETE FROM record_unique_values
        WHERE structure_id = ${s.id} AND field = ${field} AND record_id = ${recordId}`
    }
  }
  for (const [field, value] of after) {
    if (before.get(field) === value) continue
    const insert = () => tx`INSERT INTO record_unique_values (structure_id, field, value, record_id)
      VALUES (${s.id}, ${field}, ${value}, ${recordId}) ON CONFLICT DO NOTHING RETURNING record_id`
    let rows = await insert()
    if (rows.length === 0) {
      const freed = await tx`DELETE FROM record_unique_values u USING records r
        WHERE u.structure_id = ${s.id} AND u.field = ${field} AND u.value = ${value} AND r.id = u.record_id
          AND (r.expires_at <= now() OR r.deleted_at IS NOT NULL) RETURNING u.record_id`
      if (freed.length > 0) rows = await insert()
    }
    if (rows.length === 0) throw new HttpError(409, `A record with this ${field} already exists`)
  }
}

const writeVersion = (tx: Tx, row: any, changes: unknown) =>
  tx`INSERT INTO record_versions (record_id, version, data, changes, restored_from, created_by)
    VALUES (${row.id}, ${row.version}, ${json(row.data)}, ${json(changes)},
      ${null}, ${USER})`

const writeChangelog = (tx: Tx, row: any, action: string, changes: ReturnType<typeof diff>, source: string) =>
  tx`INSERT INTO record_changelog (id, record_id, workspace, action, user_id, user_name, changes, metadata)
    VALUES (${Crypto.randomUUID()}, ${row.id}, ${WORKSPACE}, ${action}, ${USER}, ${USER},
      ${json(changelogChanges(changes))}, ${json({ source })})`

const appendEvent = (tx: Tx | typeof sql, type: string, s: StructureInfo, recordId: string | null, payload: unknown) =>
  tx`WITH e AS (
    INSERT INTO events (workspace, type, structure_id, record_slug, record_id, payload)
    VALUES (${WORKSPACE}, ${type}, ${s.id}::uuid, ${s.slug}, ${recordId}::uuid, ${json(payload)})
    RETURNING id
  ) SELECT pg_notify(${EVENTS_CHANNEL}, id::text) FROM e`

const recordEvent = (tx: Tx, type: string, s: StructureInfo, row: any, previous: Data | null, changes: unknown, source: string) =>
  appendEvent(tx, type, s, row.id, {
    event: type,
    timestamp: new Date().toISOString(),
    workspace: WORKSPACE,
    structure: s.slug,
    data: {
      record: { id: row.id, structureId: s.id, data: row.data, version: row.version },
      previous: previous === null ? null : { data: previous },
      changes,
      metadata: { userId: USER, source }
    }
  })

const createInTx = async (tx: Tx, s: StructureInfo, data: Data, source = "api") => {
  const id = Crypto.randomUUID()
  const [row] = await tx`INSERT INTO records
    (id, workspace, structure_id, data, metadata, created_by, updated_by, expires_at)
    VALUES (${id}, ${WORKSPACE}, ${s.id}, ${json(data)}, ${json({})}, ${USER}, ${USER}, ${null})
    RETURNING *`
  await claimUnique(tx, s, id, data, undefined)
  const changes = diff({}, data)
  await writeVersion(tx, row, changes)
  await writeChangelog(tx, row, "create", changes, source)
  await recordEvent(tx, "record.created", s, row, null, changes, source)
  return row!
}

/** A PATCH: the stored data with the patch merged in (null removes a key). */
const updateInTx = async (tx: Tx, s: StructureInfo, row: any, patch: Data) => {
  const data: Data = { ...row.data }
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) delete data[k]
    else data[k] = v
  }
  await claimUnique(tx, s, row.id, data, row.data)
  const [next] = await tx`UPDATE records
    SET data = ${json(data)}, metadata = ${json(row.metadata)},
      version = ${row.version + 1}, updated_by = ${USER}, updated_at = now(), expires_at = ${row.expires_at}
    WHERE id = ${row.id} RETURNING *`
  const changes = diff(row.data, data)
  await writeVersion(tx, next, changes)
  await writeChangelog(tx, next, "update", changes, "api")
  await recordEvent(tx, "record.updated", s, next, row.data, changes, "api")
  return next!
}

const isLive = (row: any) => row.deleted_at === null && (row.expires_at === null || new Date(row.expires_at).getTime() > Date.now())

// ------------------------------------------------------------------ HTTP

const routes: Array<Route> = [
  healthRoute,
  // create: record row, unique values, version, changelog, event + notify
  [
    "POST",
    /^\/raw\/records\/([0-9a-f-]{36})$/,
    async (req, res, m) => {
      const body = await readBody(req)
      const s = await structureOf(m[1]!)
      const row = await sql.begin((tx) => createInTx(tx, s, body.data))
      send(res, 201, row)
    }
  ],
  // get by id: the one query of RecordService.get
  [
    "GET",
    /^\/raw\/records\/([0-9a-f-]{36})$/,
    async (_req, res, m) => {
      const [row] = await sql`SELECT * FROM records WHERE id = ${m[1]!} AND workspace = ${WORKSPACE}`
      row && isLive(row) ? send(res, 200, row) : send(res, 404, { error: "not found" })
    }
  ],
  // patch: lock the row, then the update's statements
  [
    "PATCH",
    /^\/raw\/records\/([0-9a-f-]{36})$/,
    async (req, res, m) => {
      const body = await readBody(req)
      const row = await sql.begin(async (tx) => {
        const [current] = await tx`SELECT * FROM records WHERE id = ${m[1]!} AND workspace = ${WORKSPACE} FOR UPDATE`
        if (!current || !isLive(current)) throw new HttpError(404, "not found")
        return updateInTx(tx, await structureOf(current.structure_id), current, body.data)
      })
      send(res, 200, row)
    }
  ],
  // upsert: find the match (locked), then update it or create it
  [
    "POST",
    /^\/raw\/upsert\/([0-9a-f-]{36})$/,
    async (req, res, m) => {
      const body = await readBody(req)
      const s = await structureOf(m[1]!)
      const [status, row] = await sql.begin(async (tx) => {
        // a match on a unique property is looked up through its claim, as Troupe does
        const unique = s.unique.find((f) => body.match[f] !== undefined && body.match[f] !== null)
        const [found] =
          unique !== undefined
            ? await tx`SELECT r.* FROM record_unique_values u JOIN records r ON r.id = u.record_id
            WHERE u.structure_id = ${s.id} AND u.field = ${unique} AND u.value = ${canonicalJson(body.match[unique])}
              AND r.deleted_at IS NULL AND (r.expires_at IS NULL OR r.expires_at > now()) AND r.data @> ${json(body.match)}
            FOR UPDATE OF r`
            : await tx`SELECT * FROM records WHERE structure_id = ${s.id} AND deleted_at IS NULL
            AND (expires_at IS NULL OR expires_at > now()) AND data @> ${json(body.match)}
          ORDER BY created_at, id LIMIT 1 FOR UPDATE`
        if (found) {
          const patch = { ...body.data }
          for (const k of Object.keys(body.match)) delete patch[k]
          return [200, await updateInTx(tx, s, found, patch)] as const
        }
        return [201, await createInTx(tx, s, { ...body.data, ...body.match })] as const
      })
      const operation = status === 201 ? "created" : "updated"
      send(res, status, { data: { id: row.id, data: row.data, version: row.version }, operation })
    }
  ],
  // bulk create (Troupe's default, non-atomic): one transaction per item, then the bulk event in its own
  [
    "POST",
    /^\/raw\/bulk\/([0-9a-f-]{36})$/,
    async (req, res, m) => {
      const body = await readBody(req)
      const s = await structureOf(m[1]!)
      const ids: Array<string> = []
      const errors: Array<{ index: number; message: string }> = []
      for (let i = 0; i < body.records.length; i++) {
        try {
          ids.push((await sql.begin((tx) => createInTx(tx, s, body.records[i].data, "bulk"))).id)
        } catch (e) {
          errors.push({ index: i, message: String(e) })
        }
      }
      if (ids.length > 0) {
        await sql.begin((tx) =>
          appendEvent(tx, "record.bulk.created", s, null, {
            event: "record.bulk.created",
            timestamp: new Date().toISOString(),
            workspace: WORKSPACE,
            structure: s.slug,
            data: { structure: s.slug, count: ids.length, recordIds: ids, metadata: { userId: USER, source: "api" } }
          })
        )
      }
      const answer = { success: errors.length === 0, created: ids.length, failed: errors.length, records: [], errors }
      send(res, errors.length === 0 ? 201 : 207, answer)
    }
  ],
  // query scenarios: seeding and the filtered, sorted page (scripts/bench/raw-query.ts)
  ...queryRoutes(sql, send)
]

serve(port, routes)
