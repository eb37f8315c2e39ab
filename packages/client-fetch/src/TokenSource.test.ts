import { describe, expect, it } from "vitest"
import { clientCredentials } from "./TokenSource.ts"

const endpoint =
  (state: { calls: number; bodies: Array<string>; status?: number }) => async (_input: string | URL | Request, init?: RequestInit) => {
    state.calls++
    state.bodies.push(String(init?.body))
    const body =
      state.status === undefined
        ? { access_token: `token-${state.calls}`, token_type: "Bearer", expires_in: 25200 }
        : { error: "invalid_client", error_description: "Invalid client credentials" }
    return new Response(JSON.stringify(body), { status: state.status ?? 200 })
  }

describe("clientCredentials (client-fetch)", () => {
  it("caches the token until 60 s before expiry and shares one request between concurrent callers", async () => {
    const state = { calls: 0, bodies: [] as Array<string> }
    let now = 1_000_000
    const tokens = clientCredentials({
      baseUrl: "http://troupe.test/",
      clientId: "ci_1",
      clientSecret: "sk_1",
      now: () => now,
      fetch: endpoint(state)
    })
    expect(await Promise.all([tokens.getToken(), tokens.getToken(), tokens.getToken()])).toEqual(["token-1", "token-1", "token-1"])
    expect(state.bodies[0]).toContain("grant_type=client_credentials")
    expect(state.bodies[0]).toContain("client_id=ci_1")
    now += (25200 - 61) * 1000
    expect(await tokens.getToken()).toBe("token-1")
    now += 2000
    expect(await tokens.getToken()).toBe("token-2")
    tokens.invalidate()
    expect(await tokens.getToken()).toBe("token-3")
    expect(state.calls).toBe(3)
  })

  it("a refused request is a TokenError carrying the RFC 6749 error", async () => {
    const tokens = clientCredentials({
      baseUrl: "http://troupe.test",
      clientId: "ci_1",
      clientSecret: "bad",
      fetch: endpoint({ calls: 0, bodies: [], status: 401 })
    })
    await expect(tokens.getToken()).rejects.toMatchObject({ name: "TokenError", status: 401, error: "invalid_client" })
  })
})
