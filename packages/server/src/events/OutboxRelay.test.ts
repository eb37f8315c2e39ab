// The outbox and its relay against a real database (PGlite, or PostgreSQL when DATABASE_URL is set).
import { expect, layer } from "@effect/vitest"
import { Effect, Layer, Ref } from "effect"
import { SqlClient } from "effect/sql"
import { listen } from "./Listen.ts"
import { appendEvent, appendEvents, EVENTS_CHANNEL, recordEvent, type StoredEvent } from "./Outbox.ts"
import { BATCH_SIZE, EventConsumers, makeRelayStep } from "./OutboxRelay.ts"
import { TEST_WORKSPACE, TestDatabase } from "../../../../test/support/TestDatabase.ts"
import { WebhookRepo } from "./WebhookRepo.ts"

const ev = (slug: string, type: "record.created" | "record.updated", data: Record<string, unknown>, workspace = TEST_WORKSPACE) =>
  recordEvent({
    type,
    workspace,
    structure: { id: slug === "orders" ? "00000000-0000-4000-8000-000000000001" : "00000000-0000-4000-8000-000000000002", slug },
    record: { id: crypto.randomUUID(), structureId: "s", data },
    timestamp: "2024-01-01T00:00:00.000Z"
  })

const hook = (name: string, events: Array<string>, filters: object, workspace = TEST_WORKSPACE, enabled = true) =>
  Effect.flatMap(Effect.service(WebhookRepo), (repo) =>
    repo.insert({
      id: crypto.randomUUID(),
      workspace,
      name,
      url: "http://127.0.0.1:1/x",
      events,
      filters: filters as any,
      secret: "s",
      enabled,
      status: enabled ? "active" : "disabled",
      createdBy: null
    })
  )

const deliveriesOf = (webhookId: string) =>
  Effect.flatMap(
    Effect.service(SqlClient.SqlClient),
    (sql) =>
      sql`SELECT event_id::text AS event_id, event, payload FROM webhook_deliveries WHERE webhook_id = ${webhookId}::uuid ORDER BY seq`
  )

const pending = Effect.flatMap(Effect.service(SqlClient.SqlClient), (sql) =>
  sql`SELECT count(*)::int AS n FROM events WHERE processed_at IS NULL`.pipe(Effect.map((r) => Number((r[0] as any).n)))
)

