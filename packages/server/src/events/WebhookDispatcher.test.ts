// The dispatcher against a real database and a real local HTTP receiver, with short retry delays.
import { expect, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import * as Crypto from "node:crypto"
import * as Http from "node:http"
import type * as Net from "node:net"
import { Secrets } from "../platform/Secrets.ts"
import { appendEvent, recordEvent } from "./Outbox.ts"
import { makeRelayStep } from "./OutboxRelay.ts"
import { TEST_WORKSPACE, TestDatabase } from "../../../../test/support/TestDatabase.ts"
import { sealSigningSecret } from "./SigningSecret.ts"
import { makeDispatcher } from "./WebhookDispatcher.ts"
import { WebhookRepo } from "./WebhookRepo.ts"

const DELAYS = [0.15, 0.3]

interface Hit {
  readonly path: string
  readonly headers: Http.IncomingHttpHeaders
  readonly body: string
  readonly at: number
}

/** A local receiver: `answer(hit)` decides the status (may delay). */
const receiver = (answer: (hit: Hit, n: number) => number | Promise<number>) =>
  Effect.acquireRelease(
    Effect.promise(
      () =>
        new Promise<{ url: string; hits: Array<Hit>; server: Http.Server }>((resolve) => {
          const hits: Array<Hit> = []
          const server = Http.createServer((req, res) => {
            let body = ""
            req.on("data", (c) => (body += c))
            req.on("end", () => {
              const hit = { path: req.url ?? "", headers: req.headers, body, at: performance.now() }
              hits.push(hit)
              Promise.resolve(answer(hit, hits.length)).then((status) => res.writeHead(status).end())
            })
          })
          server.listen(0, "127.0.0.1", () =>
            resolve({ url: `http://127.0.0.1:${(server.address() as Net.AddressInfo).port}`, hits, server })
          )
        })
    ),
    ({ server }) => Effect.promise(() => new Promise<void>((r) => server.close(() => r())))
  )

const waitFor = <A>(what: string, probe: Effect.Effect<A, any, any>, done: (a: A) => boolean, timeoutMs = 15_000) =>
  Effect.gen(function* () {
    const deadline = performance.now() + timeoutMs
    while (true) {
      const a = yield* probe
      if (done(a)) return a
      if (performance.now() > deadline) return yield* Effect.die(new Error(`timed out waiting for ${what}`))
      yield* Effect.sleep("25 millis")
    }
  })

/** A webhook row; `sealed`: its secret stored encrypted, as WebhookService stores it (else legacy plaintext). */
const createHook = (url: string, secret = "topsecret", options: { workspace?: string; sealed?: boolean } = {}) =>
  Effect.gen(function* () {
    const repo = yield* WebhookRepo
    const secrets = yield* Secrets
    const id = Crypto.randomUUID()
    return yield* repo.insert({
      id,
      workspace: options.workspace ?? TEST_WORKSPACE,
      name: "h",
      url,
      events: ["*"],
      filters: {},
      secret: options.sealed === true ? sealSigningSecret(secrets, id, secret) : secret,
      enabled: true,
      status: "active",
      createdBy: null
    })
  })

/** A receiver that never answers (closed with every connection it holds). */
const tarpit = Effect.acquireRelease(
  Effect.promise(
    () =>
      new Promise<{ url: string; open: () => number; server: Http.Server }>((resolve) => {
        let open = 0
        const server = Http.createServer((req) => {
          open++
          req.on("close", () => open--)
        })
        server.listen(0, "127.0.0.1", () =>
          resolve({ url: `http://127.0.0.1:${(server.address() as Net.AddressInfo).port}`, open: () => open, server })
        )
      })
  ),
  ({ server }) =>
    Effect.promise(
      () =>
        new Promise<void>((r) => {
          server.closeAllConnections()
          server.close(() => r())
        })
    )
)

/** Appends `n` events and relays them (so each active webhook gets its deliveries queued). */
const emit = (n: number, slug = "orders", workspace = TEST_WORKSPACE) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    for (let i = 0; i < n; i++) {
      yield* appendEvent(
        sql,
        recordEvent({
          type: "record.created",
          workspace,
          structure: { id: "00000000-0000-4000-8000-000000000001", slug },
          record: { id: Crypto.randomUUID(), structureId: "s", data: { n: i } },
          timestamp: "2024-01-01T00:00:00.000Z"
        })
      )
    }
    const step = yield* makeRelayStep
    while ((yield* step).count > 0) {}
  })

const rows = (webhookId: string) =>
  Effect.flatMap(Effect.service(SqlClient.SqlClient), (sql) =>
    sql`SELECT id::text AS id, status, attempts, last_status, last_error, next_attempt_at, redelivery_of
      FROM webhook_deliveries WHERE webhook_id = ${webhookId}::uuid ORDER BY seq`.pipe(Effect.map((r) => r as Array<any>))
  )

