import { describe, expect, it } from "@effect/vitest"
import { formatInZone, previewSchedule } from "./SchedulePreview.ts"

const now = new Date("2026-03-06T12:00:00Z")
const iso = (p: ReturnType<typeof previewSchedule>) => (p.ok ? p.times.map((t) => t.toISOString()) : p.problems)

describe("previewSchedule", () => {
  it("lists the next five interval times from now", () => {
    expect(iso(previewSchedule({ interval: 90 }, now))).toStrictEqual([
      "2026-03-06T12:01:30.000Z",
      "2026-03-06T12:03:00.000Z",
      "2026-03-06T12:04:30.000Z",
      "2026-03-06T12:06:00.000Z",
      "2026-03-06T12:07:30.000Z"
    ])
  })

  it("follows a cron expression in its time zone across a daylight-saving change, as the scheduler does", () => {
    // New York moves its clocks forward on 2026-03-08: 02:30 does not exist that day and fires at 03:30 EDT
    expect(
      iso(previewSchedule({ scheduleType: "cron", cronExpression: "30 2 * * *", timezone: "America/New_York" }, now, 3))
    ).toStrictEqual(["2026-03-07T07:30:00.000Z", "2026-03-08T07:30:00.000Z", "2026-03-09T06:30:00.000Z"])
  })

  it("answers one time for once, none once it is past", () => {
    expect(iso(previewSchedule({ scheduleType: "once", scheduledAt: "2026-04-01T09:00:00", timezone: "Asia/Tokyo" }, now))).toStrictEqual([
      "2026-04-01T00:00:00.000Z"
    ])
    const past = previewSchedule({ scheduleType: "once", scheduledAt: "2020-01-01T00:00:00Z" }, now)
    expect(past.ok).toBe(false)
  })

  it("starts from a saved trigger's next run when given", () => {
    const next = new Date("2026-03-06T12:00:40Z")
    expect(iso(previewSchedule({ interval: 60 }, now, 2, next))).toStrictEqual(["2026-03-06T12:00:40.000Z", "2026-03-06T12:01:40.000Z"])
  })

  it("reports the problems the server would answer", () => {
    const bad = previewSchedule({ scheduleType: "cron", cronExpression: "61 * * *", timezone: "Mars/Olympus" }, now)
    expect(bad.ok).toBe(false)
    if (!bad.ok) {
      expect(bad.problems.map((p) => p.field)).toStrictEqual(["triggerMetadata.timezone", "triggerMetadata.cronExpression"])
    }
  })
})

describe("formatInZone", () => {
  it("writes the wall time and zone name", () => {
    expect(formatInZone(new Date("2026-03-09T06:30:00Z"), "America/New_York")).toBe("2026-03-09 02:30:00 EDT")
    expect(formatInZone(new Date("2026-03-09T06:30:00Z"), "UTC")).toBe("2026-03-09 06:30:00 UTC")
  })
})
