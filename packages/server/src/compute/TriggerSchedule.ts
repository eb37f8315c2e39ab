// Scheduled triggers: checking the schedule in a trigger's metadata, and the due times that follow from it. Pure
// (time is always passed in), so the HTTP side and the scheduler entity agree and tests need no clock.
//
// Daylight saving, for cron and once (both read wall-clock time in `timezone`):
// - A wall time skipped when clocks go forward resolves to the same wall time shifted by the gap, as effect/Cron and
//   DateTime's "compatible" disambiguation do: "30 2 * * *" in America/New_York fires at 03:30 EDT on 2026-03-08.
// - A wall time that happens twice when clocks go back fires once, at its first occurrence, when the expression names
//   its hours ("30 1 * * *" runs at 01:30 EDT only on 2026-11-01). An expression whose hour field starts with `*`
//   ("*/15 * * * *", "0 * * * *") keeps firing through both passes of the repeated hour, as Vixie cron runs its
//   wildcard jobs: otherwise an every-15-minutes trigger would stop for an hour.
// - A once `scheduledAt` without an offset takes the first occurrence of a repeated wall time, and the shifted time
//   for a skipped one.
import { Cron, DateTime, Option, Result } from "effect"

export type ScheduleSpec =
  | { readonly type: "interval"; readonly intervalMs: number }
  | { readonly type: "cron"; readonly expression: string; readonly timezone: string }
  | { readonly type: "once"; readonly at: Date; readonly timezone: string }

/** One validation problem: the field path inside the trigger body, e.g. "triggerMetadata.cronExpression". */
export interface ScheduleProblem {
  readonly field: string
  readonly message: string
}

export type ParsedSchedule =
  | { readonly ok: true; readonly spec: ScheduleSpec; readonly normalized: Record<string, unknown> }
  | { readonly ok: false; readonly problems: ReadonlyArray<ScheduleProblem> }

const scheduleTypes = ["interval", "cron", "once"] as const
type ScheduleType = (typeof scheduleTypes)[number]

const defaultTimeZone = "UTC"
const maxIntervalSeconds = 10 * 365 * 24 * 60 * 60

/** True for an IANA time zone name the runtime knows ("UTC", "Etc/UTC", "Europe/Paris"; Intl ignores case). */
export const isTimeZone = (name: string): boolean =>
  // Intl also takes offsets such as "+01:00", which are not IANA names and never follow daylight saving.
  !/^[+-]/.test(name) && Option.isSome(DateTime.zoneMakeNamed(name))

/** Validates the scheduled fields of a trigger's metadata (now = the server's current time). */
export const parseSchedule = (metadata: Readonly<Record<string, unknown>>, now: Date): ParsedSchedule => {
  const problems: Array<ScheduleProblem> = []
  const problem = (field: string, message: string) => problems.push({ field: `triggerMetadata.${field}`, message })

  const rawType = metadata.scheduleType
  let type: ScheduleType | undefined = "interval"
  if (rawType !== undefined) {
    type = scheduleTypes.find((t) => t === rawType)
    if (type === undefined) problem("scheduleType", `scheduleType must be "interval", "cron" or "once"`)
  }

  const rawZone = metadata.timezone
  let timezone: string | undefined = defaultTimeZone
  if (rawZone !== undefined) {
    if (typeof rawZone !== "string") {
      timezone = undefined
      problem("timezone", `timezone must be an IANA time zone name such as "Europe/Paris" or "UTC"`)
    } else if (!isTimeZone(rawZone)) {
      timezone = undefined
      problem("timezone", `timezone ${quote(rawZone)} is not a known IANA time zone name (e.g. "Europe/Paris", "UTC")`)
    } else timezone = rawZone
  }

  const normalized: Record<string, unknown> = { ...metadata, scheduleType: type, timezone }
  let spec: ScheduleSpec | undefined
  if (type === "interval") {
    const intervalMs = checkInterval(metadata.interval, problem)
    if (intervalMs !== undefined) spec = { type, intervalMs }
  } else if (type === "cron") {
    const expression = checkCron(metadata.cronExpression, timezone, problem)
    if (expression !== undefined && timezone !== undefined) spec = { type, expression, timezone }
  } else if (type === "once") {
    const at = checkScheduledAt(metadata.scheduledAt, timezone, now, problem)
    if (at !== undefined && timezone !== undefined) {
      spec = { type, at, timezone }
      normalized.scheduledAt = at.toISOString()
    }
  }
  return problems.length === 0 && spec !== undefined ? { ok: true, spec, normalized } : { ok: false, problems }
}

/**
 * The first due time of a schedule that starts (is created or resumed) at `from`; undefined when it never fires (a
 * once in the past). Interval: one interval after `from`; cron: the first cron time strictly after `from`.
 */