const webhookStatus = (id: string) =>
  Effect.flatMap(Effect.service(SqlClient.SqlClient), (sql) =>
    sql`SELECT status FROM webhooks WHERE id = ${id}::uuid`.pipe(Effect.map((r) => (r[0] as any).status as string))
  )

const Env = WebhookRepo.layer.pipe(
  Layer.provideMerge(Secrets.layer),
  Layer.provideMerge(TestDatabase({ webhookRetryDelays: DELAYS, webhookConcurrency: 4, webhookWorkspaceConcurrency: 2 }))
)

layer(Env, { excludeTestServices: true, timeout: 60_000 })("webhook dispatcher", (it) => {
  it.effect("delivers signed bodies, in event order, and marks them delivered", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const rx = yield* receiver(() => 200)
        const hook = yield* createHook(`${rx.url}/ok`)
        yield* emit(5)
        const dispatcher = yield* makeDispatcher
        yield* dispatcher.kick([hook.id])
        yield* waitFor("5 deliveries", rows(hook.id), (r) => r.every((d) => d.status === "delivered"))
        expect(rx.hits).toHaveLength(5)
        expect(rx.hits.map((h) => JSON.parse(h.body).data.record.n)).toStrictEqual([0, 1, 2, 3, 4])
        const log = yield* rows(hook.id)
        for (const [i, hit] of rx.hits.entries()) {
          const expected = Crypto.createHmac("sha256", "topsecret").update(hit.body).digest("hex")
          expect(hit.headers["x-troupe-signature"]).toBe(`sha256=${expected}`)
          expect(hit.headers["x-troupe-event"]).toBe("record.created")
          expect(hit.headers["x-troupe-delivery"]).toBe(log[i].id)
          expect(hit.headers["webhook-id"]).toBe(log[i].id)
          const ts = hit.headers["webhook-timestamp"] as string
          const std = Crypto.createHmac("sha256", "topsecret").update(`${log[i].id}.${ts}.${hit.body}`).digest("base64")
          expect(hit.headers["webhook-signature"]).toBe(`v1,${std}`)
          expect(log[i].attempts).toBe(1)
          expect(Number(log[i].last_status)).toBe(200)
        }
      })
    )
  )

  it.effect("retries after the configured delays with the same delivery id, then fails the delivery and the webhook", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const rx = yield* receiver(() => 500)
        const hook = yield* createHook(`${rx.url}/down`)
        yield* emit(2)
        const dispatcher = yield* makeDispatcher
        yield* dispatcher.kick([hook.id])
        yield* waitFor("failed webhook", webhookStatus(hook.id), (s) => s === "failed")
        expect(rx.hits).toHaveLength(1 + DELAYS.length)
        expect(new Set(rx.hits.map((h) => h.headers["x-troupe-delivery"])).size).toBe(1)
        for (let i = 1; i < rx.hits.length; i++) {
          expect(rx.hits[i]!.at - rx.hits[i - 1]!.at).toBeGreaterThanOrEqual(DELAYS[i - 1]! * 1000 - 20)
        }
        const [first, second] = yield* rows(hook.id)
        expect(first.status).toBe("failed")
        expect(first.attempts).toBe(3)
        expect(Number(first.last_status)).toBe(500)
        expect(first.last_error).toMatch(/500/)
        // the webhook stopped: what was queued behind is skipped, not sent
        expect(second.status).toBe("skipped")
      })
    )
  )

  it.effect("deliveries that succeeded before the webhook failed stay delivered; only those behind are skipped", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const rx = yield* receiver((_h, n) => (n <= 2 ? 200 : 500))
        const hook = yield* createHook(`${rx.url}/breaks`)
        yield* emit(4)
        const dispatcher = yield* makeDispatcher
        yield* dispatcher.kick([hook.id])
        yield* waitFor("failed webhook", webhookStatus(hook.id), (s) => s === "failed")
        const log = yield* waitFor("settled log", rows(hook.id), (r) => r.every((d) => d.status !== "pending" && d.status !== "retrying"))
        expect(log.map((d) => d.status)).toStrictEqual(["delivered", "delivered", "failed", "skipped"])
      })
    )
  )

  it.effect("recovers when a retry succeeds", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const rx = yield* receiver((_h, n) => (n === 1 ? 503 : 200))
        const hook = yield* createHook(`${rx.url}/flaky`)
        yield* emit(1)
        const dispatcher = yield* makeDispatcher
        yield* dispatcher.kick([hook.id])
        const [row] = yield* waitFor("delivered", rows(hook.id), (r) => r[0]?.status === "delivered")
        expect(row.attempts).toBe(2)
        expect(yield* webhookStatus(hook.id)).toBe("active")
      })
    )
  )

  it.effect("resumes a stored retry: waits for next_attempt_at and counts the earlier attempts", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        const rx = yield* receiver(() => 500)
        const hook = yield* createHook(`${rx.url}/resume`)
        yield* emit(1)
        const [row] = yield* rows(hook.id)
        // as if a node had made 2 attempts and died before the third
        yield* sql`UPDATE webhook_deliveries SET status = 'retrying', attempts = 2,
        next_attempt_at = now() + interval '300 milliseconds' WHERE id = ${row.id}::uuid`
        const start = performance.now()
        const dispatcher = yield* makeDispatcher
        yield* dispatcher.scan
        yield* waitFor("failed", rows(hook.id), (r) => r[0]?.status === "failed")
        expect(rx.hits).toHaveLength(1)
        expect(rx.hits[0]!.at - start).toBeGreaterThanOrEqual(250)
        expect((yield* rows(hook.id))[0].attempts).toBe(3)
      })
    )
  )

  it.effect("a slow webhook does not hold up another webhook", () =>
    Effect.scoped(
      Effect.gen(function* () {
        let release: (() => void) | undefined
        const gate = new Promise<void>((r) => (release = r))
        const slow = yield* receiver(() => gate.then(() => 200))
        const fast = yield* receiver(() => 200)
        const slowHook = yield* createHook(`${slow.url}/slow`)
        const fastHook = yield* createHook(`${fast.url}/fast`)
        yield* emit(3)
        const dispatcher = yield* makeDispatcher
        yield* dispatcher.kick([slowHook.id, fastHook.id])
        yield* waitFor("fast deliveries", rows(fastHook.id), (r) => r.length === 3 && r.every((d) => d.status === "delivered"))
        // the slow receiver has the first delivery in hand and nothing else yet: one at a time, in order
        expect(slow.hits).toHaveLength(1)
        release!()
        yield* waitFor("slow deliveries", rows(slowHook.id), (r) => r.every((d) => d.status === "delivered"))
        expect(slow.hits.map((h) => JSON.parse(h.body).data.record.n)).toStrictEqual([0, 1, 2])
      })
    )
  )

  it.effect("signs with a secret stored encrypted, and the stored form is not the secret", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        const rx = yield* receiver(() => 200)
        const hook = yield* createHook(`${rx.url}/sealed`, "whsec_c2VhbGVk", { sealed: true })
        const stored = (yield* sql`SELECT secret FROM webhooks WHERE id = ${hook.id}::uuid`)[0] as any
        expect(stored.secret).toMatch(/^enc:v1:/)
        expect(stored.secret).not.toContain("c2VhbGVk")
        yield* emit(1)
        const dispatcher = yield* makeDispatcher
        yield* dispatcher.kick([hook.id])
        yield* waitFor("delivered", rows(hook.id), (r) => r[0]?.status === "delivered")
        const hit = rx.hits[0]!
        const expected = Crypto.createHmac("sha256", "whsec_c2VhbGVk").update(hit.body).digest("hex")
        expect(hit.headers["x-troupe-signature"]).toBe(`sha256=${expected}`)
      })
    )
  )

  it.effect("a workspace whose receivers never answer does not delay another workspace's deliveries", () =>
    Effect.scoped(
      Effect.gen(function* () {
        // 4 requests may be open at once (Env), at most 2 per workspace
        const pit = yield* tarpit
        const rx = yield* receiver(() => 200)
        const stuck = []
        for (let i = 0; i < 4; i++) stuck.push(yield* createHook(`${pit.url}/never-${i}`))
        const other = yield* createHook(`${rx.url}/other`, "s", { workspace: "other" })
        yield* emit(2)
        const dispatcher = yield* makeDispatcher
        yield* dispatcher.kick(stuck.map((h) => h.id))
        // every global permit the tarpit workspace may take is taken
        yield* waitFor(
          "tarpit holding its share",
          Effect.sync(() => pit.open()),
          (n) => n >= 2
        )
        yield* Effect.sleep("100 millis")
        expect(pit.open(), "one workspace holds at most its share of open requests").toBe(2)
        const start = performance.now()
        yield* emit(3, "orders", "other")
        yield* dispatcher.kick([other.id])
        yield* waitFor(
          "other workspace delivered",
          rows(other.id),
          (r) => r.length === 3 && r.every((d) => d.status === "delivered"),
          5_000
        )
        expect(performance.now() - start).toBeLessThan(3_000)
        expect(pit.open()).toBe(2)
      })
    )
  )
})
