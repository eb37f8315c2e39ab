import { Option, Redacted } from "effect"
import { describe, expect, it } from "vitest"
import { describeDatabase, startLine } from "./StartLine.ts"

describe("the start line", () => {
  it("names the database without its credentials", () => {
    expect(describeDatabase(Option.some(Redacted.make("postgres://u:secret@db.example:5432/troupe?ssl=1")), "x")).toBe(
      "PostgreSQL at db.example:5432/troupe"
    )
    expect(describeDatabase(Option.none(), "./.troupe")).toBe("embedded PGlite in ./.troupe")
    expect(describeDatabase(Option.none(), "memory://")).toBe("embedded PGlite in memory")
  })

  it("says where the node, its console and its docs are", () => {
    expect(startLine("http://127.0.0.1:8080", "embedded PGlite in ./.troupe")).toBe(
      "Troupe listening on http://127.0.0.1:8080 (console http://127.0.0.1:8080/console, API reference http://127.0.0.1:8080/docs, database: embedded PGlite in ./.troupe)"
    )
  })
})
