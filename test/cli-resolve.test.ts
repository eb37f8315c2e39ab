// `troupe health` then `troupe resolve` end to end: the CLI run as a child process (bin/troupe.mjs) against a real node
// (session from TROUPE_URL/TROUPE_WORKSPACE/TROUPE_TOKEN): health scans and lists with ids; resolve accepts a schema
// suggestion into the structure and a correction into its record (both checked over the API), rejects another, and
// a second accept is the server's 409 (exit 1).
import { describe, expect, it } from "vitest"
import { cliFixture } from "./support/TroupeCli.ts"

describe("troupe resolve", { timeout: 240_000 }, () => {
  const { fixture, troupe } = cliFixture("resolve")

  it("accepts and rejects what troupe health lists: schema suggestions and corrections", async () => {
    const call = (method: string, path: string, body?: unknown) =>
      fixture.server.request(method, `${fixture.server.base}${path}`, { token: fixture.token, ...(body === undefined ? {} : { body }) })
    const made = await call("POST", "/structures", {
      name: "Signups",
      recordSlug: "signups",
      properties: [
        { name: "email", type: "string" },
        { name: "country", type: "string" }
      ],
      schemaDiscoveryMode: "auto-evolving"
    })
    expect(made.status, made.text).toBeLessThan(300)
    const countries = ["Germany", "France", "Spain", "Italy"]
    const bulk = await call("POST", "/records/bulk", {
      structureId: "signups",
      records: Array.from({ length: 200 }, (_, i) => ({
        data: { email: `user${i}@example.com`, country: i === 9 ? "Germny" : countries[i % 4], age: 20 + (i % 50) }
      }))
    })
    expect(bulk.status, bulk.text).toBeLessThan(300)
    const misspelt = bulk.body.records[9].id as string
    expect((await call("PUT", "/collections/signups/ai-config", { enabled: true, fields: ["country"] })).status).toBe(200)

    const health = await troupe(["health", "signups", "--json"])
    expect(health.code, health.stderr).toBe(0)
    const report = JSON.parse(health.stdout) as {
      suggestions: Array<{ id: string; kind: string; property: { name: string } }>
      corrections: Array<{ id: string; recordId: string; currentValue: unknown }>
    }
    const age = report.suggestions.find((s) => s.kind === "add_property" && s.property.name === "age")
    const format = report.suggestions.find((s) => s.kind === "add_format" && s.property.name === "email")
    const correction = report.corrections.find((c) => c.recordId === misspelt)
    expect(age, health.stdout).toBeDefined()
    expect(format, health.stdout).toBeDefined()
    expect(correction, health.stdout).toBeDefined()

    const accepted = await troupe(["resolve", "suggestion", "signups", age!.id])
    expect(accepted.code, accepted.stderr).toBe(0)
    expect(accepted.stdout).toContain("accepted (structure now at version 2)")
    const structure = await call("GET", `/structures/${made.body.id}`)
    expect(structure.body.properties.map((p: { name: string }) => p.name)).toEqual(["email", "country", "age"])
    const rejected = await troupe(["resolve", "suggestion", "signups", format!.id, "--reject"])
    expect(rejected.code, rejected.stderr).toBe(0)
    expect(rejected.stdout).toContain("rejected")
    // the same again: the server's 409, exit 1
    expect((await troupe(["resolve", "suggestion", "signups", age!.id])).code).toBe(1)

    const fixed = await troupe(["resolve", "correction", correction!.id])
    expect(fixed.code, fixed.stderr).toBe(0)
    const record = await call("GET", `/records/${misspelt}`)
    expect(record.body.data.country).toBe("Germany")
    expect(record.body.version).toBe(2)
    // an unknown insight: the server's 404, exit 1
    expect((await troupe(["resolve", "insight", "00000000-0000-4000-8000-000000000000", "--dismiss"])).code).toBe(1)
  })
})
