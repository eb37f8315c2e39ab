import { assert, describe, it } from "@effect/vitest"
import { makeSseParser } from "./SseParser.ts"

describe("SseParser", () => {
  it("reads messages split across chunks, with ids, comments, multi-line data and the retry hint", () => {
    const parser = makeSseParser()
    assert.deepStrictEqual(parser.push("retry: 2000\n\n: heartbeat\n\nid: 4"), [])
    assert.deepStrictEqual(parser.push("2\ndata: {\"a\":"), [])
    assert.deepStrictEqual(parser.push("1}\n\ndata: one\ndata: two\n\n"), [
      { id: "42", event: undefined, data: "{\"a\":1}" },
      { id: undefined, event: undefined, data: "one\ntwo" }
    ])
    assert.strictEqual(parser.retry(), 2000)
  })

  it("takes CRLF and a CR split from its LF", () => {
    const parser = makeSseParser()
    assert.deepStrictEqual(parser.push("event: x\r\ndata: y\r"), [])
    assert.deepStrictEqual(parser.push("\n\r\n"), [{ id: undefined, event: "x", data: "y" }])
  })
})
