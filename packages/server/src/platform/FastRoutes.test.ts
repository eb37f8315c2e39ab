import { describe, expect, it } from "@effect/vitest"
import { bearerOf, queryParams } from "./FastRoutes.ts"

describe("queryParams: the query string as the HTTP stack's router reads it", () => {
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

  it("parameter names never reach the object's prototype", () => {
    const q = queryParams("__proto__=x&constructor=y")!
    expect(q.__proto__).toBe("x")
    expect(Object.getPrototypeOf(q)).toBeNull()
  })
})

describe("bearerOf", () => {
  it("reads the token of a Bearer header in any case, nothing else", () => {
    expect(bearerOf("Bearer abc")).toBe("abc")
    expect(bearerOf("bearer   abc ")).toBe("abc")
    expect(bearerOf("Basic abc")).toBeUndefined()
    expect(bearerOf("Bearer ")).toBeUndefined()
    expect(bearerOf(undefined)).toBeUndefined()
  })
})
