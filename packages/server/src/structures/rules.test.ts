import type { PropertyDefinition, StructureInput } from "@troupe/api/structures/Structure"
import { describe, expect, it } from "@effect/vitest"
import type { DefinitionProblem, RuleContext, StructureLike } from "./RuleProblems.ts"
import { checkStructure, slugify } from "./rules.ts"
import { mergeStructureUpdate, normalizeProperty, normalizeStructure } from "./StructureDefaults.ts"

const workspace = (...structures: Array<StructureLike>) => {
  const bySlug = new Map(structures.map((s) => [s.recordSlug, s]))
  return (selfSlug?: string): RuleContext => ({
    findStructureBySlug: (slug) => bySlug.get(slug),
    ...(selfSlug === undefined ? {} : { selfSlug })
  })
}

const authors: StructureLike = {
  recordSlug: "authors",
  properties: [
    { name: "name", type: "string" },
    { name: "email", type: "string" }
  ]
}
const defaultCtx = workspace(authors)()

const check = (properties: ReadonlyArray<unknown>, extra: Record<string, unknown> = {}, ctx = defaultCtx) =>
  checkStructure({ name: "Things", properties, ...extra }, ctx)

const fields = (problems: ReadonlyArray<DefinitionProblem>) => problems.map((p) => p.field)

/** The property is valid on its own. */
const accepts = (property: unknown, ctx = defaultCtx) => expect(check([property], {}, ctx)).toStrictEqual([])

/** The property is refused with a problem at `field` (path below `properties[0]`), optionally naming `text`. */
const rejects = (property: unknown, field: string, text?: string, ctx = defaultCtx) => {
  const problems = check([property], {}, ctx)
  const at = field === "" ? "properties[0]" : `properties[0].${field}`
  const hit = problems.find((p) => p.field === at)
  expect(hit, `expected a problem at ${at}, got ${JSON.stringify(problems)}`).toBeDefined()
  if (text !== undefined) expect(hit!.message).toContain(text)
}

const str = (extra: Record<string, unknown> = {}) => ({ name: "s", type: "string", ...extra })
const num = (extra: Record<string, unknown> = {}) => ({ name: "n", type: "number", ...extra })
const dt = (extra: Record<string, unknown> = {}) => ({ name: "d", type: "datetime", ...extra })
const arr = (extra: Record<string, unknown> = {}) => ({ name: "a", type: "array", items: { type: "string" }, ...extra })
const obj = (extra: Record<string, unknown> = {}) => ({ name: "o", type: "object", ...extra })
const ref = (extra: Record<string, unknown> = {}) => ({
  name: "author",
  type: "reference",
  target: "authors",
  relationship: "many-to-one",
  onDelete: "restrict",
  ...extra
})

