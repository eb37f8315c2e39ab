import { describe, expect, it } from "vitest"
import { inDependencyOrder, plan, toFile } from "./StructureDiff.ts"
import { structureSchema, structuresToTypeScript, typeName } from "./StructureTypes.ts"

const remote = {
  id: "s1",
  workspaceSlug: "default",
  recordSlug: "books",
  name: "Books",
  description: null,
  status: "active",
  schemaDiscoveryMode: "strict",
  isStrict: false,
  tags: [],
  version: 3,
  createdAt: "2026-01-01T00:00:00Z",
  metadata: { recordWritesLocked: false },
  properties: [
    { id: "p1", name: "title", type: "string", required: true, nullable: false, isUnique: false },
    { id: "p2", name: "pages", type: "number", required: false, nullable: false, minimum: 1 }
  ]
}

describe("StructureDiff", () => {
  it("a pulled file holds the definition without server-managed fields, and pushes as unchanged", () => {
    const file = toFile(remote)
    expect(Object.keys(file)).not.toContain("id")
    expect(Object.keys(file)).not.toContain("version")
    expect(Object.keys(file)).not.toContain("metadata")
    expect(file).not.toHaveProperty("description")
    expect(plan("books.json", file, remote).action).toBe("unchanged")
  })

  it("omitted keys keep their value; omitted property keys are changes only when not the default", () => {
    const local = { name: "Books", recordSlug: "books", properties: [{ name: "title", type: "string", required: true }] }
    const p = plan("books.json", local, remote)
    expect(p.action).toBe("unchanged")
    expect(p.changes).toEqual(["= property pages is on the server only: kept (push never deletes)"])
    // the PUT body carries the server's property id, so the property is replaced in place, not added
    expect((p.body.properties as Array<{ id: string }>)[0]!.id).toBe("p1")
  })

  it("lists added properties, changed constraints and top-level changes", () => {
    const local = {
      ...toFile(remote),
      description: "All books",
      properties: [
        { id: "p1", name: "title", type: "string", required: true },
        { id: "p2", name: "pageCount", type: "number", minimum: 2 },
        { name: "isbn", type: "string" }
      ]
    }
    const p = plan("books.json", local, remote)
    expect(p.action).toBe("update")
    expect(p.id).toBe("s1")
    expect(p.changes).toEqual([
      '~ description: (none) -> "All books"',
      "~ property pages -> pageCount: renamed",
      "~ property pages -> pageCount.minimum: 1 -> 2",
      "+ property isbn (string)"
    ])
  })

  it("creates what the server lacks, referenced structures first", () => {
    const reviews = plan(
      "reviews.json",
      {
        name: "Reviews",
        recordSlug: "reviews",
        properties: [{ name: "book", type: "reference", target: "books", relationship: "many-to-one" }]
      },
      undefined
    )
    const books = plan("books.json", { name: "Books", recordSlug: "books", properties: [] }, undefined)
    expect(reviews.action).toBe("create")
    expect(inDependencyOrder([reviews, books]).map((p) => p.recordSlug)).toEqual(["books", "reviews"])
  })
})

describe("StructureTypes", () => {
  const structure = {
    name: "Blog posts",
    recordSlug: "blog-posts",
    schemaDiscoveryMode: "auto-evolving",
    version: 2,
    properties: [
      { name: "title", type: "string", required: true, maxLength: 80 },
      { name: "status", type: "string", enum: ["draft", "live"] },
      { name: "score", type: "number", integer: true, minimum: 0, exclusiveMinimum: true, nullable: true },
      { name: "published-at", type: "datetime" },
      { name: "tags", type: "array", items: { type: "string" } },
      {
        name: "authors",
        type: "array",
        items: { type: "object" },
        itemSchema: [{ name: "name", type: "string", required: true }]
      },
      { name: "meta", type: "object", isStrict: true, properties: [{ name: "views", type: "number" }] },
      { name: "related", type: "reference", target: "blog-posts", relationship: "many-to-many" }
    ]
  }

  it("maps a structure to JSON Schema", () => {
    const schema = structureSchema(structure) as any
    expect(schema.required).toEqual(["title"])
    expect(schema.additionalProperties).toBe(true)
    expect(schema.properties.title).toEqual({ type: "string", maxLength: 80 })
    expect(schema.properties.score).toEqual({ anyOf: [{ type: "integer", exclusiveMinimum: 0 }, { type: "null" }] })
    expect(schema.properties["published-at"]).toEqual({ type: "string", format: "date-time" })
    expect(schema.properties.authors.items.required).toEqual(["name"])
    expect(schema.properties.related).toEqual({
      type: "array",
      items: { type: "string", format: "uuid" },
      "x-troupe-reference": "blog-posts"
    })
  })

  it("derives TypeScript from the schema", () => {
    expect(typeName("blog-posts")).toBe("BlogPosts")
    expect(typeName("2024-sales")).toBe("S2024Sales")
    const ts = structuresToTypeScript([structure], { url: "http://x", workspace: "w" })
    expect(ts).toContain("export interface BlogPosts {")
    expect(ts).toContain("  title: string\n")
    expect(ts).toContain('  status?: "draft" | "live"\n')
    expect(ts).toContain("  score?: number | null\n")
    expect(ts).toContain('  "published-at"?: string\n')
    expect(ts).toContain("  authors?: Array<{\n    name: string\n  }>\n")
    expect(ts).toContain("  meta?: {\n    views?: number\n  }\n")
    expect(ts).toContain("  [key: string]: unknown\n}")
    expect(ts).toContain('  "blog-posts": BlogPosts\n')
  })
})
