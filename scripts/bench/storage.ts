// The storage section of `npm run bench` (BENCH_ONLY=storage runs it alone; issue 28's first target): downloading a
// 10 MB file at 16 connections through GET /files/{id} beside a raw baseline that serves the same bytes from the same
// store with node:http and a plain stream (the disk store's file with fs.createReadStream on the embedded node; the
// PostgreSQL store's chunk rows, four per query as the node reads them, on PostgreSQL), measured alternately in one
// run; target >= 80 % of the baseline's bytes per second. Then the other figures: uploads of 1 MB files at
// 16 connections (POST /upload, multipart) beside the same baseline's POST (the body piped into the same store:
// a file, or chunk rows), target >= 60 %; a 4 KB file's GET p99 beside GET /records/{id} on the same node, target
// <= 2x; and a 1 GiB upload then download (streamed from and to this process) with the node's peak RSS over its
// idle RSS, target <= 64 MiB.
// Runs on its own: `node --no-node-snapshot --experimental-strip-types scripts/bench/storage.ts`.
// Knobs: BENCH_STORAGE_DURATION (s per drive, default 5), BENCH_STORAGE_ROUNDS (alternations, 2), BENCH_WARMUP (s, 2),
// BENCH_STORAGE_CONNECTIONS (16), BENCH_STORAGE_MB (10), BENCH_STORAGE_BIG_MB (the large file, 1024; 0 skips it),
// BENCH_LOG_LEVEL (the node's TROUPE_LOG_LEVEL, default none), BENCH_STORAGE_ONLY (the measures to run, comma
// separated: download, upload, small, big; default all of them).
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
const bigMegabytes = Number(process.env.BENCH_STORAGE_BIG_MB ?? 1024)
const only = new Set((process.env.BENCH_STORAGE_ONLY ?? "download,upload,small,big").split(",").map((s) => s.trim()))
const MiB = 1024 * 1024

/** VmRSS of a process in MiB. */
const rssMb = (pid: number) => Number(/VmRSS:\s+(\d+)/.exec(Fs.readFileSync(`/proc/${pid}/status`, "utf8"))?.[1] ?? Number.NaN) / 1024

/** One multipart body with a single `file` part of `bytes`. */
const multipart = (bytes: Buffer) => {
  const boundary = "benchboundary7MA4YWxk"
  const head = `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="bench.bin"\r\nContent-Type: application/octet-stream\r\n\r\n`
  return {
    body: Buffer.concat([Buffer.from(head), bytes, Buffer.from(`\r\n--${boundary}--\r\n`)]),
    head,
    tail: `\r\n--${boundary}--\r\n`,
    contentType: `multipart/form-data; boundary=${boundary}`
  }
}

/**
 * `connections` loops, each making one request after another with its own keep-alive agent for `seconds`: MB/s of
 * the bytes `once` reports, and the p99 of its latencies.
 */
const loops = async (seconds: number, once: (agent: Http.Agent) => Promise<number>) => {
  const until = performance.now() + seconds * 1000
  const latencies: Array<number> = []
  let bytes = 0
  const loop = async () => {
    const agent = new Http.Agent({ keepAlive: true, maxSockets: 1 })
    while (performance.now() < until) {
      const start = performance.now()
      // not `bytes += await once(agent)`: that reads `bytes` before the await, and the loops overwrote each other's
      // counts (the figures before 2026-11-28's third session counted a fraction of the bytes)
      const got = await once(agent)
      bytes += got
      latencies.push(performance.now() - start)
    }
    agent.destroy()
  }
  const began = performance.now()
  await Promise.all(Array.from({ length: connections }, loop))
  const elapsed = (performance.now() - began) / 1000
  latencies.sort((a, b) => a - b)
  return {
    mbps: bytes / MiB / elapsed,
    rps: latencies.length / elapsed,
    p99: Math.round((latencies[Math.floor(latencies.length * 0.99)] ?? 0) * 10) / 10
  }
}

/** POSTs of `body` (answered 201) in `connections` loops for `seconds`. */
const driveUploads = (url: string, headers: Record<string, string>, body: Buffer, seconds: number) =>
  loops(
    seconds,
    (agent) =>
      new Promise<number>((resolve, reject) => {
        const req = Http.request(url, { method: "POST", agent, headers: { ...headers, "content-length": body.length } }, (res) => {
          res.resume()
          res.on("end", () => (res.statusCode === 201 ? resolve(body.length) : reject(new Error(`${url}: ${res.statusCode}`))))
        })
        req.on("error", reject)
        req.end(body)
      })
  )

