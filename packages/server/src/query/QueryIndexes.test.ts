import { describe, expect, it } from "vitest"
import { desiredIndexes, indexExpression } from "./QueryIndexes.ts"

const id = "0f8fad5b-d9cb-469f-a165-70867728950e"

describe("index policy", () => {
  it("asks for one partial index per indexed number, string, datetime or single reference, named from ids", () => {
    const specs = desiredIndexes(id, [
      { name: "price", type: "number", indexed: true },
      { name: "title", type: "string", indexed: true },
      { name: "owner", type: "reference", relationship: "many-to-one", indexed: true },
      { name: "when", type: "datetime", indexed: true },
      { name: "plain", type: "number" }
    ])
    expect(specs).toHaveLength(4)
    for (const s of specs) expect(s.name).toMatch(/^rq_0f8fad5bd9cb469fa16570867728950e_[0-9a-f]{12}$/)
    expect(new Set(specs.map((s) => s.name)).size).toBe(4)
    expect(specs[3]!.ddl(false)).toContain("(troupe_datetime((data ->> 'when'::text)), id)")
    // each with extended statistics on its expression (the planner ignores those of partial indexes)
    for (const s of specs) expect(s.statistics.name).toBe(`${s.name}_s`)
    expect(specs[0]!.statistics.ddl).toBe(
      `CREATE STATISTICS IF NOT EXISTS ${specs[0]!.name}_s ON (${indexExpression("numeric", "price")}) FROM records`
    )
    const [price, title] = specs
    expect(price!.ddl(true)).toBe(
      `CREATE INDEX CONCURRENTLY IF NOT EXISTS ${price!.name} ON records (${indexExpression("numeric", "price")}, id) ` +
        `WHERE structure_id = '${id}'::uuid AND deleted_at IS NULL`
    )
    expect(title!.ddl(false)).toContain("CREATE INDEX IF NOT EXISTS")
    expect(title!.ddl(false)).toContain("((data ->> 'title'::text))")
  })

  it("skips what an index cannot serve or must not see", () => {
    expect(
      desiredIndexes(id, [
        { name: "tags", type: "array", indexed: true },
        { name: "links", type: "reference", relationship: "many-to-many", indexed: true },
        { name: "pin", type: "string", isSecret: true, indexed: true },
        { name: "total", type: "number", expression: "a + b", computedMode: "virtual", indexed: true },
        { name: "x'); DROP TABLE records;--", type: "string", indexed: true },
        { name: "flag", type: "number", indexed: "yes" }
      ])
    ).toEqual([])
    expect(desiredIndexes("not-a-uuid'; DROP TABLE records;--", [{ name: "a", type: "number", indexed: true }])).toEqual([])
  })

  it("names change with the property's kind, so a type change rebuilds the index", () => {
    const asNumber = desiredIndexes(id, [{ name: "code", type: "number", indexed: true }])
    const asString = desiredIndexes(id, [{ name: "code", type: "string", indexed: true }])
    expect(asNumber[0]!.name).not.toBe(asString[0]!.name)
  })
})
