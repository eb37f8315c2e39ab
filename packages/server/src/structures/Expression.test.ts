import { assert, describe, it } from "@effect/vitest"
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
  assert.isTrue(Result.isFailure(r), `expected '${src}' to fail`)
  return (r as Result.Failure<Expr, { message: string; position: number }>).failure
}

describe("parseExpression / evaluate", () => {
  it("does arithmetic with precedence and parentheses", () => {
    assert.strictEqual(run("1 + 2 * 3"), 7)
    assert.strictEqual(run("(1 + 2) * 3"), 9)
    assert.strictEqual(run("10 - 4 - 3"), 3)
    assert.strictEqual(run("17 % 5"), 2)
    assert.strictEqual(run("-2 * -3"), 6)
    assert.strictEqual(run("1.5e2 / 3"), 50)
  })

  it("reads fields, dotted paths and missing fields as null", () => {
    const record = { price: 10, qty: 3, address: { city: "Paris" } }
    assert.strictEqual(run("price * qty", record), 30)
    assert.strictEqual(run("address.city", record), "Paris")
    assert.strictEqual(run("missing", record), null)
    assert.strictEqual(run("address.zip.code", record), null)
    assert.strictEqual(run("price * missing", record), null)
  })

  it("concatenates strings with + and concat()", () => {
    assert.strictEqual(run("first + ' ' + last", { first: "Ada", last: "Lovelace" }), "Ada Lovelace")
    assert.strictEqual(run(`concat("n=", n, "!")`, { n: 4 }), "n=4!")
    assert.strictEqual(run("concat(a, b)", { a: "x" }), "x")
    assert.strictEqual(run("'it\\'s'"), "it's")
  })

  it("compares and combines booleans", () => {
    assert.strictEqual(run("3 > 2 && 2 >= 2"), true)
    assert.strictEqual(run("3 < 2 || !(1 == 2)"), true)
    assert.strictEqual(run("'a' < 'b'"), true)
    assert.strictEqual(run("1 === 1 && 1 !== 2"), true)
    assert.strictEqual(run("1 == '1'"), false) // no coercion
    assert.strictEqual(run("x > 1", {}), false) // null never compares
  })

  it("supports the ternary operator", () => {
    assert.strictEqual(run("qty > 10 ? 'bulk' : 'single'", { qty: 20 }), "bulk")
    assert.strictEqual(run("qty > 10 ? 'bulk' : qty > 1 ? 'few' : 'one'", { qty: 2 }), "few")
  })

  it("has the listed functions", () => {
    assert.strictEqual(run("now()"), "2024-05-01T12:00:00.000Z")
    assert.strictEqual(run("round(2.345, 2)"), 2.35)
    assert.strictEqual(run("round(1.005, 2)"), 1.01)
    assert.strictEqual(run("round(2.5)"), 3)
    assert.strictEqual(run("floor(2.7) + ceil(2.1) + abs(-1)"), 6)
    assert.strictEqual(run("min(3, 1, 2) + max(3, 1, 2)"), 4)
    assert.strictEqual(run("lower('AbC') + upper('x')"), "abcX")
    assert.strictEqual(run("length('héllo')"), 5)
    assert.strictEqual(run("length(tags)", { tags: ["a", "b"] }), 2)
    assert.strictEqual(run("coalesce(nick, name, 'anon')", { name: "Bo" }), "Bo")
  })

  it("gives null for division by zero and non-finite results", () => {
    assert.strictEqual(run("1 / 0"), null)
    assert.strictEqual(run("5 % 0"), null)
    assert.strictEqual(run("1e308 * 10"), null)
  })

  it("lists referenced fields once each", () => {
    assert.deepStrictEqual(referencedFields(parse("a + b.c * a + round(d, 2) + (e ? f : g)")), ["a", "b.c", "d", "e", "f", "g"])
    assert.deepStrictEqual(referencedFields(parse("now()")), [])
  })

  it("rejects syntax errors with the position of the offending token", () => {
    assert.strictEqual(failure("1 +").position, 3)
    assert.strictEqual(failure("(1 + 2").message, "expected ')'")
    assert.strictEqual(failure("a b").position, 2)
    assert.strictEqual(failure("1 # 2").position, 2)
    assert.strictEqual(failure("'open").position, 0)
    assert.strictEqual(failure("").message, "expression is empty")
  })

  it("rejects unknown functions and wrong arity", () => {
    assert.include(failure("eval('1')").message, "unknown function 'eval'")
    assert.include(failure("Function('x')").message, "unknown function")
    assert.include(failure("now(1)").message, "now() takes 0 arguments")
    assert.include(failure("round()").message, "round() takes 1 to 2 arguments")
  })

  it("refuses prototype-reaching field names", () => {
    assert.include(failure("a.constructor").message, "not allowed")
    assert.include(failure("__proto__").message, "not allowed")
    assert.strictEqual(run("toString", {}), null) // inherited members are not fields
  })

  it("bounds length and nesting instead of overflowing the stack", () => {
    assert.include(failure("1+".repeat(MAX_EXPRESSION_LENGTH) + "1").message, "longer than")
    assert.include(failure("(".repeat(500) + "1" + ")".repeat(500)).message, "nested too deeply")
    assert.include(failure("-".repeat(500) + "1").message, "nested too deeply")
  })
})