describe("checkStructure: the structure itself", () => {
  it("accepts a minimal structure with no properties", () => {
    expect(checkStructure({ name: "Things", properties: [] }, defaultCtx)).toStrictEqual([])
  })

  it("requires an object body, a non-empty name and a properties array", () => {
    expect(fields(checkStructure("nope", defaultCtx))).toStrictEqual(["body"])
    expect(fields(checkStructure({}, defaultCtx))).toStrictEqual(["name", "properties"])
    expect(fields(checkStructure({ name: "  ", properties: [] }, defaultCtx))).toStrictEqual(["name"])
    expect(fields(checkStructure({ name: "x", properties: {} }, defaultCtx))).toStrictEqual(["properties"])
  })

  it("checks recordSlug, or that one can be derived from the name", () => {
    expect(check([], { recordSlug: "blog-posts" })).toStrictEqual([])
    expect(fields(check([], { recordSlug: "Blog Posts" }))).toStrictEqual(["recordSlug"])
    expect(fields(checkStructure({ name: "!!!", properties: [] }, defaultCtx))).toStrictEqual(["name"])
    expect(checkStructure({ name: "!!!", recordSlug: "bangs", properties: [] }, defaultCtx)).toStrictEqual([])
  })

  it("checks the optional structure fields", () => {
    const good = {
      description: "d",
      status: "inactive",
      schemaDiscoveryMode: "auto-evolving",
      isStrict: true,
      enableVersioning: true,
      retentionPolicy: { maxVersions: 10, maxAgeDays: 30, cleanupIntervalHours: 1.5, pinnedVersionsRetained: true },
      schemaDiscoveryConfig: { batchSize: 5, maxKeysPerRecord: 50, maxNestingDepth: 2, maxStringLengthSampled: 100 },
      defaultTtlSeconds: 3600,
      tags: ["pii"]
    }
    expect(check([], good)).toStrictEqual([])
    const bad = {
      description: 1,
      status: "paused",
      schemaDiscoveryMode: "loose",
      isStrict: "yes",
      enableVersioning: 1,
      retentionPolicy: { maxVersions: 0, maxAgeDays: -1, pinnedVersionsRetained: "no" },
      schemaDiscoveryConfig: { batchSize: 1.5 },
      defaultTtlSeconds: -5,
      tags: ["ok", 3]
    }
    expect([...fields(check([], bad))].sort()).toEqual(
      [
        ...[
          "description",
          "status",
          "schemaDiscoveryMode",
          "isStrict",
          "enableVersioning",
          "retentionPolicy.maxVersions",
          "retentionPolicy.maxAgeDays",
          "retentionPolicy.pinnedVersionsRetained",
          "schemaDiscoveryConfig.batchSize",
          "defaultTtlSeconds",
          "tags[1]"
        ]
      ].sort()
    )
  })

  it("allows 32 indexed properties and names each one past that", () => {
    const props = (n: number) =>
      Array.from({ length: n }, (_, i) => ({ name: `f${i}`, type: i % 2 === 0 ? "string" : "number", indexed: true }))
    expect(check([...props(32), { name: "plain", type: "string" }])).toStrictEqual([])
    const problems = check([{ name: "plain", type: "string", indexed: false }, ...props(34)])
    expect(fields(problems)).toStrictEqual(["properties[33].indexed", "properties[34].indexed"])
    expect(problems[0]!.message).toContain("'f32'")
    expect(problems[0]!.message).toContain("32")
  })

  it("defaultSearchField names a string property", () => {
    expect(check([str({ name: "title" })], { defaultSearchField: "title" })).toStrictEqual([])
    expect(fields(check([str({ name: "title" })], { defaultSearchField: "body" }))).toStrictEqual(["defaultSearchField"])
    expect(fields(check([num({ name: "n" })], { defaultSearchField: "n" }))).toStrictEqual(["defaultSearchField"])
  })

  it("returns every problem at once, each with its path", () => {
    const problems = check(
      [
        str({ name: "title", minLength: 5, maxLength: 2 }),
        num({ name: "price", minimum: 10, maximum: 1 }),
        str({ name: "code", maxLength: 3, pattern: "(" }),
        { name: "title", type: "boolean" }
      ],
      { status: "nope" }
    )
    expect([...fields(problems)].sort()).toEqual(
      [...["status", "properties[0].minLength", "properties[1].minimum", "properties[2].pattern", "properties[3].name"]].sort()
    )
  })
})

describe("checkStructure: common property fields", () => {
  it("name is required, identifier-like and not reserved", () => {
    accepts(str({ name: "first_name" }))
    accepts(str({ name: "first-name" }))
    rejects({ type: "string" }, "name", "required")
    rejects(str({ name: "has space" }), "name")
    rejects(str({ name: "a.b" }), "name")
    rejects(str({ name: "__proto__" }), "name", "reserved")
    rejects(str({ name: "constructor" }), "name", "reserved")
  })

  it("type is required and one of the seven", () => {
    for (const type of ["string", "number", "boolean", "datetime", "object"]) accepts({ name: "x", type })
    rejects({ name: "x" }, "type", "required")
    rejects({ name: "x", type: "text" }, "type", "must be one of")
  })

  it("names are unique per level", () => {
    expect(fields(check([str({ name: "a" }), num({ name: "a" })]))).toStrictEqual(["properties[1].name"])
    expect(check([str({ name: "a" }), obj({ name: "b", properties: [str({ name: "a" })] })])).toStrictEqual([])
  })

  it("flags are booleans", () => {
    accepts(str({ required: true, nullable: true, isUnique: true, immutable: true, description: "d", id: "p1" }))
    rejects(str({ required: "yes" }), "required")
    rejects(str({ nullable: 1 }), "nullable")
    rejects(str({ immutable: "no" }), "immutable")
  })

  it("isUnique only on top-level scalar and reference properties", () => {
    accepts(num({ isUnique: true }))
    accepts(ref({ isUnique: true }))
    rejects(arr({ isUnique: true }), "isUnique")
    rejects(obj({ isUnique: true }), "isUnique")
    rejects(obj({ properties: [str({ isUnique: true })] }), "properties[0].isUnique", "top-level")
  })

  it("enum must list at least one value", () => {
    accepts(str({ enum: ["a"] }))
    rejects(str({ enum: [] }), "enum", "at least one")
  })

  it("ignores unknown extra keys", () => {
    accepts(str({ uiHint: "wide", placeholder: 3 }))
  })
})

