// Structures end to end through HTTP (README: Structures): create with every property type, every
// definition problem reported at once, validate for any body, list with paging / search / sort / filters, get by
// id and slug, partial updates by property id, bulk property deletion, soft and hard delete (and what that means
// for records), modes and settings, the read-only metadata locks, the /collections alias, permissions, and the
// OpenAPI document. Runs on PGlite, and on PostgreSQL when DATABASE_URL is set.
import postgres from "postgres"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { startServer, type TestServer } from "./support/TestServer.ts"
import { sleep } from "./support/wait.ts"

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/

let server: TestServer
let token: string
let seq = 0
/** A name no other test of this file uses. */
const unique = (prefix: string) => `${prefix} ${++seq}`

const api = (method: string, path: string, body?: unknown, tok: string = token) =>
  server.request(method, server.base + path, body === undefined ? { token: tok } : { token: tok, body })

const create = async (body: Record<string, unknown>) => {
  const res = await api("POST", "/structures", body)
  expect(res.status, JSON.stringify(res.body)).toBe(200)
  return res.body
}

/** Record creates answer 200 or 201 (the records routes decide); either is a success here. */
const expectCreated = (res: { status: number; body: any }) => {
  expect(res.status, JSON.stringify(res.body)).toBeGreaterThanOrEqual(200)
  expect(res.status).toBeLessThan(300)
}

const fieldsOf = (body: any): Array<string> => (body.details ?? body.errors).map((d: any) => d.field)

const expectError = (res: { status: number; body: any }, status: number, code: string) => {
  expect(res.status, JSON.stringify(res.body)).toBe(status)
  expect(res.body).toMatchObject({ statusCode: status, code })
  expect(typeof res.body.message).toBe("string")
  expect(Array.isArray(res.body.details)).toBe(true)
}

/** Every type with every field a property may have (README: Structures › Properties; reference to `target`). */
const everyType = (target: string) =>
  [
    {
      name: "title",
      type: "string",
      description: "Headline",
      required: true,
      nullable: false,
      isUnique: true,
      immutable: false,
      minLength: 2,
      maxLength: 80,
      pattern: "^[A-Z]",
      renderAs: "textarea",
      default: "Hello",
      enum: ["Hello", "World"],
      not: ["Nope"],
      format: undefined
    },
    { name: "email", type: "string", format: "email" },
    { name: "token", type: "string", isSecret: true, renderAs: "secret" },
    {
      name: "price",
      type: "number",
      minimum: 0,
      maximum: 1000,
      exclusiveMinimum: false,
      exclusiveMaximum: true,
      multipleOf: 0.5,
      default: 10,
      enum: [10, 20.5],
      integer: false
    },
    { name: "quantity", type: "number", integer: true, minimum: 0 },
    { name: "seq", type: "number", autoIncrement: { startAt: 100, incrementBy: 5 } },
    { name: "total", type: "number", expression: "price * quantity", computedMode: "persisted" },
    { name: "active", type: "boolean", default: true, enum: [true, false] },
    {
      name: "publishedAt",
      type: "datetime",
      earliestDate: "2020-01-01T00:00:00Z",
      latestDate: "2030-01-01T00:00:00Z",
      exclusiveEarliest: true,
      exclusiveLatest: false,
      default: "2024-05-01T10:00:00Z"
    },
    { name: "labels", type: "array", items: { type: "string", maxLength: 20 }, minItems: 0, maxItems: 5, uniqueItems: true },
    {
      name: "lines",
      type: "array",
      items: { type: "object" },
      isStrict: true,
      itemSchema: [
        { name: "sku", type: "string", required: true },
        { name: "qty", type: "number" }
      ]
    },
    {
      name: "address",
      type: "object",
      isStrict: true,
      requiredProperties: ["city"],
      properties: [
        { name: "city", type: "string" },
        { name: "zip", type: "string", pattern: "^[0-9]{5}$" }
      ]
    },
    {
      name: "author",
      type: "reference",
      target,
      targetField: "id",
      displayField: "name",
      relationship: "many-to-one",
      onDelete: "set_null",
      nullable: true
    }
  ].map((p) => Object.fromEntries(Object.entries(p).filter(([, v]) => v !== undefined)))

beforeAll(async () => {
  server = await startServer()
  token = await server.adminToken()
})

afterAll(async () => {
  await server?.close()
})

