/**
 * How a failed command ends: one message on stderr (a JSON object with `--json`) and its exit code: 2 for usage
 * errors (the parser's, whose help effect/cli has printed already, and `usage(...)` from handlers), 1 otherwise.
 *
 * @since 0.1.0
 */
import { Console, Effect } from "effect"
import { CliError } from "effect/cli"

const describe = (error: unknown): { code: string; message: string; exitCode: 1 | 2; details?: unknown } => {
  if (CliError.isCliError(error)) {
    if (error._tag === "ShowHelp") {
      return { code: "USAGE", message: error.errors.map((e) => e.message).join("; "), exitCode: error.errors.length > 0 ? 2 : 1 }
    }
    return { code: "USAGE", message: error.message, exitCode: error._tag === "UserError" ? 1 : 2 }
  }
  if (typeof error === "object" && error !== null && "_tag" in error) {
    const tagged = error as { _tag: string; message?: string; exitCode?: 1 | 2; code?: string; details?: unknown }
    const message = tagged.message ?? String(error)
    if (tagged._tag === "CliFailure") {
      return { code: tagged.exitCode === 2 ? "USAGE" : "FAILED", message, exitCode: tagged.exitCode ?? 1, details: tagged.details }
    }
    if (tagged._tag === "ApiError") return { code: tagged.code ?? "API_ERROR", message, exitCode: 1, details: tagged.details }
    return { code: tagged._tag, message, exitCode: 1 }
  }
  return { code: "INTERNAL", message: error instanceof Error ? (error.stack ?? error.message) : String(error), exitCode: 1 }
}

/** Prints the failure and answers the exit code. */
export const report = (error: unknown, json: boolean) =>
  Effect.gen(function* () {
    const d = describe(error)
    // the parser printed the help and its errors already
    const printed = CliError.isCliError(error) && error._tag === "ShowHelp"
    if (json) {
      yield* Console.error(JSON.stringify({ error: { code: d.code, message: d.message, details: d.details ?? null } }))
    } else if (!printed) {
      yield* Console.error(`troupe: ${d.message}`)
      const empty = d.details === undefined || d.details === null || (Array.isArray(d.details) && d.details.length === 0)
      if (!empty) yield* Console.error(JSON.stringify(d.details, null, 2))
    }
    return d.exitCode
  })
