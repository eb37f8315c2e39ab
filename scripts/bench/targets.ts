// The targets of `npm run bench`, each printed as a ratio to a baseline measured in the same run (never as an
// absolute figure: the machines of this project differ by up to five times per core, and a shared one drifts from
// minute to minute), with the machine's core count and the ceiling's own figures beside them, so that a figure from
// a slower or faster machine is not read as a regression or a win.
import * as Os from "node:os"

export interface Measured {
  readonly troupe: number
  readonly troupeP99: number
  /** NaN when the baseline did not run */
  readonly raw: number
  readonly ceiling: number
  readonly ceilingP99: number
  readonly items: number
}

interface Target {
  readonly name: string
  /** the measured figure and its baseline, or undefined when one of them was not measured in this run */
  readonly pair: (m: ReadonlyMap<string, Measured>) => readonly [number, number, string] | undefined
  /** the ratio wanted: at least (rates) or at most (p99s) */
  readonly atLeast?: number
  readonly atMost?: number
}

const rate =
  (scenario: string, of: "raw" | "ceiling", baselineScenario = scenario, items = false): Target["pair"] =>
  (m) => {
    const a = m.get(scenario)
    const b = m.get(baselineScenario)
    if (a === undefined || b === undefined || Number.isNaN(a.troupe) || Number.isNaN(b[of])) return undefined
    const label = baselineScenario === scenario ? `${of}` : `${of}'s ${baselineScenario}`
    return [items ? a.troupe * a.items : a.troupe, b[of], label]
  }
const p99 =
  (scenario: string): Target["pair"] =>
  (m) => {
    const a = m.get(scenario)
    if (a === undefined || Number.isNaN(a.ceilingP99) || a.ceilingP99 <= 0) return undefined
    return [a.troupeP99, a.ceilingP99, "ceiling's p99"]
  }
const versusTroupe =
  (scenario: string, baseline: string): Target["pair"] =>
  (m) => {
    const a = m.get(scenario)
    const b = m.get(baseline)
    if (a === undefined || b === undefined) return undefined
    return [a.troupe, b.troupe, `Troupe's ${baseline}`]
  }

/**
 * No cliff after a bulk write: a page of the 20,000 records just created, against the same page of the bench's own
 * structure measured just before the bulk (an index walk either way costs about the same; a sort of the 20,000 rows
 * a hundred times more). Not against reads by id: those are batched per statement, a page is a statement of its own.
 */
const listAfterBulk: Target = { name: "list after bulk", pair: versusTroupe("list after bulk", "list page"), atLeast: 0.5 }

const postgresTargets: ReadonlyArray<Target> = [
  { name: "create record", pair: rate("create record", "ceiling"), atLeast: 0.4 },
  { name: "create record p99", pair: p99("create record"), atMost: 2 },
  { name: "patch", pair: rate("patch", "ceiling"), atLeast: 0.35 },
  { name: "patch p99", pair: p99("patch"), atMost: 2 },
  { name: "upsert distinct keys", pair: rate("upsert distinct keys", "ceiling"), atLeast: 0.3 },
  { name: "upsert distinct keys p99", pair: p99("upsert distinct keys"), atMost: 2 },
  { name: "upsert one key p99", pair: p99("upsert one key"), atMost: 2 },
  { name: "bulk create 1000 (items/s)", pair: rate("bulk create 1000", "ceiling", "create record", true), atLeast: 1.5 },
  { name: "get by id", pair: rate("get by id", "raw"), atLeast: 1 },
  listAfterBulk
]

/** The embedded node (PGlite) against the same machine's PostgreSQL single-INSERT ceiling. */
const embeddedTargets: ReadonlyArray<Target> = [
  { name: "create record", pair: rate("create record", "ceiling"), atLeast: 0.4 },
  { name: "patch", pair: rate("patch", "ceiling", "create record"), atLeast: 0.4 },
  { name: "get by id", pair: rate("get by id", "ceiling", "create record"), atLeast: 1 },
  listAfterBulk
]

const percent = (x: number) => `${(x * 100).toFixed(0)} %`

/** The machine, as every figure of the run should be read with it. */
export const machineLine = () => {
  const cpus = Os.cpus()
  const load = Os.loadavg().map((l) => l.toFixed(1))
  return `machine: ${Os.availableParallelism()} cores (${cpus[0]?.model.trim() ?? "unknown"}), load average ${load.join(" ")} at the end, node ${process.version}`
}

export const printTargets = (measured: ReadonlyMap<string, Measured>, embedded: boolean) => {
  const ceiling = [...measured]
    .filter(([, m]) => !Number.isNaN(m.ceiling))
    .map(([name, m]) => `${name} ${(m.ceiling * m.items).toFixed(0)}${m.items > 1 ? " items" : ""}/s (p99 ${m.ceilingP99} ms)`)
  console.log(`\nTargets, each a ratio to a baseline measured in this run (${machineLine()})`)
  console.log(`the ceiling in this run: ${ceiling.length > 0 ? ceiling.join(", ") : "not measured"}\n`)
  const rows: Array<Array<string>> = [["target", "measured", "baseline", "ratio", "wanted", "met"]]
  for (const target of embedded ? embeddedTargets : postgresTargets) {
    const pair = target.pair(measured)
    if (pair === undefined) continue
    const [value, baseline, label] = pair
    const ratio = value / baseline
    const isP99 = target.atMost !== undefined
    const unit = isP99 ? " ms" : "/s"
    rows.push([
      target.name,
      `${value.toFixed(0)}${unit}`,
      `${baseline.toFixed(0)}${unit} (${label})`,
      isP99 ? `${ratio.toFixed(2)}x` : percent(ratio),
      isP99 ? `<= ${target.atMost}x` : `>= ${percent(target.atLeast!)}`,
      (isP99 ? ratio <= target.atMost! : ratio >= target.atLeast!) ? "yes" : "NO"
    ])
  }
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)))
  const line = (cells: Array<string>) => `| ${cells.map((c, i) => c.padEnd(widths[i]!)).join(" | ")} |`
  console.log(line(rows[0]!))
  console.log(`|${widths.map((w) => "-".repeat(w + 2)).join("|")}|`)
  for (const row of rows.slice(1)) console.log(line(row))
}