describe("create", () => {
  it("fills the defaults: slug from the name, status, modes, versioning, discovery config, ids, metadata", async () => {
    const s = await create({ name: "Blog Posts!", properties: [{ name: "title", type: "string" }] })
    expect(s.id).toMatch(UUID)
    expect(s).toMatchObject({
      workspaceSlug: server.workspace,
      recordSlug: "blog-posts",
      name: "Blog Posts!",
      status: "active",
      isDeleted: false,
      schemaDiscoveryMode: "strict",
      isStrict: false,
      enableVersioning: false,
      schemaDiscoveryConfig: { batchSize: 10, maxKeysPerRecord: 100, maxNestingDepth: 3, maxStringLengthSampled: 1000 },
      metadata: { recordWritesLocked: false, structureWritesLocked: false, migrationInProgress: false },
      tags: [],
      version: 1
    })
    expect(s.properties[0]).toMatchObject({
      name: "title",
      type: "string",
      required: false,
      nullable: false,
      isUnique: false,
      immutable: false
    })
    expect(s.properties[0].id).toMatch(UUID)
    expect(typeof s.createdAt).toBe("string")
    expect(typeof s.createdBy).toBe("string")
  })

  it("accepts all seven property types with every property field and gives them back", async () => {
    const author = await create({ name: unique("Author"), properties: [{ name: "name", type: "string" }] })
    const s = await create({ name: unique("Every Type"), properties: everyType(author.recordSlug), tags: ["catalog", "pii"] })
    const again = await api("GET", `/structures/${s.id}`)
    expect(again.status).toBe(200)
    const sent = everyType(author.recordSlug)
    expect(again.body.properties.map((p: any) => p.type)).toEqual(sent.map((p) => p.type))
    sent.forEach((p, i) => expect(again.body.properties[i]).toMatchObject(p))
    expect(new Set(again.body.properties.map((p: any) => p.type))).toEqual(
      new Set(["string", "number", "boolean", "datetime", "array", "object", "reference"])
    )
    expect(again.body.tags).toEqual(["catalog", "pii"])
  })

  it("accepts the older referenceStructure name and stores it as target", async () => {
    const target = await create({ name: unique("Legacy Target"), properties: [] })
    const s = await create({
      name: unique("Legacy Ref"),
      properties: [{ name: "t", type: "reference", referenceStructure: target.recordSlug, relationship: "one-to-one", onDelete: "cascade" }]
    })
    expect(s.properties[0]).toMatchObject({ target: target.recordSlug, targetField: "id" })
    expect(s.properties[0].referenceStructure).toBeUndefined()
  })

  it("reports every definition problem at once, each with its path", async () => {
    const res = await api("POST", "/structures", {
      name: unique("Broken"),
      properties: [
        { name: "a", type: "string", minLength: 10, maxLength: 2 },
        { name: "b", type: "number", minimum: 5, maximum: 1 },
        { name: "c", type: "array" },
        { name: "d", type: "reference", target: "no-such-structure", relationship: "many-to-one", onDelete: "set_null" },
        { name: "a", type: "boolean" },
        { name: "f", type: "string", pattern: "(unclosed" },
        { name: "g", type: "datetime", earliestDate: "2030-01-01T00:00:00Z", latestDate: "2020-01-01T00:00:00Z" },
        { name: "h", type: "string", maxLength: 3, default: "toolong" },
        { name: "i", type: "number", multipleOf: 2, enum: [2, 3] },
        { name: "j", type: "object", properties: [{ name: "k", type: "string" }], requiredProperties: ["zz"] }
      ]
    })
    expectError(res, 400, "VALIDATION_ERROR")
    expect(fieldsOf(res.body)).toEqual(
      expect.arrayContaining([
        "properties[0].minLength",
        "properties[1].minimum",
        "properties[2].items",
        "properties[3].onDelete",
        "properties[3].target",
        "properties[4].name",
        "properties[5].pattern",
        "properties[6].earliestDate",
        "properties[7].default",
        "properties[8].enum[1]",
        "properties[9].requiredProperties[0]"
      ])
    )
    for (const d of res.body.details) expect(d.property).toBe(d.field)
  })

  it("names every type mistake of the body in one 400", async () => {
    const res = await api("POST", "/structures", {
      name: 5,
      properties: [
        { name: "a", type: "string", minLength: "x" },
        { name: "b", type: "number", maximum: true }
      ],
      tags: "nope"
    })
    expectError(res, 400, "VALIDATION_ERROR")
    expect(fieldsOf(res.body)).toEqual(expect.arrayContaining(["name", "properties[0].minLength", "properties[1].maximum", "tags"]))
  })

  it("checks types and rules in one pass: one 400 names both kinds of problem", async () => {
    const res = await api("POST", "/structures", {
      name: unique("One Pass"),
      properties: [
        { name: "a", type: "string", minLength: "three" },
        { name: "b", type: "string", minLength: 9, maxLength: 1 },
        { name: "c", type: "reference", target: "nowhere" }
      ]
    })
    expectError(res, 400, "VALIDATION_ERROR")
    expect(fieldsOf(res.body)).toEqual(
      expect.arrayContaining([
        "properties[0].minLength",
        "properties[1].minLength",
        "properties[2].relationship",
        "properties[2].onDelete",
        "properties[2].target"
      ])
    )
  })

  it("refuses an unknown property type, a missing name and missing properties", async () => {
    expectError(await api("POST", "/structures", { name: "x", properties: [{ name: "a", type: "money" }] }), 400, "VALIDATION_ERROR")
    const res = await api("POST", "/structures", { name: "   ", properties: [] })
    expectError(res, 400, "VALIDATION_ERROR")
    expect(fieldsOf(res.body)).toContain("name")
    expectError(await api("POST", "/structures", { name: "No Props" }), 400, "VALIDATION_ERROR")
  })

  it("keeps recordSlug unique per workspace (409) and checks its form", async () => {
    const slug = `dup-${seq++}`
    await create({ name: "First", recordSlug: slug, properties: [] })
    const dup = await api("POST", "/structures", { name: "Second", recordSlug: slug, properties: [] })
    expectError(dup, 409, "DUPLICATE_KEY")
    expect(fieldsOf(dup.body)).toContain("recordSlug")
    const derived = await create({ name: "Auto Slug Name", properties: [] })
    expect(derived.recordSlug).toBe("auto-slug-name")
    expectError(await api("POST", "/structures", { name: "Auto Slug Name", properties: [] }), 409, "DUPLICATE_KEY")
    const bad = await api("POST", "/structures", { name: "Bad", recordSlug: "Bad Slug", properties: [] })
    expectError(bad, 400, "VALIDATION_ERROR")
    expect(fieldsOf(bad.body)).toEqual(["recordSlug"])
  })

  it("refuses circular references between structures", async () => {
    const a = await create({ name: unique("Cyc A"), properties: [] })
    const b = await create({
      name: unique("Cyc B"),
      properties: [{ name: "a", type: "reference", target: a.recordSlug, relationship: "many-to-one", onDelete: "restrict" }]
    })
    const res = await api("PUT", `/structures/${a.id}`, {
      properties: [{ id: "new", name: "b", type: "reference", target: b.recordSlug, relationship: "many-to-one", onDelete: "restrict" }]
    })
    expectError(res, 400, "VALIDATION_ERROR")
    expect(res.body.details[0]).toMatchObject({ field: "properties[0].target" })
    expect(res.body.details[0].message).toContain("circular")
  })

  it("ignores metadata sent in a create body (read-only)", async () => {
    const s = await create({ name: unique("Meta Ignored"), properties: [], metadata: { recordWritesLocked: true } })
    expect(s.metadata.recordWritesLocked).toBe(false)
  })
})

