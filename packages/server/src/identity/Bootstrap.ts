// First boot on an empty database (README "First boot"): workspace TROUPE_WORKSPACE and user `admin`, Owner of it and
// platform administrator, with password TROUPE_ADMIN_PASSWORD, or a generated one printed once on stdout. Nodes
// starting together take turns on an advisory lock; only the one that finds no user creates them.
import { Effect, Layer, Option, Redacted } from "effect"
import { SqlClient } from "effect/sql"
import * as Crypto from "node:crypto"
import { AppConfig } from "../platform/AppConfig.ts"
import { markIdentityChanged } from "./AccessCache.ts"
import { hashPassword, newPassword } from "./Credentials.ts"

export const bootstrap = Effect.gen(function* () {
  const config = yield* AppConfig
  const sql = yield* SqlClient.SqlClient
  const noUsers = Effect.map(sql<{ n: number }>`SELECT count(*)::int AS n FROM users`, (r) => Number(r[0]?.n ?? 0) === 0)
  if (!(yield* noUsers)) return
  const generated = Option.isNone(config.adminPassword)
  const password = Option.getOrElse(Option.map(config.adminPassword, Redacted.value), newPassword)
  const hash = yield* hashPassword(password)
  const created = yield* sql.withTransaction(
    Effect.gen(function* () {
      if (sql.driver !== "pglite") yield* sql`SELECT pg_advisory_xact_lock(7412003)`
      if (!(yield* noUsers)) return false
      const id = Crypto.randomUUID()
      yield* sql`
      INSERT INTO workspaces (slug, name)
        VALUES (${config.workspace}, ${config.workspace}) ON CONFLICT (slug) DO NOTHING`
      yield* sql`
      INSERT INTO users (id, username, password_hash, is_platform_admin) VALUES (${id}, 'admin', ${hash}, true)`
      yield* sql`INSERT INTO memberships (workspace, user_id, role) VALUES (${config.workspace}, ${id}, 'owner')`
      yield* markIdentityChanged
      return true
    })
  )
  if (created && generated) {
    // The one place a secret is printed, as the contract asks: on stdout, once, never in the JSON log.
    yield* Effect.sync(() =>
      process.stdout.write(
        `\nTroupe: created workspace "${config.workspace}" and user "admin" (Owner, platform administrator).\n` +
          `Troupe: generated admin password (shown once; set TROUPE_ADMIN_PASSWORD to choose it): ${password}\n\n`
      )
    )
  }
  if (created)
    yield* Effect.logInfo("bootstrap: created the first workspace and its admin").pipe(
      Effect.annotateLogs({ workspace: config.workspace, user: "admin" })
    )
}).pipe(Effect.orDie, Effect.withSpan("identity.bootstrap"))

/** Runs the bootstrap while the node starts (before it accepts traffic). */
export const BootstrapLayer: Layer.Layer<never, never, AppConfig | SqlClient.SqlClient> = Layer.effectDiscard(bootstrap)
