/**
 * What every command shares: the global `--json` flag, the error a command fails with, and how results and
 * progress are printed. Results go to stdout (human text, or one JSON document with `--json`); progress and
 * errors go to stderr, so `troupe export --json > result.json` stays parseable.
 *
 * @since 0.1.0
 */
import { Console, Data, Effect, Option } from "effect"
import { Flag, GlobalFlag } from "effect/cli"

/** `--json`: the result as one JSON document on stdout. @category flags */
export const Json = GlobalFlag.Setting("json")({
  flag: Flag.Boolean("json").pipe(
    Flag.withDescription("Print the result as JSON on stdout (errors as JSON on stderr)"),
    Flag.withDefault(false)
  )
})

/** A command failed: exit code 1 (a failure) or 2 (a usage error the parser could not see). @category errors */
export class CliFailure extends Data.TaggedError("CliFailure")<{
  readonly message: string
  readonly exitCode?: 1 | 2
  readonly details?: unknown
}> {}

/** A usage error found by a handler (a flag combination, a missing value): exit code 2. @category constructors */
export const usage = (message: string) => new CliFailure({ message, exitCode: 2 })

/** Prints a command's result: `human()` as text, or `value` as JSON with `--json`. @category output */
export const result = <A>(value: A, human: (value: A) => string | ReadonlyArray<string>) =>
  Effect.gen(function* () {
    const json = yield* Json
    if (json) return yield* Console.log(JSON.stringify(value, null, 2))
    const text = human(value)
    const lines = typeof text === "string" ? [text] : text
    for (const line of lines) yield* Console.log(line)
  })

const interactive = process.stderr.isTTY === true

/**
 * A progress line on stderr: rewritten in place on a terminal, one line per update otherwise (logs, CI).
 *
 * @category output
 */
export const progress = (line: string) =>
  Effect.sync(() => {
    process.stderr.write(interactive ? `\r\x1b[2K${line}` : `${line}\n`)
  })

/** Ends a progress line on a terminal. @category output */
export const progressDone = Effect.sync(() => {
  if (interactive) process.stderr.write("\n")
})

/** An optional flag's value, or `undefined`. @category flags */
export const orUndefined = <A>(option: Option.Option<A>): A | undefined => Option.getOrUndefined(option)
