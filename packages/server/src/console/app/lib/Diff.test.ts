import { describe, expect, it } from "@effect/vitest"
import { jsonDiff, lineDiff } from "./Diff.ts"

describe("jsonDiff", () => {
  it("names each changed, added and removed leaf by its path", () => {
    const changes = jsonDiff({ a: 1, b: { c: 2, d: 3 }, list: [1, 2] }, { a: 1, b: { c: 5 }, e: true, list: [1, 2, 3] })
    expect(changes).toStrictEqual([
      { path: "b.c", kind: "changed", before: 2, after: 5 },
      { path: "b.d", kind: "removed", before: 3 },
      { path: "list[2]", kind: "added", after: 3 },
      { path: "e", kind: "added", after: true }
    ])
  })

  it("matches properties by id, so an insertion is one addition, labelled by name", () => {
    const before = {
      properties: [
        { id: "1", name: "title", type: "string" },
        { id: "2", name: "pages", type: "number" }
      ]
    }
    const after = {
      properties: [
        { id: "3", name: "isbn", type: "string" },
        { id: "1", name: "title", type: "string" },
        {
          id: "2",
          name: "pages",
          type: "number",
          minimum: 1
        }
      ]
    }
    expect(jsonDiff(before, after)).toStrictEqual([
      { path: "properties[pages].minimum", kind: "added", after: 1 },
      { path: "properties[isbn]", kind: "added", after: { id: "3", name: "isbn", type: "string" } }
    ])
  })

  it("skips ignored keys at any depth", () => {
    expect(jsonDiff({ v: 1, x: { updatedAt: "a" } }, { v: 2, x: { updatedAt: "b" } }, ["v", "updatedAt"])).toStrictEqual([])
  })
})

describe("lineDiff", () => {
  it("keeps common lines and marks the rest", () => {
    expect(lineDiff("a\nb\nc", "a\nx\nc\nd")).toStrictEqual([
      { kind: "same", text: "a" },
      { kind: "removed", text: "b" },
      { kind: "added", text: "x" },
      { kind: "same", text: "c" },
      { kind: "added", text: "d" }
    ])
  })

  it("answers equal texts as all same", () => {
    expect(lineDiff("x\ny", "x\ny").every((l) => l.kind === "same")).toBe(true)
  })
})
