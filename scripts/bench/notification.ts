// The notification section of `npm run bench` (BENCH_ONLY=notification runs it alone), on PostgreSQL, the targets of
// issue 30 measured in one run against baselines of the same run:
//   1. POST /email accepted (202) per second beside POST /records creates, BENCH_CONNECTIONS (64) connections each
//      (a send is a row and an answer, like a create); no provider: the worker captures what is accepted;
//   2. end to end to a local SMTP server (smtp-server, accepting everything): N messages posted and delivered by the
//      node, beside a raw baseline: nodemailer sending the same N messages to the same server from a plain loop with
//      the same concurrency (a pooled transport of C connections, C sends in flight);
//   3. queue-to-sent (the row's createdAt to its sentAt) at half the baseline's rate, offered open-loop: p50, p99.
// Every figure is printed with the machine's core count. Knobs: BENCH_NOTIFY_DURATION (s per autocannon round, 5),
// BENCH_NOTIFY_MESSAGES (N of target 2, 2000), BENCH_NOTIFY_CONCURRENCY (C, 16), BENCH_NOTIFY_OFFER_SECONDS (the
// length of target 3, 10), BENCH_NOTIFY_TARGETS (which of 1,2,3 to run: all), BENCH_CONNECTIONS (64), BENCH_WARMUP
// (s, 2), DATABASE_URL.
import autocannon from "autocannon"
import postgres from "postgres"
import { createTransport } from "nodemailer"
import * as Fs from "node:fs"
import * as Os from "node:os"
import { SMTPServer } from "smtp-server"
import { passwordToken } from "../../test/support/IdentityHelpers.ts"
import { freshDatabase, startNode } from "../../test/support/TestServer.ts"

const duration = Number(process.env.BENCH_NOTIFY_DURATION ?? 5)
const messages = Number(process.env.BENCH_NOTIFY_MESSAGES ?? 2000)
const concurrency = Number(process.env.BENCH_NOTIFY_CONCURRENCY ?? 16)
const offerSeconds = Number(process.env.BENCH_NOTIFY_OFFER_SECONDS ?? 10)
const connections = Number(process.env.BENCH_CONNECTIONS ?? 64)
const warmup = Number(process.env.BENCH_WARMUP ?? 2)
const baseUrl = process.env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/test"
const cores = Os.availableParallelism()
const targets = new Set((process.env.BENCH_NOTIFY_TARGETS ?? "1,2,3").split(",").map((t) => t.trim()))

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))
const percentile = (xs: ReadonlyArray<number>, p: number) => {
  const s = [...xs].sort((a, b) => a - b)
  return s.length === 0 ? Number.NaN : s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]!
}

/** CPU seconds (user + system) of the node and of the PostgreSQL backends serving its database (Linux /proc). */
const cpuSeconds = (nodePid: number | undefined, database: string) => {
  const ticks = (pid: string) => {
    try {
      const fields = Fs.readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ")
      return (Number(fields[11]) + Number(fields[12])) / 100
    } catch {
      return 0
    }
  }
  let pg = 0
  for (const pid of Fs.readdirSync("/proc").filter((d) => /^\d+$/.test(d))) {
    try {
      if (Fs.readFileSync(`/proc/${pid}/cmdline`, "utf8").includes(` ${database} `)) pg += ticks(pid)
    } catch {
      // gone meanwhile
    }
  }
  return { node: nodePid === undefined ? 0 : ticks(String(nodePid)), pg }
}

/** An SMTP sink: accepts every message, counts them by Message-ID. */
const startSink = async () => {
  const seen = new Set<string>()
  let count = 0
  const server = new SMTPServer({
    logger: false,
    authOptional: true,
    disabledCommands: ["STARTTLS"],
    onData: (stream, _session, callback) => {
      let head = ""
      stream.on("data", (chunk: Buffer) => {
        if (head.length < 4096) head += chunk.toString("utf8")
      })
      stream.on("end", () => {
        const id = /^message-id:\s*(\S+)/im.exec(head)?.[1]
        if (id !== undefined) seen.add(id)
        count++
        callback(null, `Ok: queued as S${count}`)
      })
    }
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()))
  const port = ((server as unknown as { server: import("node:net").Server }).server.address() as import("node:net").AddressInfo).port
  return { url: `smtp://127.0.0.1:${port}`, port, count: () => count, close: () => new Promise<void>((r) => server.close(() => r())) }
}

