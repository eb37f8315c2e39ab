// The outbox claim against a real database (PGlite, or PostgreSQL when DATABASE_URL is set), with no worker running:
// one statement visits the workspaces after the cursor, then wraps round to those up to it, takes the oldest row of
// each before the second of any, and holds a workspace to its cap counting what the node already holds.
import { expect, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { TEST_WORKSPACE, TestDatabase } from "../../../../test/support/TestDatabase.ts"
import { uuidv7 } from "../lib/Uuid.ts"
import type { NewMessage } from "./model.ts"
import { NotificationRepo } from "./NotificationRepo.ts"

const Env = NotificationRepo.layer.pipe(Layer.provideMerge(TestDatabase()))

const message = (workspace: string, n: number): NewMessage => ({
  id: uuidv7(),
  workspace,
  channel: "email",
  to: [`${workspace}-${n}@example.com`],
  cc: [],
  bcc: [],
  from: null,
  subject: `${workspace} ${n}`,
  text: "hello",
  html: null,
  templateId: null,
  templateName: null,
  templateVersion: null,
  messageId: null,
  createdBy: null,
  runId: null,
  runDepth: null
})

layer(Env, { excludeTestServices: true, timeout: 60_000 })("notification claim", (it) => {
  it.effect("wraps round from the cursor in one claim, the oldest of each workspace first, within the cap", () =>
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const repo = yield* NotificationRepo
      yield* sql`INSERT INTO workspaces (slug, name) VALUES ('zeta', 'Zeta')`
      const workspaces = [TEST_WORKSPACE, "other", "zeta"] as const
      // inserted one at a time so each workspace's rows are due in order
      for (let n = 1; n <= 3; n++) {
        for (const w of workspaces) yield* Effect.orDie(repo.insertMessages([message(w, n)]))
      }
      const claim = (cursor: string, n: number, busy: ReadonlyMap<string, number> = new Map()) =>
        Effect.map(Effect.orDie(repo.claim({ owner: "node-a", cursor, busy, cap: 2, n, leaseMs: 15_000 })), (rows) =>
          rows.map((r) => r.subject).sort()
        )
      // after "acme": other and zeta first; acme only once they gave their oldest
      expect(yield* claim(TEST_WORKSPACE, 2)).toEqual(["other 1", "zeta 1"])
      // after "zeta": nothing, so round to acme and other
      expect(yield* claim("zeta", 2)).toEqual(["acme 1", "other 2"])
      // acme holds its cap of 2 on this node: none of acme, the oldest of zeta and other, then zeta's next
      expect(yield* claim("other", 3, new Map([[TEST_WORKSPACE, 2]]))).toEqual(["other 3", "zeta 2", "zeta 3"])
      const [left] = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM notification_messages WHERE status = 'queued'`
      expect(Number(left?.n)).toBe(2)
    })
  )
})
