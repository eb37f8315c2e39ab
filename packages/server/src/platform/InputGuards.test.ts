import { describe, expect, it } from "@effect/vitest"
import { formProblems, jsonBodyRefusal, jsonProblems, suspectUrl, urlProblems } from "./InputGuards.ts"

const fields = (details: ReadonlyArray<{ field: string }>) => details.map((d) => d.field)

describe("jsonProblems: the edge's scan of JSON bodies", () => {
  it("counts nesting outside strings, without recursion, and names where it goes too deep", () => {
    expect(jsonProblems(`{"a":[[1]]}`, 3)).toEqual({ tooDeep: false, details: [] })
    const deep = jsonProblems(`{"a":[[[1]]]}`, 3)
    expect(deep.tooDeep).toBe(true)
    expect(fields(deep.details)).toEqual(["a[0][0]"])
    expect(jsonProblems(`${"[".repeat(1_000_000)}${"]".repeat(1_000_000)}`, 64).tooDeep).toBe(true)
    expect(fields(jsonProblems(`[${"[".repeat(10)}`, 3).details)).toEqual(["[0][0][0]"])
    // brackets and quotes inside strings are text
    expect(jsonProblems(`{"a":"[[[[{{{{\\"[[[["}`, 2)).toEqual({ tooDeep: false, details: [] })
  })

  it("finds NUL and lone surrogates in values and keys, and names each by its path", () => {
    const text =
      `{"name":"a\\u0000","data":{"tags":["ok","\\ud800"],"k\\u0000":1,"pair":"\\ud83d\\ude00","n":{"x":"\\uDC00"}},` +
      `"list":[{"a":1},{"b":"\\u0000"}]}`
    expect(fields(jsonProblems(text, 64).details)).toEqual(["name", "data.tags[1]", "data.k\\u0000", "data.n.x", "list[1].b"])
    const messages = jsonProblems(`{"a":"\\u0000","b":"\\udbff"}`, 64).details.map((d) => d.message)
    expect(messages).toEqual(["must not contain NUL characters", "must be valid Unicode (no lone surrogates)"])
    // an escaped backslash before u0000 is text; a surrogate pair is fine; a root string is the body
    expect(jsonProblems(`{"a":"\\\\u0000","b":"\\ud83d\\ude00"}`, 64).details).toEqual([])
    expect(fields(jsonProblems(`"\\u0000"`, 64).details)).toEqual(["body"])
  })

  it("refuses with the contract's 400", () => {
    expect(jsonBodyRefusal(`{"a":1}`, 64)).toBeUndefined()
    const refusal = jsonBodyRefusal(`{"a":"\\u0000"}`, 64)!
    expect(refusal).toMatchObject({ statusCode: 400, code: "VALIDATION_ERROR", details: [{ field: "a", property: "a" }] })
  })
})

describe("urlProblems: NUL and lone surrogates in request targets", () => {
  const paramAt = (_path: string, index: number) => (index === 2 ? "slug" : undefined)

  it("names the path parameter or the query parameter", () => {
    expect(urlProblems("/records/ok?filter=a")).toEqual([])
    expect(fields(urlProblems("/records/a%00b", paramAt))).toEqual(["path.slug"])
    expect(fields(urlProblems("/x%00/ok"))).toEqual(["path"])
    expect(fields(urlProblems("/records/ok?filter=a%00&sort=b%ED%A0%80&ok=1", paramAt))).toEqual(["query.filter", "query.sort"])
    expect(fields(urlProblems("/r?a%00b=1"))).toEqual(["query"])
    expect(fields(urlProblems("/r?na+me%21=%C0%80"))).toEqual(["query.na me!"])
  })

  it("passes ordinary percent-encoding, and flags every NUL and surrogate form", () => {
    for (const ok of ["/r?q=%C3%A9t%C3%A9", "/r?q=%E2%82%AC", "/r?q=%EF%BF%BD", "/r?q=%ec%9f%bf", "/r?q=100%25"])
      expect(suspectUrl(ok)).toBe(false)
    for (const bad of ["/r?q=%00", "/r%00", "/r?q=%c0%80", "/r?q=%ED%A0%80", "/r?q=%ed%bf%bf", "/r\u0000"])
      expect(suspectUrl(bad)).toBe(true)
  })
})

describe("formProblems", () => {
  it("names the form field holding a NUL", () => {
    expect(formProblems("grant_type=password&username=admin")).toEqual([])
    expect(fields(formProblems("grant_type=password&username=ad%00min&password=x"))).toEqual(["username"])
    expect(fields(formProblems("a%00=1"))).toEqual(["a\\u0000"])
  })
})
