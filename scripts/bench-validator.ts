// Record validation throughput: our compiled validator against ajv (compiled once) on the same 30-property record,
// in the same process. Run: node --experimental-strip-types scripts/bench-validator.ts [seconds per round]
import type { PropertyDefinition } from "@troupe/api/structures/Structure"
import { Ajv } from "ajv"
import { isDateTime, isEmail, isUuid } from "../packages/server/src/structures/Formats.ts"
import { checkStructure } from "../packages/server/src/structures/rules.ts"
import { compileValidator } from "../packages/server/src/structures/Validator.ts"

const properties: Array<PropertyDefinition> = [
  { name: "title", type: "string", required: true, minLength: 1, maxLength: 200 },
  { name: "slug", type: "string", required: true, pattern: "^[a-z0-9-]{3,64}$" },
  { name: "email", type: "string", required: true, format: "email" },
  { name: "ownerId", type: "string", format: "uuid" },
  { name: "summary", type: "string", maxLength: 500 },
  { name: "body", type: "string", maxLength: 20000 },
  { name: "status", type: "string", enum: ["draft", "published", "archived"] },
  { name: "locale", type: "string", enum: ["en", "fr", "de", "es"] },
  { name: "color", type: "string", minLength: 4, maxLength: 7 },
  { name: "code", type: "string", minLength: 2, maxLength: 12 },
  { name: "price", type: "number", minimum: 0, maximum: 1_000_000, multipleOf: 0.01 },
  { name: "quantity", type: "number", integer: true, minimum: 0 },
  { name: "rating", type: "number", minimum: 0, maximum: 5 },
  { name: "weight", type: "number", minimum: 0, exclusiveMinimum: true },
  { name: "rank", type: "number", integer: true },
  { name: "discount", type: "number", minimum: 0, maximum: 100 },
  { name: "views", type: "number", integer: true, minimum: 0 },
  { name: "score", type: "number" },
  { name: "active", type: "boolean", required: true },
  { name: "featured", type: "boolean" },
  { name: "archived", type: "boolean" },
  { name: "verified", type: "boolean" },
  { name: "publishedAt", type: "datetime" },
  { name: "expiresAt", type: "datetime" },
  { name: "createdOn", type: "datetime" },
  { name: "tags", type: "array", items: { type: "string", maxLength: 32 }, maxItems: 20, uniqueItems: true },
  {
    name: "variants",
    type: "array",
    items: { type: "object" },
    itemSchema: [
      { name: "sku", type: "string", required: true, maxLength: 32 },
      { name: "stock", type: "number", integer: true, minimum: 0 }
    ]
  },
  {
    name: "address",
    type: "object",
    isStrict: true,
    properties: [
      { name: "street", type: "string", maxLength: 200 },
      { name: "city", type: "string", required: true, maxLength: 100 },
      { name: "zip", type: "string", maxLength: 10 }
    ]
  },
  {
    name: "dimensions",
    type: "object",
    properties: [
      { name: "w", type: "number" },
      { name: "h", type: "number" }
    ]
  },
  { name: "category", type: "reference", target: "categories", relationship: "many-to-one", onDelete: "restrict" }
]

const record = {
  title: "A fine product",
  slug: "a-fine-product",
  email: "owner@example.com",
  ownerId: "3f2b8c1e-9a4d-4e2f-8b1a-2c3d4e5f6a7b",
  summary: "Short summary of the product",
  body: "Long body text ".repeat(20),
  status: "published",
  locale: "en",
  color: "#ff8800",
  code: "AFP-01",
  price: 19.99,
  quantity: 12,
  rating: 4.5,
  weight: 1.25,
  rank: 3,
  discount: 10,
  views: 1024,
  score: -2.5,
  active: true,
  featured: false,
  archived: false,
  verified: true,
  publishedAt: "2024-05-01T10:00:00Z",
  expiresAt: "2025-05-01T10:00:00.000Z",
  createdOn: "2024-04-30T08:30:00+02:00",
  tags: ["new", "sale", "summer"],
  variants: [
    { sku: "AFP-01-S", stock: 3 },
    { sku: "AFP-01-M", stock: 5 }
  ],
  address: { street: "1 Main St", city: "Springfield", zip: "12345" },
  dimensions: { w: 10, h: 20 },
  category: "c6f1d6b2-2b7a-4c1e-9f0a-1d2e3f4a5b6c"
}

const problems = checkStructure(
  { name: "Products", properties },
  {
    findStructureBySlug: (slug) => (slug === "categories" ? { recordSlug: "categories", properties: [] } : undefined)
  }
)
if (problems.length > 0) throw new Error(`bench structure is invalid: ${JSON.stringify(problems)}`)

