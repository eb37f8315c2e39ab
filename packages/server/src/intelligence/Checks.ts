// Validation checks that need no model (pure): over one field's values, values off the field's dominant format,
// stray whitespace, inconsistent casing of a value written more often otherwise, near-misses of frequent values
// (edit distance: `Germny` → `Germany`), and numbers off by a unit factor (10, 100, 1000) from the field's median.
// Each finding proposes a value (null when none can be computed) and says why in one sentence.
import type { Sample } from "./Anomalies.ts"
import { robustSpread } from "./Anomalies.ts"
import { formatOf } from "./Profile.ts"

export interface Finding {
  readonly signature: string
  readonly recordId: string
  readonly field: string
  readonly currentValue: unknown
  readonly suggestedValue: unknown
  readonly reason: string
}

const MIN_VALUES = 10

/** Levenshtein distance, stopping early past `max`. */
export const editDistance = (a: string, b: string, max = 3): number => {
  if (Math.abs(a.length - b.length) > max) return max + 1
  let prev = Array.from({ length: b.length + 1 }, (_, i) => i)
  for (let i = 1; i <= a.length; i++) {
    const cur = [i]
    let best = i
    for (let j = 1; j <= b.length; j++) {
      const v = Math.min(prev[j]! + 1, cur[j - 1]! + 1, prev[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1))
      cur.push(v)
      if (v < best) best = v
    }
    if (best > max) return max + 1
    prev = cur
  }
  return prev[b.length]!
}

const plural: Record<string, string> = {
  email: "emails",
  url: "URLs",
  uuid: "UUIDs",
  date: "dates",
  datetime: "date-times",
  phone: "phone numbers"
}

const cleanSpaces = (s: string) => s.trim().replace(/\s{2,}/g, " ")

/** Every finding for one field. */
export const checkField = (field: string, samples: ReadonlyArray<Sample>): Array<Finding> => {
  const out: Array<Finding> = []
  const seen = new Set<string>()
  const add = (f: Omit<Finding, "signature" | "field">, check: string) => {
    if (seen.has(f.recordId)) return
    seen.add(f.recordId)
    out.push({ ...f, field, signature: `${check}:${f.recordId}:${field}:${JSON.stringify(f.currentValue)}` })
  }
  const strings = samples.filter((s): s is { id: string; value: string } => typeof s.value === "string")
  if (strings.length >= MIN_VALUES) {
    // stray whitespace first: its fix is certain
    for (const s of strings) {
      const clean = cleanSpaces(s.value)
      if (clean !== s.value && clean.length > 0) {
        add({ recordId: s.id, currentValue: s.value, suggestedValue: clean, reason: `"${s.value}" has stray whitespace.` }, "whitespace")
      }
    }
    // the dominant format
    const formats = new Map<string, number>()
    for (const s of strings) {
      const f = formatOf(cleanSpaces(s.value))
      if (f !== undefined) formats.set(f, (formats.get(f) ?? 0) + 1)
    }
    const top = [...formats].sort((a, b) => b[1] - a[1])[0]
    if (top !== undefined && top[1] / strings.length >= 0.8 && top[1] < strings.length) {
      const [format, n] = top
      for (const s of strings) {
        if (formatOf(cleanSpaces(s.value)) === format) continue
        const fixed = format === "email" ? s.value.replace(/\s+/g, "").replace(/\s*\(at\)\s*|\s*\[at\]\s*/gi, "@") : undefined
        add(
          {
            recordId: s.id,
            currentValue: s.value,
            suggestedValue: fixed !== undefined && formatOf(fixed) === format ? fixed : null,
            reason: `${n} of ${strings.length} values of \`${field}\` are ${plural[format]}; this one is not.`
          },
          "format"
        )
      }
    }
    // casing and near-misses of frequent values
    const counts = new Map<string, number>()
    for (const s of strings) counts.set(s.value, (counts.get(s.value) ?? 0) + 1)
    if (counts.size <= 200) {
      const frequent = [...counts].filter(([, n]) => n >= 5 && n / strings.length >= 0.02).sort((a, b) => b[1] - a[1])
      for (const s of strings) {
        const n = counts.get(s.value)!
        if (n > 2 || n / strings.length > 0.01) continue
        const cased = frequent.find(([v, m]) => v !== s.value && m >= 3 * n && v.toLowerCase() === s.value.toLowerCase())
        if (cased !== undefined) {
          add(
            {
              recordId: s.id,
              currentValue: s.value,
              suggestedValue: cased[0],
              reason: `"${s.value}" is written "${cased[0]}" in ${cased[1]} other records.`
            },
            "casing"
          )
          continue
        }
        const low = s.value.toLowerCase()
        const near = frequent.find(([v, m]) => {
          if (m < 3 * n || v === s.value || Math.min(v.length, low.length) < 4) return false
          const d = editDistance(low, v.toLowerCase(), 2)
          return d <= (v.length >= 8 ? 2 : 1)
        })
        if (near !== undefined) {
          add(
            {
              recordId: s.id,
              currentValue: s.value,
              suggestedValue: near[0],
              reason: `"${s.value}" appears ${n === 1 ? "once" : `${n} times`}, "${near[0]}" ${near[1]} times: probably a misspelling.`
            },
            "near_miss"
          )
        }
      }
    }
  }
  // unit factors
  const numbers = samples.filter((s): s is { id: string; value: number } => typeof s.value === "number" && Number.isFinite(s.value))
  if (numbers.length >= MIN_VALUES) {
    const { mad, median } = robustSpread(numbers.map((s) => s.value))
    if (median !== 0 && mad > 0) {
      for (const s of numbers) {
        if (Math.abs((0.6745 * (s.value - median)) / mad) <= 3.5) continue
        const ratio = s.value / median
        for (const factor of [1000, 100, 10]) {
          const fixed = ratio > 1 ? s.value / factor : s.value * factor
          const r = ratio > 1 ? ratio / factor : ratio * factor
          if (r >= 0.5 && r <= 2 && Math.abs((0.6745 * (fixed - median)) / mad) <= 3.5) {
            add(
              {
                recordId: s.id,
                currentValue: s.value,
                suggestedValue: Math.round(fixed * 1e6) / 1e6,
                reason: `${s.value} is about ${factor} times ${ratio > 1 ? "larger" : "smaller"} than the usual ${median}: probably another unit.`
              },
              "unit"
            )
            break
          }
        }
      }
    }
  }
  return out
}
