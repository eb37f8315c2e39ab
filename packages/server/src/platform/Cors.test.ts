import { Api } from "@troupe/api/Api"
import { canonicalOrigin, CorsSettings, originProblem } from "@troupe/api/identity/Cors"
import { describe, expect, it } from "@effect/vitest"
import { Exit, Schema } from "effect"
import { corsPolicy, mergeVary, parseNodeOrigins, type WorkspaceOrigins } from "./Cors.ts"
import { routeLabels } from "./HttpEdge.ts"
import { UNMATCHED } from "./Metrics.ts"

describe("origins (CONTRACT §9)", () => {
  it("are scheme://host[:port], stored as browsers serialize them", () => {
    expect(canonicalOrigin("https://app.example.com")).toBe("https://app.example.com")
    expect(canonicalOrigin("HTTPS://App.Example.COM:443")).toBe("https://app.example.com")
    expect(canonicalOrigin("http://localhost:5173")).toBe("http://localhost:5173")
    expect(canonicalOrigin("http://127.0.0.1:080")).toBe("http://127.0.0.1")
    expect(canonicalOrigin("http://[::1]:8080")).toBe("http://[::1]:8080")
    expect(canonicalOrigin("capacitor://localhost")).toBe("capacitor://localhost")
    expect(canonicalOrigin("https://xn--bcher-kva.example")).toBe("https://xn--bcher-kva.example")
  })

  it("refuse paths, credentials, wildcards, null and what is not an origin, saying why", () => {
    const refused: Record<string, RegExp> = {
      "*": /node-wide only/,
      null: /null/,
      "https://app.example.com/": /no path/,
      "https://app.example.com/app": /no path/,
      "https://app.example.com?x=1": /no path/,
      "https://app.example.com#top": /no path/,
      "https://user:pw@app.example.com": /user name or password/,
      "https://user@app.example.com": /user name or password/,
      "app.example.com": /expected an origin/,
      "https:/app.example.com": /expected an origin/,
      "": /expected an origin/,
      "https://": /names a host/,
      "https://bücher.example": /punycode/,
      "https://-bad.example": /not a valid domain/,
      "https://a..b": /not a valid domain/,
      "https://a.example:0": /port/,
      "https://a.example:65536": /port/,
      "https://a.example:http": /port/,
      "https://a.example\\@evil.example": /no path/,
      [`https://${"a".repeat(300)}.example`]: /at most 300/
    }
    for (const [text, why] of Object.entries(refused)) {
      expect(originProblem(text), text).toMatch(why)
      expect(canonicalOrigin(text), text).toBeUndefined()
    }
  })

  it("the settings body: at most 100, each checked, the failure naming the entry", () => {
    const decode = Schema.decodeUnknownExit(CorsSettings)
    expect(Exit.isSuccess(decode({ allowedOrigins: ["https://a.example"] }))).toBe(true)
    expect(Exit.isSuccess(decode({ allowedOrigins: Array.from({ length: 101 }, (_, i) => `https://a${i}.example`) }))).toBe(false)
    expect(Exit.isSuccess(decode({ allowedOrigins: ["https://a.example/x"] }))).toBe(false)
    expect(Exit.isSuccess(decode({ allowedOrigins: "https://a.example" }))).toBe(false)
  })
})

describe("TROUPE_CORS_ORIGINS", () => {
  it("comma-separated origins, `*`, or blank", () => {
    expect(parseNodeOrigins("")).toEqual({ any: false, origins: new Set() })
    expect(parseNodeOrigins(" https://A.example , http://localhost:5173,")).toEqual({
      any: false,
      origins: new Set(["https://a.example", "http://localhost:5173"])
    })
    expect(parseNodeOrigins("*")).toEqual({ any: true, origins: new Set() })
    expect(parseNodeOrigins("https://a.example/path")).toMatch(/not an origin/)
    expect(parseNodeOrigins("null")).toMatch(/not an origin/)
  })
})

const workspaces = (lists: Record<string, ReadonlyArray<string>>): WorkspaceOrigins => ({
  allows: (w, o) => lists[w]?.includes(o) === true,
  anyAllows: (o) => Object.values(lists).some((l) => l.includes(o))
})

