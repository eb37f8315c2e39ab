// The fuzzer's report: one failure with its request and answer, and a whole run (totals, then one line per operation).
import * as Crypto from "node:crypto"
import { principals } from "./FuzzFixtures.ts"
import { classes, type Failure, type FuzzReport } from "./FuzzTypes.ts"

// ------------------------------------------------------------------------------------------------ report

const show = (text: string, limit: number) => {
  if (text.length <= limit) return JSON.stringify(text)
  const hash = Crypto.createHash("sha256").update(text).digest("hex").slice(0, 16)
  return `${JSON.stringify(text.slice(0, limit))}… (${text.length} characters in all, sha256 ${hash})`
}

/** A failing request (bodies up to 8 KiB; beyond, their start and a hash: the JSON report has them whole) and its answer. */
export const formatFailure = (failure: Failure): string => {
  const lines = [`FAILURE: ${failure.problems.join("; ")}`]
  const r = failure.request
  if (r !== undefined) {
    lines.push(`  request #${r.index} ${r.op} class=${r.cls} principal=${r.principal} variant=${r.variant}`)
    if (r.raw !== undefined) {
      lines.push(`  raw bytes: ${show(r.raw.text, 8192)}${r.raw.halfClose ? " (then half-closed)" : ""}`)
    } else {
      lines.push(`  ${r.method} ${r.target}`)
      for (const [k, v] of Object.entries(r.headers)) {
        lines.push(`  ${k}: ${k === "authorization" ? `${v.slice(0, 24)}…` : v}`)
      }
      if (r.body !== undefined) lines.push(`  body${r.chunked ? " (chunked)" : ""}: ${show(r.body, 8192)}`)
    }
  }
  const o = failure.outcome
  if (o !== undefined) {
    const error = o.error ? ` (${o.error})` : ""
    lines.push(`  -> ${o.status ?? "no status"}${error} in ${o.ms} ms, x-request-id ${o.headers["x-request-id"] ?? "-"}`)
    lines.push(`  -> body: ${show(o.text, 2000)}`)
  }
  return lines.join("\n")
}

/** The whole report: totals, then one line per operation (class × principal counts and its statuses). */
export const formatReport = (report: FuzzReport, perOperation = true): string => {
  const sortCounts = (counts: Record<string, number>) =>
    Object.entries(counts)
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([k, v]) => `${k}:${v}`)
      .join(" ")
  const seconds = report.durationMs / 1000
  const phase = report.unprivilegedPhase
  const lines = [
    `fuzz report: seed ${report.seed}`,
    `  ${report.requests} requests over ${report.operations} operations in ${seconds.toFixed(1)} s ` +
      `(${Math.round(report.requests / seconds)}/s)`,
    `  classes: ${sortCounts(report.byClass)}   principals: ${sortCounts(report.byPrincipal)}`,
    `  statuses: ${sortCounts(report.statuses)}`,
    `  body mutations: ${sortCounts(report.mutations)}`,
    `  garbage: ${sortCounts(report.garbage)}`,
    `  schemas: ${report.schemas.derived} derived by effect/Arbitrary, ${report.schemas.fallback} by fast-check`,
    `  unprivileged phase: ${phase.requests} requests, ${phase.changed} of ${phase.snapshotPaths} fixture reads changed`,
    `  careful phase: ${report.careful.join(", ")}`,
    `  failures: ${report.failureCount}; server errors logged: ${report.serverErrorsLogged}`
  ]
  const cells = [...report.perOperation.values()].flatMap((stats) => classes.flatMap((cls) => principals.map((p) => stats.classes[cls][p])))
  lines.splice(
    2,
    0,
    `  coverage: ${report.perOperation.size} operations × 3 classes × 4 principals, ` +
      `${cells.filter((n) => n > 0).length} of ${cells.length} cells sent (fewest requests in a cell: ${Math.min(...cells)})`
  )
  const judged = Object.entries(report.judgedBeforeRefused)
  lines.push(
    `  valid writes without the permission answered other than 401/403 (judged before refused): ${
      judged.length === 0 ? "none" : judged.map(([op, counts]) => `${op} (${sortCounts(counts)})`).join(", ")
    }`
  )
  if (perOperation) {
    lines.push("  per operation (valid | mutated | garbage, each o/v/f/a = owner/viewer/foreign/anonymous; then statuses):")
    const width = Math.max(...[...report.perOperation.keys()].map((k) => k.length))
    for (const [op, stats] of [...report.perOperation.entries()].sort(([a], [b]) => a.localeCompare(b))) {
      const cells = classes.map((cls) => principals.map((p) => stats.classes[cls][p]).join("/"))
      lines.push(`    ${op.padEnd(width)}  ${cells.map((c) => c.padEnd(11)).join(" | ")}  ${sortCounts(stats.statuses)}`)
    }
  }
  return lines.join("\n")
}
