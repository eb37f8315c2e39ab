import type { PropertyDefinition, SchemaDiscoveryMode } from "@troupe/api/structures/Structure"
import { describe, expect, it } from "@effect/vitest"
import {
  applyVirtual,
  clearValidatorCache,
  compileValidator,
  type ValidateOptions,
  type ValidationResult,
  validatorFor
} from "./Validator.ts"
import { MAX_DEPTH, MAX_ERRORS } from "./ShapeChecks.ts"
import { autoIncrementFields, computedFields, referenceFields, secretFields, uniqueFields } from "./StructureFacts.ts"

const now = new Date("2024-05-01T12:00:00.000Z")

const make = (properties: ReadonlyArray<PropertyDefinition>, mode: SchemaDiscoveryMode = "strict") =>
  compileValidator({ properties, schemaDiscoveryMode: mode })

const create: ValidateOptions = { mode: "create", now }

const ok = (r: ValidationResult): Record<string, unknown> => {
  if (!r.ok) throw new Error(`expected success, got ${JSON.stringify(r.errors)}`)
  return r.data
}

/** Fails with a problem at `field`, optionally with `text` in the message; returns all problems. */
const fails = (r: ValidationResult, field: string, text?: string) => {
  if (r.ok) throw new Error(`expected a failure at ${field}, got success`)
  const hit = r.errors.find((e) => e.field === field)
  expect(hit, `expected a problem at ${field}, got ${JSON.stringify(r.errors)}`).toBeDefined()
  expect(hit!.property).toBe(hit!.field)
  if (text !== undefined) expect(hit!.message).toContain(text)
  return r.errors
}

describe("Validator: presence, null and type", () => {
  const v = make([
    { name: "name", type: "string", required: true },
    { name: "nick", type: "string", nullable: true },
    { name: "age", type: "number" },
    { name: "active", type: "boolean" },
    { name: "born", type: "datetime" },
    { name: "meta", type: "object" },
    { name: "tags", type: "array", items: { type: "string" } }
  ])

  it("accepts a valid record and returns it", () => {
    const data = { name: "Ada", nick: null, age: 36, active: true, born: "1815-12-10", meta: { any: [1, { x: 2 }] }, tags: ["a"] }
    expect(ok(v.validate(data, create))).toStrictEqual(data)
  })

  it("requires required fields", () => {
    fails(v.validate({}, create), "data.name", "is required")
  })

  it("refuses null unless nullable", () => {
    ok(v.validate({ name: "a", nick: null }, create))
    fails(v.validate({ name: "a", age: null }, create), "data.age", "must not be null")
  })

  it("checks every type", () => {
    fails(v.validate({ name: 1 }, create), "data.name", "must be a string")
    fails(v.validate({ name: "a", age: "36" }, create), "data.age", "must be a number")
    fails(v.validate({ name: "a", active: "true" }, create), "data.active", "must be a boolean")
    fails(v.validate({ name: "a", born: 1815 }, create), "data.born", "ISO 8601")
    fails(v.validate({ name: "a", born: "10/12/1815" }, create), "data.born", "ISO 8601")
    fails(v.validate({ name: "a", meta: [1] }, create), "data.meta", "must be an object")
    fails(v.validate({ name: "a", tags: "a" }, create), "data.tags", "must be an array")
  })

  it("refuses a record that is not an object", () => {
    fails(v.validate([1], create), "data", "must be an object")
    fails(v.validate("x", create), "data", "must be an object")
  })

  it("reports every problem at once", () => {
    const r = v.validate({ name: 1, age: "x", active: 0 }, create)
    expect(r.ok).toBe(false)
    if (!r.ok) expect(r.errors.map((e) => e.field)).toStrictEqual(["data.name", "data.age", "data.active"])
  })

  it("caps the number of problems", () => {
    const many = make([{ name: "xs", type: "array", items: { type: "number" } }])
    const r = many.validate({ xs: Array.from({ length: 500 }, () => "no") }, create)
    expect(r.ok).toBe(false)
    if (!r.ok) expect(r.errors.length).toBe(MAX_ERRORS)
  })
})