export const firstRun = (spec: ScheduleSpec, from: Date): Date | undefined => {
  switch (spec.type) {
    case "interval":
      return new Date(from.getTime() + spec.intervalMs)
    case "cron":
      return Cron.next(cronOf(spec), from)
    case "once":
      return spec.at.getTime() >= from.getTime() ? spec.at : undefined
  }
}

/**
 * The next due time after a tick that was due at `due`, given the time is now `now`: missed ticks collapse, so the
 * result is always > now (for interval: due + k*interval, the first such time after now; for cron: the next cron time
 * after max(due, now)); undefined for once (it fired).
 */
export const nextRun = (spec: ScheduleSpec, due: Date, now: Date): Date | undefined => {
  switch (spec.type) {
    case "interval": {
      // Stay on the due + k*interval grid so a late node doesn't shift every later run.
      const behind = now.getTime() - due.getTime()
      const k = behind < 0 ? 1 : Math.floor(behind / spec.intervalMs) + 1
      return new Date(due.getTime() + k * spec.intervalMs)
    }
    case "cron":
      return Cron.next(cronOf(spec), due.getTime() > now.getTime() ? due : now)
    case "once":
      return undefined
  }
}

type Report = (field: string, message: string) => void

const quote = (text: string): string => JSON.stringify(text.length > 40 ? `${text.slice(0, 40)}…` : text)

const checkInterval = (raw: unknown, problem: Report): number | undefined => {
  if (raw === undefined) {
    problem("interval", `interval is required when scheduleType is "interval" (seconds between runs, greater than 0)`)
    return undefined
  }
  // Strings such as "5" are refused: the contract says a number, and silent coercion hides client bugs.
  if (typeof raw !== "number" || Number.isNaN(raw) || raw <= 0) {
    problem("interval", "interval must be a number of seconds greater than 0")
    return undefined
  }
  if (raw > maxIntervalSeconds) {
    problem("interval", `interval must be at most ${maxIntervalSeconds} seconds (10 years)`)
    return undefined
  }
  if (raw * 1000 < 1) {
    problem("interval", "interval must be at least 0.001 seconds (1 ms)")
    return undefined
  }
  return Math.round(raw * 1000)
}

interface CronField {
  readonly name: string
  readonly min: number
  readonly max: number
}

const cronFields: ReadonlyArray<CronField> = [
  { name: "minute", min: 0, max: 59 },
  { name: "hour", min: 0, max: 23 },
  { name: "day-of-month", min: 1, max: 31 },
  { name: "month", min: 1, max: 12 },
  { name: "weekday", min: 0, max: 6 }
]

const cronShape = "minute hour day-of-month month weekday"
const cronItem = /^(?:\*|(\d+)(?:-(\d+))?)(?:\/(\d+))?$/

// Repeated wall-clock times: see the header.
const overlapPolicy = (expression: string): Cron.DstOverlapPolicy =>
  expression.trim().split(/\s+/)[1]?.startsWith("*") ? "both" : "earlier"

const cronOf = (spec: { readonly expression: string; readonly timezone: string }): Cron.Cron =>
  Cron.parseUnsafe(spec.expression, spec.timezone, { onDstOverlap: overlapPolicy(spec.expression) })

