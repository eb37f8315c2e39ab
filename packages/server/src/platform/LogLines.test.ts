import { describe, expect, it } from "@effect/vitest"
import { Effect, Logger } from "effect"
import { makeLineWriter } from "./LogLines.ts"

const nextTurn = () => new Promise<void>((resolve) => setImmediate(() => setImmediate(resolve)))

describe("LogLines", () => {
  it("writes the lines of one turn in one chunk, in order, each ending in a newline", async () => {
    const chunks: Array<string> = []
    const writer = makeLineWriter((chunk) => chunks.push(chunk))
    writer.push("a")
    writer.push("b")
    writer.push("c")
    expect(chunks).toStrictEqual([])
    await nextTurn()
    expect(chunks).toStrictEqual(["a\nb\nc\n"])
    writer.push("d")
    await nextTurn()
    expect(chunks).toStrictEqual(["a\nb\nc\n", "d\n"])
  })

  it("flush writes what is pending at once, and nothing when nothing is", async () => {
    const chunks: Array<string> = []
    const writer = makeLineWriter((chunk) => chunks.push(chunk))
    writer.flush()
    writer.push("x")
    writer.flush()
    expect(chunks).toStrictEqual(["x\n"])
    await nextTurn()
    expect(chunks).toStrictEqual(["x\n"])
  })

  it("carries Effect's JSON log lines unchanged", async () => {
    const chunks: Array<string> = []
    const writer = makeLineWriter((chunk) => chunks.push(chunk))
    const logger = Logger.make((options) => writer.push(Logger.formatJson.log(options)))
    await Effect.runPromise(Effect.log("hello").pipe(Effect.annotateLogs("requestId", "r1"), Effect.provide(Logger.layer([logger]))))
    await nextTurn()
    const line = JSON.parse(chunks.join("").trim())
    expect(line.message).toBe("hello")
    expect(line.level).toBe("INFO")
    expect(line.annotations).toStrictEqual({ requestId: "r1" })
  })
})