describe("checkStructure: string", () => {
  it("minLength <= maxLength, both non-negative integers", () => {
    accepts(str({ minLength: 2, maxLength: 2 }))
    rejects(str({ minLength: 5, maxLength: 2 }), "minLength", "less than or equal to maxLength")
    rejects(str({ minLength: -1 }), "minLength")
    rejects(str({ maxLength: 2.5 }), "maxLength", "integer")
  })

  it("pattern compiles under RE2; backtracking-prone patterns are fine (linear engine)", () => {
    accepts(str({ pattern: "^[A-Z]{2}-\\d{4}$" }))
    accepts(str({ pattern: "^(a+)+$" }))
    rejects(str({ pattern: "([a-z" }), "pattern", "not a valid regular expression")
    rejects(str({ pattern: "(?<=x)y" }), "pattern")
    rejects(str({ pattern: "(a)\\1" }), "pattern")
  })

  it("enum values are strings meeting the constraints", () => {
    accepts(str({ enum: ["ab", "cd"], maxLength: 2, pattern: "^[a-z]+$" }))
    rejects(str({ enum: ["ab", 1] }), "enum[1]", "must be a string")
    rejects(str({ enum: ["ab", "abc"], maxLength: 2 }), "enum[1]", "at most 2")
    rejects(str({ enum: ["ab", "AB"], pattern: "^[a-z]+$" }), "enum[1]", "pattern")
    rejects(str({ enum: ["ab", "ab"] }), "enum[1]", "twice")
  })

  it("default meets minLength, maxLength, pattern, format and enum", () => {
    accepts(str({ default: "abc", minLength: 3, maxLength: 3, pattern: "^a" }))
    rejects(str({ default: "ab", minLength: 3 }), "default", "at least 3")
    rejects(str({ default: "abcd", maxLength: 3 }), "default", "at most 3")
    rejects(str({ default: "xbc", pattern: "^a" }), "default", "pattern")
    rejects(str({ default: "nope", format: "email" }), "default", "email")
    rejects(str({ default: "c", enum: ["a", "b"] }), "default", "one of")
    rejects(str({ default: 3 }), "default", "string")
  })

  it("not is disjoint from enum and default", () => {
    accepts(str({ enum: ["a", "b"], not: ["c"], default: "a" }))
    rejects(str({ enum: ["a", "b"], not: ["b"] }), "enum[1]", "also listed in not")
    rejects(str({ default: "x", not: ["x"] }), "default", "listed in not")
    rejects(str({ not: [1] }), "not[0]", "must be a string")
  })

  it("format is email, url, uuid, date or datetime", () => {
    for (const format of ["email", "url", "uuid", "date", "datetime"]) accepts(str({ format }))
    rejects(str({ format: "phone" }), "format")
  })

  it("renderAs takes the listed values", () => {
    for (const renderAs of ["textarea", "secret", "color", "code", "html", "markdown"]) accepts(str({ renderAs }))
    rejects(str({ renderAs: "rainbow" }), "renderAs")
  })

  it("isSecret is a boolean, not unique, not inside array items", () => {
    accepts(str({ isSecret: true }))
    accepts(obj({ properties: [str({ isSecret: true })] }))
    rejects(str({ isSecret: "yes" }), "isSecret")
    rejects(str({ isSecret: true, isUnique: true }), "isSecret", "cannot be unique")
    rejects(arr({ items: { type: "object" }, itemSchema: [str({ isSecret: true })] }), "itemSchema[0].isSecret")
  })
})

