// Config -> database (+ migrations) -> cluster runner -> HTTP server. SIGTERM interrupts the program: the HTTP
// server stops accepting and drains, the runner hands its shards over, the process exits 0.
import { NodeHttpServer, NodeRuntime } from "@effect/platform-node"
import { Effect, Layer, Logger } from "effect"
import { ServerLayer } from "./platform/Server.ts"

const program = Layer.launch(ServerLayer).pipe(
  Effect.catchTag("InvalidConfig", (e) =>
    Effect.sync(() => {
      process.stderr.write(`troupe: ${e.message}\n`)
      process.exit(1)
    }))
)

NodeRuntime.runMain(program.pipe(Effect.provide(Logger.layer([Logger.consoleJson]))), { disableErrorReporting: false })
void NodeHttpServer
