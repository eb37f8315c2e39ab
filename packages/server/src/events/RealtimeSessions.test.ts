import { describe, expect, it } from "@effect/vitest"
import { Clock, Effect, Exit, Fiber, Ref, Scope } from "effect"
import { TestClock } from "effect/testing"
import { closedBecause, formatClosed, makeRealtimeSessions, type StreamClosed } from "./RealtimeSessions.ts"

const allowed = Effect.succeed<StreamClosed | undefined>(undefined)

describe("RealtimeSessions", () => {
  it.effect("ends a stream when its token expires, not before", () =>
    Effect.gen(function* () {
      const sessions = makeRealtimeSessions(10)
      const scope = yield* Scope.make()
      const now = yield* Clock.currentTimeMillis
      const ended = yield* sessions.open({ workspace: "w", expiresAt: now + 10_000, check: allowed }).pipe(Scope.provide(scope))
      const fiber = yield* Effect.forkChild(ended)
      yield* TestClock.adjust("9 seconds")
      expect(fiber.pollUnsafe()).toBeUndefined()
      yield* TestClock.adjust("1 second")
      const closed = yield* Fiber.join(fiber)
      expect(closed.reason).toBe("token_expired")
      yield* Scope.close(scope, Exit.void)
    })
  )

  it.effect("ends the streams whose caller a recheck no longer allows, and only those", () =>
    Effect.gen(function* () {
      const sessions = makeRealtimeSessions(10)
      const scope = yield* Scope.make()
      const verdict = yield* Ref.make<StreamClosed | undefined>(undefined)
      const revoked = yield* sessions.open({ workspace: "w", expiresAt: undefined, check: Ref.get(verdict) }).pipe(Scope.provide(scope))
      const other = yield* sessions.open({ workspace: "w", expiresAt: undefined, check: allowed }).pipe(Scope.provide(scope))
      const a = yield* Effect.forkChild(revoked)
      const b = yield* Effect.forkChild(other)
      yield* sessions.recheck
      yield* Effect.yieldNow
      expect(a.pollUnsafe()).toBeUndefined()
      yield* Ref.set(verdict, closedBecause("access_revoked"))
      yield* sessions.recheck
      expect((yield* Fiber.join(a)).reason).toBe("access_revoked")
      expect(b.pollUnsafe()).toBeUndefined()
      yield* Scope.close(scope, Exit.void)
    })
  )

  it.effect("caps open streams per workspace; a closed one frees its place", () =>
    Effect.gen(function* () {
      const sessions = makeRealtimeSessions(2)
      const first = yield* Scope.make()
      const second = yield* Scope.make()
      yield* sessions.open({ workspace: "w", expiresAt: undefined, check: allowed }).pipe(Scope.provide(first))
      yield* sessions.open({ workspace: "w", expiresAt: undefined, check: allowed }).pipe(Scope.provide(second))
      const refused = yield* Effect.flip(Effect.scoped(sessions.open({ workspace: "w", expiresAt: undefined, check: allowed })))
      expect(refused.statusCode).toBe(429)
      expect(refused.code).toBe("TOO_MANY_CONNECTIONS")
      // another workspace has its own count
      yield* Effect.scoped(sessions.open({ workspace: "v", expiresAt: undefined, check: allowed }))
      yield* Scope.close(first, Exit.void)
      expect(sessions.count("w")).toBe(1)
      yield* Effect.scoped(sessions.open({ workspace: "w", expiresAt: undefined, check: allowed }))
      yield* Scope.close(second, Exit.void)
      expect(sessions.count("w")).toBe(0)
    })
  )

  it("the last message is data-only JSON naming the reason", () => {
    const text = formatClosed(closedBecause("permission_removed"))
    expect(text).toMatch(/^data: /)
    expect(text).toMatch(/\n\n$/)
    expect(JSON.parse(text.slice(6))).toMatchObject({ event: "stream.closed", reason: "permission_removed" })
  })
})