describe("validate", () => {
  it("answers valid: true for a good definition and saves nothing", async () => {
    const name = unique("Validate Only")
    const res = await api("POST", "/structures/validate", { name, properties: [{ name: "x", type: "number", minimum: 1 }] })
    expect(res.status).toBe(200)
    expect(res.body).toEqual({ valid: true, errors: [] })
    const list = await api("GET", `/structures?search=${encodeURIComponent(name)}`)
    expect(list.body.meta.total).toBe(0)
  })

  it("names rule and type problems together", async () => {
    const res = await api("POST", "/structures/validate", {
      name: 7,
      properties: [
        { name: "x", type: "string", minLength: 5, maxLength: 1 },
        { name: "y", type: "number", maximum: "high" },
        { name: "z", type: "array", items: { type: "array" } }
      ]
    })
    expect(res.status).toBe(200)
    expect(res.body.valid).toBe(false)
    expect(fieldsOf(res.body)).toEqual(
      expect.arrayContaining(["name", "properties[0].minLength", "properties[1].maximum", "properties[2].items.type"])
    )
    for (const e of res.body.errors) expect(Object.keys(e).sort()).toEqual(["field", "message"])
  })

  it("answers valid: false (200) for bodies that are not structures at all", async () => {
    for (const body of [[1, 2], "text", 42, null, true, {}]) {
      const res = await api("POST", "/structures/validate", body)
      expect(res.status, JSON.stringify(body)).toBe(200)
      expect(res.body.valid).toBe(false)
      expect(res.body.errors.length).toBeGreaterThan(0)
    }
    const empty = await server.request("POST", `${server.base}/structures/validate`, {
      token,
      raw: "",
      headers: { "content-type": "application/json" }
    })
    expect(empty.status).toBe(200)
    expect(empty.body.valid).toBe(false)
  })

  it("answers 400 for a body that is not JSON at all (nothing to validate)", async () => {
    const res = await server.request("POST", `${server.base}/structures/validate`, {
      token,
      raw: "{not json",
      headers: { "content-type": "application/json" }
    })
    expect(res.status).toBe(400)
  })

  it("reports a recordSlug already taken", async () => {
    const s = await create({ name: unique("Taken"), properties: [] })
    const res = await api("POST", "/structures/validate", { name: "Other", recordSlug: s.recordSlug, properties: [] })
    expect(res.body.valid).toBe(false)
    expect(fieldsOf(res.body)).toEqual(["recordSlug"])
  })
})

describe("list", () => {
  const tag = `lst${Date.now().toString(36)}`
  const ids: Record<string, string> = {}
  beforeAll(async () => {
    for (const [key, extra] of [
      ["alpha", {}],
      ["beta", {}],
      ["gamma", { status: "inactive" }],
      ["delta", {}],
      ["epsilon", { description: "the fifth" }]
    ] as const) {
      const s = await create({ name: `${tag} ${key}`, properties: [], ...extra })
      ids[key] = s.id
    }
    expect((await api("DELETE", `/structures/${ids.delta}`)).status).toBe(200)
  })
  const list = (query: string) => api("GET", `/structures?search=${tag}&${query}`)
  const names = (res: any) => res.body.data.map((s: any) => s.name.split(" ")[1])

  it("answers {data, meta} without soft-deleted structures by default", async () => {
    const res = await list("")
    expect(res.status).toBe(200)
    expect(res.body.meta).toEqual({ total: 4, page: 1, pageSize: 500 })
    expect(names(res).sort()).toEqual(["alpha", "beta", "epsilon", "gamma"])
  })

  it("pages with page and limit; a limit above 500 or a page above 1,000,000 is a 400", async () => {
    const res = await list("sort[field]=name&limit=2&page=2")
    expect(res.body.meta).toEqual({ total: 4, page: 2, pageSize: 2 })
    expect(names(res)).toEqual(["epsilon", "gamma"])
    expect((await list("limit=500")).body.meta.pageSize).toBe(500)
    expectError(await list("limit=501"), 400, "VALIDATION_ERROR")
    expectError(await list("page=1000001"), 400, "VALIDATION_ERROR")
    expectError(await list("limit=0"), 400, "VALIDATION_ERROR")
    expectError(await list("page=0"), 400, "VALIDATION_ERROR")
    expectError(await list("limit=abc"), 400, "VALIDATION_ERROR")
  })

  it("sorts by sort[field] and sort[direction]", async () => {
    expect(names(await list("sort[field]=name&sort[direction]=desc"))).toEqual(["gamma", "epsilon", "beta", "alpha"])
    expect(names(await list("sort[field]=createdAt&sort[direction]=asc"))).toEqual(["alpha", "beta", "gamma", "epsilon"])
    expectError(await list("sort[field]=nope"), 400, "VALIDATION_ERROR")
    expectError(await list("sort[direction]=sideways"), 400, "VALIDATION_ERROR")
  })

  it("filters by filter[status] and filter[isDeleted]", async () => {
    expect(names(await list("filter[status]=inactive"))).toEqual(["gamma"])
    expect(names(await list("filter[status]=active")).sort()).toEqual(["alpha", "beta", "epsilon"])
    const deleted = await list("filter[isDeleted]=true")
    expect(names(deleted)).toEqual(["delta"])
    expect(deleted.body.data[0].isDeleted).toBe(true)
    expect(names(await list("filter[isDeleted]=false")).length).toBe(4)
  })

  it("searches the searchField (default name)", async () => {
    const bySlug = await api("GET", `/structures?search=${tag}-bet&searchField=recordSlug`)
    expect(names(bySlug)).toEqual(["beta"])
    const byDescription = await api("GET", `/structures?search=FIFTH&searchField=description`)
    expect(names(byDescription)).toEqual(["epsilon"])
    const byId = await api("GET", `/structures?search=${ids.alpha}&searchField=id`)
    expect(names(byId)).toEqual(["alpha"])
    expectError(await api("GET", "/structures?search=x&searchField=bogus"), 400, "VALIDATION_ERROR")
    // `%` and `_` are literal characters, not wildcards
    expect((await api("GET", "/structures?search=%25")).body.meta.total).toBe(0)
  })
})

