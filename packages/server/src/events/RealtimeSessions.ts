// The open SSE streams of one node, and what ends them besides the client:
// - the token's `exp` passing (a timer per stream, to the millisecond),
// - the caller no longer being allowed to read (service account revoked, rotated or deleted, member removed, role or
//   groups no longer granting `read:records`, or `read:functions` for a stream that carries compute events): every
//   stream's check runs once per RECHECK_INTERVAL against the node's AccessCache, which follows identity changes.
// A stream that ends this way gets a last message (`formatClosed`) before its body ends. The node also caps the
// streams one workspace holds open (TROUPE_SSE_MAX_CONNECTIONS): one more is 429 TOO_MANY_CONNECTIONS.
import { type TooManyRequests, tooManyRequests } from "@troupe/api/Errors"
import { Clock, Deferred, Duration, Effect, type Scope } from "effect"

/** How often every open stream's caller is checked again. */
export const RECHECK_INTERVAL = Duration.seconds(1)

export type CloseReason = "token_expired" | "access_revoked" | "permission_removed"

export interface StreamClosed {
  readonly reason: CloseReason
  readonly message: string
}

export const closedBecause = (reason: CloseReason): StreamClosed => ({
  reason,
  message:
    reason === "token_expired"
      ? "The access token expired: reconnect with a new token"
      : reason === "access_revoked"
        ? "The token is no longer valid (account revoked, rotated or deleted, or member removed)"
        : "The caller may no longer read this stream"
})

/** The last message of a stream the server ends: a data-only message, so `EventSource.onmessage` receives it. */
export const formatClosed = (closed: StreamClosed): string =>
  `data: ${JSON.stringify({ event: "stream.closed", reason: closed.reason, message: closed.message })}\n\n`

export interface SessionInfo {
  readonly workspace: string
  /** when the token expires (ms since the epoch); undefined: never */
  readonly expiresAt: number | undefined
  /** whether the caller may still read this stream; a reason when not */
  readonly check: Effect.Effect<StreamClosed | undefined>
}

interface Session {
  readonly info: SessionInfo
  readonly ended: Deferred.Deferred<StreamClosed>
}

export interface RealtimeSessions {
  /**
   * Registers a stream for the life of the current scope (the request's), or fails with 429 when the workspace
   * holds `maxPerWorkspace` already. Answers an effect that completes when the stream must end, and why.
   */
  readonly open: (info: SessionInfo) => Effect.Effect<Effect.Effect<StreamClosed>, TooManyRequests, Scope.Scope>
  /** Checks every open stream once; those whose caller may no longer read are ended. */
  readonly recheck: Effect.Effect<void>
  readonly count: (workspace: string) => number
}

export const makeRealtimeSessions = (maxPerWorkspace: number): RealtimeSessions => {
  const byWorkspace = new Map<string, Set<Session>>()

  const remove = (session: Session) => {
    const set = byWorkspace.get(session.info.workspace)
    if (set?.delete(session) && set.size === 0) byWorkspace.delete(session.info.workspace)
  }

  const open = (info: SessionInfo) =>
    Effect.gen(function* () {
      const session: Session = { info, ended: yield* Deferred.make<StreamClosed>() }
      yield* Effect.acquireRelease(
        Effect.suspend(() => {
          const set = byWorkspace.get(info.workspace) ?? new Set<Session>()
          if (set.size >= maxPerWorkspace) {
            return Effect.fail(
              Object.assign(
                tooManyRequests({
                  message:
                    `This workspace has ${maxPerWorkspace} realtime connections open on this node, the most it ` +
                    "may; close one or retry later",
                  code: "TOO_MANY_CONNECTIONS"
                }),
                { retryAfter: 5 }
              )
            )
          }
          set.add(session)
          byWorkspace.set(info.workspace, set)
          return Effect.void
        }),
        () => Effect.sync(() => remove(session))
      )
      const expiry =
        info.expiresAt === undefined
          ? Effect.never
          : Effect.gen(function* () {
              const left = info.expiresAt! - (yield* Clock.currentTimeMillis)
              if (left > 0) yield* Effect.sleep(Duration.millis(left))
              return closedBecause("token_expired")
            })
      return Effect.raceFirst(Deferred.await(session.ended), expiry)
    })

  const recheck = Effect.suspend(() => {
    const all = [...byWorkspace.values()].flatMap((set) => [...set])
    return Effect.forEach(
      all,
      (session) =>
        Effect.flatMap(session.info.check, (closed) => (closed === undefined ? Effect.void : Deferred.succeed(session.ended, closed))),
      { discard: true }
    )
  })

  return { open, recheck, count: (workspace) => byWorkspace.get(workspace)?.size ?? 0 }
}
