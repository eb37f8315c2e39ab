import { describe, expect, it } from "@effect/vitest"
import { codePointLength, extendedDateTime, isDate, isEmail, isUrl, isUuid, parseDateTime } from "./Formats.ts"
import { compilePattern, nativeSafe } from "./Pattern.ts"

describe("formats", () => {
  it("email", () => {
    expect(isEmail("ada@example.com")).toBe(true)
    expect(isEmail("a.b+tag@sub.example.co")).toBe(true)
    expect(isEmail("ada@")).toBe(false)
    expect(isEmail("ada example.com")).toBe(false)
    expect(isEmail(`${"a".repeat(250)}@example.com`)).toBe(false)
  })

  it("url", () => {
    expect(isUrl("https://example.com/path?q=1#x")).toBe(true)
    expect(isUrl("ftp://files.example.com")).toBe(true)
    expect(isUrl("example.com")).toBe(false)
    expect(isUrl("javascript:alert(1)")).toBe(false)
    expect(isUrl("https://exa mple.com")).toBe(false)
  })

  it("uuid", () => {
    expect(isUuid("3f2b8c1e-9a4d-4e2f-8b1a-2c3d4e5f6a7b")).toBe(true)
    expect(isUuid("3F2B8C1E-9A4D-4E2F-8B1A-2C3D4E5F6A7B")).toBe(true)
    expect(isUuid("3f2b8c1e9a4d4e2f8b1a2c3d4e5f6a7b")).toBe(false)
    expect(isUuid("3f2b8c1e-9a4d-4e2f-8b1a-2c3d4e5f6a7g")).toBe(false)
  })

  it("date", () => {
    expect(isDate("2024-02-29")).toBe(true)
    expect(isDate("2023-02-29")).toBe(false)
    expect(isDate("2024-13-01")).toBe(false)
    expect(isDate("2024-05-01T00:00:00Z")).toBe(false)
  })

  it("datetime agrees with Date.parse on valid input and rejects invalid dates", () => {
    for (const s of ["2024-05-01T10:00:00Z", "2024-05-01T10:00:00.123+02:00", "1969-12-31T23:59:59.999Z", "0050-03-01T00:00:00Z"]) {
      expect(parseDateTime(s), s).toBe(Date.parse(s))
    }
    expect(parseDateTime("2024-05-01")).toBe(Date.parse("2024-05-01T00:00:00Z"))
    expect(parseDateTime("2024-05-01T10:00")).toBe(Date.parse("2024-05-01T10:00:00Z")) // no offset = UTC
    expect(parseDateTime("2024-05-01 10:00:00-0130")).toBe(Date.parse("2024-05-01T11:30:00Z"))
    for (const s of [
      "2023-02-29",
      "2024-05-01T24:00",
      "2024-05-01T10:00:60Z",
      "2024-5-01",
      "2024-05-01T10:00:00+2",
      "2024-05-01Tx",
      "nope"
    ]) {
      expect(parseDateTime(s), s).toBeUndefined()
    }
  })

  it("datetime takes the ISO 8601 basic form as well", () => {
    const same: ReadonlyArray<readonly [string, string]> = [
      ["20250101T120000Z", "2025-01-01T12:00:00Z"],
      ["20250101", "2025-01-01"],
      ["20250101T1200", "2025-01-01T12:00"],
      ["20250101T120000.250+0130", "2025-01-01T12:00:00.250+01:30"],
      ["20250101T120000,5-05", "2025-01-01T12:00:00,5-05"]
    ]
    for (const [basic, extended] of same) {
      expect(extendedDateTime(basic)).toBe(extended)
      expect(parseDateTime(basic), basic).toBe(parseDateTime(extended))
      expect(parseDateTime(basic), basic).toBeDefined()
    }
    for (const s of ["20250230T120000Z", "20250101T250000Z", "2025011T1200Z", "20250101120000Z", "20250101T12:00Z", "2025-0101"]) {
      expect(parseDateTime(s), s).toBeUndefined()
    }
  })

  it("counts code points, not UTF-16 units", () => {
    expect(codePointLength("abc")).toBe(3)
    expect(codePointLength("😀😀")).toBe(2)
  })
})

