import { describe, expect, it } from "@effect/vitest"
import { CHECK_MEMO_SIZE, check } from "./SandboxCheck.ts"

describe("Sandbox.check", () => {
  it("accepts the supported shapes of run", () => {
    expect(check("async function run(exec, trig) { return 1 }")).toBeUndefined()
    expect(check("function run() {}")).toBeUndefined()
    expect(check("const run = async () => ({ import: 1 })")).toBeUndefined()
    expect(check("let run = function () {}")).toBeUndefined()
    // words inside strings, templates, regexes and comments do not count
    expect(
      check(
        [
          "// module.exports = x",
          "/* import x from 'y' */",
          "const s = 'exports.handler' + \"import('x')\" + `module.exports ${1 + 1} import`",
          "const r = /import\\(/",
          "async function run() { return api.import ?? s.length / 2 }"
        ].join("\n")
      )
    ).toBeUndefined()
  })

  it("reports syntax errors with their line", () => {
    expect(check("async function run() {\n  return 1 +\n}")).toBe("SyntaxError: Unexpected token '}' (line 3)")
  })

  it("refuses module syntax", () => {
    const message = "Functions define `async function run()`; module.exports / exports.handler / import are not supported"
    expect(check("module.exports = async () => 1")).toBe(message)
    expect(check("exports.handler = async function () {}")).toBe(message)
    expect(check("import x from 'y'\nasync function run() {}")).toBe(message)
    expect(check("async function run() { const m = await import('fs') }")).toBe(message)
    expect(check("async function run() { return import.meta }")).toBe(message)
  })

  it("answers the same for a code seen before, also after more than CHECK_MEMO_SIZE other codes", () => {
    const bad = "async function run() {\n  return 1 +\n}"
    const codes = Array.from({ length: CHECK_MEMO_SIZE + 10 }, (_, i) => `async function run() { return ${i} }`)
    for (let round = 0; round < 2; round++) {
      expect(check(bad)).toBe("SyntaxError: Unexpected token '}' (line 3)")
      for (const code of codes) expect(check(code)).toBeUndefined()
      expect(check(`async function handler() { return ${round} }`)!).toContain("async function run()")
      expect(check("x".repeat(40 * 1024))!).toContain("async function run()")
    }
  })

  it("refuses code without run", () => {
    expect(check("async function handler() {}")!).toContain("async function run()")
    expect(check("const runner = 1")!).toContain("async function run()")
  })
})