const drive = async (url: string, headers: Record<string, string>, body: () => string) => {
  const run = (seconds: number) =>
    autocannon({
      url,
      method: "POST",
      connections,
      duration: seconds,
      // a request slowed by a loaded machine is measured, not dropped at autocannon's default 10 s
      timeout: 120,
      headers: { ...headers, "content-type": "application/json" },
      requests: [{ setupRequest: (req: any) => ({ ...req, body: body() }) }]
    })
  if (warmup > 0) await run(warmup)
  const result = await run(duration)
  return { rps: result.requests.average, p99: result.latency.p99, non2xx: result.non2xx, errors: result.errors + result.timeouts }
}

/** Target 2's baseline: nodemailer from a plain loop, C sends in flight over a pool of C connections. */
const rawNodemailer = async (url: string, n: number) => {
  const transport = createTransport({ pool: true, maxConnections: concurrency, maxMessages: Number.POSITIVE_INFINITY, url })
  let next = 0
  const start = performance.now()
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < n) {
        const i = next++
        await transport.sendMail({
          from: "bench@troupe.test",
          to: `r${i}@example.com`,
          subject: `raw ${i}`,
          text: "hello from the baseline"
        })
      }
    })
  )
  const seconds = (performance.now() - start) / 1000
  transport.close()
  return n / seconds
}