describe("patterns", () => {
  it("refuses invalid and non-RE2 syntax", () => {
    expect(compilePattern("(a")).toHaveProperty("error")
    expect(compilePattern("(?=a)b")).toHaveProperty("error") // lookahead
    expect(compilePattern("(a)\\1")).toHaveProperty("error") // backreference
  })

  it("runs natively only anchored patterns whose work does not grow with the text, the rest on RE2", () => {
    expect(nativeSafe("^[a-z0-9-]{3,64}$")).toBe(true)
    expect(nativeSafe("^(jpg|png)$")).toBe(true)
    expect(nativeSafe("^[A-Z]{3}-\\d{4}$")).toBe(true)
    expect(nativeSafe("^(?:ab){3}c?$")).toBe(true)
    expect(nativeSafe("^\\d+$")).toBe(false) // unbounded: the work grows with the text
    expect(nativeSafe("^(a+)+$")).toBe(false) // nested quantifier
    expect(nativeSafe("^[a-z]+[0-9]*$")).toBe(false) // two unbounded quantifiers
    expect(nativeSafe("a+b")).toBe(false) // unanchored with an unbounded quantifier
    expect(nativeSafe("a{1,999}$")).toBe(false) // unanchored: 999 steps at every start position
    expect(nativeSafe("^a|b+")).toBe(false) // a top-level alternative is not anchored
    expect(nativeSafe("^(?:a|b)*$")).toBe(false) // quantified alternation
    expect(nativeSafe("^a{0,999}a{0,999}b")).toBe(false) // too many paths
    expect(nativeSafe(`^a{0,99}${"a{999}".repeat(10)}b`)).toBe(false) // paths times the longest match: too much work
  })

  it("the known catastrophic shapes answer correctly on a long near-match", () => {
    const near = `${"a".repeat(1 << 20)}!`
    const digits = `${"1".repeat(1 << 20)}!`
    const cases: ReadonlyArray<readonly [string, string, boolean]> = [
      ["(a+)+$", near, false],
      ["^(a+)+$", near, false],
      ["(a|a)*$", near, true], // the empty match at the end
      ["^(a|a)*$", near, false],
      ["(a*)*b", near, false],
      ["\\d+\\d+\\d+x", digits, false],
      ["^(\\d+)*\\d+$", digits, false],
      ["a{1,999}b", near, false],
      ["^a*a{0,999}b", near, false],
      ["(.*a){12}x", near, false]
    ]
    for (const [source, text, expected] of cases) {
      const p = compilePattern(source)
      if ("error" in p) throw new Error(`${source}: ${p.error}`)
      expect(p.engine, source).toBe("re2")
      expect(p.test(text), source).toBe(expected)
    }
    const ok = compilePattern("^(a+)+$")
    if ("error" in ok) throw new Error("should compile")
    expect(ok.test("a".repeat(1 << 20))).toBe(true)
  })

  it("matches unanchored like RegExp.test, on either engine", () => {
    const native = compilePattern("^[A-Z]{2}$")
    const re2 = compilePattern("[a-z]+@[a-z]+")
    if ("error" in native || "error" in re2) throw new Error("should compile")
    expect(native.engine).toBe("native")
    expect(re2.engine).toBe("re2")
    expect(native.test("AB")).toBe(true)
    expect(native.test("ABC")).toBe(false)
    expect(re2.test("mail: ada@example")).toBe(true)
    expect(re2.test("no at sign")).toBe(false)
  })

  it("a catastrophic-backtracking pattern answers (RE2 is linear)", () => {
    const p = compilePattern("^(a+)+$")
    if ("error" in p) throw new Error("should compile")
    expect(p.engine).toBe("re2")
    expect(p.test(`${"a".repeat(50_000)}!`)).toBe(false)
    expect(p.test("a".repeat(50_000))).toBe(true)
  })
})