describe("get", () => {
  it("by id and by slug; unknown ones are 404 STRUCTURE_NOT_FOUND", async () => {
    const s = await create({ name: unique("Getter"), properties: [] })
    expect((await api("GET", `/structures/${s.id}`)).body.id).toBe(s.id)
    expect((await api("GET", `/structures/slug/${s.recordSlug}`)).body.id).toBe(s.id)
    expectError(await api("GET", "/structures/00000000-0000-4000-8000-000000000000"), 404, "STRUCTURE_NOT_FOUND")
    expectError(await api("GET", "/structures/not-a-uuid"), 404, "STRUCTURE_NOT_FOUND")
    expectError(await api("GET", "/structures/slug/no-such-slug"), 404, "STRUCTURE_NOT_FOUND")
  })
})

describe("update", () => {
  it("applies a partial body and keeps everything else", async () => {
    const s = await create({ name: unique("Partial"), description: "before", tags: ["a"], properties: [{ name: "t", type: "string" }] })
    const res = await api("PUT", `/structures/${s.id}`, { description: "after" })
    expect(res.status).toBe(200)
    expect(res.body).toMatchObject({ description: "after", tags: ["a"], name: s.name, recordSlug: s.recordSlug, version: 2 })
    expect(res.body.properties).toEqual(s.properties)
    const cleared = await api("PUT", `/structures/${s.id}`, { description: null })
    expect(cleared.body.description).toBeUndefined()
    const patched = await api("PATCH", `/structures/${s.id}`, { tags: ["b", "c"] })
    expect(patched.body.tags).toEqual(["b", "c"])
  })

  it("updates properties by id, adds id: new, and never deletes by omission", async () => {
    const s = await create({
      name: unique("Props"),
      properties: [
        { name: "a", type: "string" },
        { name: "b", type: "number" }
      ]
    })
    const [a, b] = s.properties
    const res = await api("PUT", `/structures/${s.id}`, {
      properties: [
        { ...a, maxLength: 10 },
        { id: "new", name: "c", type: "boolean" }
      ]
    })
    expect(res.status, JSON.stringify(res.body)).toBe(200)
    expect(res.body.properties.map((p: any) => p.name)).toEqual(["a", "b", "c"])
    expect(res.body.properties[0]).toMatchObject({ id: a.id, maxLength: 10 })
    expect(res.body.properties[1]).toEqual(b)
    expect(res.body.properties[2].id).toMatch(UUID)
  })

  it("checks the merged definition with the same rules (every problem, with paths)", async () => {
    const s = await create({ name: unique("Upd Rules"), properties: [{ name: "a", type: "string" }] })
    const res = await api("PUT", `/structures/${s.id}`, {
      name: "",
      properties: [
        { ...s.properties[0], minLength: 3, maxLength: 1 },
        { id: "new", name: "a", type: "number" }
      ]
    })
    expectError(res, 400, "VALIDATION_ERROR")
    expect(fieldsOf(res.body)).toEqual(expect.arrayContaining(["name", "properties[0].minLength", "properties[1].name"]))
    expect((await api("GET", `/structures/${s.id}`)).body.version).toBe(1)
  })

  it("names every type mistake of an update body in one 400", async () => {
    const s = await create({ name: unique("Upd Types"), properties: [] })
    const res = await api("PUT", `/structures/${s.id}`, { name: 5, tags: "x", enableVersioning: "yes" })
    expectError(res, 400, "VALIDATION_ERROR")
    expect(fieldsOf(res.body).sort()).toEqual(["enableVersioning", "name", "tags"])
  })

  it("refuses a recordSlug already in use (409), and renames otherwise", async () => {
    const a = await create({ name: unique("Slug A"), properties: [] })
    const b = await create({ name: unique("Slug B"), properties: [] })
    expectError(await api("PUT", `/structures/${b.id}`, { recordSlug: a.recordSlug }), 409, "DUPLICATE_KEY")
    const renamed = await api("PUT", `/structures/${b.id}`, { recordSlug: `${b.recordSlug}-renamed` })
    expect(renamed.body.recordSlug).toBe(`${b.recordSlug}-renamed`)
    expect((await api("GET", `/structures/slug/${b.recordSlug}-renamed`)).status).toBe(200)
    expectError(await api("GET", `/structures/slug/${b.recordSlug}`), 404, "STRUCTURE_NOT_FOUND")
  })

  it("refuses to change the slug of, or delete, a structure another one references (409)", async () => {
    const target = await create({ name: unique("Ref Target"), properties: [{ name: "label", type: "string" }] })
    const from = await create({
      name: unique("Ref From"),
      properties: [
        {
          name: "t",
          type: "reference",
          target: target.recordSlug,
          displayField: "label",
          relationship: "many-to-one",
          onDelete: "restrict"
        }
      ]
    })
    expectError(await api("PUT", `/structures/${target.id}`, { recordSlug: `${target.recordSlug}-x` }), 409, "CONFLICT")
    expectError(await api("DELETE", `/structures/${target.id}`), 409, "CONFLICT")
    expectError(await api("DELETE", `/structures/${target.id}?hard=true`), 409, "CONFLICT")
    // the displayField of the referencing structure cannot be renamed away
    expectError(await api("PUT", `/structures/${target.id}`, { properties: [{ ...target.properties[0], name: "title" }] }), 409, "CONFLICT")
    expect((await api("DELETE", `/structures/${from.id}`)).status).toBe(200)
    expect((await api("DELETE", `/structures/${target.id}`)).status).toBe(200)
  })

  it("404 for an unknown or soft-deleted structure", async () => {
    expectError(await api("PUT", "/structures/00000000-0000-4000-8000-000000000000", { description: "x" }), 404, "STRUCTURE_NOT_FOUND")
    const s = await create({ name: unique("Gone"), properties: [] })
    await api("DELETE", `/structures/${s.id}`)
    expectError(await api("PUT", `/structures/${s.id}`, { description: "x" }), 404, "STRUCTURE_NOT_FOUND")
  })

  it("renaming a property (same id) moves the records' data", async () => {
    const s = await create({ name: unique("Rename"), properties: [{ name: "title", type: "string", required: true }] })
    const rec = await api("POST", "/records", { structureId: s.id, data: { title: "hello" } })
    expectCreated(rec)
    const res = await api("PUT", `/structures/${s.id}`, { properties: [{ ...s.properties[0], name: "headline" }] })
    expect(res.status, JSON.stringify(res.body)).toBe(200)
    const got = await api("GET", `/records/${rec.body.id}`)
    expect(got.body.data).toEqual({ headline: "hello" })
    // still valid under strict mode: the record can be updated
    expect((await api("PATCH", `/records/${rec.body.id}`, { data: { headline: "again" } })).status).toBe(200)
  })
})

