// The outbox worker in process, against a real database (PGlite, or PostgreSQL when DATABASE_URL is set) and a real
// SMTP server on 127.0.0.1 that answers slowly (so slots stay taken): a burst of sends accepted while claims are in
// flight never takes more slots than TROUPE_NOTIFY_CONCURRENCY (nor of one workspace than its cap), and a batch of
// outcomes where one message failed for good records each message and its event as it ended.
import { expect, layer } from "@effect/vitest"
import { Context, Effect, Layer, Option, Redacted } from "effect"
import { SqlClient } from "effect/sql"
import { startMailServer } from "../../../../test/support/MailServer.ts"
import { TEST_WORKSPACE, TestDatabase } from "../../../../test/support/TestDatabase.ts"
import { AppConfig } from "../platform/AppConfig.ts"
import { Secrets } from "../platform/Secrets.ts"
import { NotificationLayer } from "./NotificationLayer.ts"
import { NotificationService } from "./NotificationService.ts"
import { NotificationWorker } from "./NotificationWorker.ts"

const CONCURRENCY = 4
const WORKSPACE_CAP = 3

class MailPeer extends Context.Service<MailPeer, Awaited<ReturnType<typeof startMailServer>>>()("test/MailPeer") {}

const Mail = Effect.acquireRelease(
  Effect.promise(() => startMailServer()),
  (mail) => Effect.promise(() => mail.close())
)

const Env = Layer.unwrap(
  Effect.gen(function* () {
    const mail = yield* Mail
    mail.delayMs = 40
    // one recipient is refused for good (550); every other message is accepted
    mail.answer = (m) => (m.envelopeTo.includes("nobody@example.com") ? 550 : 250)
    const tuned = Layer.effect(
      AppConfig,
      Effect.map(AppConfig, (c) => ({
        ...c,
        notification: {
          ...c.notification,
          smtpUrl: Option.some(Redacted.make(mail.url)),
          concurrency: CONCURRENCY,
          workspaceConcurrency: WORKSPACE_CAP
        }
      }))
    )
    return Layer.succeed(MailPeer, mail).pipe(
      Layer.merge(NotificationLayer.pipe(Layer.provideMerge(Secrets.layer), Layer.provideMerge(tuned))),
      Layer.provideMerge(TestDatabase())
    )
  })
)

const send = (workspace: string, to: string) =>
  Effect.flatMap(NotificationService, (s) =>
    Effect.orDie(s.sendEmail(workspace, { to, subject: `to ${to}`, text: "hello" }, { id: "tester" }))
  )

/** Waits until no message of the workspaces is queued or sending. */
const settled = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  for (;;) {
    const [row] = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM notification_messages WHERE status IN ('queued', 'sending')`
    if (Number(row?.n ?? 0) === 0) return
    yield* Effect.sleep("50 millis")
  }
})

layer(Env, { excludeTestServices: true, timeout: 120_000 })("notification worker", (it) => {
  it.effect("a burst never takes more slots than the concurrency, nor of one workspace than its cap", () =>
    Effect.gen(function* () {
      const worker = yield* NotificationWorker
      const mail = yield* MailPeer
      const before = mail.accepted().length
      // a steady stream of sends from two workspaces: some are reserved while a claim of queued ones is in flight
      yield* Effect.forEach(
        Array.from({ length: 200 }, (_, i) => i),
        (i) => Effect.andThen(send(i % 2 === 0 ? TEST_WORKSPACE : "other", `burst${i}@example.com`), Effect.sleep("5 millis")),
        { concurrency: 8, discard: true }
      )
      yield* settled
      expect(mail.accepted().length - before).toBe(200)
      const slots = yield* worker.slots
      expect(slots.held).toBe(0)
      expect(slots.peak).toBeGreaterThan(0)
      expect(slots.peak).toBeLessThanOrEqual(CONCURRENCY)
      expect(slots.peakOfWorkspace).toBeLessThanOrEqual(WORKSPACE_CAP)
    })
  )

  it.effect("a batch where one message fails for good records each message and its event as it ended", () =>
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const service = yield* NotificationService
      const sent = yield* Effect.forEach(
        ["a@example.com", "nobody@example.com", "b@example.com", "c@example.com"],
        (to) => Effect.map(send(TEST_WORKSPACE, to), (accepted) => ({ to, id: accepted.id })),
        { concurrency: "unbounded" }
      )
      yield* settled
      for (const { to, id } of sent) {
        const message = yield* Effect.orDie(service.get(TEST_WORKSPACE, id))
        const events = yield* sql<{ type: string }>`SELECT type FROM events WHERE payload->'data'->>'id' = ${id}`
        if (to === "nobody@example.com") {
          expect(message.status).toBe("failed")
          expect(message.lastError).toMatch(/^SMTP 550: /)
          expect(events.map((e) => e.type)).toEqual(["notification.failed"])
        } else {
          expect(message.status).toBe("sent")
          expect(message.lastError).toBeNull()
          expect(message.providerMessageId).toMatch(/^Q\d+$/)
          expect(events.map((e) => e.type)).toEqual(["notification.sent"])
        }
        expect(message.attempts).toBe(1)
      }
    })
  )
})
