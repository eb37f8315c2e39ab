// When a message that failed for a temporary reason is tried again: the webhook delays (TROUPE_WEBHOOK_RETRY_DELAYS,
// default 1, 5, 15 s) as the same `Schedule` the webhook dispatcher retries with, stepped once per attempt made. The
// delay is stored as the row's next attempt time rather than slept in memory, so a waiting message holds no slot and
// any node may make the next attempt.
import { type Duration, Effect, Option, Pull, Schedule } from "effect"
import { retrySchedule } from "../events/WebhookDispatcher.ts"

/** The delay before attempt `attempts + 1`, after `attempts` failed ones; none when the schedule is exhausted. */
export const retryDelay = (delaysSeconds: ReadonlyArray<number>, attempts: number): Effect.Effect<Option.Option<Duration.Duration>> =>
  Effect.gen(function* () {
    const step = yield* Schedule.toStep(retrySchedule(delaysSeconds))
    let delay: Option.Option<Duration.Duration> = Option.none()
    for (let i = 0; i < attempts; i++) {
      const next = yield* step(0, undefined).pipe(
        Effect.map(([, d]) => Option.some(d)),
        Pull.catchDone(() => Effect.succeed(Option.none<Duration.Duration>()))
      )
      if (Option.isNone(next)) return next
      delay = next
    }
    return delay
  }).pipe(Effect.orDie)
