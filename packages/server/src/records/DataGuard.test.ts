import { describe, expect, it } from "vitest"
import { inspectJson, MAX_NESTING, MAX_STRING_LENGTH } from "./DataGuard.ts"

const fields = (v: unknown, props?: Parameters<typeof inspectJson>[2]) => inspectJson(v, "data", props).map((d) => d.field)

describe("inspectJson", () => {
  it("accepts ordinary JSON", () => {
    expect(fields({ a: "x", b: [1, { c: null }], d: true })).toEqual([])
  })

  it("refuses prototype keys at any depth, as parsed from JSON", () => {
    expect(fields(JSON.parse(`{"a":{"__proto__":{"x":1}}}`))).toEqual(["data.a.__proto__"])
    expect(fields({ list: [{ constructor: 1 }], prototype: 2 })).toEqual(["data.list[0].constructor", "data.prototype"])
  })

  it("refuses NUL characters and lone surrogates in values and keys", () => {
    expect(fields({ a: "x\u0000y" })).toEqual(["data.a"])
    expect(fields({ a: ["ok", "\ud800"] })).toEqual(["data.a[1]"])
    expect(fields({ "k\u0000": 1 })).toEqual(["data.k\\u0000"])
    expect(fields({ a: "\ud83d\ude00" })).toEqual([])
  })

  it("refuses strings over 1 MiB unless the property's maxLength allows more", () => {
    const big = "x".repeat(MAX_STRING_LENGTH + 1)
    expect(fields({ a: big })).toEqual(["data.a"])
    expect(fields({ a: "x".repeat(MAX_STRING_LENGTH) })).toEqual([])
    const props = [
      { name: "a", type: "string", maxLength: 2 * MAX_STRING_LENGTH },
      { name: "o", type: "object", properties: [{ name: "b", type: "string", maxLength: 3 * MAX_STRING_LENGTH }] },
      { name: "l", type: "array", items: { type: "string", maxLength: 2 * MAX_STRING_LENGTH } },
      { name: "small", type: "string", maxLength: 10 }
    ] as any
    expect(fields({ a: big, o: { b: big }, l: [big], small: big }, props)).toEqual(["data.small"])
    expect(fields({ o: { other: big } }, props)).toEqual(["data.o.other"])
  })

  it("bounds nesting", () => {
    let deep: unknown = 1
    for (let i = 0; i < MAX_NESTING + 2; i++) deep = [deep]
    expect(fields({ a: deep }).length).toBe(1)
    let ok: unknown = 1
    for (let i = 0; i < MAX_NESTING - 1; i++) ok = { x: ok }
    expect(fields(ok)).toEqual([])
  })
})
