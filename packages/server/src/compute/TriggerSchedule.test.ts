import { describe, expect, it } from "@effect/vitest"
import type { ScheduleProblem, ScheduleSpec } from "./TriggerSchedule.ts"
import { firstRun, isTimeZone, nextRun, parseSchedule } from "./TriggerSchedule.ts"

const now = new Date("2026-06-01T12:00:00.000Z")

const specOf = (metadata: Record<string, unknown>): ScheduleSpec => {
  const parsed = parseSchedule(metadata, now)
  if (!parsed.ok) expect.fail(`expected a valid schedule: ${JSON.stringify(parsed.problems)}`)
  return parsed.spec
}

const problemsOf = (metadata: Record<string, unknown>): ReadonlyArray<ScheduleProblem> => {
  const parsed = parseSchedule(metadata, now)
  if (parsed.ok) expect.fail(`expected problems for ${JSON.stringify(metadata)}`)
  return parsed.problems
}

// One problem on `field`, with a message matching `message`.
const refuses = (metadata: Record<string, unknown>, field: string, message: RegExp) => {
  const problems = problemsOf(metadata)
  expect(
    problems.map((p) => p.field),
    JSON.stringify(problems)
  ).toStrictEqual([`triggerMetadata.${field}`])
  expect(problems[0]!.message).toMatch(message)
}

// Successive due times from `from`, each tick handled exactly on time.
const runs = (spec: ScheduleSpec, from: string, count: number): Array<string> => {
  const out: Array<string> = []
  let due = firstRun(spec, new Date(from))
  while (due !== undefined && out.length < count) {
    out.push(due.toISOString())
    due = nextRun(spec, due, due)
  }
  return out
}

const cron = (expression: string, timezone = "UTC") => specOf({ scheduleType: "cron", cronExpression: expression, timezone })

describe("isTimeZone", () => {
  it("accepts IANA names and refuses the rest", () => {
    for (const name of ["UTC", "Etc/UTC", "Europe/Paris", "America/New_York", "Asia/Tokyo", "Etc/GMT+5"]) {
      expect(isTimeZone(name), name).toBe(true)
    }
    for (const name of ["Mars/Olympus", "", "+01:00", "-05:00", "GMT+5", " UTC"]) expect(isTimeZone(name), name).toBe(false)
  })
})

describe("parseSchedule: interval", () => {
  it("reads the earlier form (interval only) and fills in the defaults, keeping the rest", () => {
    const parsed = parseSchedule({ interval: 60, params: { a: 1 } }, now)
    expect(parsed).toStrictEqual({
      ok: true,
      spec: { type: "interval", intervalMs: 60_000 },
      normalized: { interval: 60, params: { a: 1 }, scheduleType: "interval", timezone: "UTC" }
    })
  })

  it("allows fractional seconds down to 1 ms", () => {
    expect(specOf({ scheduleType: "interval", interval: 0.5 })).toStrictEqual({ type: "interval", intervalMs: 500 })
    expect(specOf({ interval: 0.001 })).toStrictEqual({ type: "interval", intervalMs: 1 })
    refuses({ interval: 0.0001 }, "interval", /at least 0\.001 seconds/)
  })

  it("refuses a missing, zero, negative, NaN, string or huge interval", () => {
    refuses({}, "interval", /interval is required/)
    refuses({ scheduleType: "interval" }, "interval", /interval is required/)
    for (const interval of [0, -1, Number.NaN, "5", null, true]) {
      refuses({ interval }, "interval", /^interval must be a number of seconds greater than 0$/)
    }
    refuses({ interval: 11 * 365 * 24 * 3600 }, "interval", /at most 315360000 seconds \(10 years\)/)
    refuses({ interval: Number.POSITIVE_INFINITY }, "interval", /at most/)
  })

  it("refuses an unknown scheduleType", () => {
    refuses({ scheduleType: "weekly", interval: 5 }, "scheduleType", /"interval", "cron" or "once"/)
    refuses({ scheduleType: 1 }, "scheduleType", /"interval", "cron" or "once"/)
  })
})