describe("Validator: strings", () => {
  it("lengths count characters (code points)", () => {
    const v = make([{ name: "s", type: "string", minLength: 2, maxLength: 3 }])
    ok(v.validate({ s: "ab" }, create))
    ok(v.validate({ s: "😀😀😀" }, create))
    fails(v.validate({ s: "a" }, create), "data.s", "at least 2")
    fails(v.validate({ s: "abcd" }, create), "data.s", "at most 3")
  })

  it("pattern, enum and not", () => {
    const v = make([
      { name: "code", type: "string", pattern: "^[A-Z]{2}-\\d{2}$" },
      { name: "color", type: "string", enum: ["red", "green"] },
      { name: "word", type: "string", not: ["forbidden"] }
    ])
    ok(v.validate({ code: "AB-12", color: "red", word: "fine" }, create))
    fails(v.validate({ code: "ab-12" }, create), "data.code", "pattern")
    fails(v.validate({ color: "blue" }, create), "data.color", "one of")
    fails(v.validate({ word: "forbidden" }, create), "data.word", "not an allowed value")
  })

  it("formats email, url, uuid, date and datetime", () => {
    const v = make((["email", "url", "uuid", "date", "datetime"] as const).map((format) => ({ name: format, type: "string", format })))
    ok(
      v.validate(
        {
          email: "a@b.co",
          url: "https://example.com",
          uuid: "3f2b8c1e-9a4d-4e2f-8b1a-2c3d4e5f6a7b",
          date: "2024-02-29",
          datetime: "2024-02-29T10:00:00Z"
        },
        create
      )
    )
    fails(v.validate({ email: "a@" }, create), "data.email", "email")
    fails(v.validate({ url: "not a url" }, create), "data.url", "URL")
    fails(v.validate({ uuid: "123" }, create), "data.uuid", "UUID")
    fails(v.validate({ date: "2023-02-29" }, create), "data.date", "YYYY-MM-DD")
    fails(v.validate({ datetime: "yesterday" }, create), "data.datetime", "ISO 8601")
  })

  it("secret strings validate like any string", () => {
    const v = make([{ name: "apiKey", type: "string", isSecret: true, minLength: 10 }])
    ok(v.validate({ apiKey: "0123456789" }, create))
    fails(v.validate({ apiKey: "short" }, create), "data.apiKey", "at least 10")
  })
})

describe("Validator: numbers and datetimes", () => {
  it("ranges with exclusive flags, multipleOf and integer", () => {
    const v = make([
      { name: "inc", type: "number", minimum: 0, maximum: 10 },
      { name: "exc", type: "number", minimum: 0, maximum: 10, exclusiveMinimum: true, exclusiveMaximum: true },
      { name: "step", type: "number", multipleOf: 0.1 },
      { name: "int", type: "number", integer: true }
    ])
    ok(v.validate({ inc: 0, exc: 5, step: 0.3, int: 4 }, create))
    ok(v.validate({ inc: 10 }, create))
    fails(v.validate({ inc: -1 }, create), "data.inc", "at least 0")
    fails(v.validate({ inc: 11 }, create), "data.inc", "at most 10")
    fails(v.validate({ exc: 0 }, create), "data.exc", "greater than 0")
    fails(v.validate({ exc: 10 }, create), "data.exc", "less than 10")
    fails(v.validate({ step: 0.35 }, create), "data.step", "multiple of 0.1")
    fails(v.validate({ int: 1.5 }, create), "data.int", "integer")
  })

  it("datetime bounds with exclusive flags and enum", () => {
    const v = make([
      { name: "d", type: "datetime", earliestDate: "2024-01-01T00:00:00Z", latestDate: "2024-12-31T00:00:00Z" },
      { name: "x", type: "datetime", earliestDate: "2024-01-01T00:00:00Z", exclusiveEarliest: true },
      { name: "e", type: "datetime", enum: ["2024-06-01T00:00:00Z"] }
    ])
    ok(v.validate({ d: "2024-01-01T00:00:00Z", x: "2024-01-01T00:00:01Z", e: "2024-06-01T02:00:00+02:00" }, create))
    fails(v.validate({ d: "2023-12-31T23:59:59Z" }, create), "data.d", "before")
    fails(v.validate({ d: "2025-01-01" }, create), "data.d", "after")
    fails(v.validate({ x: "2024-01-01T00:00:00Z" }, create), "data.x", "after")
    fails(v.validate({ e: "2024-06-02" }, create), "data.e", "one of")
  })
})

