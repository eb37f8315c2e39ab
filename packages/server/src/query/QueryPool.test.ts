import { describe, expect, it } from "@effect/vitest"
import { inputFailure } from "./QueryPool.ts"

describe("inputFailure: database failures caused by a caller's values", () => {
  it("maps data exceptions (class 22) and program limits (class 54) to messages of ours naming the parameter", () => {
    expect(inputFailure("22008", "filter")).toBe("A date or time in the filter is not valid")
    expect(inputFailure("22007", "query")).toBe("A date or time in the query is not valid")
    expect(inputFailure("22003", "filter")).toBe("A number in the filter is out of range")
    expect(inputFailure("22P02", "filters")).toBe("A value in the filters does not have the type its field needs")
    expect(inputFailure("22P05", "query")).toContain("cannot be stored")
    expect(inputFailure("2201B", "query")).toContain("regular expression")
    expect(inputFailure("22023", "filter")).toBe("A value in the filter is not valid for its field")
    expect(inputFailure("54001", "query")).toContain("too large or too deeply nested")
  })

  it("leaves every other failure (the server's own) to be a defect", () => {
    for (const state of [undefined, "42883", "42P01", "23505", "40001", "57014", "08006", "XX000"]) {
      expect(inputFailure(state, "filter")).toBeUndefined()
    }
  })
})