describe("DELETE /structures/{id}/properties", () => {
  it("removes the listed properties (and their record data), keeps the rest", async () => {
    const s = await create({
      name: unique("Prop Delete"),
      properties: [
        { name: "a", type: "string" },
        { name: "b", type: "string" },
        { name: "c", type: "number" }
      ]
    })
    const rec = await api("POST", "/records", { structureId: s.id, data: { a: "x", b: "y", c: 1 } })
    const res = await api("DELETE", `/structures/${s.id}/properties`, { ids: [s.properties[0].id, s.properties[2].id] })
    expect(res.status, JSON.stringify(res.body)).toBe(200)
    expect(res.body.properties).toEqual([s.properties[1]])
    expect(res.body.version).toBe(2)
    expect((await api("GET", `/records/${rec.body.id}`)).body.data).toEqual({ b: "y" })
    expect((await api("PATCH", `/records/${rec.body.id}`, { data: { b: "z" } })).status).toBe(200)
  })

  it("400 for unknown ids, an empty list, or a removal that breaks the definition", async () => {
    const s = await create({
      name: unique("Prop Delete Bad"),
      properties: [
        { name: "p", type: "number" },
        { name: "q", type: "number", expression: "p * 2" }
      ]
    })
    const unknown = await api("DELETE", `/structures/${s.id}/properties`, { ids: ["nope"] })
    expectError(unknown, 400, "VALIDATION_ERROR")
    expect(fieldsOf(unknown.body)).toEqual(["ids[0]"])
    expectError(await api("DELETE", `/structures/${s.id}/properties`, { ids: [] }), 400, "VALIDATION_ERROR")
    const broken = await api("DELETE", `/structures/${s.id}/properties`, { ids: [s.properties[0].id] })
    expectError(broken, 400, "VALIDATION_ERROR")
    expect(fieldsOf(broken.body)).toEqual(["properties[0].expression"])
  })
})