/** Streams a `mb` MiB upload (a repeated random MiB) through POST /upload, then downloads it: the node's peak RSS. */
const bigRoundTrip = async (baseUrl: string, token: string, pid: number, mb: number) => {
  const idle = rssMb(pid)
  let peak = idle
  const sampler = setInterval(() => (peak = Math.max(peak, rssMb(pid))), 50)
  const block = Crypto.randomBytes(MiB)
  const form = multipart(Buffer.alloc(0))
  const started = performance.now()
  const id = await new Promise<string>((resolve, reject) => {
    const req = Http.request(
      `${baseUrl}/storage/workspace/default/api/v1/upload`,
      {
        method: "POST",
        headers: {
          authorization: `Bearer ${token}`,
          "content-type": form.contentType,
          "content-length": form.head.length + mb * MiB + form.tail.length
        }
      },
      (res) => {
        let text = ""
        res.on("data", (d: Buffer) => (text += d.toString()))
        res.on("end", () =>
          res.statusCode === 201 ? resolve(JSON.parse(text).id) : reject(new Error(`big upload: ${res.statusCode} ${text}`))
        )
      }
    )
    req.on("error", reject)
    let sent = 0
    const write = () => {
      if (sent === 0) req.write(form.head)
      while (sent < mb) {
        sent++
        if (!req.write(block)) return void req.once("drain", write)
      }
      req.end(form.tail)
    }
    write()
  })
  const uploadSeconds = (performance.now() - started) / 1000
  const downStart = performance.now()
  const got = await new Promise<number>((resolve, reject) => {
    Http.get(`${baseUrl}/storage/workspace/default/api/v1/files/${id}`, { headers: { authorization: `Bearer ${token}` } }, (res) => {
      let n = 0
      res.on("data", (d: Buffer) => (n += d.length))
      res.on("end", () => resolve(n))
      res.on("error", reject)
    }).on("error", reject)
  })
  clearInterval(sampler)
  if (got !== mb * MiB) throw new Error(`big download: ${got} bytes of ${mb * MiB}`)
  return { idle, peak, uploadSeconds, downloadSeconds: (performance.now() - downStart) / 1000 }
}

/**
 * GETs of the URL (answered 200, bodies read and dropped) in `connections` loops for `seconds`. (autocannon parses
 * bodies in JavaScript and was itself the bottleneck at 10 MB per answer.)
 */