const checkCron = (raw: unknown, timezone: string | undefined, problem: Report): string | undefined => {
  const report = (message: string) => problem("cronExpression", message)
  if (raw === undefined) {
    report(`cronExpression is required when scheduleType is "cron" (5 fields: ${cronShape})`)
    return undefined
  }
  if (typeof raw !== "string") {
    report(`cronExpression must be a string of 5 fields (${cronShape})`)
    return undefined
  }
  // effect/Cron also takes a seconds field, weekday 7 and names (MON, JAN): the contract is the standard 5 fields.
  const parts = raw
    .trim()
    .split(/\s+/)
    .filter((p) => p.length > 0)
  if (parts.length !== 5) {
    report(`cronExpression must have exactly 5 fields (${cronShape}), got ${parts.length}`)
    return undefined
  }
  let valid = true
  parts.forEach((text, i) => {
    const field = cronFields[i]!
    const fieldReport = (message: string) => {
      valid = false
      report(`cronExpression ${field.name} field: ${message}`)
    }
    if (!/^[\d*,/-]+$/.test(text)) {
      fieldReport(`${quote(text)} may use only digits, "*", ",", "-" and "/" (no names like MON, no ?, L, W or #)`)
      return
    }
    for (const item of text.split(",")) {
      const match = cronItem.exec(item)
      if (match === null) {
        fieldReport(`${quote(item)} is not a value, a range (a-b) or a step (*/n, a-b/n)`)
        continue
      }
      const [, from, to, step] = match
      for (const value of [from, to]) {
        if (value !== undefined && (Number(value) < field.min || Number(value) > field.max)) {
          const sunday = field.name === "weekday" ? ", Sunday is 0" : ""
          fieldReport(`${value} is out of range ${field.min}-${field.max}${sunday}`)
        }
      }
      if (from !== undefined && to !== undefined && Number(from) > Number(to)) {
        fieldReport(`range ${from}-${to} runs backwards`)
      }
      if (step !== undefined && (Number(step) < 1 || Number(step) > field.max)) {
        fieldReport(`step ${step} must be between 1 and ${field.max}`)
      }
    }
  })
  if (!valid) return undefined

  const expression = parts.join(" ")
  // An invalid zone is reported on its own field; parse in UTC here so the expression is still checked.
  const parsed = Cron.parse(expression, timezone ?? defaultTimeZone, { onDstOverlap: overlapPolicy(expression) })
  if (Result.isFailure(parsed)) {
    report(`cronExpression is not a valid cron expression: ${parsed.failure.message}`)
    return undefined
  }
  // A day that no listed month has (30 2 = February 30th) would never fire, and Cron.next throws on it.
  const cron = parsed.success
  const dayDecides = cron.weekdays.size === 0 || parts[2]!.startsWith("*") || parts[4]!.startsWith("*")
  if (cron.days.size > 0 && dayDecides) {
    const longest = cron.months.size > 0 ? Math.max(...[...cron.months].map(longestMonth)) : 31
    if (Math.min(...cron.days) > longest) {
      report(`cronExpression never fires: no listed month has day ${Math.min(...cron.days)}`)
      return undefined
    }
  }
  return expression
}

// Days in a month in its longest year (February 29).
const longestMonth = (month: number): number => (month === 2 ? 29 : [4, 6, 9, 11].includes(month) ? 30 : 31)

const isoDateTime = /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2})(?::(\d{2})(?:[.,](\d+))?)?(?:([Zz])|([+-])(\d{2})(?::?(\d{2}))?)?$/

const checkScheduledAt = (raw: unknown, timezone: string | undefined, now: Date, problem: Report): Date | undefined => {
  if (raw === undefined) {
    problem("scheduledAt", `scheduledAt is required when scheduleType is "once" (an ISO 8601 date-time)`)
    return undefined
  }
  const invalid = `scheduledAt must be an ISO 8601 date-time such as "2030-01-01T09:00:00Z" or "2030-01-01T09:00:00"`
  if (typeof raw !== "string") {
    problem("scheduledAt", invalid)
    return undefined
  }
  const match = isoDateTime.exec(raw)
  if (match === null) {
    problem("scheduledAt", `${invalid}, got ${quote(raw)}`)
    return undefined
  }
  const [, y, mo, d, h, mi, s, fraction, z, sign, oh, om] = match
  const parts = {
    year: Number(y),
    month: Number(mo),
    day: Number(d),
    hour: Number(h),
    minute: Number(mi),
    second: Number(s ?? 0),
    millisecond: Number((fraction ?? "").slice(0, 3).padEnd(3, "0"))
  }
  const offsetMinutes = sign === undefined ? 0 : Number(oh) * 60 + Number(om ?? 0)
  const calendarOk =
    parts.month >= 1 &&
    parts.month <= 12 &&
    parts.day >= 1 &&
    parts.day <= daysInMonth(parts.year, parts.month) &&
    parts.hour <= 23 &&
    parts.minute <= 59 &&
    parts.second <= 59 &&
    Number(oh ?? 0) <= 23 &&
    Number(om ?? 0) <= 59
  if (!calendarOk) {
    problem("scheduledAt", `${invalid}, got ${quote(raw)} (no such date or time)`)
    return undefined
  }
  // Without an offset the text is wall-clock time in the trigger's zone; an invalid zone is reported on its own.
  const zone = z !== undefined || sign !== undefined ? (sign === "-" ? -1 : 1) * offsetMinutes * 60_000 : timezone
  if (zone === undefined) return undefined
  const at = DateTime.makeZoned(parts, { timeZone: zone, adjustForTimeZone: true }).pipe(Option.map(DateTime.toDateUtc))
  if (Option.isNone(at)) {
    problem("scheduledAt", `${invalid}, got ${quote(raw)}`)
    return undefined
  }
  if (at.value.getTime() <= now.getTime()) {
    const when = `${at.value.toISOString()} is not after ${now.toISOString()}`
    problem("scheduledAt", `scheduledAt must be in the future: ${when}`)
    return undefined
  }
  return at.value
}

const daysInMonth = (year: number, month: number): number =>
  month === 2 ? (year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0) ? 29 : 28) : longestMonth(month)