describe("Validator: arrays and objects", () => {
  it("array items, min/max and uniqueItems with full paths", () => {
    const v = make([{ name: "tags", type: "array", items: { type: "string", maxLength: 3 }, minItems: 1, maxItems: 4, uniqueItems: true }])
    ok(v.validate({ tags: ["a", "b"] }, create))
    fails(v.validate({ tags: [] }, create), "data.tags", "at least 1")
    fails(v.validate({ tags: ["a", "b", "c", "d", "e"] }, create), "data.tags", "at most 4")
    fails(v.validate({ tags: ["a", "b", "c", "long"] }, create), "data.tags[3]", "at most 3")
    fails(v.validate({ tags: ["a", 2] }, create), "data.tags[1]", "string")
    fails(v.validate({ tags: ["a", null] }, create), "data.tags[1]", "null")
    fails(v.validate({ tags: ["a", "b", "a"] }, create), "data.tags[2]", "duplicates item 0")
  })

  it("arrays of objects: item schema, strict by default, unique by content", () => {
    const itemSchema: Array<PropertyDefinition> = [
      { name: "sku", type: "string", required: true },
      { name: "qty", type: "number", integer: true }
    ]
    const strict = make([{ name: "lines", type: "array", items: { type: "object" }, itemSchema, uniqueItems: true }])
    ok(strict.validate({ lines: [{ sku: "a", qty: 1 }, { sku: "b" }] }, create))
    fails(strict.validate({ lines: [{ sku: "a" }, { qty: 1 }] }, create), "data.lines[1].sku", "is required")
    fails(strict.validate({ lines: [{ sku: "a", qty: 1.5 }] }, create), "data.lines[0].qty", "integer")
    fails(strict.validate({ lines: [{ sku: "a", extra: 1 }] }, create), "data.lines[0].extra", "not a declared field")
    fails(strict.validate({ lines: ["a"] }, create), "data.lines[0]", "must be an object")
    fails(
      strict.validate(
        {
          lines: [
            { sku: "a", qty: 1 },
            { qty: 1, sku: "a" }
          ]
        },
        create
      ),
      "data.lines[1]",
      "duplicates"
    )
    const loose = make([{ name: "lines", type: "array", items: { type: "object" }, itemSchema, isStrict: false }])
    ok(loose.validate({ lines: [{ sku: "a", extra: 1 }] }, create))
  })

  it("nested objects: strictness, requiredProperties and full paths", () => {
    const v = make([
      {
        name: "address",
        type: "object",
        isStrict: true,
        requiredProperties: ["city"],
        properties: [
          { name: "city", type: "string" },
          { name: "geo", type: "object", properties: [{ name: "lat", type: "number", minimum: -90, maximum: 90 }] }
        ]
      }
    ])
    ok(v.validate({ address: { city: "Paris", geo: { lat: 48.8, extra: "non-strict keeps it" } } }, create))
    fails(v.validate({ address: {} }, create), "data.address.city", "is required")
    fails(v.validate({ address: { city: 1 } }, create), "data.address.city", "string")
    fails(v.validate({ address: { city: "P", zip: "1" } }, create), "data.address.zip", "not a declared field")
    fails(v.validate({ address: { city: "P", geo: { lat: 91 } } }, create), "data.address.geo.lat", "at most 90")
  })
})

