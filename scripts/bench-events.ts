// Events benchmark: starts a real node (embedded PGlite, or PostgreSQL when DATABASE_URL is set), writes records
// through the HTTP API and measures what comes out the other side:
// - webhook fan-out: deliveries/s to a local node:http receiver across W webhooks for a burst of writes, and the
//   latency from each write's 201 (commit) to the receiver getting the POST (p50/p99), for the burst and for writes
//   paced at a rate the node sustains (the burst's latency is mostly queueing behind the burst itself);
// - realtime: events/s delivered to C open SSE connections (every connection gets every event).
// Usage: node --experimental-strip-types scripts/bench-events.ts [--events 2000] [--webhooks 4] [--sse 1000]
//        [--sse-events 200] [--concurrency 16] [--rate 20] [--paced-seconds 10] [--json]
import * as Http from "node:http"
import type * as Net from "node:net"
import { startServer } from "../test/support/TestServer.ts"

const arg = (name: string, fallback: number) => {
  const at = process.argv.indexOf(`--${name}`)
  return at > 0 && process.argv[at + 1] !== undefined ? Number(process.argv[at + 1]) : fallback
}
const EVENTS = arg("events", 2000)
const WEBHOOKS = arg("webhooks", 4)
const SSE_CONNECTIONS = arg("sse", 1000)
const SSE_EVENTS = arg("sse-events", 200)
const CONCURRENCY = arg("concurrency", 16)
const RATE = arg("rate", 20)
const PACED_SECONDS = arg("paced-seconds", 10)
const JSON_OUTPUT = process.argv.includes("--json")

const log = (...a: Array<unknown>) => {
  if (!JSON_OUTPUT) console.log(...a)
}

const percentile = (sorted: ReadonlyArray<number>, p: number) =>
  sorted.length === 0 ? NaN : sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!

const round = (n: number, digits = 1) => Math.round(n * 10 ** digits) / 10 ** digits

/** Runs `task(i)` for i in [0, n) with at most `limit` in flight. */
const pool = async (n: number, limit: number, task: (i: number) => Promise<void>) => {
  let next = 0
  await Promise.all(
    Array.from({ length: Math.min(limit, n) }, async () => {
      while (next < n) await task(next++)
    })
  )
}

