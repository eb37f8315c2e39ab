// Anomaly detection over one structure's records (pure): per numeric field, outliers by the robust z-score
// 0.6745 * (x - median) / MAD (the median absolute deviation: a few huge values cannot inflate it and hide
// themselves, as they would a standard deviation); per field, values of another JSON type than the field's dominant
// one; per text field, rare values beside frequent ones; per structure, the last 24 hours' write volume and share of
// missing values against the days before. Each insight has a signature: a dismissed one is stored,
// so it is never raised again.
import { jsonType } from "./Profile.ts"

export interface Sample {
  readonly id: string
  readonly value: unknown
}

export interface Insight {
  readonly signature: string
  readonly recordId: string | null
  readonly field: string | null
  readonly kind: "outlier" | "rare_value" | "type_mismatch" | "missing_spike" | "volume"
  readonly severity: "low" | "medium" | "high"
  readonly score: number
  readonly message: string
  readonly observed: unknown
  readonly expected: unknown
}

const MIN_VALUES = 10
const RARE_MIN_VALUES = 50

export const median = (xs: ReadonlyArray<number>): number => {
  const s = [...xs].sort((a, b) => a - b)
  const m = s.length >> 1
  return s.length % 2 === 1 ? s[m]! : (s[m - 1]! + s[m]!) / 2
}

/** Median and MAD; when more than half the values are equal (MAD 0), the mean absolute deviation scaled alike. */
export const robustSpread = (xs: ReadonlyArray<number>): { median: number; mad: number } => {
  const med = median(xs)
  const deviations = xs.map((x) => Math.abs(x - med))
  let mad = median(deviations)
  if (mad === 0) mad = (deviations.reduce((s, d) => s + d, 0) / deviations.length) * 0.7979 // mean AD ≈ 0.7979 σ
  return { median: med, mad }
}

const fmt = (x: number) => (Number.isInteger(x) ? String(x) : x.toPrecision(4).replace(/\.?0+$/, ""))
const round = (x: number) => Math.round(x * 100) / 100

const severityOf = (score: number, threshold: number) => (score >= threshold * 3 ? "high" : score >= threshold * 1.5 ? "medium" : "low")

/** Outliers of one numeric field at the robust z-score `threshold` (the config's sensitivity). */
export const outliers = (field: string, samples: ReadonlyArray<Sample>, threshold: number): Array<Insight> => {
  const numbers = samples.filter((s): s is { id: string; value: number } => typeof s.value === "number" && Number.isFinite(s.value))
  if (numbers.length < MIN_VALUES) return []
  const { mad, median: med } = robustSpread(numbers.map((s) => s.value))
  if (mad === 0) return []
  const halfWidth = (threshold * mad) / 0.6745
  const expected = { median: med, mad: round(mad), low: round(med - halfWidth), high: round(med + halfWidth) }
  return numbers.flatMap((s) => {
    const z = (0.6745 * (s.value - med)) / mad
    if (Math.abs(z) <= threshold) return []
    const score = round(Math.abs(z))
    return [
      {
        signature: `outlier:${field}:${s.id}:${s.value}`,
        recordId: s.id,
        field,
        kind: "outlier" as const,
        severity: severityOf(score, threshold),
        score,
        message: `\`${field}\` is ${fmt(s.value)} here, while most of its ${numbers.length} values lie between ${fmt(expected.low)} and ${fmt(expected.high)} (median ${fmt(med)}).`,
        observed: s.value,
        expected
      }
    ]
  })
}

/** Values whose JSON type is not the field's dominant one (when at least 90 % share it). */
export const typeMismatches = (field: string, samples: ReadonlyArray<Sample>): Array<Insight> => {
  const present = samples.filter((s) => s.value !== null && s.value !== undefined)
  if (present.length < MIN_VALUES) return []
  const counts = new Map<string, number>()
  for (const s of present) counts.set(jsonType(s.value), (counts.get(jsonType(s.value)) ?? 0) + 1)
  const [type, n] = [...counts].sort((a, b) => b[1] - a[1])[0]!
  if (n / present.length < 0.9 || n === present.length) return []
  return present
    .filter((s) => jsonType(s.value) !== type)
    .map((s) => ({
      signature: `type_mismatch:${field}:${s.id}`,
      recordId: s.id,
      field,
      kind: "type_mismatch" as const,
      severity: "medium" as const,
      score: round(n / present.length),
      message: `${n} of ${present.length} values of \`${field}\` are ${type}s; this one is a ${jsonType(s.value)}.`,
      observed: s.value,
      expected: { type }
    }))
}