const drive = (url: string, headers: Record<string, string>, seconds: number) =>
  loops(
    seconds,
    (agent) =>
      new Promise<number>((resolve, reject) => {
        Http.get(url, { agent, headers }, (res) => {
          if (res.statusCode !== 200) return reject(new Error(`${url}: ${res.statusCode}`))
          let n = 0
          res.on("data", (d: Buffer) => (n += d.length))
          res.on("end", () => resolve(n))
          res.on("error", reject)
        }).on("error", reject)
      })
  )

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
    TROUPE_STORAGE_MAX_FILE_BYTES: String(Math.max(bigMegabytes, megabytes) * MiB + MiB),
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
    const auth = { authorization: `Bearer ${token}` }
    const uploadUrl = `${node.baseUrl}/storage/workspace/default/api/v1/upload`
    console.log(
      `\nstorage, ${db ? "PostgreSQL (chunk rows)" : "PGlite (disk store)"}, node ${process.version}, ${megabytes} MB file, ` +
        `${connections} connections, ${rounds} x ${duration} s\n`
    )
    console.log("| measure | MB/s | p99 ms | baseline | MB/s | p99 ms | ratio | target | met |")
    console.log("|---|---|---|---|---|---|---|---|---|")
    if (only.has("download") || only.has("upload")) {
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

      if (only.has("download")) {
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
          `| GET /files/{id} | ${mbps.toFixed(0)} | ${p99} | raw node:http, same store | ${base.toFixed(0)} | ${baseP99} | ` +
            `${((mbps / base) * 100).toFixed(0)} % | >= 80 % | ${mbps >= 0.8 * base ? "yes" : "NO"} |`
        )
      }

      // uploads of 1 MB files, alternately with the baseline's POST of the same body
      if (only.has("upload")) {
        const oneMb = multipart(Crypto.randomBytes(MiB))
        const uploadHeaders = { ...auth, "content-type": oneMb.contentType }
        await driveUploads(uploadUrl, uploadHeaders, oneMb.body, warmup)
        await driveUploads(rawUrl, { "content-type": oneMb.contentType }, oneMb.body, warmup)
        const ups: Array<[number, number, number, number]> = []
        for (let i = 0; i < rounds; i++) {
          const x = await driveUploads(uploadUrl, uploadHeaders, oneMb.body, duration)
          const y = await driveUploads(rawUrl, { "content-type": oneMb.contentType }, oneMb.body, duration)
          ups.push([x.mbps, y.mbps, x.p99, y.p99])
        }
        const upMedian = (i: number) => [...ups.map((r) => r[i]!)].sort((p, q) => p - q)[Math.floor(ups.length / 2)]!
        const [upMbps, upBase] = [upMedian(0), upMedian(1)]
        console.log(
          `| POST /upload, 1 MB files | ${upMbps.toFixed(0)} | ${upMedian(2)} | raw node:http POST, body piped into the same store | ` +
            `${upBase.toFixed(0)} | ${upMedian(3)} | ${((upMbps / upBase) * 100).toFixed(0)} % | >= 60 % | ${upMbps >= 0.6 * upBase ? "yes" : "NO"} |`
        )
      }
    }

    // a 4 KB file's download beside GET /records/{id}, alternately
    if (only.has("small")) {
      const small = multipart(Crypto.randomBytes(4096))
      const smallUp = await fetch(uploadUrl, {
        method: "POST",
        headers: { ...auth, "content-type": small.contentType },
        body: small.body
      })
      const smallId = ((await smallUp.json()) as { id: string }).id
      const structure = await node.request("POST", "/workspace/default/api/v1/structures", {
        token,
        body: { name: "bench-files", recordSlug: "bench-files", properties: [{ name: "title", type: "string" }] }
      })
      const record = await node.request("POST", "/workspace/default/api/v1/records", {
        token,
        body: { structureId: structure.body.id, data: { title: "a record of about the same size as nothing" } }
      })
      const smallUrl = `${node.baseUrl}/storage/workspace/default/api/v1/files/${smallId}`
      const recordUrl = `${node.baseUrl}/workspace/default/api/v1/records/${record.body.id}`
      await drive(smallUrl, auth, warmup)
      await drive(recordUrl, auth, warmup)
      const p99s: Array<[number, number, number, number]> = []
      for (let i = 0; i < rounds; i++) {
        const [file, record] = [await drive(smallUrl, auth, duration), await drive(recordUrl, auth, duration)]
        p99s.push([file.p99, record.p99, file.rps, record.rps])
      }
      const smallMedian = (i: number) => [...p99s.map((r) => r[i]!)].sort((p, q) => p - q)[Math.floor(p99s.length / 2)]!
      const [fileP99, recordP99] = [smallMedian(0), smallMedian(1)]
      console.log(
        `| GET /files/{id}, 4 KB, ${smallMedian(2).toFixed(0)}/s | | ${fileP99} | ` +
          `GET /records/{id}, same node, ${smallMedian(3).toFixed(0)}/s | | ${recordP99} | ` +
          `${(fileP99 / Math.max(0.1, recordP99)).toFixed(2)}x p99 | <= 2x | ${fileP99 <= 2 * Math.max(0.1, recordP99) ? "yes" : "NO"} |`
      )
    }

    if (bigMegabytes > 0 && only.has("big")) {
      const big = await bigRoundTrip(node.baseUrl, token, node.process.pid!, bigMegabytes)
      const grew = big.peak - big.idle
      console.log(
        `| ${bigMegabytes} MiB upload (${big.uploadSeconds.toFixed(1)} s) then download (${big.downloadSeconds.toFixed(1)} s) | | | ` +
          `node RSS idle ${big.idle.toFixed(0)} MiB, peak ${big.peak.toFixed(0)} MiB | | | +${grew.toFixed(0)} MiB | <= 64 MiB | ${grew <= 64 ? "yes" : "NO"} |`
      )
    }
    console.log(`\n${((Date.now() - started) / 1000).toFixed(0)} s`)
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
