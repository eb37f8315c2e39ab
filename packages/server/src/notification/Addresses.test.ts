import { describe, expect, it } from "@effect/vitest"
import { emailProblem, formatMailbox, parseMailbox, phoneProblem } from "./Addresses.ts"

describe("email addresses (RFC 5321 lengths, IDN)", () => {
  it.each([
    "a@example.com",
    "first.last+tag@sub.example.co.uk",
    "user@exämple.com",
    "δοκιμή@παράδειγμα.δοκιμή",
    `${"x".repeat(64)}@example.com`
  ])("accepts %s", (address) => expect(emailProblem(address)).toBeUndefined())

  it.each([
    ["", "must not be empty"],
    ["plain", "must contain @"],
    ["a@@example.com", "exactly one @"],
    ["@example.com", "nothing before @"],
    ["a@", "no domain"],
    ["a@localhost", "without a dot"],
    ["a@example.123", "domain"],
    ["a@-bad-.com", "invalid domain"],
    [".a@example.com", "local part"],
    ["a..b@example.com", "local part"],
    ["a b@example.com", "bare address"],
    ["Ann <a@example.com>", "bare address"],
    [`${"x".repeat(65)}@example.com`, "local part longer than 64"],
    [`a@${"b".repeat(63)}.${"c".repeat(63)}.${"d".repeat(63)}.${"e".repeat(63)}.com`, "at most 254"]
  ])("refuses %j (%s)", (address, problem) => expect(emailProblem(address)).toContain(problem))

  it("parses a sender with a display name and writes it back quoted", () => {
    const parsed = parseMailbox('"Acme, Inc." <no-reply@acme.test>')
    expect(parsed).toEqual({ ok: true, mailbox: { name: "Acme, Inc.", address: "no-reply@acme.test" } })
    if (parsed.ok) expect(formatMailbox(parsed.mailbox)).toBe('"Acme, Inc." <no-reply@acme.test>')
    expect(parseMailbox("Me <me@>").ok).toBe(false)
  })
})

describe("E.164", () => {
  it("accepts + country code and up to 15 digits only", () => {
    expect(phoneProblem("+14155550100")).toBeUndefined()
    expect(phoneProblem("+491701234567")).toBeUndefined()
    for (const bad of ["14155550100", "+0123", "+1 415 555 0100", "+1234567890123456", "+"]) expect(phoneProblem(bad)).toBeDefined()
  })
})
