// The CORS section of `npm run bench` (BENCH_ONLY=cors runs it alone): what browser apps cost the node, on one node
// in one run, each figure beside its baseline measured alternately with it (issue 32's target: a preflight answered
// at >= 90 % of GET /health's req/s).
//   1. preflights (OPTIONS with Origin, Access-Control-Request-Method and -Headers, for PATCH /records/{id}, from an
//      origin the workspace allows) beside GET /health;
//   2. GET /records/{id} (the fast lane) from an allowed origin beside the same read without an Origin: the price of
//      the grant's headers on the hottest route.
// Runs on its own: `node --no-node-snapshot --experimental-strip-types scripts/bench/cors.ts`. On PostgreSQL
// (DATABASE_URL, a fresh database beside it) or, without it, embedded PGlite in memory.
// Knobs: BENCH_CORS_DURATION (s per drive, default 5), BENCH_CORS_ROUNDS (alternations, 2), BENCH_WARMUP (s, 2),
// BENCH_CONNECTIONS (64), BENCH_LOG_LEVEL (the node's TROUPE_LOG_LEVEL, default none).
import { compare, main, runSection, type Target } from "./alternate.ts"

const knobs = { duration: Number(process.env.BENCH_CORS_DURATION ?? 5), rounds: Number(process.env.BENCH_CORS_ROUNDS ?? 2) }
const APP = "https://app.example"

main(() =>
  runSection("cors", knobs, async (node, token) => {
    const base = "/workspace/default/api/v1"
    const put = await node.request("PUT", `${base}/settings/cors`, { token, body: { allowedOrigins: [APP] } })
    if (put.status !== 200) throw new Error(`settings/cors: ${put.status} ${put.text}`)
    await node.request("POST", `${base}/structures`, {
      token,
      body: { name: "Bench cors", properties: [{ name: "title", type: "string" }] }
    })
    const record = await node.request("POST", `${base}/records`, { token, body: { structureId: "bench-cors", data: { title: "x" } } })
    if (record.status !== 201) throw new Error(`record: ${record.status} ${record.text}`)
    const read = `${base}/records/${record.body.id}`

    const health: Target = { path: "/health", status: 200 }
    const preflight: Target = {
      path: read,
      method: "OPTIONS",
      headers: {
        origin: APP,
        "access-control-request-method": "PATCH",
        "access-control-request-headers": "authorization, content-type, if-match"
      },
      status: 204
    }
    const plainRead: Target = { path: read, headers: { authorization: `Bearer ${token}` }, status: 200 }
    const corsRead: Target = { path: read, headers: { authorization: `Bearer ${token}`, origin: APP }, status: 200 }

    const first = await compare(node, knobs, preflight, health)
    const second = await compare(node, knobs, corsRead, plainRead)
    return [
      { measure: "preflight (OPTIONS, allowed origin)", rps: first.a, baseline: "GET /health", baselineRps: first.b, wanted: 0.9 },
      { measure: "GET /records/{id}, allowed Origin", rps: second.a, baseline: "same read, no Origin", baselineRps: second.b }
    ]
  })
)