const main = async () => {
  console.log(
    `machine: ${cores} cores (${Os.cpus()[0]?.model ?? "?"}), load average ${Os.loadavg()
      .map((l) => l.toFixed(1))
      .join(" ")}`
  )
  const db = await freshDatabase(baseUrl)
  const password = "bench-password-1"
  const node = await startNode({
    DATABASE_URL: db.url,
    TROUPE_ADMIN_PASSWORD: password,
    TROUPE_LOG_LEVEL: process.env.BENCH_LOG_LEVEL ?? "none",
    TROUPE_LIMIT_READS: "0",
    TROUPE_LIMIT_WRITES: "0",
    TROUPE_LIMIT_NOTIFICATIONS: "0",
    TROUPE_NOTIFY_CONCURRENCY: String(concurrency),
    TROUPE_NOTIFY_WORKSPACE_CONCURRENCY: String(concurrency)
  })
  const sink = await startSink()
  try {
    const token = await passwordToken(node, "admin", password)
    const auth = { authorization: `Bearer ${token}` }
    const base = "/notification/workspace/default/api/v1"
    const structure = await node.request("POST", "/workspace/default/api/v1/structures", {
      token,
      body: { name: "bench-notify", recordSlug: "bench-notify", properties: [{ name: "title", type: "string" }] }
    })
    if (structure.status >= 300) throw new Error(`structure: ${structure.status} ${structure.text}`)
    const sid = structure.body.id as string

    // 1. accepted sends beside record creates
    if (targets.has("1")) {
      let n = 0
      const records = await drive(`${node.baseUrl}/workspace/default/api/v1/records`, auth, () =>
        JSON.stringify({ structureId: sid, data: { title: `t${n++}` } })
      )
      const emails = await drive(`${node.baseUrl}${base}/email`, auth, () =>
        JSON.stringify({ to: `r${n++}@example.com`, subject: "Bench", text: "a message accepted into the outbox" })
      )
      console.log(
        `1. accepted at ${connections} connections: POST /records ${records.rps.toFixed(0)}/s (p99 ${records.p99} ms), ` +
          `POST /email ${emails.rps.toFixed(0)}/s (p99 ${emails.p99} ms, non-2xx ${emails.non2xx}, errors ${emails.errors + records.errors}) = ` +
          `${((100 * emails.rps) / records.rps).toFixed(0)} % of creates (target ≥ 80 %)`
      )
    }
    // let the worker capture the backlog before the delivery targets
    for (let i = 0; i < 600; i++) {
      const queued = await node.request("GET", `${base}/messages?status=queued&limit=1`, { token })
      if (queued.body.total === 0) break
      await sleep(500)
    }

    // and let it finish what the creates of target 1 left to do in the background (the events relay, search and
    // schema upkeep), which would otherwise run during target 2: at most a minute, until it uses under 10 % of a core
    for (let i = 0, last = cpuSeconds(node.process.pid, "").node; i < 120; i++) {
      await sleep(500)
      const now = cpuSeconds(node.process.pid, "").node
      if (now - last < 0.05) break
      last = now
    }

    // 2. end to end to the SMTP server, beside nodemailer alone
    const baseline = await rawNodemailer(sink.url, messages)
    const put = await node.request("PUT", `${base}/settings`, { token, body: { email: { smtpUrl: sink.url, from: "bench@troupe.test" } } })
    if (put.status !== 200) throw new Error(`settings: ${put.status} ${put.text}`)
    if (targets.has("2")) {
      const before = sink.count()
      const database = new URL(db.url).pathname.slice(1)
      const cpuBefore = cpuSeconds(node.process.pid, database)
      const xacts = async () => {
        const admin = postgres(baseUrl, { max: 1, onnotice: () => {} })
        const [row] = await admin`SELECT xact_commit::int AS n FROM pg_stat_database WHERE datname = ${database}`
        await admin.end()
        return Number(row?.n ?? 0)
      }
      const xactsBefore = process.env.BENCH_NOTIFY_VERBOSE ? await xacts() : 0
      const start = performance.now()
      let posted = 0
      await Promise.all(
        Array.from({ length: concurrency }, async () => {
          while (posted < messages) {
            const i = posted++
            const res = await node.request("POST", `${base}/email`, {
              token,
              body: { to: `e${i}@example.com`, subject: `e2e ${i}`, text: "hello" }
            })
            if (res.status !== 202) throw new Error(`send: ${res.status} ${res.text}`)
          }
        })
      )
      const postedIn = performance.now() - start
      const deliveredThen = sink.count() - before
      while (sink.count() - before < messages) await sleep(5)
      const cpu = cpuSeconds(node.process.pid, database)
      if (process.env.BENCH_NOTIFY_VERBOSE) {
        await sleep(600)
        console.log(`   transactions per message: ${((await xacts()) - xactsBefore) / messages}`)
        console.log(
          `   posted in ${postedIn.toFixed(0)} ms, ${deliveredThen} delivered by then; CPU per message: node ` +
            `${((1e6 * (cpu.node - cpuBefore.node)) / messages).toFixed(0)} µs, PostgreSQL ${((1e6 * (cpu.pg - cpuBefore.pg)) / messages).toFixed(0)} µs`
        )
      }
      const e2e = messages / ((performance.now() - start) / 1000)
      console.log(
        `2. end to end, ${messages} messages, ${concurrency} in flight: nodemailer loop ${baseline.toFixed(0)}/s, ` +
          `Troupe ${e2e.toFixed(0)}/s = ${((100 * e2e) / baseline).toFixed(0)} % of the baseline (target ≥ 50 %)`
      )
    }

    // 3. queue-to-sent at half the baseline's rate, offered open-loop
    if (targets.has("3")) {
      const rate = baseline / 2
      const total = Math.max(1, Math.round(rate * offerSeconds))
      const ids: Array<string> = []
      const offerStart = performance.now()
      const inFlight: Array<Promise<void>> = []
      for (let i = 0; i < total; i++) {
        const due = offerStart + (i * 1000) / rate
        const wait = due - performance.now()
        if (wait > 0) await sleep(wait)
        inFlight.push(
          node
            .request("POST", `${base}/email`, { token, body: { to: `q${i}@example.com`, subject: `q ${i}`, text: "latency" } })
            .then((res) => {
              if (res.status === 202) ids.push(res.body.id)
            })
        )
      }
      await Promise.all(inFlight)
      const waits: Array<number> = []
      for (const id of ids) {
        for (let i = 0; i < 600; i++) {
          const m = (await node.request("GET", `${base}/messages/${id}`, { token })).body
          if (m.status === "sent") {
            waits.push(Date.parse(m.sentAt) - Date.parse(m.createdAt))
            break
          }
          await sleep(100)
        }
      }
      console.log(
        `3. queue-to-sent at ${rate.toFixed(0)}/s offered (half the baseline) for ${offerSeconds} s, ${waits.length} of ${total} sent: ` +
          `p50 ${percentile(waits, 50)} ms, p99 ${percentile(waits, 99)} ms (target p99 ≤ 1000 ms)`
      )
    }
    console.log(`(${cores} cores; figures of one run on this machine, compare the ratios)`)
  } finally {
    await sink.close()
    await node.stop()
    await db.drop()
  }
}

main().catch((e) => {
  console.error(e)
  process.exit(1)
})
