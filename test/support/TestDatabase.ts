// For the server's in-process tests (events, records, structures): a migrated database (embedded PGlite in memory,
// or a fresh PostgreSQL database next to DATABASE_URL, dropped afterwards) with AppConfig and the Notifier, plus
// workspace rows to hang webhooks and records on.
import { PgClient } from "@effect/sql-pg"
import { Effect, Layer, Option, Redacted } from "effect"
import { SqlClient } from "effect/sql"
import { AppConfig, type AppConfigShape } from "../../packages/server/src/platform/AppConfig.ts"
import { DatabaseLayer, migrate } from "../../packages/server/src/platform/Database.ts"
import { Notifier } from "../../packages/server/src/platform/Notifier.ts"
import * as PgliteClient from "../../packages/server/src/platform/PgliteClient.ts"
import { freshDatabase } from "./TestServer.ts"

export const TEST_WORKSPACE = "acme"

export const TestDatabase = (overrides: Partial<AppConfigShape> = {}) =>
  Layer.unwrap(
    Effect.gen(function* () {
      const base = process.env.DATABASE_URL
      const target = base
        ? yield* Effect.acquireRelease(
            Effect.promise(() => freshDatabase(base)),
            (db) => Effect.promise(() => db.drop())
          )
        : undefined
      const config = AppConfig.layerWith({
        databaseUrl: target ? Option.some(Redacted.make(target.url)) : Option.none(),
        dataDir: "memory://",
        clustered: false,
        ...overrides
      })
      const seeded = Layer.effectDiscard(
        Effect.gen(function* () {
          const sql = yield* SqlClient.SqlClient
          yield* sql`INSERT INTO workspaces (slug, name) VALUES (${TEST_WORKSPACE}, 'Acme'), ('other', 'Other')`
        })
      )
      return seeded.pipe(Layer.provideMerge(Notifier.layer), Layer.provideMerge(DatabaseLayer), Layer.provideMerge(config), Layer.orDie)
    })
  )

/** Runs the server's migrations (packages/server/src/migrations, as at start) over the given SqlClient layer. */
export const migrated = <E, R>(client: Layer.Layer<SqlClient.SqlClient, E, R>) =>
  Layer.effectDiscard(Effect.orDie(migrate)).pipe(Layer.provideMerge(client))

/** An embedded PGlite database in memory with every migration applied, and nothing else. */
export const MigratedPglite = () => migrated(PgliteClient.layer("memory://"))

/** A fresh PostgreSQL database next to `baseUrl` (dropped afterwards) with every migration applied. */
export const MigratedPostgres = (baseUrl: string) =>
  Layer.unwrap(
    Effect.gen(function* () {
      const db = yield* Effect.acquireRelease(
        Effect.promise(() => freshDatabase(baseUrl)),
        (db) => Effect.promise(() => db.drop())
      )
      return migrated(PgClient.layer({ url: Redacted.make(db.url), maxConnections: 1 }))
    })
  )
