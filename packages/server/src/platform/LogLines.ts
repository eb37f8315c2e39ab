// The node's log: JSON lines on stdout, written in batches. Every request logs a line at `info`, and writing each
// line on its own (console.log: one synchronous write to stdout per line) took about a tenth of the node's CPU under
// 64 connections of creates. Lines logged while the event loop handles one round of I/O now go out in one write, on
// the next turn; whatever is still pending when the process exits is written then (process.exit included).
import { Logger } from "effect"

export interface LineWriter {
  /** Queues a line (without its newline); the lines of one turn of the event loop are written together. */
  readonly push: (line: string) => void
  /** Writes what is queued now. */
  readonly flush: () => void
}

export const makeLineWriter = (write: (chunk: string) => void): LineWriter => {
  let pending: Array<string> = []
  let scheduled = false
  const flush = () => {
    scheduled = false
    if (pending.length === 0) return
    const chunk = `${pending.join("\n")}\n`
    pending = []
    write(chunk)
  }
  const push = (line: string) => {
    pending.push(line)
    if (!scheduled) {
      scheduled = true
      setImmediate(flush)
    }
  }
  return { push, flush }
}

/** `Logger.consoleJson`, batched: the same lines (Effect's `formatJson`), written to stdout by a LineWriter. */
export const stdoutJsonLogger = (): Logger.Logger<unknown, void> => {
  const writer = makeLineWriter((chunk) => void process.stdout.write(chunk))
  process.on("exit", writer.flush)
  return Logger.make((options) => writer.push(Logger.formatJson.log(options)))
}
