// `npm run fuzz`: the long profile of the contract fuzzer (test/support/FuzzRunner.ts). Starts a Troupe node (PGlite
// in memory, or a fresh PostgreSQL database when DATABASE_URL is set), builds its fixtures, sends FUZZ_REQUESTS
// requests (default 20,000) derived from the HttpApi definition, prints the report and the failing requests (the first
// 50, bodies cut at 8 KiB; the JSON report has them whole), and exits 1 on any failure.
//   FUZZ_SEED         seed (default: random, printed); the same seed sends the same requests, but for the ids the
//                     server makes
//   FUZZ_REQUESTS     requests (default 20000)
//   FUZZ_CONCURRENCY  requests in flight (default 8; 1 for the most reproducible run)
//   FUZZ_ONLY         comma-separated operation ids (e.g. records.create,query.query)
//   FUZZ_TRACE        comma-separated operation ids (or *) whose every request and answer is printed
//   FUZZ_REPORT       file to write the JSON report to (failing requests whole; default: a temp file on failure)
import * as Crypto from "node:crypto"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { formatFailure, formatReport } from "../test/support/FuzzReport.ts"
import { runFuzz } from "../test/support/FuzzRunner.ts"
import { fuzzServerEnv } from "../test/support/FuzzServer.ts"
import { startServer } from "../test/support/TestServer.ts"

const seed = process.env.FUZZ_SEED || Crypto.randomBytes(6).toString("hex")
const requests = Number(process.env.FUZZ_REQUESTS || 20_000)
const concurrency = Number(process.env.FUZZ_CONCURRENCY || 8)
const list = (value: string | undefined) =>
  (value ?? "")
    .split(",")
    .map((s) => s.trim())
    .filter((s) => s.length > 0)
const only = list(process.env.FUZZ_ONLY)
const trace = list(process.env.FUZZ_TRACE)

const log = (line: string) => process.stdout.write(`${line}\n`)
log(`fuzz: FUZZ_SEED=${seed} (${process.env.DATABASE_URL ? "PostgreSQL" : "PGlite"})`)
const server = await startServer({ env: fuzzServerEnv })
let exitCode = 1
try {
  const report = await runFuzz(server, { seed, requests, concurrency, only, trace, log })
  log(formatReport(report))
  for (const failure of report.failures) log(`\n${formatFailure(failure)}`)
  const hidden = report.failureCount - report.failures.length
  if (hidden > 0) log(`\n(${hidden} more failures not shown)`)
  // the JSON report holds every failing request whole (the printout cuts bodies at 8 KiB)
  const file = process.env.FUZZ_REPORT || (report.failureCount > 0 ? Path.join(Os.tmpdir(), `troupe-fuzz-${seed}.json`) : undefined)
  if (file !== undefined) {
    Fs.writeFileSync(file, JSON.stringify({ ...report, perOperation: Object.fromEntries(report.perOperation) }, null, 2))
    log(`fuzz: report written to ${file}`)
  }
  log(
    report.failureCount === 0
      ? `fuzz: OK (FUZZ_SEED=${seed})`
      : `fuzz: ${report.failureCount} failures; replay with FUZZ_SEED=${seed} FUZZ_REQUESTS=${requests}`
  )
  exitCode = report.failureCount === 0 ? 0 : 1
} catch (e) {
  log(`fuzz: aborted: ${e instanceof Error ? e.stack : String(e)}`)
  log(server.output().slice(-4000))
} finally {
  await server.close()
}
process.exit(exitCode)
