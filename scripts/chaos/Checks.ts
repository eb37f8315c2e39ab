// What the chaos run checks once the load has stopped: acknowledged writes (read back through the API), committed
// events (read from the outbox table) against what the webhook receiver and each SSE subscriber got, and the
// scheduled trigger's runs.
import type postgres from "postgres"
import type { Receiver } from "../../test/support/WebhookReceiver.ts"
import type { Client } from "./Client.ts"
import type { Ack } from "./Load.ts"
import type { Subscriber } from "./Subscriber.ts"

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

/** Runs `task` over `items` with at most `limit` in flight. */
export const pool = async <T>(items: ReadonlyArray<T>, limit: number, task: (item: T) => Promise<void>) => {
  let next = 0
  await Promise.all(
    Array.from({ length: Math.min(limit, items.length) }, async () => {
      while (next < items.length) await task(items[next++]!)
    })
  )
}

export interface LostWrite {
  readonly ack: Ack
  readonly found: string
}

/** Every acknowledged write must be readable: the record at its acknowledged version or later, and that version holding the write. */
export const checkWrites = async (
  client: Client,
  base: string,
  acks: ReadonlyArray<Ack>
): Promise<{ lost: Array<LostWrite>; records: number }> => {
  const byRecord = new Map<string, Array<Ack>>()
  for (const ack of acks) {
    const list = byRecord.get(ack.recordId) ?? []
    list.push(ack)
    byRecord.set(ack.recordId, list)
  }
  const lost: Array<LostWrite> = []
  await pool([...byRecord.entries()], 16, async ([id, list]) => {
    const current = await client.request("GET", `${base}/records/${id}`)
    const history = await client.request("GET", `${base}/records/${id}/history`)
    const highest = Math.max(...list.map((a) => a.version))
    if (current.status !== 200 || current.body.version < highest) {
      for (const ack of list) lost.push({ ack, found: `GET ${current.status} version ${current.body?.version}` })
      return
    }
    const versions = new Map<number, any>((history.body?.versions ?? []).map((v: any) => [v.version, v]))
    for (const ack of list) {
      const v = versions.get(ack.version)
      if (v === undefined || v.data?.op !== ack.op) {
        lost.push({
          ack,
          found: v === undefined ? `no version ${ack.version} (history ${history.status})` : `version ${ack.version} holds ${v.data?.op}`
        })
      }
    }
  })
  return { lost, records: byRecord.size }
}

export interface StoredEvent {
  readonly id: string
  readonly seq: number | null
  readonly type: string
  readonly recordId: string
  readonly version: number
  readonly op: string
  readonly createdAt: number
  readonly processedAt: number | null
}

export const readEvents = async (sql: postgres.Sql, structureId: string): Promise<Array<StoredEvent>> => {
  const rows = await sql`SELECT id::text, seq::int8 AS seq, type, record_id::text,
      (payload->'data'->'record'->>'version')::int AS version, payload->'data'->'record'->'data'->>'op' AS op,
      created_at, processed_at
    FROM events WHERE structure_id = ${structureId} AND type LIKE 'record.%' ORDER BY id`
  return rows.map((r) => ({
    id: r.id,
    seq: r.seq === null ? null : Number(r.seq),
    type: r.type,
    recordId: r.record_id,
    version: r.version,
    op: r.op,
    createdAt: new Date(r.created_at).getTime(),
    processedAt: r.processed_at === null ? null : new Date(r.processed_at).getTime()
  }))
}

const eventKey = (recordId: string, type: string, op: string) => `${recordId}|${type}|${op}`

export interface EventFindings {
  readonly committed: number
  /** acknowledged writes with no event in the outbox */
  readonly acksWithoutEvent: number
  /** events never relayed (no seq) */
  readonly unrelayed: number
  /** committed events the webhook never received */
  readonly lostEvents: Array<StoredEvent>
  readonly duplicateDeliveries: number
  /** per subscriber: events relayed after it connected that it never got, repeats, and events out of relay order */
  readonly sse: Array<{
    readonly name: string
    readonly missing: number
    readonly repeats: number
    readonly outOfOrder: number
    readonly resumes: number
  }>
  /** the longest commit-to-relay delay of any event (ms) */
  readonly longestRelayDelay: number
  /** the `op` of every committed event */
  readonly ops: ReadonlySet<string>
}

/**
 * Waits (up to `timeoutMs`) until every committed event is relayed, at the webhook receiver and at every
 * subscriber, then tells what is still missing.
 */