const main = async () => {
  const server = await startServer({ env: { TROUPE_LOG_LEVEL: "error", TROUPE_LIMIT_WRITES: "0", TROUPE_LIMIT_READS: "0" } })
  const results: Record<string, unknown> = { backend: process.env.DATABASE_URL ? "postgresql" : "pglite" }
  try {
    const token = await server.adminToken()
    const structure = await server.request("POST", `${server.base}/structures`, {
      token,
      body: {
        name: "bench",
        recordSlug: "bench",
        properties: [
          { name: "n", type: "number" },
          { name: "run", type: "string" }
        ]
      }
    })
    if (structure.status >= 300) throw new Error(`structure: ${structure.status} ${structure.text}`)
    const write = async (n: number, run: string) => {
      const res = await server.request("POST", `${server.base}/structures/bench/records`, { token, body: { n, run } })
      if (res.status >= 300) throw new Error(`write: ${res.status} ${res.text}`)
      return performance.now()
    }

    // Webhook fan-out
    interface Run {
      readonly expected: number
      readonly committedAt: Map<number, number>
      readonly latencies: Array<number>
      delivered: number
      last: number
      done: () => void
    }
    const runs = new Map<string, Run>()
    const receiver = Http.createServer({ keepAlive: true }, (req, res) => {
      let body = ""
      req.on("data", (c) => (body += c))
      req.on("end", () => {
        res.writeHead(200).end()
        const now = performance.now()
        let record: { n?: number; run?: string } | undefined
        try {
          record = JSON.parse(body).data?.record
        } catch {
          return
        }
        const run = runs.get(record?.run ?? "")
        if (run === undefined) return
        const at = run.committedAt.get(record!.n!)
        if (at !== undefined) run.latencies.push(Math.max(0, now - at))
        run.last = now
        if (++run.delivered === run.expected) run.done()
      })
    })
    await new Promise<void>((r) => receiver.listen(0, "127.0.0.1", () => r()))
    const url = `http://127.0.0.1:${(receiver.address() as Net.AddressInfo).port}`
    for (let i = 0; i < WEBHOOKS; i++) {
      const res = await server.request("POST", `${server.base}/webhooks`, {
        token,
        body: { url: `${url}/hook-${i}`, events: ["record.created"], filters: { structure: "bench", query: "run IN ('burst', 'paced')" } }
      })
      if (res.status !== 201) throw new Error(`webhook: ${res.status} ${res.text}`)
    }
    /** Writes `count` records (all at once with CONCURRENCY writers, or paced at `rate`/s) and waits for delivery. */
    const webhookRun = async (name: string, count: number, rate?: number) => {
      let done: () => void = () => {}
      const finished = new Promise<void>((r) => (done = r))
      const run: Run = { expected: count * WEBHOOKS, committedAt: new Map(), latencies: [], delivered: 0, last: 0, done }
      runs.set(name, run)
      const start = performance.now()
      if (rate === undefined) {
        await pool(count, CONCURRENCY, async (n) => {
          run.committedAt.set(n, await write(n, name))
        })
      } else {
        await Promise.all(
          Array.from({ length: count }, async (_, n) => {
            await new Promise((r) => setTimeout(r, (n / rate) * 1000))
            run.committedAt.set(n, await write(n, name))
          })
        )
      }
      const writesDone = performance.now()
      await Promise.race([
        finished,
        new Promise((_, reject) => setTimeout(() => reject(new Error(`${name}: deliveries timed out`)), 300_000))
      ])
      run.latencies.sort((a, b) => a - b)
      return {
        writes: count,
        webhooks: WEBHOOKS,
        ...(rate === undefined ? {} : { targetWritesPerSecond: rate }),
        writesPerSecond: round(count / ((writesDone - start) / 1000)),
        deliveriesPerSecond: round(run.expected / ((run.last - start) / 1000)),
        commitToDeliveryMs: {
          p50: round(percentile(run.latencies, 50)),
          p99: round(percentile(run.latencies, 99)),
          max: round(run.latencies[run.latencies.length - 1] ?? NaN)
        }
      }
    }
    log(`webhooks, burst: ${EVENTS} writes by ${CONCURRENCY} writers x ${WEBHOOKS} webhooks`)
    results.webhooksBurst = await webhookRun("burst", EVENTS)
    log("  ", results.webhooksBurst)
    log(`webhooks, paced: ${RATE} writes/s for ${PACED_SECONDS} s x ${WEBHOOKS} webhooks`)
    results.webhooksPaced = await webhookRun("paced", RATE * PACED_SECONDS, RATE)
    log("  ", results.webhooksPaced)
    receiver.closeAllConnections()
    receiver.close()

    // Realtime fan-out
    log(`realtime: ${SSE_CONNECTIONS} SSE connections, ${SSE_EVENTS} writes`)
    const counts = new Array<number>(SSE_CONNECTIONS).fill(0)
    let complete = 0
    let allReceived: () => void = () => {}
    const received = new Promise<void>((r) => (allReceived = r))
    let lastReceive = 0
    const sockets: Array<Http.ClientRequest> = []
    const agent = new Http.Agent({ keepAlive: true, maxSockets: Infinity })
    const target = new URL(`${server.baseUrl}/realtime/workspace/${server.workspace}/api/v1/events?structure=bench`)
    await pool(
      SSE_CONNECTIONS,
      50,
      (i) =>
        new Promise<void>((resolve, reject) => {
          const req = Http.get(target, { agent, headers: { authorization: `Bearer ${token}`, accept: "text/event-stream" } }, (res) => {
            if (res.statusCode !== 200) return reject(new Error(`SSE ${res.statusCode}`))
            res.setEncoding("utf8")
            let tail = ""
            res.on("data", (chunk: string) => {
              // every message's "id: " line follows a blank line; keep 4 chars so a split marker is seen once
              const text = tail + chunk
              let from = 0
              let at: number
              while ((at = text.indexOf("\nid: ", from)) >= 0) {
                counts[i]!++
                from = at + 5
              }
              tail = text.slice(-4)
              if (counts[i] === SSE_EVENTS) {
                lastReceive = performance.now()
                if (++complete === SSE_CONNECTIONS) allReceived()
              }
            })
            resolve()
          })
          req.on("error", reject)
          sockets.push(req)
        })
    )
    await new Promise((r) => setTimeout(r, 500))
    const sseStart = performance.now()
    await pool(SSE_EVENTS, CONCURRENCY, async (n) => {
      await write(n, "realtime")
    })
    await Promise.race([received, new Promise((r) => setTimeout(r, 120_000))])
    results.realtime = {
      connections: SSE_CONNECTIONS,
      writes: SSE_EVENTS,
      connectionsComplete: complete,
      eventsDeliveredPerSecond: round(counts.reduce((a, b) => a + b, 0) / (((lastReceive || performance.now()) - sseStart) / 1000))
    }
    log("  ", results.realtime)
    for (const s of sockets) s.destroy()
    agent.destroy()
  } finally {
    await server.close()
  }
  if (JSON_OUTPUT) console.log(JSON.stringify(results))
}

main().catch((e) => {
  console.error(e)
  process.exit(1)
})
