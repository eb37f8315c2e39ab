// Where reads built from callers' filters run: every record list and every query-language statement. On PostgreSQL
// that is a pool of its own whose sessions start with
//   - `statement_timeout` (TROUPE_QUERY_TIMEOUT_MS): one round trip per statement, where a SET LOCAL would need
//     BEGIN, SET, the query and COMMIT; a slow filter can never hold the connections writes need;
//   - `plan_cache_mode = force_custom_plan`: the statements are prepared, and a generic plan (chosen after five
//     runs, blind to the bound values) can trade the sort index of a page for a scan of the whole structure.
// Statements are spread over the connections and pipelined at most two deep: a statement built from a filter can
// run long, and everything queued behind it on its connection waits for it (the pool hands out the most recently
// used connection first, so deep pipelines put a burst of pages on one or two backends while the others idle; at
// 64 concurrent pages that made the p99 2.5x the raw driver's, where two deep on 16 connections is 1.3-1.7x). The
// pool opens QUERY_POOL_WARM connections at start and grows to TROUPE_QUERY_POOL_SIZE under load. On PGlite it is
// the one connection (a statement there runs to completion on the event loop: nothing can cancel it, so there is no
// timeout).
import { PgClient } from "@effect/sql-pg"
import { badRequest, type BadRequest, serviceUnavailable, type ServiceUnavailable, errorDetail } from "@troupe/api/Errors"
import { Context, Effect, Layer, Option } from "effect"
import * as Reactivity from "effect/reactivity/Reactivity"
import { SqlClient, type SqlError } from "effect/sql"
import { AppConfig } from "../platform/AppConfig.ts"

/** Connections opened at start, so the first burst of queries does not wait on connection setup. */
const QUERY_POOL_WARM = 4
/** Statements in flight per connection (see above). */
const PIPELINE_DEPTH = 2

export class QueryPool extends Context.Service<
  QueryPool,
  {
    readonly sql: SqlClient.SqlClient
    /**
     * A statement timeout is 503 QUERY_TIMEOUT, a bad value (SQLSTATE class 22) or a condition too large to run
     * (class 54) a 400 naming `param` (see `inputFailure`), anything else a defect.
     */
    readonly run: <A>(param: string, effect: Effect.Effect<A, SqlError.SqlError>) => Effect.Effect<A, BadRequest | ServiceUnavailable>
  }
>()("@troupe/server/query/QueryPool") {
  static readonly layer: Layer.Layer<QueryPool, never, SqlClient.SqlClient | AppConfig> = Layer.effect(
    QueryPool,
    Effect.gen(function* () {
      const main = yield* SqlClient.SqlClient
      const config = yield* AppConfig
      const timeoutMs = config.queryTimeoutMs
      const sql: SqlClient.SqlClient =
        main.driver !== "pglite" && Option.isSome(config.databaseUrl)
          ? yield* PgClient.make({
              url: config.databaseUrl.value,
              maxConnections: Math.max(1, config.queryPoolSize),
              minConnections: Math.min(QUERY_POOL_WARM, config.queryPoolSize),
              multiplex: true,
              multiplexConcurrency: PIPELINE_DEPTH,
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
              return Effect.fail(
                serviceUnavailable({
                  message: `The query ran longer than ${timeoutMs / 1000} s and was cancelled; narrow it or add an index`,
                  code: "QUERY_TIMEOUT"
                })
              )
            }
            const message = inputFailure(sqlState(e), param)
            if (message !== undefined) {
              return Effect.fail(badRequest({ message, code: "VALIDATION_ERROR", details: [errorDetail(param, message)] }))
            }
            return Effect.die(e)
          })
        )
      return QueryPool.of({ sql, run })
    })
  )
}

/**
 * What a failure caused by the caller's values says, by SQLSTATE: class 22 (data exceptions: a value that does not
 * cast, is out of range, or is text PostgreSQL cannot hold) and class 54 (a condition too large or deep to plan).
 * Undefined for every other failure, which is the server's own (a defect). PostgreSQL's text is never echoed: it
 * can quote the caller's value, and it is no contract.
 */
export const inputFailure = (state: string | undefined, param: string): string | undefined => {
  if (state === undefined) return undefined
  if (state.startsWith("54")) return `The ${param} is too large or too deeply nested to run; simplify it`
  if (!state.startsWith("22")) return undefined
  switch (state) {
    case "22003":
      return `A number in the ${param} is out of range`
    case "22007":
    case "22008":
    case "22009":
      return `A date or time in the ${param} is not valid`
    case "22012":
      return `The ${param} divides by zero`
    case "22021":
    case "22P05":
      return `A value in the ${param} holds characters that cannot be stored (NUL or invalid Unicode)`
    case "22025":
    case "22019":
    case "2200C":
    case "2200D":
      return `A pattern in the ${param} has an invalid escape`
    case "2201B":
      return `A pattern in the ${param} is not a valid regular expression`
    case "22P02":
      return `A value in the ${param} does not have the type its field needs`
    default:
      return `A value in the ${param} is not valid for its field`
  }
}

const sqlState = (e: SqlError.SqlError): string | undefined => {
  const cause = (e.reason as { cause?: unknown }).cause as { code?: unknown } | undefined
  return typeof cause?.code === "string" ? cause.code : undefined
}