describe("parseSchedule: cron", () => {
  it("accepts the standard 5 fields in a time zone", () => {
    const metadata = { scheduleType: "cron", cronExpression: " */15  *  * * * ", timezone: "Europe/Paris" }
    const parsed = parseSchedule(metadata, now)
    expect(parsed.ok).toBe(true)
    if (parsed.ok) {
      expect(parsed.spec).toStrictEqual({ type: "cron", expression: "*/15 * * * *", timezone: "Europe/Paris" })
      expect(parsed.normalized.cronExpression).toBe(" */15  *  * * * ") // stored as sent
    }
    const accepted = ["0 0 1 * *", "0 12 * * 0", "0 9 * * 1-5", "5,10-20/5 0-23/6 1-31 1-12 0-6", "0 0 29 2 *"]
    for (const expression of accepted) {
      expect(cron(expression).type, expression).toBe("cron")
    }
    expect(cron("0 0 * * *")).toStrictEqual({ type: "cron", expression: "0 0 * * *", timezone: "UTC" })
  })

  it("refuses anything but 5 fields", () => {
    const field = "cronExpression"
    refuses({ scheduleType: "cron", cronExpression: "0 */5 * * * *" }, field, /exactly 5 fields \(minute hour .*got 6/)
    refuses({ scheduleType: "cron", cronExpression: "* * *" }, field, /exactly 5 fields .*got 3/)
    refuses({ scheduleType: "cron", cronExpression: "0 0 1 1 * 2030 x" }, field, /got 7/)
    refuses({ scheduleType: "cron", cronExpression: "" }, field, /got 0/)
  })

  it("refuses names, ?, L, W, # and other characters", () => {
    const cases = [
      ["0 9 * * MON", /weekday field: "MON" may use only digits/],
      ["0 9 1 JAN *", /month field: "JAN" may use only digits/],
      ["0 9 ? * 1", /day-of-month field: "\?"/],
      ["0 9 L * *", /day-of-month field: "L"/],
      ["0 9 15W * *", /day-of-month field: "15W"/],
      ["0 9 * * 1#2", /weekday field: "1#2"/],
      ["@daily * * * *", /minute field/]
    ] as const
    for (const [expression, message] of cases) {
      refuses({ scheduleType: "cron", cronExpression: expression }, "cronExpression", message)
    }
  })

  it("refuses values out of range, weekday 7, step 0 and backward ranges", () => {
    const cases = [
      ["61 * * * *", /minute field: 61 is out of range 0-59/],
      ["0 24 * * *", /hour field: 24 is out of range 0-23/],
      ["0 0 0 * *", /day-of-month field: 0 is out of range 1-31/],
      ["0 0 32 * *", /day-of-month field: 32 is out of range 1-31/],
      ["0 0 * 13 *", /month field: 13 is out of range 1-12/],
      ["0 0 * * 7", /weekday field: 7 is out of range 0-6, Sunday is 0/],
      ["0 0 * * 1-7", /weekday field: 7 is out of range 0-6/],
      ["*/0 * * * *", /minute field: step 0 must be between 1 and 59/],
      ["*/60 * * * *", /minute field: step 60/],
      ["5-1 * * * *", /minute field: range 5-1 runs backwards/],
      ["1,,2 * * * *", /minute field: "" is not a value/],
      ["*-5 * * * *", /minute field: "\*-5" is not a value/],
      ["0 0 30 2 *", /never fires: no listed month has day 30/],
      ["0 0 31 4,6 *", /never fires/]
    ] as const
    for (const [expression, message] of cases) {
      refuses({ scheduleType: "cron", cronExpression: expression }, "cronExpression", message)
    }
  })

  it("reports each bad field of one expression", () => {
    const problems = problemsOf({ scheduleType: "cron", cronExpression: "61 24 * * 7" })
    expect(problems.length).toBe(3)
    expect(problems.every((p) => p.field === "triggerMetadata.cronExpression")).toBe(true)
  })

  it("refuses a missing or non-string expression", () => {
    refuses({ scheduleType: "cron" }, "cronExpression", /cronExpression is required/)
    refuses({ scheduleType: "cron", cronExpression: 5 }, "cronExpression", /must be a string of 5 fields/)
  })

  it("refuses an unknown time zone and still checks the expression", () => {
    refuses(
      { scheduleType: "cron", cronExpression: "0 9 * * *", timezone: "Mars/Olympus" },
      "timezone",
      /"Mars\/Olympus" is not a known IANA time zone/
    )
    refuses({ scheduleType: "cron", cronExpression: "0 9 * * *", timezone: 2 }, "timezone", /IANA time zone name/)
    const problems = problemsOf({ scheduleType: "cron", cronExpression: "0 9 * * MON", timezone: "Mars/Olympus" })
    expect(problems.map((p) => p.field)).toStrictEqual(["triggerMetadata.timezone", "triggerMetadata.cronExpression"])
  })
})

describe("parseSchedule: once", () => {
  it("stores the instant, in UTC with Z", () => {
    const parsed = parseSchedule({ scheduleType: "once", scheduledAt: "2030-01-01T09:00:00+02:00", params: [1] }, now)
    expect(parsed).toStrictEqual({
      ok: true,
      spec: { type: "once", at: new Date("2030-01-01T07:00:00Z"), timezone: "UTC" },
      normalized: { scheduleType: "once", scheduledAt: "2030-01-01T07:00:00.000Z", params: [1], timezone: "UTC" }
    })
  })

  it("reads a time without an offset in the trigger's time zone", () => {
    const paris = parseSchedule({ scheduleType: "once", scheduledAt: "2030-01-01T09:00:00", timezone: "Europe/Paris" }, now)
    expect(paris.ok).toBe(true)
    if (paris.ok) expect(paris.normalized.scheduledAt).toBe("2030-01-01T08:00:00.000Z")
    const at = (scheduledAt: string, timezone = "UTC") => {
      const spec = specOf({ scheduleType: "once", scheduledAt, timezone })
      return spec.type === "once" ? spec.at.toISOString() : "not once"
    }
    expect(at("2030-07-01T09:00")).toBe("2030-07-01T09:00:00.000Z")
    expect(at("2030-07-01T09:00:00.123456Z")).toBe("2030-07-01T09:00:00.123Z")
    expect(at("2030-07-01T09:00:00-0530", "Europe/Paris")).toBe("2030-07-01T14:30:00.000Z") // offset wins
    // Skipped 02:30 shifts by the gap; repeated 01:30 takes its first occurrence (EDT).
    expect(at("2026-11-01T01:30:00", "America/New_York")).toBe("2026-11-01T05:30:00.000Z")
    expect(at("2027-03-14T02:30:00", "America/New_York")).toBe("2027-03-14T07:30:00.000Z") // 03:30 EDT
  })

  it("refuses a missing, invalid or past scheduledAt", () => {
    refuses({ scheduleType: "once" }, "scheduledAt", /scheduledAt is required/)
    for (const scheduledAt of [5, null, { at: 1 }]) {
      refuses({ scheduleType: "once", scheduledAt }, "scheduledAt", /ISO 8601/)
    }
    const malformed = ["tomorrow", "2030-01-01", "2030-02-30T00:00:00Z", "2030-01-01T24:00:00Z", "01/02/2030 09:00"]
    for (const scheduledAt of malformed) {
      refuses({ scheduleType: "once", scheduledAt }, "scheduledAt", /ISO 8601 date-time/)
    }
    refuses({ scheduleType: "once", scheduledAt: "2020-01-01T00:00:00Z" }, "scheduledAt", /must be in the future/)
    refuses({ scheduleType: "once", scheduledAt: now.toISOString() }, "scheduledAt", /must be in the future/)
    // 12:30 in Paris is 10:30Z, before now (12:00Z), though 12:30Z would not be.
    refuses(
      { scheduleType: "once", scheduledAt: "2026-06-01T12:30:00", timezone: "Europe/Paris" },
      "scheduledAt",
      /must be in the future: 2026-06-01T10:30:00\.000Z/
    )
  })

  it("collects every problem", () => {
    const problems = problemsOf({ scheduleType: "once", scheduledAt: "2020-01-01T00:00:00Z", timezone: "Mars/Olympus" })
    expect(problems.map((p) => p.field)).toStrictEqual(["triggerMetadata.timezone", "triggerMetadata.scheduledAt"])
  })
})

describe("firstRun and nextRun", () => {
  it("interval: one interval after the start, then on the due + k*interval grid", () => {
    const spec = specOf({ interval: 60 })
    expect(firstRun(spec, new Date("2026-01-01T00:00:30Z"))?.toISOString()).toBe("2026-01-01T00:01:30.000Z")
    const due = new Date("2026-01-01T00:01:30Z")
    expect(nextRun(spec, due, due)?.toISOString()).toBe("2026-01-01T00:02:30.000Z")
    expect(nextRun(spec, due, new Date("2026-01-01T00:01:31Z"))?.toISOString()).toBe("2026-01-01T00:02:30.000Z")
    // A tick handled early (clock skew) still moves on by one interval.
    expect(nextRun(spec, due, new Date("2026-01-01T00:01:00Z"))?.toISOString()).toBe("2026-01-01T00:02:30.000Z")
  })

  it("interval: missed ticks collapse into one run, aligned to the grid", () => {
    const spec = specOf({ interval: 60 })
    const due = new Date("2026-01-01T00:01:30Z")
    // Three days down: the next run is the first grid time after now, not a burst of 4,320 catch-up runs.
    expect(nextRun(spec, due, new Date("2026-01-04T07:00:00Z"))?.toISOString()).toBe("2026-01-04T07:00:30.000Z")
    // Exactly on a grid time: the result is strictly after now.
    expect(nextRun(spec, due, new Date("2026-01-04T07:00:30Z"))?.toISOString()).toBe("2026-01-04T07:01:30.000Z")
  })

  it("cron: strictly after the start, and collapsed to the next time after now", () => {
    const spec = cron("0 * * * *")
    expect(firstRun(spec, new Date("2026-01-01T10:00:00Z"))?.toISOString()).toBe("2026-01-01T11:00:00.000Z")
    expect(firstRun(spec, new Date("2026-01-01T10:59:59Z"))?.toISOString()).toBe("2026-01-01T11:00:00.000Z")
    const due = new Date("2026-01-01T11:00:00Z")
    expect(nextRun(spec, due, due)?.toISOString()).toBe("2026-01-01T12:00:00.000Z")
    expect(nextRun(spec, due, new Date("2026-01-05T17:20:00Z"))?.toISOString()).toBe("2026-01-05T18:00:00.000Z")
    expect(nextRun(spec, due, new Date("2026-01-01T10:59:00Z"))?.toISOString()).toBe("2026-01-01T12:00:00.000Z")
  })

  it("once: fires at its time, never when that is past, and not again", () => {
    const spec = specOf({ scheduleType: "once", scheduledAt: "2030-01-01T00:00:00Z" })
    expect(firstRun(spec, now)?.toISOString()).toBe("2030-01-01T00:00:00.000Z")
    expect(firstRun(spec, new Date("2030-01-01T00:00:01Z"))).toBeUndefined()
    expect(nextRun(spec, new Date("2030-01-01T00:00:00Z"), new Date("2030-01-01T00:00:00Z"))).toBeUndefined()
  })
})

describe("cron times", () => {
  it("0 9 * * 1-5 in Asia/Tokyo runs at 00:00Z on weekdays", () => {
    // 2026-01-02 is a Friday; the weekend is skipped.
    expect(runs(cron("0 9 * * 1-5", "Asia/Tokyo"), "2026-01-01T12:00:00Z", 4)).toStrictEqual([
      "2026-01-02T00:00:00.000Z",
      "2026-01-05T00:00:00.000Z",
      "2026-01-06T00:00:00.000Z",
      "2026-01-07T00:00:00.000Z"
    ])
  })

  it("*/15, the first of the month and Sundays at noon", () => {
    expect(runs(cron("*/15 * * * *"), "2026-01-01T10:07:00Z", 4)).toStrictEqual([
      "2026-01-01T10:15:00.000Z",
      "2026-01-01T10:30:00.000Z",
      "2026-01-01T10:45:00.000Z",
      "2026-01-01T11:00:00.000Z"
    ])
    expect(runs(cron("0 0 1 * *"), "2026-01-15T00:00:00Z", 3)).toStrictEqual([
      "2026-02-01T00:00:00.000Z",
      "2026-03-01T00:00:00.000Z",
      "2026-04-01T00:00:00.000Z"
    ])
    // 2026-01-04 is a Sunday.
    expect(runs(cron("0 12 * * 0"), "2026-01-01T00:00:00Z", 2)).toStrictEqual(["2026-01-04T12:00:00.000Z", "2026-01-11T12:00:00.000Z"])
    expect(runs(cron("0 0 29 2 *"), "2026-01-01T00:00:00Z", 2)).toStrictEqual(["2028-02-29T00:00:00.000Z", "2032-02-29T00:00:00.000Z"])
  })
})

describe("cron across daylight saving", () => {
  it("America/New_York 2026-03-08: the skipped 02:30 runs at 03:30 EDT, once", () => {
    expect(runs(cron("30 2 * * *", "America/New_York"), "2026-03-07T00:00:00Z", 3)).toStrictEqual([
      "2026-03-07T07:30:00.000Z", // 02:30 EST
      "2026-03-08T07:30:00.000Z", // 03:30 EDT: 02:30 does not exist that day
      "2026-03-09T06:30:00.000Z" // 02:30 EDT
    ])
    expect(runs(cron("30 2,3 * * *", "America/New_York"), "2026-03-08T00:00:00Z", 2)).toStrictEqual([
      "2026-03-08T07:30:00.000Z", // 02:30 and 03:30 land on the same instant, which runs once
      "2026-03-09T06:30:00.000Z"
    ])
    expect(runs(cron("*/30 * * * *", "America/New_York"), "2026-03-08T06:15:00Z", 3)).toStrictEqual([
      "2026-03-08T06:30:00.000Z", // 01:30 EST
      "2026-03-08T07:00:00.000Z", // 03:00 EDT
      "2026-03-08T07:30:00.000Z"
    ])
  })

  it("America/New_York 2026-11-01: the repeated 01:30 runs once, at its first occurrence", () => {
    const spec = cron("30 1 * * *", "America/New_York")
    expect(runs(spec, "2026-10-31T00:00:00Z", 3)).toStrictEqual([
      "2026-10-31T05:30:00.000Z", // 01:30 EDT
      "2026-11-01T05:30:00.000Z", // 01:30 EDT; not again at 06:30Z (01:30 EST)
      "2026-11-02T06:30:00.000Z" // 01:30 EST
    ])
    // A node that handles the 05:30Z tick late, inside the repeated hour, does not run it a second time.
    const due = new Date("2026-11-01T05:30:00Z")
    expect(nextRun(spec, due, new Date("2026-11-01T06:10:00Z"))?.toISOString()).toBe("2026-11-02T06:30:00.000Z")
    // Starting inside the repeated hour, after the first 01:30: the next run is the next day's.
    expect(firstRun(spec, new Date("2026-11-01T06:00:00Z"))?.toISOString()).toBe("2026-11-02T06:30:00.000Z")
  })

  it("America/New_York 2026-11-01: an hour-wildcard expression keeps running through the repeated hour", () => {
    expect(runs(cron("*/30 * * * *", "America/New_York"), "2026-11-01T05:15:00Z", 5)).toStrictEqual([
      "2026-11-01T05:30:00.000Z", // 01:30 EDT
      "2026-11-01T06:00:00.000Z", // 01:00 EST
      "2026-11-01T06:30:00.000Z", // 01:30 EST
      "2026-11-01T07:00:00.000Z", // 02:00 EST
      "2026-11-01T07:30:00.000Z"
    ])
    expect(runs(cron("0 * * * *", "America/New_York"), "2026-11-01T04:30:00Z", 3)).toStrictEqual([
      "2026-11-01T05:00:00.000Z",
      "2026-11-01T06:00:00.000Z",
      "2026-11-01T07:00:00.000Z"
    ])
  })

  it("Europe/Paris 2026-03-29 and 2026-10-25", () => {
    const spec = cron("30 2 * * *", "Europe/Paris")
    expect(runs(spec, "2026-03-28T00:00:00Z", 3)).toStrictEqual([
      "2026-03-28T01:30:00.000Z", // 02:30 CET
      "2026-03-29T01:30:00.000Z", // 03:30 CEST: 02:30 does not exist that day
      "2026-03-30T00:30:00.000Z" // 02:30 CEST
    ])
    expect(runs(spec, "2026-10-24T00:00:00Z", 3)).toStrictEqual([
      "2026-10-24T00:30:00.000Z", // 02:30 CEST
      "2026-10-25T00:30:00.000Z", // 02:30 CEST; not again at 01:30Z (02:30 CET)
      "2026-10-26T01:30:00.000Z" // 02:30 CET
    ])
    expect(runs(cron("0 9 * * *", "Europe/Paris"), "2026-10-24T12:00:00Z", 2)).toStrictEqual([
      "2026-10-25T08:00:00.000Z",
      "2026-10-26T08:00:00.000Z"
    ])
  })
})
