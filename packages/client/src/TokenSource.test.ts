import { describe, expect, it } from "@effect/vitest"
import { Effect, Fiber, Layer } from "effect"
import { HttpClient, HttpClientResponse } from "effect/http"
import { TestClock } from "effect/testing"
import { clientCredentials } from "./TokenSource.ts"

/** A token endpoint that counts calls and answers `expires_in` 25200, or fails when told to. */
const fakeEndpoint = (state: { calls: number; bodies: Array<string>; fail?: boolean }) =>
  Layer.succeed(HttpClient.HttpClient)(
    HttpClient.make((request) =>
      Effect.gen(function* () {
        state.calls++
        state.bodies.push(request.body._tag === "Uint8Array" ? new TextDecoder().decode(request.body.body) : "")
        yield* Effect.sleep("10 millis")
        const body = state.fail
          ? { error: "invalid_client", error_description: "Invalid client credentials" }
          : { access_token: `token-${state.calls}`, token_type: "Bearer", expires_in: 25200, scope: "openid" }
        const answer = new Response(JSON.stringify(body), { status: state.fail ? 401 : 200 })
        return HttpClientResponse.fromWeb(request, answer)
      })
    )
  )

describe("TokenSource.clientCredentials", () => {
  it.effect("caches the token until 60 s before expiry, then renews it", () => {
    const state = { calls: 0, bodies: [] as Array<string> }
    return Effect.gen(function* () {
      const source = yield* clientCredentials({
        baseUrl: "http://troupe.test/",
        clientId: "ci_1",
        clientSecret: "sk_1"
      })
      const first = yield* Effect.forkChild(source.get)
      yield* TestClock.adjust("10 millis")
      expect(yield* Fiber.join(first)).toBe("token-1")
      expect(state.bodies[0]!).toContain("grant_type=client_credentials")
      expect(state.bodies[0]!).toContain("client_id=ci_1")
      expect(yield* source.get).toBe("token-1")
      yield* TestClock.adjust(`${25200 - 61} seconds`)
      expect(yield* source.get).toBe("token-1")
      expect(state.calls).toBe(1)
      yield* TestClock.adjust("2 seconds")
      const renewed = yield* Effect.forkChild(source.get)
      yield* TestClock.adjust("10 millis")
      expect(yield* Fiber.join(renewed)).toBe("token-2")
      expect(state.calls).toBe(2)
    }).pipe(Effect.provide(fakeEndpoint(state)))
  })

  it.effect("concurrent callers share one request; invalidate forces a new one", () => {
    const state = { calls: 0, bodies: [] as Array<string> }
    return Effect.gen(function* () {
      const source = yield* clientCredentials({ baseUrl: "http://troupe.test", clientId: "ci_1", clientSecret: "sk_1" })
      const fibers = yield* Effect.forEach([1, 2, 3, 4], () => Effect.forkChild(source.get))
      yield* TestClock.adjust("20 millis")
      const tokens = yield* Effect.forEach(fibers, Fiber.join)
      expect(tokens).toStrictEqual(["token-1", "token-1", "token-1", "token-1"])
      expect(state.calls).toBe(1)
      yield* source.invalidate
      const again = yield* Effect.forkChild(source.get)
      yield* TestClock.adjust("10 millis")
      expect(yield* Fiber.join(again)).toBe("token-2")
    }).pipe(Effect.provide(fakeEndpoint(state)))
  })

  it.effect("a refused request is a TokenError carrying the RFC 6749 error", () => {
    const state = { calls: 0, bodies: [] as Array<string>, fail: true }
    return Effect.gen(function* () {
      const source = yield* clientCredentials({
        baseUrl: "http://troupe.test",
        clientId: "ci_1",
        clientSecret: "sk_bad"
      })
      const attempt = yield* Effect.forkChild(Effect.flip(source.get))
      yield* TestClock.adjust("10 millis")
      const error = yield* Fiber.join(attempt)
      expect(error._tag).toBe("TokenError")
      expect(error.status).toBe(401)
      expect(error.error).toBe("invalid_client")
    }).pipe(Effect.provide(fakeEndpoint(state)))
  })
})