export const checkEvents = async (
  sql: postgres.Sql,
  structureId: string,
  acks: ReadonlyArray<Ack>,
  receiver: Receiver,
  subscribers: ReadonlyArray<Subscriber>,
  timeoutMs: number
): Promise<EventFindings> => {
  const delivered = () => {
    const seen = new Map<string, number>()
    for (const hit of receiver.hits) {
      const d = hit.json?.data
      if (d?.recordId === undefined) continue
      const key = eventKey(d.recordId, hit.json.event, d.record?.op)
      seen.set(key, (seen.get(key) ?? 0) + 1)
    }
    return seen
  }
  const deadline = Date.now() + timeoutMs
  let events: Array<StoredEvent>
  for (;;) {
    events = await readEvents(sql, structureId)
    const seen = delivered()
    const relayed = events.every((e) => e.seq !== null)
    const hooks = events.every((e) => seen.has(eventKey(e.recordId, e.type, e.op)))
    const ids = new Set(events.map((e) => e.id))
    const streams = subscribers.every((s) => {
      const got = new Set(s.received.map((r) => r.eventId))
      return [...ids].every((id) => got.has(id))
    })
    if ((relayed && hooks && streams) || Date.now() > deadline) break
    await sleep(500)
  }
  const seen = delivered()
  const keys = new Set(events.map((e) => eventKey(e.recordId, e.type, e.op)))
  const acksWithoutEvent = acks.filter(
    (a) =>
      !keys.has(
        eventKey(a.recordId, a.kind === "create" || (a.kind === "upsert" && a.version === 1) ? "record.created" : "record.updated", a.op)
      )
  ).length
  const seqOf = new Map(events.map((e) => [e.id, e.seq ?? Number.MAX_SAFE_INTEGER]))
  const relayedEvents = events.filter((e) => e.seq !== null)
  const sse = subscribers.map((s) => {
    const got = new Set<string>()
    let repeats = 0
    let outOfOrder = 0
    let last = -1
    for (const r of s.received) {
      if (got.has(r.eventId)) repeats++
      got.add(r.eventId)
      const seq = seqOf.get(r.eventId) ?? -1
      if (seq < last) outOfOrder++
      last = Math.max(last, seq)
    }
    // every subscriber connected before the first event of the structure: it owes every relayed event
    const missing = relayedEvents.filter((e) => !got.has(e.id)).length
    return { name: s.name, missing, repeats, outOfOrder, resumes: s.resumes.length }
  })
  let duplicateDeliveries = 0
  for (const n of seen.values()) duplicateDeliveries += n - 1
  return {
    committed: events.length,
    acksWithoutEvent,
    unrelayed: events.filter((e) => e.seq === null).length,
    lostEvents: events.filter((e) => !seen.has(eventKey(e.recordId, e.type, e.op))),
    duplicateDeliveries,
    sse,
    longestRelayDelay: Math.max(0, ...events.filter((e) => e.processedAt !== null).map((e) => e.processedAt! - e.createdAt)),
    ops: new Set(events.map((e) => e.op))
  }
}

export interface TickFindings {
  readonly runs: number
  /** runs sharing a tick, or two ticks closer than the interval */
  readonly duplicates: number
  /** the first run queued after `after` (ms after it) */
  readonly resumeAfter: (after: number) => number | undefined
  /** the longest gap between two consecutive runs' creation (ms) */
  readonly longestGap: number
}

export const checkTicks = async (sql: postgres.Sql, triggerId: string, intervalMs: number): Promise<TickFindings> => {
  const rows = await sql`SELECT scheduled_for, created_at FROM function_runs WHERE trigger_id = ${triggerId} ORDER BY scheduled_for`
  const ticks = rows.map((r) => ({ due: new Date(r.scheduled_for).getTime(), created: new Date(r.created_at).getTime() }))
  let duplicates = 0
  for (let i = 1; i < ticks.length; i++) {
    if (ticks[i]!.due - ticks[i - 1]!.due < intervalMs * 0.9) duplicates++
  }
  const created = ticks.map((t) => t.created).sort((a, b) => a - b)
  let longestGap = 0
  for (let i = 1; i < created.length; i++) longestGap = Math.max(longestGap, created[i]! - created[i - 1]!)
  return {
    runs: ticks.length,
    duplicates,
    resumeAfter: (after) => {
      const first = created.find((c) => c > after)
      return first === undefined ? undefined : first - after
    },
    longestGap
  }
}