describe("Validator: record modes", () => {
  const props: Array<PropertyDefinition> = [{ name: "title", type: "string", required: true }]

  it("strict rejects unknown keys", () => {
    fails(make(props, "strict").validate({ title: "a", extra: 1 }, create), "data.extra", "not a declared field")
  })

  it("auto-evolving accepts and keeps unknown keys, still checking declared ones", () => {
    const v = make(props, "auto-evolving")
    expect(ok(v.validate({ title: "a", extra: { deep: [1] } }, create))).toStrictEqual({ title: "a", extra: { deep: [1] } })
    fails(v.validate({ title: 1 }, create), "data.title")
  })

  it("schemaless accepts anything object-shaped", () => {
    const v = make(props, "schemaless")
    expect(ok(v.validate({ title: 1, other: "x" }, create))).toStrictEqual({ title: 1, other: "x" })
    ok(v.validate({}, create))
  })

  it("older form: isStrict false without schemaDiscoveryMode allows extra fields; isStrict true is strict", () => {
    ok(compileValidator({ properties: props, isStrict: false }).validate({ title: "a", extra: 1 }, create))
    expect(compileValidator({ properties: props, isStrict: false }).mode).toBe("auto-evolving")
    expect(compileValidator({ properties: props, isStrict: true }).validate({ title: "a", extra: 1 }, create).ok).toBe(false)
    expect(compileValidator({ properties: props }).validate({ title: "a", extra: 1 }, create).ok).toBe(false)
    // The newer form decides when both are present.
    expect(
      compileValidator({ properties: props, isStrict: false, schemaDiscoveryMode: "strict" }).validate({ title: "a", extra: 1 }, create).ok
    ).toBe(false)
  })
})

describe("Validator: forbidden keys and depth", () => {
  const props: Array<PropertyDefinition> = [{ name: "meta", type: "object" }]

  for (const mode of ["strict", "auto-evolving", "schemaless"] as const) {
    it(`refuses __proto__, constructor and prototype anywhere (${mode})`, () => {
      const v = make(props, mode)
      fails(v.validate(JSON.parse(`{"__proto__": {"polluted": true}}`), create), "data.__proto__", "forbidden")
      fails(v.validate(JSON.parse(`{"meta": {"a": [{"constructor": 1}]}}`), create), "data.meta.a[0].constructor", "forbidden")
      fails(v.validate(JSON.parse(`{"meta": {"prototype": 1}}`), create), "data.meta.prototype", "forbidden")
      expect(({} as Record<string, unknown>).polluted).toBeUndefined()
    })
  }

  it("refuses __proto__ in an update patch without touching the prototype", () => {
    const r = make(props).validate(JSON.parse(`{"__proto__": {"polluted": true}}`), { mode: "update", previous: {} })
    fails(r, "data.__proto__", "forbidden")
    expect(({} as Record<string, unknown>).polluted).toBeUndefined()
  })

  it("limits nesting depth of free-form data", () => {
    let deep: unknown = 1
    for (let i = 0; i < MAX_DEPTH + 5; i++) deep = { d: deep }
    const r = make(props, "auto-evolving").validate({ meta: deep }, create)
    expect(r.ok).toBe(false)
    if (!r.ok) expect(r.errors[0]!.message).toContain("nested deeper")
    let shallow: unknown = 1
    for (let i = 0; i < 10; i++) shallow = { d: shallow }
    ok(make(props, "auto-evolving").validate({ meta: shallow }, create))
  })

  it("a declared field named like an Object.prototype member is plain data", () => {
    const v = make([{ name: "toString", type: "string", required: true }])
    fails(v.validate({}, create), "data.toString", "is required")
    ok(v.validate({ toString: "x" }, create))
  })
})

describe("Validator: defaults", () => {
  const v = make([
    { name: "status", type: "string", default: "draft", required: true },
    { name: "tags", type: "array", items: { type: "string" }, default: ["new"] },
    { name: "address", type: "object", properties: [{ name: "country", type: "string", default: "FR" }] },
    { name: "lines", type: "array", items: { type: "object" }, itemSchema: [{ name: "qty", type: "number", default: 1 }] }
  ])

  it("fills missing fields on create, nested ones included, without touching the input", () => {
    const input = { address: {}, lines: [{}, { qty: 5 }] }
    const data = ok(v.validate(input, create))
    expect(data).toStrictEqual({ status: "draft", tags: ["new"], address: { country: "FR" }, lines: [{ qty: 1 }, { qty: 5 }] })
    expect(input).toStrictEqual({ address: {}, lines: [{}, { qty: 5 }] })
  })

  it("gives each record its own copy of an object default", () => {
    const a = ok(v.validate({}, create))
    ;(a.tags as Array<string>).push("changed")
    expect(ok(v.validate({}, create)).tags).toStrictEqual(["new"])
  })

  it("applies on replace but not on update, and never over an explicit value", () => {
    expect(ok(v.validate({}, { mode: "replace", previous: { status: "x" } })).status).toBe("draft")
    expect(ok(v.validate({ status: "live" }, create)).status).toBe("live")
    fails(v.validate({}, { mode: "update", previous: {} }), "data.status", "is required")
  })
})