describe("checkStructure: number", () => {
  it("minimum <= maximum, and an exclusive bound needs room", () => {
    accepts(num({ minimum: 1, maximum: 1 }))
    rejects(num({ minimum: 2, maximum: 1 }), "minimum", "less than or equal to maximum")
    rejects(num({ minimum: 1, maximum: 1, exclusiveMaximum: true }), "minimum")
    rejects(num({ minimum: "1" }), "minimum")
  })

  it("multipleOf is positive", () => {
    accepts(num({ multipleOf: 0.5 }))
    rejects(num({ multipleOf: 0 }), "multipleOf", "greater than 0")
    rejects(num({ multipleOf: -2 }), "multipleOf")
  })

  it("enum values satisfy minimum, maximum, multipleOf, the exclusive flags and integer", () => {
    accepts(num({ enum: [1, 2, 3], minimum: 1, maximum: 3, multipleOf: 1 }))
    accepts(num({ enum: [0.3, 0.6], multipleOf: 0.1 })) // float-tolerant
    rejects(num({ enum: [1, 5], maximum: 3 }), "enum[1]", "at most 3")
    rejects(num({ enum: [0, 1], minimum: 0, exclusiveMinimum: true }), "enum[0]", "greater than 0")
    rejects(num({ enum: [3, 5], maximum: 5, exclusiveMaximum: true }), "enum[1]", "less than 5")
    rejects(num({ enum: [2, 3], multipleOf: 2 }), "enum[1]", "multiple of 2")
    rejects(num({ enum: [1, 1.5], integer: true }), "enum[1]", "integer")
    rejects(num({ enum: [1, "2"] }), "enum[1]", "number")
  })

  it("default satisfies the same constraints", () => {
    accepts(num({ default: 10, minimum: 0, maximum: 10, multipleOf: 5, integer: true }))
    rejects(num({ default: -1, minimum: 0 }), "default", "at least 0")
    rejects(num({ default: 0, minimum: 0, exclusiveMinimum: true }), "default", "greater than 0")
    rejects(num({ default: 7, multipleOf: 5 }), "default", "multiple of 5")
    rejects(num({ default: 1.5, integer: true }), "default", "integer")
    rejects(num({ default: 4, not: [4] }), "default", "listed in not")
  })

  it("integer is a boolean", () => {
    accepts(num({ integer: true }))
    rejects(num({ integer: "yes" }), "integer")
  })

  it("autoIncrement has an integer startAt and a positive integer incrementBy", () => {
    accepts(num({ autoIncrement: { startAt: 1000, incrementBy: 1 } }))
    accepts(num({ autoIncrement: {} }))
    rejects(num({ autoIncrement: { startAt: 1.5 } }), "autoIncrement.startAt", "integer")
    rejects(num({ autoIncrement: { incrementBy: 0 } }), "autoIncrement.incrementBy", "greater than 0")
    rejects(num({ autoIncrement: true }), "autoIncrement")
    rejects(num({ autoIncrement: { startAt: 5 }, maximum: 3 }), "autoIncrement.startAt", "between")
    rejects(num({ autoIncrement: {}, default: 1 }), "default")
  })

  it("computed: expression parses, computedMode is persisted or virtual and needs an expression", () => {
    const price = num({ name: "price" })
    const qty = num({ name: "qty" })
    expect(check([price, qty, num({ name: "total", expression: "price * qty", computedMode: "persisted" })])).toStrictEqual([])
    expect(check([price, num({ name: "net", expression: "round(price / 1.2, 2)", computedMode: "virtual" })])).toStrictEqual([])
    expect(fields(check([price, num({ name: "t", expression: "price *" })]))).toStrictEqual(["properties[1].expression"])
    expect(check([price, num({ name: "t", expression: "price *" })])[0]!.message).toContain("position")
    expect(fields(check([price, num({ name: "t", expression: "price", computedMode: "sometimes" })]))).toStrictEqual([
      "properties[1].computedMode"
    ])
    rejects(num({ computedMode: "virtual" }), "computedMode", "requires an expression")
    rejects(num({ expression: "1 + 1", autoIncrement: {} }), "autoIncrement")
    rejects(num({ expression: "1 + 1", default: 2 }), "default")
  })
})

describe("checkStructure: boolean", () => {
  it("default and enum are booleans", () => {
    accepts({ name: "b", type: "boolean", default: false, enum: [true, false] })
    rejects({ name: "b", type: "boolean", default: "yes" }, "default", "boolean")
    rejects({ name: "b", type: "boolean", enum: [true, "false"] }, "enum[1]", "boolean")
  })
})

