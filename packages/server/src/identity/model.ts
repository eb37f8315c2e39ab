// Small shared pieces of the identity services: paging, timestamps, SQL error mapping, the user-token guard.
import type { Principal } from "@troupe/api/Authorization"
import { type Forbidden, forbidden } from "@troupe/api/Errors"
import { Effect } from "effect"
import { SqlError } from "effect/sql/SqlError"
import { isCollision } from "../platform/sqlErrors.ts"
import { AccessCache, markIdentityChanged } from "./AccessCache.ts"
import { SqlClient } from "effect/sql"
import { notHeld } from "./Permissions.ts"

export interface Page {
  readonly page: number
  readonly limit: number
  readonly offset: number
}

export const paging = (query: { readonly page?: number; readonly limit?: number }, defaultLimit = 20): Page => {
  const page = query.page ?? 1
  const limit = query.limit ?? defaultLimit
  return { page, limit, offset: (page - 1) * limit }
}

export const iso = (d: Date | string | null | undefined): string =>
  d === null || d === undefined ? "" : (d instanceof Date ? d : new Date(d)).toISOString()

export const jsonStrings = (u: unknown): Array<string> => {
  const v = typeof u === "string" ? JSON.parse(u) : u
  return Array.isArray(v) ? v.filter((x): x is string => typeof x === "string") : []
}

/** A unique violation becomes `onConflict`; any other SQL failure is a defect (500). */
export const uniqueOr =
  <E2>(onConflict: () => E2) =>
  <A, E, R>(self: Effect.Effect<A, E | SqlError, R>) =>
    Effect.catchIf(
      self,
      (e): e is SqlError => e instanceof SqlError,
      (e) => (e.reason._tag === "UniqueViolation" ? Effect.fail(onConflict()) : Effect.die(e))
    ) as Effect.Effect<A, Exclude<E, SqlError> | E2, R>

/** Service-account management needs a person: a user token, never a service account's. */
export const requireUser = (principal: Principal): Effect.Effect<void, Forbidden> =>
  principal.kind === "user"
    ? Effect.void
    : Effect.fail(forbidden("This route needs a user token; service-account tokens cannot manage identities"))

/** 403 PERMISSION_DENIED unless the caller holds every permission of `granted`; `refusal` opens the message. */
export const requireHolds = (by: Principal, granted: Iterable<string>, refusal: string): Effect.Effect<void, Forbidden> => {
  const beyond = notHeld(by, granted)
  return beyond.length === 0 ? Effect.void : Effect.fail(forbidden(`${refusal}; you do not hold: ${beyond.sort().join(", ")}`))
}

/**
 * Runs `change` in a transaction that also bumps the identity version (other nodes refresh), then refreshes this
 * node's cache before answering, so the change holds from the response on. A transaction PostgreSQL fails to break
 * a deadlock (a workspace's delete cascading through rows that writes hold) rolled back whole: it runs again.
 */
export const identityChange = <A, E, R>(change: Effect.Effect<A, E, R>) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const cache = yield* AccessCache
    const result = yield* sql.withTransaction(Effect.tap(change, () => markIdentityChanged)).pipe(
      Effect.retry({
        while: (e) => e instanceof SqlError && isCollision(e),
        times: 3
      })
    )
    yield* cache.refresh
    return result
  }).pipe(
    Effect.catchIf(
      (e): e is SqlError & E => e instanceof SqlError,
      (e) => Effect.die(e)
    )
  ) as Effect.Effect<A, Exclude<E, SqlError>, R | SqlClient.SqlClient | AccessCache>
