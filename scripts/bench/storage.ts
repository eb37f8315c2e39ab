// The storage section of `npm run bench` (BENCH_ONLY=storage runs it alone; issue 28's first target): downloading a
// 10 MB file at 16 connections through GET /files/{id} beside a raw baseline that serves the same bytes from the same
// store with node:http and a plain stream (the disk store's file with fs.createReadStream on the embedded node; the
// PostgreSQL store's chunk rows, four per query as the node reads them, on PostgreSQL), measured alternately in one
// run; target >= 80 % of the baseline's bytes per second.
// Runs on its own: `node --no-node-snapshot --experimental-strip-types scripts/bench/storage.ts`.
// Knobs: BENCH_STORAGE_DURATION (s per drive, default 5), BENCH_STORAGE_ROUNDS (alternations, 2), BENCH_WARMUP (s, 2),
// BENCH_STORAGE_CONNECTIONS (16), BENCH_STORAGE_MB (10), BENCH_LOG_LEVEL (the node's TROUPE_LOG_LEVEL, default none).
import { type ChildProcess, spawn } from "node:child_process"
import * as Crypto from "node:crypto"
import * as Fs from "node:fs"
import * as Http from "node:http"
import * as Os from "node:os"
import * as Path from "node:path"
import { freshDatabase, startNode } from "../../test/support/TestServer.ts"

const duration = Number(process.env.BENCH_STORAGE_DURATION ?? 5)
const rounds = Number(process.env.BENCH_STORAGE_ROUNDS ?? 2)
const warmup = Number(process.env.BENCH_WARMUP ?? 2)
const connections = Number(process.env.BENCH_STORAGE_CONNECTIONS ?? 16)
const megabytes = Number(process.env.BENCH_STORAGE_MB ?? 10)

/**
 * `connections` loops, each downloading the URL again and again for `seconds` (bodies read and dropped) with its own
 * keep-alive agent: MB/s of complete 200 answers and their p99. (autocannon parses bodies in JavaScript and was
 * itself the bottleneck at 10 MB per answer.)
 */
const drive = async (url: string, headers: Record<string, string>, seconds: number) => {
  const until = performance.now() + seconds * 1000
  const latencies: Array<number> = []
  let bytes = 0
  const loop = async () => {
    const agent = new Http.Agent({ keepAlive: true, maxSockets: 1 })
    while (performance.now() < until) {
      const start = performance.now()
      const got = await new Promise<number>((resolve, reject) => {
        Http.get(url, { agent, headers }, (res) => {
          if (res.statusCode !== 200) return reject(new Error(`${url}: ${res.statusCode}`))
          let n = 0
          res.on("data", (d: Buffer) => (n += d.length))
          res.on("end", () => resolve(n))
          res.on("error", reject)
        }).on("error", reject)
      })
      bytes += got
      latencies.push(performance.now() - start)
    }
    agent.destroy()
  }
  const began = performance.now()
  await Promise.all(Array.from({ length: connections }, loop))
  const elapsed = (performance.now() - began) / 1000
  latencies.sort((a, b) => a - b)
  return { mbps: bytes / 1024 / 1024 / elapsed, p99: Math.round(latencies[Math.floor(latencies.length * 0.99)] ?? 0) }
}

const main = async () => {
  const started = Date.now()
  const password = "bench-password-123"
  const db = process.env.DATABASE_URL ? await freshDatabase(process.env.DATABASE_URL) : undefined
  const dataDir = db ? undefined : Fs.mkdtempSync(Path.join(Os.tmpdir(), "troupe-bench-storage-"))
  const node = await startNode({
    TROUPE_ADMIN_PASSWORD: password,
    TROUPE_LOG_LEVEL: process.env.BENCH_LOG_LEVEL ?? "none",
    TROUPE_LIMIT_READS: "0",
    TROUPE_LIMIT_WRITES: "0",
    ...(db ? { DATABASE_URL: db.url } : { DATABASE_URL: "", TROUPE_DATA_DIR: dataDir! })
  })
  let raw: ChildProcess | undefined
  try {
    const token = (
      await node.request("POST", "/oidc/token", {
        raw: `grant_type=password&username=admin&password=${password}&scope=openid%20workspace:default`,
        headers: { "content-type": "application/x-www-form-urlencoded" }
      })
    ).body.access_token as string
    const form = new FormData()
    form.append("file", new Blob([Crypto.randomBytes(megabytes * 1024 * 1024)]), "bench.bin")
    const up = await fetch(`${node.baseUrl}/storage/workspace/default/api/v1/upload`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}` },
      body: form
    })
    if (up.status !== 201) throw new Error(`upload: ${up.status} ${await up.text()}`)
    const file = (await up.json()) as { id: string; size: number }

    // the baseline: the same store's bytes, node:http, a plain stream, in a process of its own (raw-storage.ts)
    const args =
      db === undefined
        ? ["disk", Path.join(dataDir!, "storage", "blobs", file.id), String(file.size)]
        : ["pg", db.url, file.id, String(file.size)]
    raw = spawn(
      process.execPath,
      [
        "--no-node-snapshot",
        "--experimental-strip-types",
        "--disable-warning=ExperimentalWarning",
        Path.join(import.meta.dirname, "raw-storage.ts"),
        ...args
      ],
      { stdio: ["ignore", "pipe", "inherit"] }
    )
    const port = await new Promise<number>((resolve, reject) => {
      raw!.stdout!.on("data", (d: Buffer) => {
        const m = /port (\d+)/.exec(d.toString())
        if (m) resolve(Number(m[1]))
      })
      raw!.on("exit", (code) => reject(new Error(`raw-storage exited with ${code}`)))
    })
    const rawUrl = `http://127.0.0.1:${port}/`
    const nodeUrl = `${node.baseUrl}/storage/workspace/default/api/v1/files/${file.id}`
    const auth = { authorization: `Bearer ${token}` }

    await drive(nodeUrl, auth, warmup)
    await drive(rawUrl, {}, warmup)
    const runs: Array<[number, number, number, number]> = []
    for (let i = 0; i < rounds; i++) {
      const x = await drive(nodeUrl, auth, duration)
      const y = await drive(rawUrl, {}, duration)
      runs.push([x.mbps, y.mbps, x.p99, y.p99])
    }
    const median = (i: number) => [...runs.map((r) => r[i]!)].sort((p, q) => p - q)[Math.floor(runs.length / 2)]!
    const [mbps, base, p99, baseP99] = [median(0), median(1), median(2), median(3)]
    console.log(
      `\nstorage, ${db ? "PostgreSQL (chunk rows)" : "PGlite (disk store)"}, node ${process.version}, ${megabytes} MB file, ` +
        `${connections} connections, ${rounds} x ${duration} s, ${((Date.now() - started) / 1000).toFixed(0)} s\n`
    )
    console.log("| measure | MB/s | p99 ms | baseline | MB/s | p99 ms | ratio | target | met |")
    console.log("|---|---|---|---|---|---|---|---|---|")
    console.log(
      `| GET /files/{id} | ${mbps.toFixed(0)} | ${p99} | raw node:http, same store | ${base.toFixed(0)} | ${baseP99} | ` +
        `${((mbps / base) * 100).toFixed(0)} % | >= 80 % | ${mbps >= 0.8 * base ? "yes" : "NO"} |`
    )
  } finally {
    raw?.kill("SIGTERM")
    await node.stop()
    await db?.drop()
    if (dataDir !== undefined) Fs.rmSync(dataDir, { recursive: true, force: true })
  }
}

main().catch((e) => {
  console.error(e)
  process.exit(1)
})