describe("checkStructure: datetime", () => {
  it("bounds are ISO 8601, earliest before latest", () => {
    accepts(dt({ earliestDate: "2024-01-01", latestDate: "2024-12-31T23:59:59Z" }))
    rejects(dt({ earliestDate: "yesterday" }), "earliestDate", "ISO 8601")
    rejects(dt({ latestDate: "2024-13-01" }), "latestDate")
    rejects(dt({ earliestDate: "2024-12-31", latestDate: "2024-01-01" }), "earliestDate", "before latestDate")
    rejects(dt({ earliestDate: "2024-01-01", latestDate: "2024-01-01" }), "earliestDate")
  })

  it("default and enum lie within the bounds, honouring the exclusive flags", () => {
    const bounds = { earliestDate: "2024-01-01T00:00:00Z", latestDate: "2024-12-31T00:00:00Z" }
    accepts(dt({ ...bounds, default: "2024-01-01T00:00:00Z" }))
    accepts(dt({ ...bounds, default: "2024-06-01", enum: ["2024-06-01T00:00:00Z", "2024-12-31T00:00:00Z"] }))
    rejects(dt({ ...bounds, default: "2023-12-31T23:59:59Z" }), "default", "before")
    rejects(dt({ ...bounds, exclusiveEarliest: true, default: "2024-01-01T00:00:00Z" }), "default", "after")
    rejects(dt({ ...bounds, exclusiveLatest: true, enum: ["2024-06-01", "2024-12-31T00:00:00Z"] }), "enum[1]", "before")
    rejects(dt({ default: "not a date" }), "default", "ISO 8601")
    rejects(dt({ exclusiveLatest: "yes" }), "exclusiveLatest")
  })

  it("may be computed", () => {
    accepts(dt({ expression: "now()", computedMode: "persisted" }))
    rejects(dt({ expression: "now(" }), "expression")
  })
})

describe("checkStructure: array", () => {
  it("items is required and items.type is string, number, boolean, datetime or object", () => {
    for (const type of ["string", "number", "boolean", "datetime"]) accepts(arr({ items: { type } }))
    accepts(arr({ items: { type: "object" }, itemSchema: [str()] }))
    rejects({ name: "a", type: "array" }, "items", "required")
    rejects(arr({ items: { type: "array" } }), "items.type", "arrays of arrays")
    rejects(arr({ items: { type: "reference" } }), "items.type")
    rejects(arr({ items: { type: "banana" } }), "items.type")
    rejects(arr({ items: {} }), "items.type", "required")
  })

  it("item constraints are checked like property constraints", () => {
    accepts(arr({ items: { type: "string", minLength: 1, maxLength: 5, enum: ["a", "bb"] } }))
    rejects(arr({ items: { type: "string", minLength: 5, maxLength: 1 } }), "items.minLength")
    rejects(arr({ items: { type: "number", minimum: 5, maximum: 1 } }), "items.minimum")
    rejects(arr({ items: { type: "string", maxLength: 1, enum: ["a", "bb"] } }), "items.enum[1]")
    rejects(arr({ items: { type: "string", pattern: "(" } }), "items.pattern")
  })

  it("object items need an item schema of at least one uniquely named property, checked recursively", () => {
    accepts(arr({ items: { type: "object" }, itemSchema: [str({ name: "sku" }), num({ name: "qty" })] }))
    rejects(arr({ items: { type: "object" } }), "itemSchema", "required")
    rejects(arr({ items: { type: "object" }, itemSchema: [] }), "itemSchema", "at least one")
    rejects(arr({ items: { type: "object" }, itemSchema: [str({ name: "x" }), num({ name: "x" })] }), "itemSchema[1].name")
    rejects(arr({ items: { type: "object" }, itemSchema: [str({ name: "x", minLength: 3, maxLength: 1 })] }), "itemSchema[0].minLength")
    rejects(arr({ items: { type: "string" }, itemSchema: [str()] }), "itemSchema", "only allowed")
  })

  it("minItems <= maxItems; uniqueItems and isStrict are booleans", () => {
    accepts(arr({ minItems: 1, maxItems: 1, uniqueItems: true, isStrict: false }))
    rejects(arr({ minItems: 3, maxItems: 1 }), "minItems", "less than or equal to maxItems")
    rejects(arr({ minItems: -1 }), "minItems")
    rejects(arr({ uniqueItems: "yes" }), "uniqueItems")
    rejects(arr({ isStrict: 1 }), "isStrict")
  })

  it("default is a valid array", () => {
    accepts(arr({ default: ["a", "b"], maxItems: 2, uniqueItems: true }))
    rejects(arr({ default: ["a", 1] }), "default[1]", "string")
    rejects(arr({ default: ["a", "a"], uniqueItems: true }), "default[1]", "duplicates")
    rejects(arr({ default: "a" }), "default", "array")
  })
})