describe("Validator: update and replace", () => {
  const v = make([
    { name: "title", type: "string", required: true },
    { name: "note", type: "string", required: true, nullable: true },
    { name: "body", type: "string" },
    { name: "code", type: "string", immutable: true },
    { name: "address", type: "object", properties: [{ name: "country", type: "string", immutable: true }] }
  ])
  const previous = { title: "T", note: "n", body: "B", code: "C1", address: { country: "FR" } }

  it("merges a patch over the previous data and returns the merged record", () => {
    expect(ok(v.validate({ body: "B2" }, { mode: "update", previous }))).toStrictEqual({ ...previous, body: "B2" })
  })

  it("null unsets an optional field, sets a required nullable one to null, and is refused for a required one", () => {
    const unset = ok(v.validate({ body: null }, { mode: "update", previous }))
    expect(unset).not.toHaveProperty("body")
    expect(ok(v.validate({ note: null }, { mode: "update", previous })).note).toBe(null)
    fails(v.validate({ title: null }, { mode: "update", previous }), "data.title", "cannot be unset")
  })

  it("validates the merged result", () => {
    fails(v.validate({ body: 3 }, { mode: "update", previous }), "data.body", "string")
    fails(v.validate({ extra: 1 }, { mode: "update", previous }), "data.extra", "not a declared field")
  })

  it("replace drops unspecified fields", () => {
    const data = ok(v.validate({ title: "T2", note: null, code: "C1", address: { country: "FR" } }, { mode: "replace", previous }))
    expect(data).toStrictEqual({ title: "T2", note: null, code: "C1", address: { country: "FR" } })
  })

  it("refuses changes to immutable fields, nested ones included", () => {
    ok(v.validate({ code: "C1" }, { mode: "update", previous }))
    fails(v.validate({ code: "C2" }, { mode: "update", previous }), "data.code", "immutable")
    fails(v.validate({ code: null }, { mode: "update", previous }), "data.code", "immutable")
    fails(v.validate({ address: { country: "DE" } }, { mode: "update", previous }), "data.address.country", "immutable")
    fails(v.validate({ title: "T", note: "n" }, { mode: "replace", previous }), "data.code", "immutable")
    // Not yet set: the first value is free.
    ok(v.validate({ code: "C9" }, { mode: "update", previous: { title: "T", note: "n" } }))
  })
})

describe("Validator: computed fields", () => {
  const props: Array<PropertyDefinition> = [
    { name: "price", type: "number", required: true },
    { name: "qty", type: "number", required: true },
    { name: "vat", type: "number", expression: "round(total * 0.2, 2)", computedMode: "persisted" },
    { name: "total", type: "number", expression: "price * qty", computedMode: "persisted" },
    { name: "label", type: "string", expression: "concat(qty, ' x ', price)", computedMode: "virtual" },
    { name: "stamp", type: "datetime", expression: "now()", computedMode: "persisted" }
  ]
  const v = make(props)

  it("stores persisted values (in dependency order) and leaves virtual ones out", () => {
    const data = ok(v.validate({ price: 2.5, qty: 4 }, create))
    expect(data).toStrictEqual({ price: 2.5, qty: 4, vat: 2, total: 10, stamp: "2024-05-01T12:00:00.000Z" })
  })

  it("recomputes on update", () => {
    const previous = ok(v.validate({ price: 2.5, qty: 4 }, create))
    expect(ok(v.validate({ qty: 10 }, { mode: "update", previous, now })).total).toBe(25)
  })

  it("refuses client writes, but tolerates an unchanged echo", () => {
    fails(v.validate({ price: 1, qty: 1, total: 99 }, create), "data.total", "computed")
    fails(v.validate({ price: 1, qty: 1, label: "x" }, create), "data.label", "computed")
    const previous = ok(v.validate({ price: 2.5, qty: 4 }, create))
    ok(v.validate({ ...previous }, { mode: "replace", previous, now }))
    fails(v.validate({ total: 1 }, { mode: "update", previous, now }), "data.total", "computed")
  })

  it("adds virtual values on read", () => {
    const stored = { price: 2.5, qty: 4, total: 10 }
    expect(applyVirtual({ id: "s", version: 1, properties: props }, stored, now)).toStrictEqual({ ...stored, label: "4 x 2.5" })
    expect(computedFields({ properties: props }).map((c) => c.mode)).toStrictEqual(["persisted", "persisted", "virtual", "persisted"])
  })

  it("coerces results to the field's type", () => {
    const c = make([
      { name: "a", type: "number" },
      { name: "n", type: "number", expression: "a / 0" },
      { name: "s", type: "string", expression: "a * 2" },
      { name: "b", type: "boolean", expression: "a > 1" }
    ])
    expect(ok(c.validate({ a: 2 }, create))).toStrictEqual({ a: 2, n: null, s: "4", b: true })
  })
})