layer(WebhookRepo.layer.pipe(Layer.provideMerge(TestDatabase())), { excludeTestServices: true, timeout: 60_000 })("outbox relay", (it) => {
  it.effect("an event appended in a rolled-back transaction never exists", () =>
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const before = yield* pending
      yield* sql
        .withTransaction(Effect.andThen(appendEvent(sql, ev("orders", "record.created", {})), Effect.fail("boom")))
        .pipe(Effect.flip)
      expect(yield* pending).toBe(before)
    })
  )

  it.effect("the wake-up of appendEvent is sent after commit, not before, and not after a rollback", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        const seen = yield* Ref.make<Array<string>>([])
        yield* listen(EVENTS_CHANNEL, (p) => Effect.runSync(Ref.update(seen, (a) => [...a, p])))
        yield* Effect.sleep("200 millis")
        yield* sql.withTransaction(
          Effect.gen(function* () {
            yield* appendEvent(sql, ev("orders", "record.created", {}))
            yield* Effect.sleep("200 millis")
            expect(yield* Ref.get(seen)).toHaveLength(0)
          })
        )
        for (let i = 0; i < 50 && (yield* Ref.get(seen)).length === 0; i++) yield* Effect.sleep("50 millis")
        expect(yield* Ref.get(seen)).toHaveLength(1)
        yield* Effect.ignore(
          sql.withTransaction(Effect.andThen(appendEvent(sql, ev("orders", "record.created", {})), Effect.fail("rolled back")))
        )
        yield* Effect.sleep("300 millis")
        expect(yield* Ref.get(seen)).toHaveLength(1)
        // drain so later tests start clean
        const step = yield* makeRelayStep
        while ((yield* step).count > 0) {}
      })
    )
  )

  it.effect("relays committed events in order to matching active webhooks, once", () =>
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const step = yield* makeRelayStep
      while ((yield* step).count > 0) {}
      const ordersCreated = yield* hook("a", ["record.created"], { structure: "orders" })
      const paid = yield* hook("b", ["*"], { data: { status: "paid" } })
      const other = yield* hook("c", ["*"], {}, "other")
      const disabled = yield* hook("d", ["*"], {}, TEST_WORKSPACE, false)
      const queried = yield* hook("e", ["record.*"], { query: "total > 100" })
      yield* appendEvents(sql, [
        ev("orders", "record.created", { status: "open", total: 50 }),
        ev("orders", "record.updated", { status: "paid", total: 500 }),
        ev("users", "record.created", { status: "paid" }),
        ev("orders", "record.created", {}, "other")
      ])
      const result = yield* step
      expect(result.count).toBe(4)
      expect([...result.webhookIds].sort()).toStrictEqual([ordersCreated.id, paid.id, other.id, queried.id].sort())
      const ids = (yield* sql`SELECT id::text AS id, seq FROM events ORDER BY id DESC LIMIT 4`)
        .map((r: any) => [r.id, Number(r.seq)])
        .reverse()
      // seq follows id order within the batch
      for (let i = 1; i < ids.length; i++) expect(ids[i]![1] as number).toBeGreaterThan(ids[i - 1]![1] as number)
      const [e1, e2, e3, e4] = ids.map((x) => x[0])
      expect((yield* deliveriesOf(ordersCreated.id)).map((r: any) => r.event_id)).toStrictEqual([e1])
      expect((yield* deliveriesOf(paid.id)).map((r: any) => r.event_id)).toStrictEqual([e2, e3])
      expect((yield* deliveriesOf(other.id)).map((r: any) => r.event_id)).toStrictEqual([e4])
      expect((yield* deliveriesOf(disabled.id)).map((r: any) => r.event_id)).toStrictEqual([])
      expect((yield* deliveriesOf(queried.id)).map((r: any) => r.event_id)).toStrictEqual([e2])
      const body = (yield* deliveriesOf(paid.id))[0] as any
      const payload = typeof body.payload === "string" ? JSON.parse(body.payload) : body.payload
      expect(payload.event).toBe("record.updated")
      expect(Object.keys(payload)).toStrictEqual(["event", "workspace", "timestamp", "data"])
      expect(payload.data.record.status).toBe("paid")
      expect((yield* step).count).toBe(0)
      expect(yield* pending).toBe(0)
    })
  )

  it.effect("a failing consumer rolls the whole batch back; the next step hands it over again", () =>
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const drain = yield* makeRelayStep
      while ((yield* drain).count > 0) {}
      const webhook = yield* hook("f", ["*"], { structure: "invoices" })
      yield* appendEvent(sql, ev("invoices", "record.created", { n: 1 }))
      const failing = yield* makeRelayStep.pipe(
        Effect.provideService(EventConsumers, [
          {
            name: "broken",
            handle: () => Effect.andThen(sql`SELECT 1`, Effect.die("consumer down"))
          }
        ])
      )
      yield* Effect.exit(failing)
      expect(yield* pending).toBe(1)
      expect(yield* deliveriesOf(webhook.id)).toHaveLength(0)
      const seen: Array<StoredEvent> = []
      const working = yield* makeRelayStep.pipe(
        Effect.provideService(EventConsumers, [
          {
            name: "collect",
            handle: (events) => Effect.sync(() => void seen.push(...events))
          }
        ])
      )
      expect((yield* working).count).toBe(1)
      expect(seen.length).toBe(1)
      expect(seen[0]!.type).toBe("record.created")
      expect(seen[0]!.recordSlug).toBe("invoices")
      expect(yield* deliveriesOf(webhook.id)).toHaveLength(1)
      expect(yield* pending).toBe(0)
    })
  )

  it.effect("a consumer gets only the events it selects, read without payloads, then handed over with theirs", () =>
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const drain = yield* makeRelayStep
      while ((yield* drain).count > 0) {}
      yield* appendEvents(sql, [
        ev("invoices", "record.created", { n: 1 }),
        ev("orders", "record.created", { n: 2 }),
        ev("invoices", "record.updated", { n: 3 })
      ])
      const offered: Array<ReadonlyArray<unknown>> = []
      const seen: Array<StoredEvent> = []
      const step = yield* makeRelayStep.pipe(
        Effect.provideService(EventConsumers, [
          {
            name: "invoices only",
            select: (events) =>
              Effect.sync(() => {
                offered.push(events)
                return events.filter((e) => e.recordSlug === "invoices")
              }),
            handle: (events) => Effect.sync(() => void seen.push(...events))
          },
          {
            name: "nothing",
            select: () => Effect.succeed([]),
            handle: () => Effect.die("handed events it did not select")
          }
        ])
      )
      expect((yield* step).count).toBe(3)
      expect(offered).toHaveLength(1)
      expect(offered[0]!.every((e) => !Object.hasOwn(e as object, "payload"))).toBe(true)
      expect(seen.map((e) => [e.type, (e.payload as any).data.record.data.n])).toStrictEqual([
        ["record.created", 1],
        ["record.updated", 3]
      ])
      // all three relayed all the same
      expect(yield* pending).toBe(0)
    })
  )

  it.effect("behind, it reads bigger batches until one comes back short; seq stays gap-free in id order", () =>
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const step = yield* makeRelayStep
      while ((yield* step).count > 0) {}
      const n = BATCH_SIZE + 1000 + 300
      yield* appendEvents(
        sql,
        Array.from({ length: n }, (_, i) => ev("orders", "record.created", { i }))
      )
      const counts: Array<number> = []
      for (let result = yield* step; result.count > 0; result = yield* step) counts.push(result.count)
      // a full batch of BATCH_SIZE, then one catch-up batch, then the rest; the next short one is back to BATCH_SIZE
      expect(counts).toStrictEqual([BATCH_SIZE, 1000, 300])
      const rows = yield* sql`SELECT id, seq FROM events ORDER BY id DESC LIMIT ${n}`
      const seqs = rows.map((r: any) => Number(r.seq)).reverse()
      expect(seqs.every((seq, i) => i === 0 || seq === seqs[i - 1]! + 1)).toBe(true)
      yield* appendEvents(
        sql,
        Array.from({ length: BATCH_SIZE + 1 }, (_, i) => ev("orders", "record.created", { i }))
      )
      expect((yield* step).count).toBe(BATCH_SIZE)
    })
  )
})