describe("checkStructure: object", () => {
  it("nested properties are unique and checked recursively", () => {
    accepts(obj({ properties: [str({ name: "city" }), obj({ name: "geo", properties: [num({ name: "lat" })] })] }))
    rejects(obj({ properties: [str({ name: "city" }), str({ name: "city" })] }), "properties[1].name")
    rejects(
      obj({ properties: [obj({ name: "geo", properties: [num({ name: "lat", minimum: 5, maximum: 1 })] })] }),
      "properties[0].properties[0].minimum"
    )
  })

  it("requiredProperties name existing properties", () => {
    accepts(obj({ properties: [str({ name: "city" })], requiredProperties: ["city"] }))
    rejects(obj({ properties: [str({ name: "city" })], requiredProperties: ["zip"] }), "requiredProperties[0]", "'zip'")
    rejects(obj({ properties: [str({ name: "city" })], requiredProperties: [1] }), "requiredProperties[0]")
  })

  it("isStrict is a boolean; default must fit the object", () => {
    accepts(obj({ isStrict: true, properties: [str({ name: "city" })], default: { city: "Paris" } }))
    rejects(obj({ isStrict: "yes" }), "isStrict")
    rejects(obj({ isStrict: true, properties: [str({ name: "city" })], default: { town: "Paris" } }), "default.town")
  })

  it("limits nesting depth", () => {
    let p: Record<string, unknown> = str({ name: "leaf" })
    for (let i = 0; i < 12; i++) p = obj({ name: `o${i}`, properties: [p] })
    expect(fields(check([p])).some((f) => f.endsWith(".properties"))).toBe(true)
  })
})

describe("checkStructure: reference", () => {
  it("target (or the older referenceStructure) is an existing structure of the workspace", () => {
    accepts(ref())
    accepts({ ...ref({ target: undefined }), referenceStructure: "authors" })
    rejects(ref({ target: "ghosts" }), "target", "no structure")
    rejects({ ...ref({ target: undefined }), referenceStructure: "ghosts" }, "referenceStructure", "no structure")
    rejects(ref({ target: undefined }), "target", "required")
    rejects({ ...ref(), referenceStructure: "other" }, "referenceStructure", "disagrees")
  })

  it("displayField and targetField exist on the target", () => {
    accepts(ref({ displayField: "name", targetField: "id" }))
    accepts(ref({ targetField: "email" }))
    rejects(ref({ displayField: "title" }), "displayField", "not a field of 'authors'")
    rejects(ref({ targetField: "title" }), "targetField")
  })

  it("relationship and onDelete are required and take the listed values", () => {
    rejects(ref({ relationship: undefined }), "relationship", "required")
    rejects(ref({ onDelete: undefined }), "onDelete", "required")
    rejects(ref({ relationship: "many-to-few" }), "relationship")
    rejects(ref({ onDelete: "explode" }), "onDelete")
    accepts(ref({ relationship: "many-to-many", onDelete: "cascade" }))
    accepts(ref({ relationship: "one-to-one" }))
  })

  it("set_null requires nullable", () => {
    accepts(ref({ onDelete: "set_null", nullable: true }))
    rejects(ref({ onDelete: "set_null" }), "onDelete", "nullable")
  })

  it("rejects A -> B -> A", () => {
    const books: StructureLike = { recordSlug: "books", properties: [ref({ name: "author", target: "authors" })] }
    const ctx = workspace(books)()
    const problems = checkStructure({ name: "Authors", properties: [ref({ name: "favourite", target: "books" })] }, ctx)
    expect(fields(problems)).toStrictEqual(["properties[0].target"])
    expect(problems[0]!.message).toContain("authors -> books -> authors")
  })

  it("rejects longer chains, nested references included, and on update uses selfSlug", () => {
    const b: StructureLike = { recordSlug: "b", properties: [ref({ name: "c", target: "c" })] }
    const c: StructureLike = {
      recordSlug: "c",
      properties: [{ name: "meta", type: "object", properties: [ref({ name: "a", target: "a" })] }]
    }
    const oldA: StructureLike = { recordSlug: "a", properties: [] }
    const ctx = workspace(oldA, b, c)
    const input = { name: "Renamed", properties: [ref({ name: "b", target: "b" })] }
    const problems = checkStructure(input, ctx("a"))
    expect(fields(problems)).toStrictEqual(["properties[0].target"])
    expect(problems[0]!.message).toContain("a -> b -> c -> a")
    // Without a way back there is no cycle.
    expect(checkStructure(input, workspace(oldA, b, { recordSlug: "c", properties: [] })("a"))).toStrictEqual([])
  })

  it("allows a structure to reference itself (trees), unless the reference is required and not nullable", () => {
    const parent = ref({ name: "parent", target: "categories", displayField: "title", nullable: true, onDelete: "set_null" })
    const input = { name: "Categories", properties: [{ name: "title", type: "string" }, parent] }
    expect(checkStructure(input, defaultCtx)).toStrictEqual([])
    const required = {
      ...input,
      properties: [
        { name: "title", type: "string" },
        { ...parent, required: true, nullable: false, onDelete: "cascade" }
      ]
    }
    expect(fields(checkStructure(required, defaultCtx))).toStrictEqual(["properties[1].required"])
  })
})

