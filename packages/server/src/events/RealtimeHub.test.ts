// The realtime hub against a real database: live delivery after the relay, filters, resume, slow subscribers.
import { expect, layer } from "@effect/vitest"
import { Deferred, Effect, Fiber, Layer, Stream } from "effect"
import { SqlClient } from "effect/sql"
import * as Crypto from "node:crypto"
import { appendEvents, type OutboxEvent, recordEvent } from "./Outbox.ts"
import { makeRelayStep } from "./OutboxRelay.ts"
import { RealtimeHub, SUBSCRIBER_BUFFER } from "./RealtimeHub.ts"
import { TEST_WORKSPACE, TestDatabase } from "../../../../test/support/TestDatabase.ts"
import { WebhookRepo } from "./WebhookRepo.ts"

const ev = (
  slug: string,
  n: number,
  type: "record.created" | "record.updated" = "record.created",
  workspace = TEST_WORKSPACE
): OutboxEvent =>
  recordEvent({
    type,
    workspace,
    structure: { id: "00000000-0000-4000-8000-000000000001", slug },
    record: { id: Crypto.randomUUID(), structureId: "s", data: { n } },
    timestamp: "2024-01-01T00:00:00.000Z"
  })

const publish = (events: ReadonlyArray<OutboxEvent>) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    yield* appendEvents(sql, events)
    const step = yield* makeRelayStep
    while ((yield* step).count > 0) {}
  })

const n = (e: { event: { payload: any } }) => e.event.payload.data.record.data.n as number

const Env = RealtimeHub.layer.pipe(Layer.provideMerge(WebhookRepo.layer), Layer.provideMerge(TestDatabase()))

layer(Env, { excludeTestServices: true, timeout: 60_000 })("realtime hub", (it) => {
  it.effect("delivers relayed events of the workspace to live subscribers, filtered", () =>
    Effect.gen(function* () {
      const hub = yield* RealtimeHub
      const all = yield* Effect.forkChild(Stream.runCollect(Stream.take(hub.subscribe({ workspace: TEST_WORKSPACE }), 3)))
      const orders = yield* Effect.forkChild(
        Stream.runCollect(
          Stream.take(hub.subscribe({ workspace: TEST_WORKSPACE, structures: new Set(["orders"]), events: ["record.updated"] }), 1)
        )
      )
      yield* Effect.sleep("100 millis")
      expect(yield* hub.subscriberCount).toBe(2)
      yield* publish([
        ev("orders", 1),
        ev("users", 2, "record.updated"),
        ev("orders", 3, "record.created", "other"),
        ev("orders", 4, "record.updated")
      ])
      const got = yield* Fiber.join(all)
      expect(got.map(n)).toStrictEqual([1, 2, 4])
      for (let i = 1; i < got.length; i++) expect(got[i]!.seq).toBeGreaterThan(got[i - 1]!.seq)
      expect((yield* Fiber.join(orders)).map(n)).toStrictEqual([4])
      // finished streams unsubscribe
      expect(yield* hub.subscriberCount).toBe(0)
    })
  )

  it.effect("resumes after a Last-Event-ID, with nothing lost or repeated between replay and live", () =>
    Effect.gen(function* () {
      const hub = yield* RealtimeHub
      const sql = yield* SqlClient.SqlClient
      yield* publish([ev("resume", 10), ev("resume", 11), ev("resume", 12)])
      const ids = (yield* sql`SELECT id::text AS id FROM events WHERE record_slug = 'resume' ORDER BY seq`).map((r: any) => r.id as string)
      const resumed = yield* Effect.forkChild(
        Stream.runCollect(
          Stream.take(hub.subscribe({ workspace: TEST_WORKSPACE, structures: new Set(["resume"]), lastEventId: ids[0]! }), 3)
        )
      )
      yield* Effect.sleep("100 millis")
      yield* publish([ev("resume", 13)])
      const got = yield* Fiber.join(resumed)
      expect(got.map(n)).toStrictEqual([11, 12, 13])
    }).pipe(Effect.timeout("20 seconds"))
  )

  it.effect("Last-Event-ID 0 replays everything retained; an unknown id later than all starts live", () =>
    Effect.gen(function* () {
      const hub = yield* RealtimeHub
      const replayed = yield* Stream.runCollect(
        Stream.take(hub.subscribe({ workspace: TEST_WORKSPACE, structures: new Set(["resume"]), lastEventId: "0" }), 4)
      )
      expect(replayed.map(n)).toStrictEqual([10, 11, 12, 13])
      const live = yield* Effect.forkChild(
        Stream.runCollect(
          Stream.take(hub.subscribe({ workspace: TEST_WORKSPACE, structures: new Set(["resume"]), lastEventId: "999999999" }), 1)
        )
      )
      yield* Effect.sleep("100 millis")
      yield* publish([ev("resume", 14)])
      expect((yield* Fiber.join(live)).map(n)).toStrictEqual([14])
    }).pipe(Effect.timeout("20 seconds"))
  )

  it.effect("a subscriber that stops reading is dropped after its buffer fills, not buffered without bound", () =>
    Effect.gen(function* () {
      const hub = yield* RealtimeHub
      const gate = yield* Deferred.make<void>()
      let received = 0
      const stalled = yield* Effect.forkChild(
        Stream.runForEach(hub.subscribe({ workspace: TEST_WORKSPACE, structures: new Set(["flood"]) }), () =>
          Effect.andThen(
            Deferred.await(gate),
            Effect.sync(() => void received++)
          )
        )
      )
      yield* Effect.sleep("100 millis")
      const total = 2 * SUBSCRIBER_BUFFER + 500
      yield* publish(Array.from({ length: total }, (_, i) => ev("flood", i)))
      yield* Effect.sleep("200 millis")
      // dropped from the hub while still stalled
      expect(yield* hub.subscriberCount).toBe(0)
      yield* Deferred.succeed(gate, undefined)
      // the stream ends on its own after what it had buffered
      yield* Fiber.join(stalled)
      // its queue plus the one chunk its stream had already taken from it
      expect(received).toBeLessThanOrEqual(2 * SUBSCRIBER_BUFFER)
      expect(received).toBeLessThan(total)
    }).pipe(Effect.timeout("30 seconds"))
  )
})
