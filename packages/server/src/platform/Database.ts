// The one SqlClient of the server: PostgreSQL through @effect/sql-pg when DATABASE_URL is set, else embedded
// PGlite under TROUPE_DATA_DIR. Both run the same numbered migrations at start.
import { PgClient } from "@effect/sql-pg"
import { Effect, Layer, Option } from "effect"
import { Migrator, SqlClient } from "effect/sql"
// the tsvector codec, before any client reads a record
import "./PgCodecs.ts"
import migration0001 from "../migrations/0001_core.ts"
import migration0002 from "../migrations/0002_identity.ts"
import migration0003 from "../migrations/0003_events.ts"
import migration0004 from "../migrations/0004_datetime.ts"
import migration0005 from "../migrations/0005_compute.ts"
import migration0006 from "../migrations/0006_identity_acks.ts"
import migration0007 from "../migrations/0007_record_history_keys.ts"
import migration0008 from "../migrations/0008_records_gin_direct.ts"
import migration0009 from "../migrations/0009_records_structure_keys.ts"
import migration0010 from "../migrations/0010_storage.ts"
import migration0011 from "../migrations/0011_search.ts"
import migration0012 from "../migrations/0012_notification.ts"
import migration0013 from "../migrations/0013_intelligence.ts"
import migration0014 from "../migrations/0014_cors.ts"
import migration0015 from "../migrations/0015_datetime_basic.ts"
import migration0016 from "../migrations/0016_storage_variants.ts"
import migration0017 from "../migrations/0017_search_write_cost.ts"
import migration0018 from "../migrations/0018_search_vector_in_statement.ts"
import { AppConfig } from "./AppConfig.ts"
import * as PgliteClient from "./PgliteClient.ts"

/** Every migration, in order. Add new ones here. */
export const migrations = {
  "0001_core": migration0001,
  "0002_identity": migration0002,
  "0003_events": migration0003,
  "0004_datetime": migration0004,
  "0005_compute": migration0005,
  "0006_identity_acks": migration0006,
  "0007_record_history_keys": migration0007,
  "0008_records_gin_direct": migration0008,
  "0009_records_structure_keys": migration0009,
  "0010_storage": migration0010,
  "0011_search": migration0011,
  "0012_notification": migration0012,
  "0013_intelligence": migration0013,
  "0014_cors": migration0014,
  "0015_datetime_basic": migration0015,
  "0016_storage_variants": migration0016,
  "0017_search_write_cost": migration0017,
  "0018_search_vector_in_statement": migration0018
}

const runMigrations = Migrator.make({})({ loader: Migrator.fromRecord(migrations) })

/** Runs the migrations; on PostgreSQL under an advisory lock so nodes starting together take turns. */
export const migrate = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  if (sql.driver === "pglite") return yield* runMigrations
  return yield* sql.withTransaction(Effect.andThen(sql`SELECT pg_advisory_xact_lock(7412001)`, runMigrations))
})

const ClientLayer = Layer.unwrap(
  Effect.gen(function* () {
    const config = yield* AppConfig
    return Option.match(config.databaseUrl, {
      onNone: () => PgliteClient.layer(config.dataDir) as Layer.Layer<SqlClient.SqlClient, unknown>,
      onSome: (url) =>
        PgClient.layer({ url, maxConnections: 20, multiplex: true, idleTimeout: "60 seconds" }) as Layer.Layer<SqlClient.SqlClient, unknown>
    })
  })
)

/** SqlClient with every migration applied. */
export const DatabaseLayer = Layer.effectDiscard(Effect.orDie(migrate)).pipe(Layer.provideMerge(ClientLayer), Layer.orDie)