describe("Validator: references, auto-increment, unique, secret", () => {
  const props: Array<PropertyDefinition> = [
    { name: "seq", type: "number", required: true, autoIncrement: { startAt: 100, incrementBy: 5 } },
    { name: "author", type: "reference", target: "authors", relationship: "many-to-one", onDelete: "restrict", displayField: "name" },
    { name: "tags", type: "reference", target: "tags", relationship: "many-to-many", onDelete: "cascade" },
    { name: "profile", type: "reference", target: "profiles", relationship: "one-to-one", onDelete: "set_null", nullable: true },
    { name: "email", type: "string", isUnique: true },
    { name: "password", type: "string", isSecret: true },
    { name: "creds", type: "object", properties: [{ name: "token", type: "string", isSecret: true }] }
  ]
  const v = make(props)

  it("does not require auto-increment fields", () => {
    ok(v.validate({}, create))
    expect(autoIncrementFields({ properties: props })).toStrictEqual([{ field: "seq", startAt: 100, incrementBy: 5 }])
  })

  it("type-checks references: one id, or an array of ids for many-to-many", () => {
    ok(v.validate({ author: "a1", tags: ["t1", "t2"], profile: null }, create))
    fails(v.validate({ author: 1 }, create), "data.author", "record id")
    fails(v.validate({ author: "" }, create), "data.author", "record id")
    fails(v.validate({ tags: "t1" }, create), "data.tags", "array of record ids")
    fails(v.validate({ tags: ["t1", 2] }, create), "data.tags", "item 1")
    fails(v.validate({ tags: ["t1", "t1"] }, create), "data.tags", "twice")
  })

  it("lists references, unique fields and secret fields for the records layer", () => {
    expect(referenceFields({ properties: props }).map((r) => [r.field, r.target, r.relationship, r.onDelete, r.targetField])).toStrictEqual(
      [
        ["author", "authors", "many-to-one", "restrict", "id"],
        ["tags", "tags", "many-to-many", "cascade", "id"],
        ["profile", "profiles", "one-to-one", "set_null", "id"]
      ]
    )
    expect(uniqueFields({ properties: props })).toStrictEqual(["profile", "email"])
    expect(secretFields({ properties: props })).toStrictEqual(["password", "creds.token"])
  })
})

describe("validatorFor", () => {
  it("caches per structure id and version", () => {
    const props: Array<PropertyDefinition> = [{ name: "a", type: "string" }]
    const v1 = validatorFor({ id: "cache-test", version: 1, properties: props })
    expect(validatorFor({ id: "cache-test", version: 1, properties: props })).toBe(v1)
    const v2 = validatorFor({ id: "cache-test", version: 2, properties: [{ name: "a", type: "number" }] })
    expect(v2).not.toBe(v1)
    expect(v2.validate({ a: 1 }, create).ok).toBe(true)
    clearValidatorCache("cache-test")
    expect(validatorFor({ id: "cache-test", version: 1, properties: props })).not.toBe(v1)
  })
})
