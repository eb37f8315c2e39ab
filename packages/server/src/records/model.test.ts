import { describe, expect, it } from "vitest"
import { changelogChanges } from "./model.ts"

describe("changelogChanges", () => {
  it("answers the stored form of a version's changes in the changelog's form", () => {
    expect(changelogChanges({ n: { old: 1, new: 2 }, title: { old: null, new: "a" } })).toEqual({
      n: { field: "n", oldValue: 1, newValue: 2 },
      title: { field: "title", oldValue: null, newValue: "a" }
    })
  })

  it("passes entries stored in the changelog's form unchanged, and anything else as it is", () => {
    const before = { n: { field: "n", oldValue: 1, newValue: 2 } }
    expect(changelogChanges(before)).toEqual(before)
    expect(changelogChanges({})).toEqual({})
    expect(changelogChanges(null)).toBeNull()
  })
})