describe("checkStructure: computed fields", () => {
  it("expressions read existing fields, dotted paths into declared objects included", () => {
    const address = obj({ name: "address", isStrict: true, properties: [str({ name: "city" })] })
    expect(check([address, str({ name: "c", expression: "upper(address.city)" })])).toStrictEqual([])
    expect(fields(check([str({ name: "c", expression: "upper(name)" })]))).toStrictEqual(["properties[0].expression"])
    expect(fields(check([address, str({ name: "c", expression: "address.zip" })]))).toStrictEqual(["properties[1].expression"])
  })

  it("computed fields may read each other, but not in a cycle", () => {
    const price = num({ name: "price" })
    const ok = [price, num({ name: "net", expression: "price / 1.2" }), num({ name: "vat", expression: "price - net" })]
    expect(check(ok)).toStrictEqual([])
    const cycle = [num({ name: "a", expression: "b + 1" }), num({ name: "b", expression: "a + 1" })]
    expect([...fields(check(cycle))].sort()).toEqual([...["properties[0].expression", "properties[1].expression"]].sort())
    expect(check(cycle)[0]!.message).toContain("cycle")
    expect(fields(check([num({ name: "a", expression: "a + 1" })]))).toStrictEqual(["properties[0].expression"])
  })

  it("only top-level scalar properties are computed", () => {
    rejects(obj({ properties: [num({ name: "x", expression: "1" })] }), "properties[0].expression", "top-level")
    rejects(arr({ expression: "1" }), "expression")
  })
})

describe("slugify", () => {
  it("makes lowercase hyphenated slugs", () => {
    expect(slugify("Blog Posts")).toBe("blog-posts")
    expect(slugify("  Crème brûlée!! 2024 ")).toBe("creme-brulee-2024")
    expect(slugify("a__b--c")).toBe("a-b-c")
    expect(slugify("!!!")).toBe("")
  })
})