describe("delete", () => {
  it("soft delete: the structure is shown deleted, its slug is free, its records are unreachable", async () => {
    const s = await create({ name: unique("Soft"), properties: [{ name: "t", type: "string" }] })
    const rec = await api("POST", "/records", { structureId: s.id, data: { t: "x" } })
    expectCreated(rec)
    const del = await api("DELETE", `/structures/${s.id}`)
    expect(del.status).toBe(200)
    expect(del.body).toMatchObject({ id: s.id, isDeleted: true })
    expect((await api("GET", `/structures/${s.id}`)).body.isDeleted).toBe(true)
    expectError(await api("GET", `/structures/slug/${s.recordSlug}`), 404, "STRUCTURE_NOT_FOUND")
    // by record id the record is simply gone (the records routes answer RECORD_NOT_FOUND); routes that name the
    // structure answer STRUCTURE_NOT_FOUND
    expect((await api("GET", `/records/${rec.body.id}`)).status).toBe(404)
    expect((await api("PATCH", `/records/${rec.body.id}`, { data: { t: "z" } })).status).toBe(404)
    expectError(await api("POST", "/records", { structureId: s.id, data: { t: "y" } }), 404, "STRUCTURE_NOT_FOUND")
    expectError(await api("GET", `/structures/${s.recordSlug}/records`), 404, "STRUCTURE_NOT_FOUND")
    expectError(await api("GET", `/records/slug/${s.recordSlug}`), 404, "STRUCTURE_NOT_FOUND")
    expectError(await api("GET", `/records?structureId=${s.id}`), 404, "STRUCTURE_NOT_FOUND")
    const everything = await api("GET", "/records?limit=100")
    expect(everything.body.results.map((r: any) => r.id)).not.toContain(rec.body.id)
    expectError(await api("DELETE", `/structures/${s.id}`), 404, "STRUCTURE_NOT_FOUND")
    // the slug can be used again
    const again = await create({ name: "Reuse", recordSlug: s.recordSlug, properties: [] })
    expect(again.id).not.toBe(s.id)
  })

  it("hard delete removes the structure and its records", async () => {
    const s = await create({ name: unique("Hard"), properties: [{ name: "t", type: "string" }] })
    const rec = await api("POST", "/records", { structureId: s.id, data: { t: "x" } })
    expectCreated(rec)
    const del = await api("DELETE", `/structures/${s.id}?hard=true`)
    expect(del.status).toBe(200)
    expect(del.body).toMatchObject({ id: s.id, isDeleted: true })
    expectError(await api("GET", `/structures/${s.id}`), 404, "STRUCTURE_NOT_FOUND")
    expect((await api("GET", `/records/${rec.body.id}`)).status).toBe(404)
    if (server.databaseUrl !== undefined) {
      const db = postgres(server.databaseUrl, { max: 1, onnotice: () => {} })
      try {
        const [row] = await db`SELECT count(*)::int AS n FROM records WHERE structure_id = ${s.id}`
        expect(row!.n).toBe(0)
      } finally {
        await db.end()
      }
    }
  })

  it("a soft-deleted structure can still be hard-deleted", async () => {
    const s = await create({ name: unique("Soft Then Hard"), properties: [] })
    await api("DELETE", `/structures/${s.id}`)
    expect((await api("DELETE", `/structures/${s.id}?hard=true`)).status).toBe(200)
    expectError(await api("GET", `/structures/${s.id}`), 404, "STRUCTURE_NOT_FOUND")
  })

  it("changes racing a hard delete: each is made (then gone with it) or a 404, never a 500", async () => {
    for (let round = 0; round < 12; round++) {
      const s = await create({ name: unique("Racing Hard"), properties: [{ name: "t", type: "string" }] })
      const changes = Array.from({ length: 12 }, (_, i) =>
        i % 3 === 0
          ? api("DELETE", `/structures/${s.id}`)
          : i % 3 === 1
            ? api("PUT", `/structures/${s.id}/metadata`, { migrationJobId: `job-${i}` })
            : api("PATCH", `/structures/${s.id}`, { description: `d${i}` })
      )
      const gone = sleep(round % 3).then(() => api("DELETE", `/structures/${s.id}?hard=true`))
      const answers = await Promise.all(changes)
      expect((await gone).status).toBe(200)
      for (const res of answers) {
        if (res.status === 404) expectError(res, 404, "STRUCTURE_NOT_FOUND")
        else expect(res.status, JSON.stringify(res.body)).toBe(200)
      }
      expectError(await api("GET", `/structures/${s.id}`), 404, "STRUCTURE_NOT_FOUND")
    }
    expect(server.output()).not.toContain("request failed")
  })
})

describe("modes and settings", () => {
  const recordFor = (s: any, data: Record<string, unknown>) => api("POST", "/records", { structureId: s.id, data })

  it("strict refuses undeclared fields; auto-evolving keeps them; schemaless enforces nothing", async () => {
    const props = [{ name: "title", type: "string" }]
    const strict = await create({ name: unique("Strict"), properties: props })
    expectError(await recordFor(strict, { title: "a", extra: 1 }), 400, "VALIDATION_ERROR")
    const auto = await create({ name: unique("Auto"), schemaDiscoveryMode: "auto-evolving", properties: props })
    const kept = await recordFor(auto, { title: "a", extra: 1 })
    expectCreated(kept)
    expect(kept.body.data).toEqual({ title: "a", extra: 1 })
    expectError(await recordFor(auto, { title: 5 }), 400, "VALIDATION_ERROR")
    const free = await create({ name: unique("Free"), schemaDiscoveryMode: "schemaless", properties: props })
    expectCreated(await recordFor(free, { title: 5, anything: { nested: true } }))
  })

  it("the older isStrict: false means auto-evolving, true means strict, on create and on update", async () => {
    const loose = await create({ name: unique("Loose"), isStrict: false, properties: [] })
    expect(loose).toMatchObject({ schemaDiscoveryMode: "auto-evolving", isStrict: false })
    expectCreated(await recordFor(loose, { extra: 1 }))
    const tight = await create({ name: unique("Tight"), isStrict: true, properties: [] })
    expect(tight).toMatchObject({ schemaDiscoveryMode: "strict", isStrict: true })
    expectError(await recordFor(tight, { extra: 1 }), 400, "VALIDATION_ERROR")
    const switched = await api("PUT", `/structures/${loose.id}`, { isStrict: true })
    expect(switched.body).toMatchObject({ schemaDiscoveryMode: "strict", isStrict: true })
    expectError(await recordFor(loose, { extra: 1 }), 400, "VALIDATION_ERROR")
    // schemaDiscoveryMode wins when both are sent
    const both = await create({ name: unique("Both"), isStrict: true, schemaDiscoveryMode: "schemaless", properties: [] })
    expect(both.schemaDiscoveryMode).toBe("schemaless")
  })

  it("schemaDiscoveryConfig merges with its defaults and is checked", async () => {
    const s = await create({
      name: unique("Discovery"),
      schemaDiscoveryMode: "auto-evolving",
      schemaDiscoveryConfig: { batchSize: 25 },
      properties: []
    })
    expect(s.schemaDiscoveryConfig).toEqual({ batchSize: 25, maxKeysPerRecord: 100, maxNestingDepth: 3, maxStringLengthSampled: 1000 })
    const upd = await api("PUT", `/structures/${s.id}`, { schemaDiscoveryConfig: { maxNestingDepth: 5 } })
    expect(upd.body.schemaDiscoveryConfig).toEqual({
      batchSize: 25,
      maxKeysPerRecord: 100,
      maxNestingDepth: 5,
      maxStringLengthSampled: 1000
    })
    const bad = await api("POST", "/structures", { name: unique("Bad Discovery"), schemaDiscoveryConfig: { batchSize: 0 }, properties: [] })
    expectError(bad, 400, "VALIDATION_ERROR")
    expect(fieldsOf(bad.body)).toEqual(["schemaDiscoveryConfig.batchSize"])
  })

  it("defaultTtlSeconds gives records without a TTL an expiry; it must be a positive whole number", async () => {
    const s = await create({ name: unique("Ttl Default"), defaultTtlSeconds: 3600, properties: [] })
    expect(s.defaultTtlSeconds).toBe(3600)
    const rec = await recordFor(s, {})
    expectCreated(rec)
    const expires = Date.parse(rec.body.expiresAt)
    const created = Date.parse(rec.body.createdAt)
    expect(expires - created).toBeGreaterThanOrEqual(3_599_000)
    expect(expires - created).toBeLessThanOrEqual(3_601_000)
    const bad = await api("POST", "/structures", { name: unique("Bad Ttl"), defaultTtlSeconds: -5, properties: [] })
    expect(fieldsOf(bad.body)).toEqual(["defaultTtlSeconds"])
  })

  it("an inactive structure refuses new records with 409 until it is active again", async () => {
    const s = await create({ name: unique("Inactive"), status: "inactive", properties: [] })
    expectError(await recordFor(s, {}), 409, "CONFLICT")
    const on = await api("PUT", `/structures/${s.id}`, { status: "active" })
    expect(on.body.status).toBe("active")
    const rec = await recordFor(s, {})
    expectCreated(rec)
    const off = await api("PUT", `/structures/${s.id}`, { status: "inactive" })
    expect(off.body.status).toBe("inactive")
    expectError(await recordFor(s, {}), 409, "CONFLICT")
    // existing records stay readable and writable
    expect((await api("GET", `/records/${rec.body.id}`)).status).toBe(200)
    expect((await api("PATCH", `/records/${rec.body.id}`, { data: {} })).status).toBe(200)
  })

  it("defaultSearchField must name a string property", async () => {
    const res = await api("POST", "/structures", {
      name: unique("Search Field"),
      defaultSearchField: "n",
      properties: [{ name: "n", type: "number" }]
    })
    expect(fieldsOf(res.body)).toEqual(["defaultSearchField"])
    const ok = await create({ name: unique("Search Field Ok"), defaultSearchField: "t", properties: [{ name: "t", type: "string" }] })
    expect(ok.defaultSearchField).toBe("t")
  })
})

