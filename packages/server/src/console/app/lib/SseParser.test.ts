import { describe, expect, it } from "@effect/vitest"
import { makeSseParser } from "./SseParser.ts"

describe("SseParser", () => {
  it("reads messages split across chunks, with ids, comments, multi-line data and the retry hint", () => {
    const parser = makeSseParser()
    expect(parser.push("retry: 2000\n\n: heartbeat\n\nid: 4")).toStrictEqual([])
    expect(parser.push('2\ndata: {"a":')).toStrictEqual([])
    expect(parser.push("1}\n\ndata: one\ndata: two\n\n")).toStrictEqual([
      { id: "42", event: undefined, data: '{"a":1}' },
      { id: undefined, event: undefined, data: "one\ntwo" }
    ])
    expect(parser.retry()).toBe(2000)
  })

  it("takes CRLF and a CR split from its LF", () => {
    const parser = makeSseParser()
    expect(parser.push("event: x\r\ndata: y\r")).toStrictEqual([])
    expect(parser.push("\n\r\n")).toStrictEqual([{ id: undefined, event: "x", data: "y" }])
  })
})
