import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { httpFailure, smtpFailure } from "./MailTransport.ts"
import { compile, render, withText } from "./Templates.ts"

describe("Liquid templates", () => {
  it.effect("extracts the top-level variables, escapes HTML output only, and names a missing variable", () =>
    Effect.gen(function* () {
      const compiled = yield* compile({
        subject: "Hi {{ user.name }}",
        text: null,
        html: "<p>{{ user.name }} ordered {% for i in items %}{{ i }} {% endfor %}{{ note | raw }}</p>"
      })
      assert.deepStrictEqual(compiled.variables, ["items", "note", "user"])
      const parts = yield* render(compiled, { user: { name: "<b>Ann</b>" }, items: ["a&b"], note: "<i>!</i>" })
      assert.strictEqual(parts.subject, "Hi <b>Ann</b>")
      assert.strictEqual(parts.html, "<p>&lt;b&gt;Ann&lt;/b&gt; ordered a&amp;b <i>!</i></p>")
      const missing = yield* Effect.flip(render(compiled, { user: {}, items: [], note: "" }))
      assert.deepStrictEqual(
        missing.details.map((d) => d.field),
        ["variables.user.name"]
      )
    })
  )

  it.effect("a syntax error is a 400 naming the part; an include finds no file", () =>
    Effect.gen(function* () {
      const broken = yield* Effect.flip(compile({ subject: null, text: "{{ name | nosuchfilter }}", html: null }))
      assert.strictEqual(broken.details[0]?.field, "text")
      const include = yield* Effect.flip(compile({ subject: null, text: null, html: "{% include '/etc/passwd' %}" }))
      assert.strictEqual(include.details[0]?.field, "html")
      assert.include(include.message, "Failed to lookup")
    })
  )

  it("makes the text part from the HTML when only HTML is given", () => {
    const parts = withText({ subject: "s", text: null, html: "<h1>Title</h1><p>Hello <a href='https://x.test'>there</a></p>" })
    assert.include(parts.text ?? "", "TITLE")
    assert.include(parts.text ?? "", "Hello there [https://x.test]")
  })
})

describe("provider failures", () => {
  it("SMTP: 4xx and network errors are temporary, 5xx permanent, in the server's words", () => {
    const temporary = smtpFailure({ responseCode: 451, response: "451 4.3.0 Try again later", code: "EENVELOPE" })
    assert.deepStrictEqual([temporary.temporary, temporary.reason], [true, "SMTP 451: 4.3.0 Try again later"])
    const permanent = smtpFailure({ responseCode: 550, response: "550 5.1.1 User unknown" })
    assert.deepStrictEqual([permanent.temporary, permanent.reason], [false, "SMTP 550: 5.1.1 User unknown"])
    assert.isTrue(smtpFailure({ code: "ETIMEDOUT", message: "Greeting never received" }).temporary)
    assert.isTrue(smtpFailure({ code: "ECONNREFUSED", message: "connect ECONNREFUSED" }).temporary)
    assert.isFalse(smtpFailure({ code: "EPRIVATE", message: "refused in production" }).temporary)
  })

  it("HTTP: 429, 5xx and no answer are temporary, other 4xx permanent, with the provider's message", () => {
    assert.isTrue(httpFailure(429, "HTTP 429", "").temporary)
    assert.isTrue(httpFailure(503, "HTTP 503", "down").temporary)
    assert.isTrue(httpFailure(null, "timed out after 30 s", "").temporary)
    const bad = httpFailure(400, "HTTP 400", JSON.stringify({ code: 21211, message: "The 'To' number is not valid." }))
    assert.deepStrictEqual([bad.temporary, bad.reason], [false, "HTTP 400: The 'To' number is not valid. (code 21211)"])
  })
})
