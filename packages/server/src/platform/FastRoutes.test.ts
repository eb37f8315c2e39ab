import { describe, expect, it } from "@effect/vitest"
import { bearerOf, parseQuery, singleValued } from "./EdgeInput.ts"
import { suspectUrl } from "./InputGuards.ts"

/** A query string as the fast lane takes it: the router's parse, single-valued, nothing the edge refuses. */
const queryParams = (text: string) => (suspectUrl(text) ? undefined : singleValued(parseQuery(text)))

describe("the fast lane's query string: the router's parse, as HttpApi reads it", () => {
  it("decodes `+` as a space and valid percent-escapes, keeps invalid ones as they are", () => {
    expect({ ...queryParams("filter=name:a+b&sort=-price&q=%C3%A9t%C3%A9") }).toEqual({ filter: "name:a b", sort: "-price", q: "été" })
    expect({ ...queryParams("a=%zz&b=%E0%A4%A") }).toEqual({ a: "%zz", b: "%E0%A4%A" })
    expect({ ...queryParams("a=x=y&flag&&c=") }).toEqual({ a: "x=y", flag: "", c: "" })
    expect({ ...queryParams("") }).toEqual({})
  })

  it("leaves to the stack what only it judges: a repeated or nameless parameter, a NUL or lone surrogate", () => {
    expect(queryParams("limit=1&limit=2")).toBeUndefined()
    expect(queryParams("a=1&%61=2")).toBeUndefined()
    expect(queryParams("=1")).toBeUndefined()
    expect(queryParams("filter=name:%00")).toBeUndefined()
    expect(queryParams("filter=name:%c0%80")).toBeUndefined()
    expect(queryParams("filter=name:%ED%A0%80")).toBeUndefined()
  })

  it("parameter names never reach Object.prototype", () => {
    const q = queryParams("__proto__=x&constructor=y")!
    // biome-ignore lint/suspicious/noProto: the test is about a parameter named __proto__
    expect(q.__proto__).toBe("x")
    expect(q.constructor).toBe("y")
    // biome-ignore lint/suspicious/noPrototypeBuiltins: asks Object.prototype itself
    expect(Object.prototype.isPrototypeOf(q)).toBe(false)
  })
})

describe("bearerOf: as HttpApi's bearer security reads the header", () => {
  it("reads the credential of a Bearer header in any case, after one or more spaces, nothing else", () => {
    expect(bearerOf("Bearer abc")).toBe("abc")
    expect(bearerOf("bearer   abc")).toBe("abc")
    expect(bearerOf("BEARER a b")).toBe("a b")
    expect(bearerOf("Basic abc")).toBeUndefined()
    expect(bearerOf("Bearer\tabc")).toBeUndefined()
    expect(bearerOf("Bearerabc")).toBeUndefined()
    expect(bearerOf("Bearer ")).toBeUndefined()
    expect(bearerOf("Bearer   ")).toBeUndefined()
    expect(bearerOf(undefined)).toBeUndefined()
  })
})