describe("the policy", () => {
  const routeOf = routeLabels(
    Api,
    [["GET", "/realtime/workspace/:workspace/api/v1/events"]],
    ["/workspace/:workspace/api/v1/http-triggers/*"]
  )
  const policy = (any: boolean) =>
    corsPolicy({
      node: { any, origins: new Set(["https://node.example"]) },
      workspaces: workspaces({ default: ["https://app.example"], other: ["https://other.example"] }),
      routeOf,
      anyHeaderRoutes: ["/workspace/:workspace/api/v1/http-triggers/*"]
    })

  it("node-wide origins everywhere, a workspace's on its own routes (any service base), and on the token endpoint", () => {
    const p = policy(false)
    expect(p.allowOrigin("https://node.example", "/health")).toBe("https://node.example")
    expect(p.allowOrigin("https://app.example", "/workspace/default/api/v1/records/x")).toBe("https://app.example")
    expect(p.allowOrigin("https://app.example", "/storage/workspace/default/api/v1/files")).toBe("https://app.example")
    expect(p.allowOrigin("https://app.example", "/realtime/workspace/default/api/v1/events?x=1")).toBe("https://app.example")
    expect(p.allowOrigin("https://app.example", "/workspace/other/api/v1/records/x")).toBeUndefined()
    expect(p.allowOrigin("https://app.example", "/health")).toBeUndefined()
    expect(p.allowOrigin("https://app.example", "/oidc/token")).toBe("https://app.example")
    expect(p.allowOrigin("https://nobody.example", "/oidc/token")).toBeUndefined()
    expect(p.allowOrigin("https://APP.example", "/workspace/default/api/v1/records/x")).toBeUndefined()
  })

  it("`*` answers `*` to any well-formed origin, the origin itself when a list names it, nothing to a malformed one", () => {
    const p = policy(true)
    expect(p.allowOrigin("https://anyone.example", "/health")).toBe("*")
    expect(p.allowOrigin("https://app.example", "/workspace/default/api/v1/records/x")).toBe("https://app.example")
    for (const bad of ["null", "https://anyone.example/", "https://u:p@anyone.example", "HTTPS://ANYONE.EXAMPLE", "x", "a, b"]) {
      expect(p.allowOrigin(bad, "/health"), bad).toBeUndefined()
    }
  })

  it("a preflight: the route's methods and headers, or no grant", () => {
    const p = policy(false)
    const url = "/workspace/default/api/v1/records/x"
    const granted = p.preflight("https://app.example", url, "PATCH", "Content-Type, authorization,If-Match")
    expect(granted).toMatchObject({ granted: true, route: "/workspace/:workspace/api/v1/records/:id" })
    if (!granted.granted) return
    expect(granted.headers["access-control-allow-origin"]).toBe("https://app.example")
    expect(granted.headers["access-control-allow-methods"]).toBe("GET, HEAD, PUT, PATCH, DELETE")
    expect(granted.headers["access-control-max-age"]).toBe("600")
    expect(granted.headers.vary).toMatch(/^Origin\b/)
    for (const h of ["authorization", "content-type", "idempotency-key", "if-match", "last-event-id"]) {
      expect(granted.headers["access-control-allow-headers"]).toContain(h)
    }
    expect(p.preflight("https://app.example", "/workspace/default/api/v1/query", "DELETE", undefined)).toMatchObject({
      granted: false,
      status: 403
    })
    expect(p.preflight("https://app.example", url, "patch", undefined)).toMatchObject({ granted: false, status: 403 })
    expect(p.preflight("https://app.example", url, "GET", "x-custom")).toMatchObject({ granted: false, status: 403 })
    expect(p.preflight("https://evil.example", url, "GET", undefined)).toMatchObject({ granted: false, status: 403 })
    expect(p.preflight("https://app.example", "/workspace/default/api/v1/nothing", "GET", undefined)).toMatchObject({
      granted: false,
      status: 404,
      route: UNMATCHED
    })
  })

  it("an HTTP trigger takes any method and any header", () => {
    const answer = policy(false).preflight("https://app.example", "/workspace/default/api/v1/http-triggers/hook", "PUT", "X-Signature")
    expect(answer.granted).toBe(true)
    if (answer.granted) expect(answer.headers["access-control-allow-headers"]).toMatch(/, x-signature$/)
    const bad = policy(false).preflight("https://app.example", "/workspace/default/api/v1/http-triggers/hook", "PUT", "bad header")
    expect(bad.granted).toBe(false)
  })
})

describe("Vary", () => {
  it("adds up, each value once", () => {
    expect(mergeVary("Origin", "accept-encoding")).toBe("Origin, accept-encoding")
    expect(mergeVary("Origin", "origin, Accept-Encoding")).toBe("Origin, Accept-Encoding")
  })
})
