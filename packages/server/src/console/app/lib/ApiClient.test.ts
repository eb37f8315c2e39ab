import { describe, expect, it } from "@effect/vitest"
import { ApiError, errorOf, makeApiClient, queryString } from "./ApiClient.ts"

describe("errorOf", () => {
  it("keeps the contract body's message, code and each detail", () => {
    const error = errorOf(
      400,
      {
        message: "Invalid request body",
        code: "VALIDATION_ERROR",
        details: [{ field: "data.price", property: "data.price", message: "must be a number" }]
      },
      "fallback"
    )
    expect(error.message).toBe("Invalid request body")
    expect(error.code).toBe("VALIDATION_ERROR")
    expect(error.details).toStrictEqual([{ field: "data.price", message: "must be a number" }])
  })

  it("reads OAuth errors and bodies that are not the contract's", () => {
    expect(errorOf(401, { error: "invalid_client", error_description: "Bad credentials" }, "x").message).toBe("Bad credentials")
    expect(errorOf(502, "Bad gateway", "x").message).toBe("Bad gateway")
    expect(errorOf(500, undefined, "fallback").code).toBe("HTTP_500")
  })
})

describe("makeApiClient", () => {
  it("sends the token in the Authorization header only, and workspace paths under the base", async () => {
    const seen: Array<{ url: string; init: RequestInit }> = []
    const fake = (async (url: string, init: RequestInit) => {
      seen.push({ url, init })
      return new Response(JSON.stringify({ ok: true }), { status: 200 })
    }) as unknown as typeof fetch
    const api = makeApiClient({ origin: "http://h", workspace: "acme", token: "t0k", fetch: fake })
    await api.get("/records", { structureId: "books", filter: undefined, limit: 20 })
    await api.call("GET", "/workspace/api/v1/workspaces")
    expect(seen[0]!.url).toBe("http://h/workspace/acme/api/v1/records?structureId=books&limit=20")
    expect((seen[0]!.init.headers as Record<string, string>).authorization).toBe("Bearer t0k")
    expect(seen[1]!.url).toBe("http://h/workspace/api/v1/workspaces")
    expect(seen.some((s) => s.url.includes("t0k"))).toBe(false)
  })

  it("fails with the ApiError of the answer and tells the session about a 401", async () => {
    let unauthorized = 0
    const fake = (async () =>
      new Response(JSON.stringify({ message: "Token expired", code: "UNAUTHORIZED" }), { status: 401 })) as unknown as typeof fetch
    const api = makeApiClient({ origin: "", workspace: "w", token: "t", fetch: fake, onUnauthorized: () => unauthorized++ })
    const error = await api.get("/me").catch((e: unknown) => e)
    expect(error).toBeInstanceOf(ApiError)
    expect((error as ApiError).status).toBe(401)
    expect(unauthorized).toBe(1)
  })
})

describe("queryString", () => {
  it("leaves out empty values", () => {
    expect(queryString({ a: "1", b: "", c: undefined, d: null, e: false })).toBe("?a=1&e=false")
    expect(queryString({})).toBe("")
  })
})
