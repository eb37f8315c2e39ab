import { assert, describe, it } from "@effect/vitest"
import { codePointLength, isDate, isEmail, isUrl, isUuid, parseDateTime } from "./Formats.ts"
import { compilePattern, nativeSafe } from "./Pattern.ts"

describe("formats", () => {
  it("email", () => {
    assert.isTrue(isEmail("ada@example.com"))
    assert.isTrue(isEmail("a.b+tag@sub.example.co"))
    assert.isFalse(isEmail("ada@"))
    assert.isFalse(isEmail("ada example.com"))
    assert.isFalse(isEmail(`${"a".repeat(250)}@example.com`))
  })

  it("url", () => {
    assert.isTrue(isUrl("https://example.com/path?q=1#x"))
    assert.isTrue(isUrl("ftp://files.example.com"))
    assert.isFalse(isUrl("example.com"))
    assert.isFalse(isUrl("javascript:alert(1)"))
    assert.isFalse(isUrl("https://exa mple.com"))
  })

  it("uuid", () => {
    assert.isTrue(isUuid("3f2b8c1e-9a4d-4e2f-8b1a-2c3d4e5f6a7b"))
    assert.isTrue(isUuid("3F2B8C1E-9A4D-4E2F-8B1A-2C3D4E5F6A7B"))
    assert.isFalse(isUuid("3f2b8c1e9a4d4e2f8b1a2c3d4e5f6a7b"))
    assert.isFalse(isUuid("3f2b8c1e-9a4d-4e2f-8b1a-2c3d4e5f6a7g"))
  })

  it("date", () => {
    assert.isTrue(isDate("2024-02-29"))
    assert.isFalse(isDate("2023-02-29"))
    assert.isFalse(isDate("2024-13-01"))
    assert.isFalse(isDate("2024-05-01T00:00:00Z"))
  })

  it("datetime agrees with Date.parse on valid input and rejects invalid dates", () => {
    for (const s of ["2024-05-01T10:00:00Z", "2024-05-01T10:00:00.123+02:00", "1969-12-31T23:59:59.999Z", "0050-03-01T00:00:00Z"]) {
      assert.strictEqual(parseDateTime(s), Date.parse(s), s)
    }
    assert.strictEqual(parseDateTime("2024-05-01"), Date.parse("2024-05-01T00:00:00Z"))
    assert.strictEqual(parseDateTime("2024-05-01T10:00"), Date.parse("2024-05-01T10:00:00Z")) // no offset = UTC
    assert.strictEqual(parseDateTime("2024-05-01 10:00:00-0130"), Date.parse("2024-05-01T11:30:00Z"))
    for (const s of ["2023-02-29", "2024-05-01T24:00", "2024-05-01T10:00:60Z", "2024-5-01", "2024-05-01T10:00:00+2", "2024-05-01Tx", "nope"]) {
      assert.isUndefined(parseDateTime(s), s)
    }
  })

  it("counts code points, not UTF-16 units", () => {
    assert.strictEqual(codePointLength("abc"), 3)
    assert.strictEqual(codePointLength("😀😀"), 2)
  })
})

describe("patterns", () => {
  it("refuses invalid and non-RE2 syntax", () => {
    assert.property(compilePattern("(a"), "error")
    assert.property(compilePattern("(?=a)b"), "error") // lookahead
    assert.property(compilePattern("(a)\\1"), "error") // backreference
  })

  it("runs natively only anchored patterns whose work does not grow with the text, the rest on RE2", () => {
    assert.isTrue(nativeSafe("^[a-z0-9-]{3,64}$"))
    assert.isTrue(nativeSafe("^(jpg|png)$"))
    assert.isTrue(nativeSafe("^[A-Z]{3}-\\d{4}$"))
    assert.isTrue(nativeSafe("^(?:ab){3}c?$"))
    assert.isFalse(nativeSafe("^\\d+$")) // unbounded: the work grows with the text
    assert.isFalse(nativeSafe("^(a+)+$")) // nested quantifier
    assert.isFalse(nativeSafe("^[a-z]+[0-9]*$")) // two unbounded quantifiers
    assert.isFalse(nativeSafe("a+b")) // unanchored with an unbounded quantifier
    assert.isFalse(nativeSafe("a{1,999}$")) // unanchored: 999 steps at every start position
    assert.isFalse(nativeSafe("^a|b+")) // a top-level alternative is not anchored
    assert.isFalse(nativeSafe("^(?:a|b)*$")) // quantified alternation
    assert.isFalse(nativeSafe("^a{0,999}a{0,999}b")) // too many paths
    assert.isFalse(nativeSafe(`^a{0,99}${"a{999}".repeat(10)}b`)) // paths times the longest match: too much work
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
      assert.strictEqual(p.engine, "re2", source)
      assert.strictEqual(p.test(text), expected, source)
    }
    const ok = compilePattern("^(a+)+$")
    if ("error" in ok) throw new Error("should compile")
    assert.isTrue(ok.test("a".repeat(1 << 20)))
  })

  it("matches unanchored like RegExp.test, on either engine", () => {
    const native = compilePattern("^[A-Z]{2}$")
    const re2 = compilePattern("[a-z]+@[a-z]+")
    if ("error" in native || "error" in re2) throw new Error("should compile")
    assert.strictEqual(native.engine, "native")
    assert.strictEqual(re2.engine, "re2")
    assert.isTrue(native.test("AB"))
    assert.isFalse(native.test("ABC"))
    assert.isTrue(re2.test("mail: ada@example"))
    assert.isFalse(re2.test("no at sign"))
  })

  it("a catastrophic-backtracking pattern answers (RE2 is linear)", () => {
    const p = compilePattern("^(a+)+$")
    if ("error" in p) throw new Error("should compile")
    assert.strictEqual(p.engine, "re2")
    assert.isFalse(p.test(`${"a".repeat(50_000)}!`))
    assert.isTrue(p.test("a".repeat(50_000)))
  })
})
