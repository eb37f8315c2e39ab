// For this folder's tests: a migrated database (embedded PGlite in memory, or a fresh PostgreSQL database next to
// DATABASE_URL, dropped afterwards) with AppConfig and the Notifier, plus a workspace row to hang webhooks on.
import { Effect, Layer, Option } from "effect"
import { SqlClient } from "effect/sql"
import { freshDatabase } from "../../../../test/support/TestServer.ts"
import { AppConfig, type AppConfigShape } from "../platform/AppConfig.ts"
import { DatabaseLayer } from "../platform/Database.ts"
import { Notifier } from "../platform/Notifier.ts"

export const TEST_WORKSPACE = "acme"

export const TestDatabase = (overrides: Partial<AppConfigShape> = {}) =>
  Layer.unwrap(Effect.gen(function*() {
    const base = process.env.DATABASE_URL
    const target = base
      ? yield* Effect.acquireRelease(Effect.promise(() => freshDatabase(base)), (db) => Effect.promise(() => db.drop()))
      : undefined
    const config = AppConfig.layerWith({
      databaseUrl: target ? Option.some(target.url) : Option.none(),
      dataDir: "memory://",
      clustered: false,
      ...overrides
    })
    const seeded = Layer.effectDiscard(Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      yield* sql`INSERT INTO workspaces (slug, name) VALUES (${TEST_WORKSPACE}, 'Acme'), ('other', 'Other')`
    }))
    return seeded.pipe(
      Layer.provideMerge(Notifier.layer),
      Layer.provideMerge(DatabaseLayer),
      Layer.provideMerge(config),
      Layer.orDie
    )
  }))