describe("normalizeStructure", () => {
  const input: StructureInput = {
    name: "Blog Posts",
    properties: [
      { name: "title", type: "string" },
      { id: "new", name: "tags", type: "array", items: { type: "string" } },
      { id: "keep-me", name: "meta", type: "object", properties: [{ name: "x", type: "number" }] },
      { name: "author", type: "reference", referenceStructure: "authors", relationship: "many-to-one", onDelete: "restrict" },
      { name: "seq", type: "number", autoIncrement: {} },
      { name: "total", type: "number", expression: "1 + 1" }
    ]
  }

  it("fills structure defaults", () => {
    const s = normalizeStructure(input)
    expect(s.recordSlug).toBe("blog-posts")
    expect(s.status).toBe("active")
    expect(s.schemaDiscoveryMode).toBe("strict")
    expect(s.isStrict).toBe(false)
    expect(s.enableVersioning).toBe(false)
    expect(s.schemaDiscoveryConfig).toStrictEqual({
      batchSize: 10,
      maxKeysPerRecord: 100,
      maxNestingDepth: 3,
      maxStringLengthSampled: 1000
    })
    expect(s.tags).toStrictEqual([])
    expect(normalizeStructure({ ...input, schemaDiscoveryConfig: { batchSize: 3 } }).schemaDiscoveryConfig.batchSize).toStrictEqual(3)
  })

  it("resolves the record mode: schemaDiscoveryMode wins, an explicit isStrict false alone means auto-evolving", () => {
    expect(normalizeStructure({ ...input, isStrict: false }).schemaDiscoveryMode).toBe("auto-evolving")
    expect(normalizeStructure({ ...input, isStrict: true }).schemaDiscoveryMode).toBe("strict")
    expect(normalizeStructure({ ...input, isStrict: false, schemaDiscoveryMode: "strict" }).schemaDiscoveryMode).toBe("strict")
    expect(normalizeStructure({ ...input, isStrict: true, schemaDiscoveryMode: "schemaless" }).schemaDiscoveryMode).toBe("schemaless")
  })

  it("fills property defaults and ids", () => {
    const [title, tags, meta, author, seq, total] = normalizeStructure(input).properties as Array<any>
    expect(title.id).toMatch(/^[0-9a-f-]{36}$/)
    expect(tags.id).toMatch(/^[0-9a-f-]{36}$/)
    expect(meta.id).toBe("keep-me")
    expect(meta.properties[0].id).toMatch(/^[0-9a-f-]{36}$/)
    for (const p of [title, tags, meta, author]) {
      expect(p).toMatchObject({ required: false, nullable: false, isUnique: false, immutable: false })
    }
    expect(title.isSecret).toBe(false)
    expect(tags.isStrict).toBe(true)
    expect(meta.isStrict).toBe(false)
    expect(author.target).toBe("authors")
    expect(author.targetField).toBe("id")
    expect(author).not.toHaveProperty("referenceStructure")
    expect(seq.autoIncrement).toStrictEqual({ startAt: 1, incrementBy: 1 })
    expect(total.computedMode).toBe("persisted")
  })
})

describe("mergeStructureUpdate", () => {
  const stored = normalizeStructure({
    name: "Posts",
    description: "old",
    properties: [
      { id: "p1", name: "title", type: "string" },
      { id: "p2", name: "body", type: "string" }
    ]
  })

  it("replaces sent properties by id, adds new ones, keeps the others", () => {
    const merged = mergeStructureUpdate(stored, {
      properties: [
        { id: "p2", name: "body", type: "string", maxLength: 10 },
        { id: "new", name: "views", type: "number" }
      ] satisfies Array<PropertyDefinition>
    })
    expect(merged.properties.map((p) => p.name)).toStrictEqual(["title", "body", "views"])
    expect((merged.properties[1] as any).maxLength).toBe(10)
    expect(merged.name).toBe("Posts")
  })

  it("null clears optional fields; other fields update", () => {
    const merged = mergeStructureUpdate(stored, { description: null, name: "Articles", status: "inactive" })
    expect(merged).not.toHaveProperty("description")
    expect(merged.name).toBe("Articles")
    expect(merged.status).toBe("inactive")
    expect(merged.recordSlug).toBe("posts")
  })
})

describe("normalizeProperty: the defaults a stored property shows", () => {
  it("flags false, exclusive bounds of numbers and datetimes included; given values kept", () => {
    const number = normalizeProperty({ name: "n", type: "number", minimum: 1 } as any) as any
    expect(number).toMatchObject({ required: false, nullable: false, isUnique: false, immutable: false })
    expect([number.exclusiveMinimum, number.exclusiveMaximum]).toStrictEqual([false, false])
    expect((normalizeProperty({ name: "n", type: "number", exclusiveMinimum: true } as any) as any).exclusiveMinimum).toBe(true)
    const when = normalizeProperty({ name: "d", type: "datetime" } as any) as any
    expect([when.exclusiveEarliest, when.exclusiveLatest]).toStrictEqual([false, false])
    expect((normalizeProperty({ name: "d", type: "datetime", exclusiveLatest: true } as any) as any).exclusiveLatest).toBe(true)
  })
})