/** String values seen once or twice beside a few frequent ones (a field of choices with a stray entry). */
export const rareValues = (field: string, samples: ReadonlyArray<Sample>): Array<Insight> => {
  const strings = samples.filter((s): s is { id: string; value: string } => typeof s.value === "string")
  if (strings.length < RARE_MIN_VALUES) return []
  const counts = new Map<string, Array<string>>()
  for (const s of strings) {
    const ids = counts.get(s.value)
    if (ids === undefined) counts.set(s.value, [s.id])
    else ids.push(s.id)
  }
  if (counts.size > 30) return []
  const frequent = [...counts].filter(([, ids]) => ids.length / strings.length >= 0.05)
  if (frequent.length === 0) return []
  return [...counts]
    .filter(([, ids]) => ids.length / strings.length < 0.01 && ids.length <= 2)
    .map(([value, ids]) => ({
      signature: `rare_value:${field}:${value}`,
      recordId: ids[0]!,
      field,
      kind: "rare_value" as const,
      severity: "low" as const,
      score: round(1 - ids.length / strings.length),
      message: `\`${field}\` is "${value}" in ${ids.length} of ${strings.length} records; the usual values are ${frequent
        .slice(0, 3)
        .map(([v]) => `"${v}"`)
        .join(", ")}.`,
      observed: value,
      expected: frequent.map(([v]) => v)
    }))
}

/** Records created per day (oldest first); the last entry is the last 24 hours. */
export interface DailyCount {
  readonly day: string
  readonly n: number
}

const BASELINE_DAYS = 7

/** Write volume of the last 24 hours against the days before (at least 7 of them): a spike or a drop. */
export const volumeSpike = (days: ReadonlyArray<DailyCount>, threshold: number): Array<Insight> => {
  if (days.length < BASELINE_DAYS + 1) return []
  const today = days[days.length - 1]!
  const baseline = days.slice(0, -1).map((d) => d.n)
  const { mad, median: med } = robustSpread(baseline)
  // a steady baseline (MAD 0): the Poisson spread of its median
  const spread = mad > 0 ? mad : Math.sqrt(Math.max(med, 1)) * 0.6745
  const z = (0.6745 * (today.n - med)) / spread
  if (Math.abs(z) <= threshold || Math.abs(today.n - med) < 10) return []
  const score = round(Math.abs(z))
  return [
    {
      signature: `volume:${today.day}`,
      recordId: null,
      field: null,
      kind: "volume",
      severity: severityOf(score, threshold),
      score,
      message: `${today.n} records were written in the last 24 hours; on the ${baseline.length} days before, the median was ${fmt(med)} a day.`,
      observed: today.n,
      expected: { median: med, days: baseline.length }
    }
  ]
}

/** Share of records without a value for `field`: the last 24 hours against the days before. */
export const missingSpike = (
  field: string,
  day: string,
  recent: { readonly missing: number; readonly total: number },
  baseline: { readonly missing: number; readonly total: number }
): Array<Insight> => {
  if (recent.total < 20 || baseline.total < 50) return []
  const now = recent.missing / recent.total
  const before = baseline.missing / baseline.total
  if (now - before < 0.2 || now < 2 * before) return []
  const score = round(now - before)
  return [
    {
      signature: `missing_spike:${field}:${day}`,
      recordId: null,
      field,
      kind: "missing_spike",
      severity: now - before >= 0.5 ? "high" : "medium",
      score,
      message: `\`${field}\` is missing in ${Math.round(now * 100)} % of the last 24 hours' ${recent.total} records, against ${Math.round(before * 100)} % before.`,
      observed: { missing: recent.missing, total: recent.total },
      expected: { missing: baseline.missing, total: baseline.total }
    }
  ]
}
