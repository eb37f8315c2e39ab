// `troupe cors get|set` end to end: the CLI run as a child process (bin/troupe.mjs) against a real node, with the
// session from TROUPE_URL/TROUPE_WORKSPACE/TROUPE_TOKEN; what it sets is checked over the API.
import { describe, expect, it } from "vitest"
import { cliFixture } from "./support/TroupeCli.ts"

describe("troupe cors", { timeout: 120_000 }, () => {
  const { fixture, troupe } = cliFixture("cors")
  const stored = async () => {
    const res = await fixture.server.request("GET", `${fixture.server.base}/settings/cors`, { token: fixture.token })
    expect(res.status).toBe(200)
    return (res.body as { allowedOrigins: Array<string> }).allowedOrigins
  }

  it("sets, reads and clears the workspace's origins; a bad origin is the server's 400 and changes nothing", async () => {
    const empty = await troupe(["cors", "get"])
    expect(empty.code, empty.stderr).toBe(0)
    expect(empty.stdout).toContain("no origin allowed")

    const set = await troupe(["cors", "set", "https://App.Example.com:443", "http://localhost:5173", "--json"])
    expect(set.code, set.stderr).toBe(0)
    expect(JSON.parse(set.stdout)).toEqual({ allowedOrigins: ["https://app.example.com", "http://localhost:5173"] })
    expect(await stored()).toEqual(["https://app.example.com", "http://localhost:5173"])

    const got = await troupe(["cors", "get"])
    expect(got.code).toBe(0)
    expect(got.stdout.trim().split("\n")).toEqual(["https://app.example.com", "http://localhost:5173"])

    const bad = await troupe(["cors", "set", "https://ok.example.com", "https://app.example.com/path"])
    expect(bad.code).toBe(1)
    expect(bad.stderr).toContain("allowedOrigins[1]")
    expect(await stored()).toEqual(["https://app.example.com", "http://localhost:5173"])

    expect((await troupe(["cors", "set"])).code).toBe(2)
    expect((await troupe(["cors", "set", "--clear", "https://a.example.com"])).code).toBe(2)

    const cleared = await troupe(["cors", "set", "--clear", "--json"])
    expect(cleared.code, cleared.stderr).toBe(0)
    expect(JSON.parse(cleared.stdout)).toEqual({ allowedOrigins: [] })
    expect(await stored()).toEqual([])
  })
})