const ours = compileValidator({ id: "bench", version: 1, properties, schemaDiscoveryMode: "strict" })

// The equivalent JSON Schema. ajv has no datetime bounds without ajv-formats; none are used above.
const str = (extra: object = {}) => ({ type: "string", ...extra })
const jsonSchema = {
  type: "object",
  additionalProperties: false,
  required: ["title", "slug", "email", "active"],
  properties: {
    title: str({ minLength: 1, maxLength: 200 }),
    slug: str({ pattern: "^[a-z0-9-]{3,64}$" }),
    email: str({ format: "email" }),
    ownerId: str({ format: "uuid" }),
    summary: str({ maxLength: 500 }),
    body: str({ maxLength: 20000 }),
    status: { enum: ["draft", "published", "archived"] },
    locale: { enum: ["en", "fr", "de", "es"] },
    color: str({ minLength: 4, maxLength: 7 }),
    code: str({ minLength: 2, maxLength: 12 }),
    price: { type: "number", minimum: 0, maximum: 1_000_000, multipleOf: 0.01 },
    quantity: { type: "integer", minimum: 0 },
    rating: { type: "number", minimum: 0, maximum: 5 },
    weight: { type: "number", exclusiveMinimum: 0 },
    rank: { type: "integer" },
    discount: { type: "number", minimum: 0, maximum: 100 },
    views: { type: "integer", minimum: 0 },
    score: { type: "number" },
    active: { type: "boolean" },
    featured: { type: "boolean" },
    archived: { type: "boolean" },
    verified: { type: "boolean" },
    publishedAt: str({ format: "date-time" }),
    expiresAt: str({ format: "date-time" }),
    createdOn: str({ format: "date-time" }),
    tags: { type: "array", items: str({ maxLength: 32 }), maxItems: 20, uniqueItems: true },
    variants: {
      type: "array",
      items: {
        type: "object",
        additionalProperties: false,
        required: ["sku"],
        properties: { sku: str({ maxLength: 32 }), stock: { type: "integer", minimum: 0 } }
      }
    },
    address: {
      type: "object",
      additionalProperties: false,
      required: ["city"],
      properties: { street: str({ maxLength: 200 }), city: str({ maxLength: 100 }), zip: str({ maxLength: 10 }) }
    },
    dimensions: { type: "object", properties: { w: { type: "number" }, h: { type: "number" } } },
    category: str({ minLength: 1 })
  }
}

const ajv = new Ajv({ allErrors: true, multipleOfPrecision: 9 })
ajv.addFormat("email", isEmail)
ajv.addFormat("uuid", isUuid)
ajv.addFormat("date-time", isDateTime)
const ajvValidate = ajv.compile(jsonSchema)

if (!ajvValidate(record)) throw new Error(`ajv rejects the bench record: ${JSON.stringify(ajvValidate.errors)}`)
const check = ours.validate(record, { mode: "replace" })
if (!check.ok) throw new Error(`our validator rejects the bench record: ${JSON.stringify(check.errors)}`)
const bad = { ...record, price: -1, extra: true }
if (ajvValidate(bad) || ours.validate(bad, { mode: "replace" }).ok) throw new Error("a bad record passed")

const seconds = Number(process.argv[2] ?? "2")

const measure = (label: string, run: () => boolean): number => {
  for (let i = 0; i < 20_000; i++) run() // warm up the JIT
  let n = 0
  const start = performance.now()
  const end = start + seconds * 1000
  while (performance.now() < end) {
    for (let i = 0; i < 1000; i++) run()
    n += 1000
  }
  const rate = n / ((performance.now() - start) / 1000)
  console.log(`${label.padEnd(24)} ${Math.round(rate).toLocaleString("en-US").padStart(12)} validations/s`)
  return rate
}

const createOptions = { mode: "create" } as const
const replaceOptions = { mode: "replace" } as const
const rounds = 3
const results = { ours: 0, oursCreate: 0, ajv: 0 }
for (let round = 0; round < rounds; round++) {
  results.ajv = Math.max(
    results.ajv,
    measure("ajv", () => ajvValidate(record))
  )
  results.ours = Math.max(
    results.ours,
    measure("troupe (replace)", () => ours.validate(record, replaceOptions).ok)
  )
  results.oursCreate = Math.max(
    results.oursCreate,
    measure("troupe (create)", () => ours.validate(record, createOptions).ok)
  )
}
console.log(
  `best of ${rounds}: troupe/ajv = ${(results.ours / results.ajv).toFixed(2)} (replace), ` +
    `${(results.oursCreate / results.ajv).toFixed(2)} (create)`
)
