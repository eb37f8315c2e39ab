// The browser origins each workspace allows (CONTRACT §9, GET/PUT /settings/cors), held by every node in memory so
// that the edge decides a preflight or a response's CORS headers without a query (platform/Cors.ts). The whole
// table is read at start, again on every node when a list changes (Notifier topic `cors`, after the change
// commits; the node that made it reloads before answering) and every 30 s, should a signal be lost or a workspace
// be deleted (its row goes with it). Reloads take turns, so an older read never replaces a newer one.
import type { Principal } from "@troupe/api/Authorization"
import { canonicalOrigin, type CorsSettings } from "@troupe/api/identity/Cors"
import { Context, Effect, Layer, Schedule, Semaphore, Stream } from "effect"
import { SqlClient } from "effect/sql"
import type { WorkspaceOrigins } from "../platform/Cors.ts"
import { Notifier } from "../platform/Notifier.ts"
import { CorsRepo } from "./CorsRepo.ts"

const TOPIC = "cors"
const RELOAD_EVERY = "30 seconds"

export class CorsOrigins extends Context.Service<
  CorsOrigins,
  WorkspaceOrigins & {
    readonly get: (workspace: string) => Effect.Effect<CorsSettings>
    /** Replaces a workspace's list (origins already validated by the route's schema); answers it as stored. */
    readonly set: (workspace: string, origins: ReadonlyArray<string>, by: Principal) => Effect.Effect<CorsSettings>
  }
>()("@troupe/server/identity/CorsOrigins") {
  static readonly layerNoDeps = Layer.effect(
    CorsOrigins,
    Effect.gen(function* () {
      const repo = yield* CorsRepo
      const sql = yield* SqlClient.SqlClient
      const notifier = yield* Notifier
      let byWorkspace = new Map<string, ReadonlySet<string>>()
      let anywhere = new Set<string>()
      const turns = yield* Semaphore.make(1)

      const reload = turns.withPermits(1)(
        Effect.map(repo.all, (rows) => {
          const next = new Map<string, ReadonlySet<string>>()
          const union = new Set<string>()
          for (const row of rows) {
            if (row.origins.length === 0) continue
            next.set(row.workspace, new Set(row.origins))
            for (const o of row.origins) union.add(o)
          }
          byWorkspace = next
          anywhere = union
        })
      )
      const reloadQuietly = reload.pipe(
        Effect.catchCause((cause) => Effect.logWarning("cors: reloading the workspace origins failed", cause))
      )

      yield* reload
      yield* notifier.subscribe(TOPIC).pipe(
        Stream.runForEach(() => reloadQuietly),
        Effect.forkScoped
      )
      yield* Effect.forkScoped(Effect.repeat(reloadQuietly, Schedule.spaced(RELOAD_EVERY)))

      const set = Effect.fn("CorsOrigins.set")(function* (workspace: string, origins: ReadonlyArray<string>, by: Principal) {
        // canonical and each once: what browsers send is what is matched
        const stored = [...new Set(origins.flatMap((o) => canonicalOrigin(o) ?? []))]
        yield* sql
          .withTransaction(Effect.andThen(repo.put(workspace, stored, `${by.kind}:${by.id}`), notifier.publish(TOPIC, workspace)))
          .pipe(Effect.orDie)
        yield* reload
        return { allowedOrigins: stored }
      })

      return CorsOrigins.of({
        allows: (workspace, origin) => byWorkspace.get(workspace)?.has(origin) === true,
        anyAllows: (origin) => anywhere.has(origin),
        get: Effect.fn("CorsOrigins.get")(function* (workspace: string) {
          return { allowedOrigins: yield* repo.of(workspace) }
        }),
        set
      })
    })
  )
  static readonly layer = this.layerNoDeps.pipe(Layer.provide(CorsRepo.layer))
}
