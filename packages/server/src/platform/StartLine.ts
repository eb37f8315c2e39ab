// The one line a node logs (at info) once it listens: where (the address, the console, the API reference) and on
// which database, so that `npm start` says where to go. The database is named without its credentials.
import { Effect, Layer, Option, Redacted } from "effect"
import { HttpServer } from "effect/http"
import { AppConfig } from "./AppConfig.ts"

/** `postgres://user:secret@host:5432/db?x` -> `PostgreSQL at host:5432/db`; a URL that does not parse is not shown. */
export const describeDatabase = (databaseUrl: Option.Option<Redacted.Redacted<string>>, dataDir: string): string =>
  Option.match(databaseUrl, {
    onNone: () => (dataDir.startsWith("memory://") ? "embedded PGlite in memory" : `embedded PGlite in ${dataDir}`),
    onSome: (url) => {
      try {
        const u = new URL(Redacted.value(url))
        return `PostgreSQL at ${u.host}${u.pathname}`
      } catch {
        return "PostgreSQL"
      }
    }
  })

export const startLine = (address: string, database: string): string =>
  `Troupe listening on ${address} (console ${address}/console, API reference ${address}/docs, database: ${database})`

/** Logs the start line once the HTTP server is listening. */
export const StartLineLayer = Layer.effectDiscard(
  Effect.gen(function* () {
    const config = yield* AppConfig
    const server = yield* HttpServer.HttpServer
    let address = `http://${config.host}:${config.port}`
    try {
      address = HttpServer.formatAddress(server.address)
    } catch {
      // a scoped IPv6 address has no URL form: the configured one is shown
    }
    yield* Effect.logInfo(startLine(address, describeDatabase(config.databaseUrl, config.dataDir)))
  })
)
