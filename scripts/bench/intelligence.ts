// The intelligence section of `npm run bench` (BENCH_ONLY=intelligence runs it alone): what schema discovery costs
// the write path, on one node in one run (issue 31's target: creates with discovery on at >= 90 % of the req/s with
// it off). "Off": a strict structure declaring both fields. "On": an auto-evolving structure declaring one of them,
// so every create carries an undeclared field that the relay hands to the profiler (intelligence/Observer.ts).
// The two are driven alternately; medians.
// Runs on its own: `node --no-node-snapshot --experimental-strip-types scripts/bench/intelligence.ts`. On PostgreSQL
// (DATABASE_URL, a fresh database beside it) or, without it, embedded PGlite in memory.
// Knobs: BENCH_INTEL_DURATION (s per drive, default 5), BENCH_INTEL_ROUNDS (alternations, 2), BENCH_WARMUP (s, 2),
// BENCH_CONNECTIONS (64), BENCH_LOG_LEVEL (the node's TROUPE_LOG_LEVEL, default none).
import { compare, main, runSection, type Target } from "./alternate.ts"

const knobs = { duration: Number(process.env.BENCH_INTEL_DURATION ?? 5), rounds: Number(process.env.BENCH_INTEL_ROUNDS ?? 2) }

main(() =>
  runSection("intelligence", knobs, async (node, token) => {
    const base = "/workspace/default/api/v1"
    const structure = async (slug: string, mode: string, names: ReadonlyArray<string>) => {
      const res = await node.request("POST", `${base}/structures`, {
        token,
        body: { name: slug, recordSlug: slug, schemaDiscoveryMode: mode, properties: names.map((name) => ({ name, type: "string" })) }
      })
      if (res.status >= 300) throw new Error(`structure ${slug}: ${res.status} ${res.text}`)
    }
    await structure("bench-discovery-off", "strict", ["title", "note"])
    await structure("bench-discovery-on", "auto-evolving", ["title"])
    const create = (slug: string): Target => ({
      path: `${base}/records`,
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      body: JSON.stringify({ structureId: slug, data: { title: "a title", note: "an undeclared note" } }),
      status: 201
    })
    const r = await compare(node, knobs, create("bench-discovery-on"), create("bench-discovery-off"))
    return [
      {
        measure: "create, discovery on (undeclared field observed)",
        rps: r.a,
        baseline: "create, discovery off (strict)",
        baselineRps: r.b,
        wanted: 0.9
      }
    ]
  })
)