describe("metadata locks (platform admin route)", () => {
  it("recordWritesLocked refuses new records with 423; structureWritesLocked refuses structure writes with 423", async () => {
    const s = await create({ name: unique("Locks"), properties: [{ name: "t", type: "string" }] })
    const lockRecords = await api("PUT", `/structures/${s.id}/metadata`, {
      recordWritesLocked: true,
      migrationInProgress: true,
      migrationJobId: "job-1"
    })
    expect(lockRecords.status).toBe(200)
    expect(lockRecords.body.metadata).toMatchObject({
      recordWritesLocked: true,
      structureWritesLocked: false,
      migrationInProgress: true,
      migrationJobId: "job-1"
    })
    expect(lockRecords.body.version).toBe(s.version)
    expectError(await api("POST", "/records", { structureId: s.id, data: { t: "x" } }), 423, "RECORD_WRITES_LOCKED")
    // structure updates still work while only records are locked
    expect((await api("PUT", `/structures/${s.id}`, { description: "d" })).status).toBe(200)

    await api("PUT", `/structures/${s.id}/metadata`, { recordWritesLocked: false, structureWritesLocked: true })
    expectCreated(await api("POST", "/records", { structureId: s.id, data: { t: "x" } }))
    expectError(await api("PUT", `/structures/${s.id}`, { description: "e" }), 423, "STRUCTURE_WRITES_LOCKED")
    expectError(await api("PATCH", `/structures/${s.id}`, { description: "e" }), 423, "STRUCTURE_WRITES_LOCKED")
    expectError(await api("DELETE", `/structures/${s.id}/properties`, { ids: [s.properties[0].id] }), 423, "STRUCTURE_WRITES_LOCKED")
    expectError(await api("DELETE", `/structures/${s.id}`), 423, "STRUCTURE_WRITES_LOCKED")

    const unlocked = await api("PUT", `/structures/${s.id}/metadata`, {
      structureWritesLocked: false,
      migrationInProgress: false,
      migrationJobId: null,
      lastMigrationId: "job-1"
    })
    expect(unlocked.body.metadata).toEqual({
      recordWritesLocked: false,
      structureWritesLocked: false,
      migrationInProgress: false,
      lastMigrationId: "job-1"
    })
    expect((await api("PUT", `/structures/${s.id}`, { description: "e" })).status).toBe(200)
  })

  it("metadata cannot be set through create or update bodies", async () => {
    const s = await create({ name: unique("Meta Body"), properties: [] })
    const res = await api("PUT", `/structures/${s.id}`, { metadata: { structureWritesLocked: true }, description: "x" })
    expect(res.status).toBe(200)
    expect(res.body.metadata.structureWritesLocked).toBe(false)
  })
})

