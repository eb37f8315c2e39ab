import { describe, expect, it } from "@effect/vitest"
import { Result } from "effect"
import { evaluate, type Expr, MAX_EXPRESSION_LENGTH, parseExpression, referencedFields } from "./Expression.ts"

const now = new Date("2024-05-01T12:00:00.000Z")

const parse = (src: string): Expr => {
  const r = parseExpression(src)
  if (Result.isFailure(r)) throw new Error(`parse failed: ${r.failure.message} at ${r.failure.position}`)
  return r.success
}

const run = (src: string, record: Record<string, unknown> = {}) => evaluate(parse(src), record, now)

const failure = (src: string) => {
  const r = parseExpression(src)
  expect(Result.isFailure(r), `expected '${src}' to fail`).toBe(true)
  return (r as Result.Failure<Expr, { message: string; position: number }>).failure
}

describe("parseExpression / evaluate", () => {
  it("does arithmetic with precedence and parentheses", () => {
    expect(run("1 + 2 * 3")).toBe(7)
    expect(run("(1 + 2) * 3")).toBe(9)
    expect(run("10 - 4 - 3")).toBe(3)
    expect(run("17 % 5")).toBe(2)
    expect(run("-2 * -3")).toBe(6)
    expect(run("1.5e2 / 3")).toBe(50)
  })

  it("reads fields, dotted paths and missing fields as null", () => {
    const record = { price: 10, qty: 3, address: { city: "Paris" } }
    expect(run("price * qty", record)).toBe(30)
    expect(run("address.city", record)).toBe("Paris")
    expect(run("missing", record)).toBe(null)
    expect(run("address.zip.code", record)).toBe(null)
    expect(run("price * missing", record)).toBe(null)
  })

  it("concatenates strings with + and concat()", () => {
    expect(run("first + ' ' + last", { first: "Ada", last: "Lovelace" })).toBe("Ada Lovelace")
    expect(run(`concat("n=", n, "!")`, { n: 4 })).toBe("n=4!")
    expect(run("concat(a, b)", { a: "x" })).toBe("x")
    expect(run("'it\\'s'")).toBe("it's")
  })

  it("compares and combines booleans", () => {
    expect(run("3 > 2 && 2 >= 2")).toBe(true)
    expect(run("3 < 2 || !(1 == 2)")).toBe(true)
    expect(run("'a' < 'b'")).toBe(true)
    expect(run("1 === 1 && 1 !== 2")).toBe(true)
    expect(run("1 == '1'")).toBe(false) // no coercion
    expect(run("x > 1", {})).toBe(false) // null never compares
  })

  it("supports the ternary operator", () => {
    expect(run("qty > 10 ? 'bulk' : 'single'", { qty: 20 })).toBe("bulk")
    expect(run("qty > 10 ? 'bulk' : qty > 1 ? 'few' : 'one'", { qty: 2 })).toBe("few")
  })

  it("has the listed functions", () => {
    expect(run("now()")).toBe("2024-05-01T12:00:00.000Z")
    expect(run("round(2.345, 2)")).toBe(2.35)
    expect(run("round(1.005, 2)")).toBe(1.01)
    expect(run("round(2.5)")).toBe(3)
    expect(run("floor(2.7) + ceil(2.1) + abs(-1)")).toBe(6)
    expect(run("min(3, 1, 2) + max(3, 1, 2)")).toBe(4)
    expect(run("lower('AbC') + upper('x')")).toBe("abcX")
    expect(run("length('héllo')")).toBe(5)
    expect(run("length(tags)", { tags: ["a", "b"] })).toBe(2)
    expect(run("coalesce(nick, name, 'anon')", { name: "Bo" })).toBe("Bo")
  })

  it("gives null for division by zero and non-finite results", () => {
    expect(run("1 / 0")).toBe(null)
    expect(run("5 % 0")).toBe(null)
    expect(run("1e308 * 10")).toBe(null)
  })

  it("lists referenced fields once each", () => {
    expect(referencedFields(parse("a + b.c * a + round(d, 2) + (e ? f : g)"))).toStrictEqual(["a", "b.c", "d", "e", "f", "g"])
    expect(referencedFields(parse("now()"))).toStrictEqual([])
  })

  it("rejects syntax errors with the position of the offending token", () => {
    expect(failure("1 +").position).toBe(3)
    expect(failure("(1 + 2").message).toBe("expected ')'")
    expect(failure("a b").position).toBe(2)
    expect(failure("1 # 2").position).toBe(2)
    expect(failure("'open").position).toBe(0)
    expect(failure("").message).toBe("expression is empty")
  })

  it("rejects unknown functions and wrong arity", () => {
    expect(failure("eval('1')").message).toContain("unknown function 'eval'")
    expect(failure("Function('x')").message).toContain("unknown function")
    expect(failure("now(1)").message).toContain("now() takes 0 arguments")
    expect(failure("round()").message).toContain("round() takes 1 to 2 arguments")
  })

  it("refuses prototype-reaching field names", () => {
    expect(failure("a.constructor").message).toContain("not allowed")
    expect(failure("__proto__").message).toContain("not allowed")
    expect(run("toString", {})).toBe(null) // inherited members are not fields
  })

  it("bounds length and nesting instead of overflowing the stack", () => {
    expect(failure(`${"1+".repeat(MAX_EXPRESSION_LENGTH)}1`).message).toContain("longer than")
    expect(failure(`${"(".repeat(500)}1${")".repeat(500)}`).message).toContain("nested too deeply")
    expect(failure(`${"-".repeat(500)}1`).message).toContain("nested too deeply")
  })
})
