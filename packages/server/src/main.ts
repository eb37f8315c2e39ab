// Config -> database (+ migrations) -> cluster runner -> HTTP server. SIGTERM/SIGINT interrupt the program: the
// HTTP server stops accepting and drains in-flight requests, the runner hands its shards over, and a clean
// shutdown exits 0. A bad configuration value exits 1 with one line naming the variable.
import { NodeRuntime } from "@effect/platform-node"
import { Cause, Effect, Exit, Layer, Logger } from "effect"
import { ServerLayer } from "./app/Server.ts"
import { stdoutJsonLogger } from "./platform/LogLines.ts"

const program = Layer.launch(ServerLayer).pipe(
  Effect.catchTag("InvalidConfig", (e) =>
    Effect.sync(() => {
      process.stderr.write(`troupe: ${e.message}\n`)
      process.exit(1)
    })
  ),
  // JSON lines for machines; on a terminal, Effect's readable lines
  Effect.provide(Logger.layer([process.stdout.isTTY ? Logger.consolePretty() : stdoutJsonLogger()]))
)

NodeRuntime.runMain(program, {
  teardown: (exit, onExit) => onExit(Exit.isSuccess(exit) || Cause.hasInterruptsOnly(exit.cause) ? 0 : 1)
})
