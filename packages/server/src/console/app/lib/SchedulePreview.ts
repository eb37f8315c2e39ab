// The next fire times of a scheduled trigger, computed in the browser with the very module the server schedules
// with (compute/TriggerSchedule.ts, on effect/Cron): the preview and the scheduler cannot disagree, on daylight
// saving days included, and the problems shown are the ones a save would answer.
import { firstRun, nextRun, parseSchedule, type ScheduleProblem } from "../../../compute/TriggerSchedule.ts"

export type SchedulePreview =
  | { readonly ok: true; readonly times: ReadonlyArray<Date> }
  | { readonly ok: false; readonly problems: ReadonlyArray<ScheduleProblem> }

/**
 * Up to `count` fire times of the schedule in `metadata` (a trigger's triggerMetadata), for a schedule that starts
 * at `now` (created or resumed now); `next` starts the list at a known next due time instead (a saved trigger's
 * nextRunAt).
 */
export const previewSchedule = (metadata: Readonly<Record<string, unknown>>, now: Date, count = 5, next?: Date): SchedulePreview => {
  const parsed = parseSchedule(metadata, now)
  if (!parsed.ok) return { ok: false, problems: parsed.problems }
  const times: Array<Date> = []
  let due = next ?? firstRun(parsed.spec, now)
  while (due !== undefined && times.length < count) {
    times.push(due)
    due = nextRun(parsed.spec, due, due)
  }
  return { ok: true, times }
}

/** `2026-03-08 03:30:00 EDT`-like text of an instant in a time zone. */
export const formatInZone = (date: Date, timeZone: string): string => {
  try {
    const parts = new Intl.DateTimeFormat("en-CA", {
      timeZone,
      year: "numeric",
      month: "2-digit",
      day: "2-digit",
      hour: "2-digit",
      minute: "2-digit",
      second: "2-digit",
      hourCycle: "h23",
      timeZoneName: "short"
    }).formatToParts(date)
    const get = (type: string) => parts.find((p) => p.type === type)?.value ?? ""
    return `${get("year")}-${get("month")}-${get("day")} ${get("hour")}:${get("minute")}:${get("second")} ${get("timeZoneName")}`
  } catch {
    return date.toISOString()
  }
}
