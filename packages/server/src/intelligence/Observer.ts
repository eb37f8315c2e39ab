// Observing writes for schema discovery, at no cost to the write path: the outbox relay (off the request, after
// commit) hands this consumer the record.created / record.updated events of structures in `auto-evolving` or
// `schemaless` mode (a sample: at most SAMPLE_PER_SECOND per structure); the undeclared fields of each record go into an in-memory queue on the relay's node (nothing
// is written inside the relay's transaction). Every second the queue is profiled per structure (within its
// schemaDiscoveryConfig limits) and merged into the stored `observed` profile; once `batchSize` records were
// observed since the last inference, suggestions are inferred (the same as `POST …/schema-discovery/trigger`), and
// in `auto-evolving` with `autoApply` on, confident new properties are added (AutoApply.ts).
import type { PropertyDefinition, Structure } from "@troupe/api/structures/Structure"
import { Duration, Effect, Layer, Schedule } from "effect"
import { SqlClient } from "effect/sql"
import type { StoredEvent } from "../events/Outbox.ts"
import { type EventConsumer, EventConsumers } from "../events/OutboxRelay.ts"
import { isObject } from "../lib/JsonPath.ts"
import { StructureService } from "../structures/StructureService.ts"
import { autoApply } from "./AutoApply.ts"
import { infer } from "./Inference.ts"
import { IntelligenceRepo } from "./IntelligenceRepo.ts"
import { emptyProfile, mergeProfiles, profileRecord } from "./Profile.ts"

const OBSERVED = new Set(["record.created", "record.updated"])
/** At most this many records wait in the queue; past it, observations are dropped (discovery samples anyway). */
const MAX_QUEUED = 10_000
const FLUSH = Duration.seconds(1)
/**
 * Records observed per structure per second, at most: past it, events are not selected (the relay then does not read
 * their payloads at all). A profile is a sample; a bulk load needs no more than this to be profiled well.
 */
const SAMPLE_PER_SECOND = 20

interface Observation {
  readonly workspace: string
  readonly structureId: string
  readonly data: Record<string, unknown>
}

/**
 * The record's undeclared fields, and the undeclared keys inside declared objects that declare their properties,
 * those under their path as one key (`{"address.zip": …}` profiles as the path `address.zip`, and the declared
 * `address` itself is not profiled from this sample).
 */
const undeclared = (structure: Structure, data: Record<string, unknown>) => {
  let out: Record<string, unknown> | undefined
  const walk = (properties: ReadonlyArray<PropertyDefinition>, obj: Record<string, unknown>, prefix: string) => {
    const declared = new Map(properties.map((p) => [p.name, p]))
    for (const [k, v] of Object.entries(obj)) {
      const p = declared.get(k)
      if (p === undefined) {
        out ??= {}
        out[`${prefix}${k}`] = v
      } else if (p.type === "object" && (p.properties ?? []).length > 0 && isObject(v)) {
        walk(p.properties!, v, `${prefix}${k}.`)
      }
    }
  }
  walk(structure.properties, data, "")
  return out
}

export const ObserverLayer = Layer.effect(
  EventConsumers,
  Effect.gen(function* () {
    const before = yield* EventConsumers
    const structures = yield* StructureService
    const repo = yield* IntelligenceRepo
    const sql = yield* SqlClient.SqlClient
    let queue: Array<Observation> = []
    // per structure: the second being counted and how many events were selected in it
    const sampled = new Map<string, { second: number; n: number }>()
    const take = (structureId: string) => {
      const second = Math.floor(Date.now() / 1000)
      const seen = sampled.get(structureId)
      if (seen === undefined || seen.second !== second) {
        if (sampled.size > 10_000) sampled.clear()
        sampled.set(structureId, { second, n: 1 })
        return true
      }
      return ++seen.n <= SAMPLE_PER_SECOND
    }

    const structureOf = (workspace: string, id: string | null) =>
      id === null ? Effect.succeed(undefined) : structures.get(workspace, id).pipe(Effect.orElseSucceed(() => undefined))

    const consumer: EventConsumer = {
      name: "schema-discovery",
      select: (events) =>
        Effect.filter(events, (e) =>
          OBSERVED.has(e.type)
            ? Effect.map(
                structureOf(e.workspace, e.structureId),
                (s) => s !== undefined && s.schemaDiscoveryMode !== "strict" && take(s.id)
              )
            : Effect.succeed(false)
        ),
      handle: (events: ReadonlyArray<StoredEvent>) =>
        Effect.forEach(events, (e) =>
          Effect.map(structureOf(e.workspace, e.structureId), (s) => {
            const data = (e.payload.data as any)?.record?.data
            if (s === undefined || typeof data !== "object" || data === null || queue.length >= MAX_QUEUED) return
            const extra = undeclared(s, data)
            if (extra !== undefined) queue.push({ workspace: e.workspace, structureId: s.id, data: extra })
          })
        ).pipe(Effect.asVoid)
    }

    const flushOne = (workspace: string, structureId: string, list: ReadonlyArray<Observation>) =>
      Effect.gen(function* () {
        const structure = yield* structureOf(workspace, structureId)
        if (structure === undefined) return
        const batch = emptyProfile()
        const { batchSize, ...limits } = structure.schemaDiscoveryConfig
        for (const o of list) profileRecord(batch, o.data, limits)
        const added = yield* sql.withTransaction(
          Effect.gen(function* () {
            yield* repo.lockProfile(structureId, "observed")
            const stored = yield* repo.getProfile(structureId, "observed")
            const profile = mergeProfiles(stored.profile, batch)
            const pending = stored.pending + list.length
            if (pending < batchSize) {
              yield* repo.putProfile(workspace, structureId, "observed", profile, pending)
              return []
            }
            yield* repo.putProfile(workspace, structureId, "observed", profile, 0)
            return yield* repo.addSchemaSuggestions(workspace, structureId, infer(structure, profile))
          })
        )
        // after the commit: the structure update has its own transaction
        yield* autoApply({ repo, structures }, workspace, structureId, added)
      })

    const flush = Effect.suspend(() => {
      const taken = queue
      queue = []
      const groups = new Map<string, Array<Observation>>()
      for (const o of taken) {
        const key = `${o.workspace}\u0000${o.structureId}`
        const group = groups.get(key)
        if (group === undefined) groups.set(key, [o])
        else group.push(o)
      }
      return Effect.forEach(groups, ([, list]) => flushOne(list[0]!.workspace, list[0]!.structureId, list), { discard: true })
    }).pipe(Effect.catchCause((cause) => Effect.logWarning("schema discovery: merging observations failed", cause)))

    yield* Effect.forkScoped(Effect.repeat(flush, Schedule.spaced(FLUSH)))
    return [...before, consumer]
  })
).pipe(Layer.provide(IntelligenceRepo.layer))
