import { describe, expect, it } from "@effect/vitest"
import { checkRecord, type PropertyRules } from "./RecordCheck.ts"

const properties: ReadonlyArray<PropertyRules> = [
  { name: "title", type: "string", required: true, minLength: 2, maxLength: 5 },
  { name: "email", type: "string", format: "email" },
  { name: "code", type: "string", pattern: "^[A-Z]+$" },
  { name: "price", type: "number", minimum: 0, exclusiveMinimum: true, multipleOf: 0.5 },
  { name: "qty", type: "number", integer: true, nullable: true },
  { name: "color", type: "string", enum: ["red", "blue"] },
  { name: "tags", type: "array", items: { type: "string", maxLength: 3 }, maxItems: 2, uniqueItems: true },
  { name: "at", type: "datetime", earliestDate: "2020-01-01T00:00:00Z" },
  { name: "owner", type: "reference", relationship: "many-to-one" },
  { name: "seq", type: "number", required: true, autoIncrement: { startAt: 1 } },
  { name: "total", type: "number", required: true, expression: "price * 2" },
  { name: "address", type: "object", properties: [{ name: "city", type: "string", required: true }] }
]

describe("checkRecord", () => {
  it("accepts a valid record (auto-increment and computed fields are the server's)", () => {
    expect(
      checkRecord(
        properties,
        {
          title: "Lamp",
          price: 1.5,
          qty: null,
          color: "red",
          tags: ["a"],
          at: "2026-01-01T10:00:00Z",
          owner: "x",
          address: { city: "Paris" }
        },
        true
      )
    ).toStrictEqual([])
  })

  it("names every problem by its field, as the server does", () => {
    const problems = checkRecord(
      properties,
      {
        email: "nope",
        code: "abc",
        price: -0.3,
        qty: 1.5,
        color: "green",
        tags: ["long-one", "a", "a"],
        at: "2019-01-01T00:00:00Z",
        owner: 3,
        address: {},
        extra: 1
      },
      true
    )
    expect(problems.map((p) => p.field)).toStrictEqual([
      "data.title",
      "data.email",
      "data.code",
      "data.price",
      "data.price",
      "data.qty",
      "data.color",
      "data.tags",
      "data.tags",
      "data.tags[0]",
      "data.at",
      "data.owner",
      "data.address.city",
      "data.extra"
    ])
  })

  it("leaves undeclared fields alone unless strict, and a masked secret alone", () => {
    expect(checkRecord([{ name: "s", type: "string", minLength: 20 }], { s: "********", other: 1 }, false)).toStrictEqual([])
  })
})