describe("permissions", () => {
  let viewer: string
  let owner: string
  let target: any
  beforeAll(async () => {
    for (const [username, role] of [
      ["struct-viewer", "viewer"],
      ["struct-owner", "owner"]
    ]) {
      const res = await api("POST", "/members", { username, password: "password-for-tests", role })
      expect(res.status, JSON.stringify(res.body)).toBe(201)
    }
    viewer = await server.userToken("struct-viewer", "password-for-tests")
    owner = await server.userToken("struct-owner", "password-for-tests")
    target = await create({ name: unique("Perm"), enableVersioning: true, properties: [{ name: "t", type: "string" }] })
  })

  it("a viewer reads and validates but cannot write (403 PERMISSION_DENIED)", async () => {
    expect((await api("GET", "/structures", undefined, viewer)).status).toBe(200)
    expect((await api("GET", `/structures/${target.id}`, undefined, viewer)).status).toBe(200)
    expect((await api("GET", `/structures/${target.id}/versions`, undefined, viewer)).status).toBe(200)
    expect((await api("POST", "/structures/validate", { name: "x", properties: [] }, viewer)).status).toBe(200)
    expectError(await api("POST", "/structures", { name: "x", properties: [] }, viewer), 403, "PERMISSION_DENIED")
    expectError(await api("PUT", `/structures/${target.id}`, { description: "x" }, viewer), 403, "PERMISSION_DENIED")
    expectError(await api("DELETE", `/structures/${target.id}`, undefined, viewer), 403, "PERMISSION_DENIED")
    expectError(
      await api("DELETE", `/structures/${target.id}/properties`, { ids: [target.properties[0].id] }, viewer),
      403,
      "PERMISSION_DENIED"
    )
    expectError(await api("POST", `/structures/${target.id}/versions/1/pin`, undefined, viewer), 403, "PERMISSION_DENIED")
    expectError(await api("POST", "/collections", { name: "x", fields: {} }, viewer), 403, "PERMISSION_DENIED")
  })

  it("the metadata route needs a platform administrator, not just a workspace owner", async () => {
    expect((await api("PUT", `/structures/${target.id}`, { description: "owner can" }, owner)).status).toBe(200)
    expectError(await api("PUT", `/structures/${target.id}/metadata`, { recordWritesLocked: true }, owner), 403, "PERMISSION_DENIED")
  })

  it("no token: 401", async () => {
    const res = await server.request("GET", `${server.base}/structures`)
    expect(res.status).toBe(401)
  })
})

describe("/collections alias", () => {
  it("creates from a fields map, answers fields beside properties, updates by field name", async () => {
    const created = await api("POST", "/collections", {
      name: unique("Coll"),
      fields: { title: { type: "string", required: true }, count: { type: "number" } }
    })
    expect(created.status, JSON.stringify(created.body)).toBe(200)
    const c = created.body
    expect(c.properties.map((p: any) => [p.name, p.type, p.required])).toEqual([
      ["title", "string", true],
      ["count", "number", false]
    ])
    expect(c.fields.title).toMatchObject({ type: "string", required: true, id: c.properties[0].id })

    const byId = await api("GET", `/collections/${c.id}`)
    expect(byId.body.fields.count.type).toBe("number")
    expect((await api("GET", `/collections/${c.recordSlug}`)).body.id).toBe(c.id)

    const upd = await api("PUT", `/collections/${c.id}`, {
      fields: { title: { type: "string", maxLength: 10 }, done: { type: "boolean" } }
    })
    expect(upd.status, JSON.stringify(upd.body)).toBe(200)
    expect(upd.body.properties.map((p: any) => p.name)).toEqual(["title", "count", "done"])
    expect(upd.body.properties[0]).toMatchObject({ id: c.properties[0].id, maxLength: 10 })

    const listed = await api("GET", `/collections?search=${encodeURIComponent(c.name)}`)
    expect(listed.body.meta.total).toBe(1)
    expect(Object.keys(listed.body.data[0].fields)).toEqual(["title", "count", "done"])
    // the same resource under /structures
    expect((await api("GET", `/structures/${c.id}`)).body.properties.length).toBe(3)

    const bad = await api("POST", "/collections", { name: unique("Coll Bad"), fields: { n: { type: "number", minimum: 3, maximum: 1 } } })
    expectError(bad, 400, "VALIDATION_ERROR")
    expect(fieldsOf(bad.body)).toEqual(["properties[0].minimum"])

    expect((await api("DELETE", `/collections/${c.id}`)).body.isDeleted).toBe(true)
    expectError(await api("GET", `/collections/${c.id}`), 404, "STRUCTURE_NOT_FOUND")
  })
})

describe("OpenAPI document", () => {
  it("describes the seven property types and the structure routes", async () => {
    const doc = (await server.request("GET", "/openapi.json")).body
    const schemas = doc.components.schemas
    for (const name of [
      "StringProperty",
      "NumberProperty",
      "BooleanProperty",
      "DatetimeProperty",
      "ArrayProperty",
      "ObjectProperty",
      "ReferenceProperty"
    ]) {
      expect(schemas[name], name).toBeDefined()
      expect(schemas[name].properties.type.enum).toEqual([name.replace("Property", "").toLowerCase()])
    }
    expect(schemas.StringProperty.properties).toHaveProperty("pattern")
    expect(schemas.NumberProperty.properties).toHaveProperty("multipleOf")
    expect(schemas.DatetimeProperty.properties).toHaveProperty("earliestDate")
    expect(schemas.ArrayProperty.properties).toHaveProperty("itemSchema")
    expect(schemas.ObjectProperty.properties).toHaveProperty("requiredProperties")
    expect(schemas.ReferenceProperty.properties).toHaveProperty("onDelete")
    // what a property definition requires is required in the document too
    expect(schemas.ReferenceProperty.required).toEqual(expect.arrayContaining(["name", "type", "relationship", "onDelete"]))
    expect(schemas.ArrayProperty.required).toEqual(expect.arrayContaining(["name", "type", "items"]))
    expect(schemas.StructureInput.required).toEqual(expect.arrayContaining(["name", "properties"]))
    const union = JSON.stringify(schemas.PropertyDefinition)
    for (const name of ["StringProperty", "ReferenceProperty", "ArrayProperty"]) expect(union).toContain(`#/components/schemas/${name}`)
    const base = `/workspace/{workspace}/api/v1`
    expect(JSON.stringify(doc.paths[`${base}/structures`].post.requestBody)).toContain("#/components/schemas/StructureInput")
    for (const path of [
      "/structures/{id}/versions/{version}/pin",
      "/structures/{id}/metadata",
      "/structures/{id}/properties",
      "/collections/{id}"
    ]) {
      expect(doc.paths[base + path], path).toBeDefined()
    }
    expect(doc.paths[`${base}/structures/{id}/metadata`].put["x-required-permission"]).toBe("platform:admin")
  })
})
