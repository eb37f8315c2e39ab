// Where reads built from callers' filters run: every record list and every query-language statement. On PostgreSQL
// that is a pool of its own whose sessions start with
//   - `statement_timeout` (TROUPE_QUERY_TIMEOUT_MS): one round trip per statement, where a SET LOCAL would need
//     BEGIN, SET, the query and COMMIT; a slow filter can never hold the connections writes need;
//   - `plan_cache_mode = force_custom_plan`: the statements are prepared, and a generic plan (chosen after five
//     runs, blind to the bound values) can trade the sort index of a page for a scan of the whole structure;
// and it pipelines statements of concurrent requests on each connection. On PGlite it is the one connection (a
// statement there runs to completion on the event loop: nothing can cancel it, so there is no timeout).
import { PgClient } from "@effect/sql-pg"
import { badRequest, type BadRequest, serviceUnavailable, type ServiceUnavailable } from "@troupe/api/Errors"
import { Context, Effect, Layer, Option, Redacted } from "effect"
import * as Reactivity from "effect/reactivity/Reactivity"
import { SqlClient, type SqlError } from "effect/sql"
import { AppConfig } from "../platform/AppConfig.ts"

export class QueryPool extends Context.Service<QueryPool, {
  readonly sql: SqlClient.SqlClient
  /** A statement timeout is 503 QUERY_TIMEOUT, a bad value (SQLSTATE 22) 400 naming `param`, anything else a defect. */
  readonly run: <A>(param: string, effect: Effect.Effect<A, SqlError.SqlError>) => Effect.Effect<A, BadRequest | ServiceUnavailable>
}>()("@troupe/server/query/QueryPool") {
  static readonly layer: Layer.Layer<QueryPool, never, SqlClient.SqlClient | AppConfig> = Layer.effect(
    QueryPool,
    Effect.gen(function*() {
      const main = yield* SqlClient.SqlClient
      const config = yield* AppConfig
      const timeoutMs = config.queryTimeoutMs
      const sql: SqlClient.SqlClient = main.driver !== "pglite" && Option.isSome(config.databaseUrl)
        ? yield* PgClient.make({
          url: Redacted.make(config.databaseUrl.value),
          maxConnections: Math.max(1, config.queryPoolSize),
          // opened at start: a burst of queries should not wait on connection setup
          minConnections: Math.max(1, config.queryPoolSize),
          multiplex: true,
          idleTimeout: "60 seconds",
          applicationName: "troupe-query",
          startupParameters: {
            ...(timeoutMs > 0 ? { statement_timeout: String(timeoutMs) } : {}),
            plan_cache_mode: "force_custom_plan"
          }
        }).pipe(Effect.provide(Reactivity.layer), Effect.orDie)
        : main

      const run = <A>(param: string, effect: Effect.Effect<A, SqlError.SqlError>) =>
        effect.pipe(
          Effect.catchTag("SqlError", (e) => {
            if (e.reason._tag === "StatementTimeoutError") {
              return Effect.fail(serviceUnavailable({
                message: `The query ran longer than ${timeoutMs / 1000} s and was cancelled; narrow it or add an index`,
                code: "QUERY_TIMEOUT"
              }))
            }
            if (sqlState(e)?.startsWith("22")) {
              const message = `A value in the ${param} is out of range: ${e.reason.message}`
              return Effect.fail(badRequest({ message, code: "VALIDATION_ERROR", details: [{ field: param, property: param, message }] }))
            }
            return Effect.die(e)
          })
        )
      return QueryPool.of({ sql, run })
    })
  )
}

const sqlState = (e: SqlError.SqlError): string | undefined => {
  const cause = (e.reason as { cause?: unknown }).cause as { code?: unknown } | undefined
  return typeof cause?.code === "string" ? cause.code : undefined
}
