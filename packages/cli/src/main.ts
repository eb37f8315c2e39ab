/**
 * `troupe`: the command line for a Troupe server. Run it as `node packages/cli/src/main.ts` (Node 24 strips the
 * types) or through `bin/troupe.mjs`. Exit codes: 0 done, 1 failed, 2 usage error (the help is printed).
 *
 * @since 0.1.0
 */
import { NodeRuntime, NodeServices } from "@effect/platform-node"
import { Cause, Effect, Exit } from "effect"
import { type CliError, Command } from "effect/cli"
import { troupe, version } from "./Cli.ts"
import { report } from "./Report.ts"

const json = process.argv.slice(2).includes("--json")

const program = Command.run(troupe, { version }).pipe(
  Effect.as(0),
  Effect.catch((error) => report(error, json)),
  Effect.catchDefect((defect) => report(defect, json)),
  Effect.provide(NodeServices.layer)
)

NodeRuntime.runMain(program, {
  disableErrorReporting: true,
  teardown: (exit, onExit) => onExit(Exit.isSuccess(exit) ? (exit.value as number) : Cause.hasInterruptsOnly(exit.cause) ? 130 : 1)
})

export type { CliError }
