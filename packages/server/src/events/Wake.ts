// Wake-ups sent after commit, coalesced per node. A NOTIFY issued inside a write transaction makes PostgreSQL take a
// cluster-wide lock at commit, which serialises every committing writer; the listeners (the outbox relay, the run
// workers) only need to hear that something committed. So a write registers a wake-up for after its commit, and the
// node sends at most one NOTIFY per channel at a time: pokes that arrive while one is in flight are folded into one
// more, sent once it returns, so every commit is followed by a NOTIFY issued after it. Listeners also poll, so a
// wake-up lost with a crash between commit and send only delays.
// On PGlite every listener is in this process: a wake-up calls them directly (Listen.ts registers them here), where
// a NOTIFY would be a statement on the worker's one session and a message back, for nothing another process hears.
// On PostgreSQL the channels below also wait a little between NOTIFYs while wake-ups keep coming (the first after a
// quiet spell goes at once): each NOTIFY is a statement and a message to every listening node, and under a stream of
// notification sends they came after nearly every outcome batch and every insert batch (docs/benchmarks.md, seventh
// session).
import { Effect } from "effect"
import type { SqlClient } from "effect/sql"

/**
 * In-process listeners of the embedded database, by channel, for the whole process: a wake-up is a hint, and one
 * reaching the listeners of another embedded database in the same process (tests) only makes them look sooner.
 */
const local = new Map<string, Set<(payload: string) => void>>()

/** Registers an in-process listener of `channel` (PGlite); answers the function that removes it. */
export const listenLocally = (channel: string, onNotify: (payload: string) => void): (() => void) => {
  let listeners = local.get(channel)
  if (listeners === undefined) local.set(channel, (listeners = new Set()))
  const mine = listeners
  mine.add(onNotify)
  return () => void mine.delete(onNotify)
}

/**
 * Least time in ms between two NOTIFYs of a channel from this node. `troupe_events`: the outbox relay steps at most
 * every 40 ms while events keep coming anyway (OutboxRelay.ts). `troupe_notifications`: wakes other nodes' workers
 * for messages this node could not send at once, which wait at most this much longer (they poll every second).
 */
const SPACING_MS: Readonly<Record<string, number>> = { troupe_events: 40, troupe_notifications: 20 }

interface Waker {
  poke(): void
}

const wakers = new WeakMap<SqlClient.SqlClient, Map<string, Waker>>()

const makeWaker = (sql: SqlClient.SqlClient, channel: string): Waker => {
  if (sql.driver === "pglite") {
    return {
      poke: () => {
        for (const onNotify of local.get(channel) ?? []) onNotify("")
      }
    }
  }
  const spacing = SPACING_MS[channel] ?? 0
  let inFlight = false
  let again = false
  let sentAt = Number.NEGATIVE_INFINITY
  // pokes meanwhile fold into this send (inFlight), as during the NOTIFY itself
  const send = (): void => {
    inFlight = true
    const wait = sentAt + spacing - Date.now()
    if (wait > 0) setTimeout(notify, wait).unref()
    else notify()
  }
  const notify = (): void => {
    sentAt = Date.now()
    again = false
    Effect.runFork(
      sql`SELECT pg_notify(${channel}, '')`.pipe(
        Effect.ignore,
        Effect.ensuring(
          Effect.sync(() => {
            inFlight = false
            if (again) send()
          })
        )
      )
    )
  }
  return {
    poke: () => {
      if (inFlight) again = true
      else send()
    }
  }
}

const wakerFor = (sql: SqlClient.SqlClient, channel: string): Waker => {
  let byChannel = wakers.get(sql)
  if (byChannel === undefined) wakers.set(sql, (byChannel = new Map()))
  let waker = byChannel.get(channel)
  if (waker === undefined) byChannel.set(channel, (waker = makeWaker(sql, channel)))
  return waker
}

/** NOTIFY `channel` once the surrounding transaction commits (at once outside one), coalesced per node. */
export const notifyAfterCommit = (sql: SqlClient.SqlClient, channel: string): Effect.Effect<void> =>
  sql.afterCommit(Effect.sync(() => wakerFor(sql, channel).poke()))
