/**
 * The command tree of `troupe`.
 *
 * @since 0.1.0
 */
import { Command } from "effect/cli"
import { backup, restore } from "./commands/Backup.ts"
import { cors } from "./commands/Cors.ts"
import { resolve } from "./commands/Resolve.ts"
import { functions } from "./commands/Functions.ts"
import { login, logout, whoami } from "./commands/Login.ts"
import { exportRecords, importRecords } from "./commands/Records.ts"
import { notify } from "./commands/Notify.ts"
import { files } from "./commands/Files.ts"
import { health } from "./commands/Health.ts"
import { runs } from "./commands/Runs.ts"
import { search } from "./commands/Search.ts"
import { structures, types } from "./commands/Structures.ts"
import { Json } from "./Output.ts"

export const version = "0.1.0"

/** @category commands */
export const troupe = Command.make("troupe").pipe(
  Command.withDescription(
    "The command line for a Troupe server. It talks to the server only through its HTTP API, with the token " +
      "`troupe login` stored. Every command takes --json; exit codes: 0 done, 1 failed, 2 usage error."
  ),
  Command.withSubcommands([
    login,
    logout,
    whoami,
    types,
    structures,
    exportRecords,
    importRecords,
    functions,
    runs,
    notify,
    files,
    search,
    health,
    resolve,
    cors,
    backup,
    restore
  ]),
  Command.withGlobalFlags([Json])
)
