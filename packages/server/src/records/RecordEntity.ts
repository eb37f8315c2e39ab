// The one entry point of record writes, RecordWriter, and the actors it sends to; the only importer of the record
// engine (write/, assembled by write/Engine.ts). `Record` (id `<workspace>/<recordId>`) serialises a record's
// deletes, restores and reverts (creates, updates and increments need no actor: RecordWriter.update); `RecordKey`
// (id `<workspace>/<structureId>/<sha256(match)>`) serialises upserts of one business key anywhere in the cluster.
// Messages are volatile RPCs: durability is the handler's own transaction, and a caller whose node dies mid-call gets
// an error it may retry.
import { badRequest, conflict, type Conflict, ErrorDetail, locked, notFound, serviceUnavailable, unprocessable } from "@troupe/api/Errors"
import type { Structure } from "@troupe/api/structures/Structure"
import { Context, Effect, Layer, Queue, Schema } from "effect"
import { Entity, type Envelope } from "effect/cluster"
import { Rpc, type RpcGroup } from "effect/rpc"
import * as Crypto from "node:crypto"
import { canonicalJson } from "../structures/Formats.ts"
import { StructureService } from "../structures/StructureService.ts"
import { isUuid, type RecordRow } from "../query/RecordRow.ts"
import { Writer } from "./model.ts"
import {
  type BulkError,
  type BulkOptions,
  type BulkOutcome,
  type ScopedBulkOptions,
  type CreateArgs,
  type CreateInput,
  type FileDeletedArgs,
  type RecordError,
  type RecordTarget,
  recordNotFound,
  type RemoveArgs,
  type RestoreArgs,
  type RevertArgs,
  type UpdateArgs,
  type UpdateInput,
  type WriteResult
} from "./RecordInputs.ts"
import { RecordService } from "./RecordService.ts"
import { makeBulkRequests } from "./write/Bulk.ts"
import { RecordEngine } from "./write/Engine.ts"

/**
 * Write errors cross the cluster as one tagged shape, rebuilt as the contract's class by the caller: the socket
 * transport's binary codec cannot encode a union of the contract error classes (same fields, no `_tag`), and a
 * reply it cannot encode never reaches the calling node (the request hangs).
 */
class WriteFailure extends Schema.TaggedError<WriteFailure>()("WriteFailure", {
  statusCode: Schema.Int,
  message: Schema.String,
  code: Schema.String,
  details: Schema.Array(ErrorDetail)
}) {}
const toFailure = (e: RecordError) => new WriteFailure({ statusCode: e.statusCode, message: e.message, code: e.code, details: e.details })
const fromFailure = (e: WriteFailure): RecordError => {
  const init = { message: e.message, code: e.code, details: e.details }
  return e.statusCode === 404
    ? notFound(init)
    : e.statusCode === 409
      ? conflict(init)
      : e.statusCode === 423
        ? locked(init)
        : e.statusCode === 422
          ? unprocessable(init)
          : badRequest(init)
}
/** A handler's errors in wire form. */
const onWire = <A, R>(effect: Effect.Effect<A, RecordError, R>) => Effect.mapError(effect, toFailure)
const Row = Schema.Json
const Written = Schema.Struct({
  row: Row,
  previousVersion: Schema.optionalKey(Schema.Number),
  restoredFrom: Schema.optionalKey(Schema.NullOr(Schema.Number))
})

export const RecordEntity = Entity.make("Record", [
  Rpc.make("Delete", {
    payload: { permanent: Schema.Boolean, reason: Schema.optionalKey(Schema.String), writer: Writer },
    success: Schema.Struct({ id: Schema.String, deletedAt: Schema.String, structureId: Schema.String }),
    error: WriteFailure
  }),
  Rpc.make("Restore", {
    payload: { version: Schema.optionalKey(Schema.Number), reason: Schema.optionalKey(Schema.String), writer: Writer },
    success: Written,
    error: WriteFailure
  }),
  Rpc.make("Revert", { payload: { reason: Schema.optionalKey(Schema.String), writer: Writer }, success: Written, error: WriteFailure })
])

export const RecordKeyEntity = Entity.make("RecordKey", [
  Rpc.make("Upsert", {
    payload: {
      structureId: Schema.String,
      match: Schema.Record(Schema.String, Schema.Json),
      data: Schema.Record(Schema.String, Schema.Json),
      writer: Writer,
      idempotencyKey: Schema.optionalKey(Schema.String)
    },
    success: Schema.Struct({ status: Schema.Number, body: Schema.Json, replayed: Schema.Boolean }),
    error: WriteFailure
  })
])

const split = (entityId: string) => {
  const at = entityId.indexOf("/")
  return { workspace: entityId.slice(0, at), id: entityId.slice(at + 1) }
}

/** Rows cross the wire as JSON; dates are ISO strings already. */
const written = (r: WriteResult) => ({
  row: r.row as unknown as Schema.Json,
  ...(r.previousVersion !== undefined ? { previousVersion: r.previousVersion } : {}),
  ...(r.restoredFrom !== undefined ? { restoredFrom: r.restoredFrom } : {})
})

export const RecordEntityLayer = RecordEntity.toLayer(
  Effect.gen(function* () {
    const engine = yield* RecordEngine
    return RecordEntity.of({
      Delete: ({ address, payload }) => {
        const { workspace, id } = split(address.entityId)
        return onWire(
          Effect.map(engine.remove({ workspace, id, ...payload }), (r) => ({
            id: r.id,
            deletedAt: r.deletedAt,
            structureId: r.structure.id
          }))
        )
      },
      Restore: ({ address, payload }) => {
        const { workspace, id } = split(address.entityId)
        return onWire(Effect.map(engine.restore({ workspace, id, ...payload }), written))
      },
      Revert: ({ address, payload }) => {
        const { workspace, id } = split(address.entityId)
        return onWire(Effect.map(engine.revert({ workspace, id, ...payload }), written))
      }
    })
  }),
  { maxIdleTime: "10 seconds" }
)

/** The node's record engine (write/Engine.ts), for RecordWriter and the actors: one instance, provided below both. */
export const RecordEngineLayer = RecordEngine.layer

/** The most upserts one transaction carries. */
const MAX_UPSERT_BATCH = 128

type UpsertRequest = Envelope.Request<Rpc.ExtractTag<RpcGroup.Rpcs<typeof RecordKeyEntity.protocol>, "Upsert">>

/**
 * One key's upserts, in arrival order. Whatever queued up while the previous transaction ran goes into the next
 * one (RecordEngine.upsertMany); a request with an Idempotency-Key, or any batch that fails, runs on its own so
 * every caller gets exactly its own outcome.
 */
export const RecordKeyEntityLayer = RecordKeyEntity.toLayerQueue(
  Effect.gen(function* () {
    const engine = yield* RecordEngine
    const structures = yield* StructureService
    return (queue, replier) => {
      const structureOf = (request: UpsertRequest) =>
        structures.resolve(split(request.address.entityId).workspace, request.payload.structureId)

      const single = (request: UpsertRequest) => {
        const p = request.payload
        return Effect.flatMap(structureOf(request), (structure) =>
          engine.upsert({ structure, match: p.match, data: p.data, writer: p.writer, idempotencyKey: p.idempotencyKey })
        ).pipe(
          Effect.map((r) => ({ status: r.status, body: r.body as Schema.Json, replayed: r.replayed })),
          onWire,
          Effect.exit,
          Effect.flatMap((exit) => replier.complete(request, exit))
        )
      }

      const batch = (requests: ReadonlyArray<UpsertRequest>) =>
        Effect.flatMap(structureOf(requests[0]!), (structure) =>
          engine.upsertMany({
            structure,
            match: requests[0]!.payload.match,
            items: requests.map((r) => ({ data: r.payload.data, writer: r.payload.writer }))
          })
        ).pipe(
          Effect.matchCauseEffect({
            onSuccess: (results) =>
              Effect.forEach(
                requests,
                (request, i) =>
                  replier.succeed(request, { status: results[i]!.status, body: results[i]!.body as Schema.Json, replayed: false }),
                { discard: true }
              ),
            onFailure: () => Effect.forEach(requests, single, { discard: true })
          })
        )

      const run = (requests: ReadonlyArray<UpsertRequest>) => {
        const steps: Array<Effect.Effect<void>> = []
        let pending: Array<UpsertRequest> = []
        const flush = () => {
          if (pending.length === 1) steps.push(single(pending[0]!))
          else if (pending.length > 1) steps.push(batch(pending))
          pending = []
        }
        for (const request of requests) {
          if (request.payload.idempotencyKey !== undefined) {
            flush()
            steps.push(single(request))
          } else {
            pending.push(request)
            if (pending.length === MAX_UPSERT_BATCH) flush()
          }
        }
        flush()
        return Effect.forEach(steps, (step) => step, { discard: true })
      }

      return Effect.forever(Effect.flatMap(Queue.takeAll(queue), (envelopes) => run(envelopes as ReadonlyArray<UpsertRequest>)))
    }
  }),
  { maxIdleTime: "10 seconds" }
)

export interface Written {
  readonly row: RecordRow
  readonly previousVersion?: number | undefined
  readonly restoredFrom?: number | null | undefined
}

const fromWire = (w: { row: unknown; previousVersion?: number; restoredFrom?: number | null }): Written => ({
  row: w.row as RecordRow,
  previousVersion: w.previousVersion,
  restoredFrom: w.restoredFrom
})

type Removal = { readonly id: string; readonly deletedAt: string; readonly structureId: string }

/** An upsert of one business key, by structure id. */
export interface KeyedUpsert {
  readonly workspace: string
  readonly structureId: string
  readonly match: Record<string, unknown>
  readonly data: Record<string, unknown>
  readonly writer: Writer
  readonly idempotencyKey?: string | undefined
}

/**
 * The one entry point of record writes (the record engine, write/, is used by nothing else): creates and updates
 * through the node's group commit, deletes, restores, reverts and upserts routed to their actors wherever they
 * live, whole bulk requests (write/Bulk.ts: atomic ones in one transaction, the items of the others each as a
 * single write), and the records' side of deleting a file.
 */
export class RecordWriter extends Context.Service<
  RecordWriter,
  {
    readonly create: (args: CreateArgs) => Effect.Effect<WriteResult, RecordError>
    readonly update: (args: UpdateArgs) => Effect.Effect<Written, RecordError>
    readonly remove: (args: RemoveArgs) => Effect.Effect<Removal, RecordError>
    readonly restore: (args: RestoreArgs) => Effect.Effect<Written, RecordError>
    readonly revert: (args: RevertArgs) => Effect.Effect<Written, RecordError>
    readonly increment: (args: RecordTarget & { readonly field: string; readonly by: number }) => Effect.Effect<Written, RecordError>
    readonly upsert: (args: KeyedUpsert) => Effect.Effect<{ status: number; body: unknown; replayed: boolean }, RecordError>
    readonly bulkCreate: (args: {
      readonly structure: Structure
      readonly items: ReadonlyArray<CreateInput>
      readonly writer: Writer
      readonly options: BulkOptions
    }) => Effect.Effect<BulkOutcome<{ readonly row: RecordRow }>, BulkError>
    /** `options.structure`: generation A batches may only touch records of the structure in the path. */
    readonly bulkUpdate: (args: {
      readonly workspace: string
      readonly items: ReadonlyArray<{ readonly id: string; readonly input: UpdateInput }>
      readonly writer: Writer
      readonly options: ScopedBulkOptions
    }) => Effect.Effect<BulkOutcome<{ readonly row: RecordRow }>, BulkError>
    readonly bulkRemove: (args: {
      readonly workspace: string
      readonly ids: ReadonlyArray<string>
      readonly permanent: boolean
      readonly writer: Writer
      readonly options: ScopedBulkOptions
    }) => Effect.Effect<BulkOutcome<Removal>, BulkError>
    /** A file is being deleted (in the storage's transaction): the onDelete of records' `format: "file"` properties. */
    readonly fileDeleted: (args: FileDeletedArgs) => Effect.Effect<void, Conflict>
  }
>()("@troupe/server/records/RecordWriter") {
  static readonly layer = Layer.effect(
    RecordWriter,
    Effect.gen(function* () {
      const record = yield* RecordEntity.client
      const key = yield* RecordKeyEntity.client
      const engine = yield* RecordEngine
      const records = yield* RecordService
      const structures = yield* StructureService
      // Sharding failures surface as defects: a node at its entity cap is a 503 with Retry-After, a node gone
      // mid-call a 500; both are for the caller to retry.
      const orDie = <A, E>(e: Effect.Effect<A, E | { readonly _tag: string }>) =>
        Effect.catch(e, (err: any) =>
          err?._tag === "WriteFailure"
            ? Effect.fail(fromFailure(err))
            : err?._tag === "MailboxFull"
              ? Effect.die(
                  Object.assign(serviceUnavailable({ message: "This node is at capacity; retry shortly", code: "UNAVAILABLE" }), {
                    retryAfter: 1
                  })
                )
              : err?._tag !== undefined && !("statusCode" in err)
                ? Effect.die(err)
                : Effect.fail(err)
        ) as Effect.Effect<A, E>
      // an id that is no record id never reaches an actor
      const known = <A>(id: string, send: () => Effect.Effect<A, RecordError>): Effect.Effect<A, RecordError> =>
        isUuid(id) ? send() : Effect.fail(recordNotFound(id))
      // An update needs no actor: the node's group commit writes it with a statement guarded by the row's version and
      // xmin, and writes it alone with its row locked when anything wrote the record since it was read
      // (write/Update.ts, writeUpdates); a node writes one batch of updates at a time, in arrival order.
      const update = ({ workspace, id, input, writer }: UpdateArgs): Effect.Effect<Written, RecordError> =>
        known(id, () => engine.update({ workspace, id: id.toLowerCase(), input, writer }))
      const remove = ({ workspace, id, permanent, writer, reason }: RemoveArgs): Effect.Effect<Removal, RecordError> =>
        known(
          id,
          () =>
            orDie(
              record(`${workspace}/${id.toLowerCase()}`).Delete({ permanent, ...(reason !== undefined ? { reason } : {}), writer })
            ) as any
        )
      const bulk = makeBulkRequests({ engine, get: records.get, update, remove, structures })
      return RecordWriter.of({
        create: engine.create,
        update,
        remove,
        restore: ({ workspace, id, version, reason, writer }) =>
          known(
            id,
            () =>
              orDie(
                record(`${workspace}/${id.toLowerCase()}`).Restore({
                  ...(version !== undefined ? { version } : {}),
                  ...(reason !== undefined ? { reason } : {}),
                  writer
                })
              ).pipe(Effect.map(fromWire)) as any
          ),
        revert: ({ workspace, id, reason, writer }) =>
          known(
            id,
            () =>
              orDie(record(`${workspace}/${id.toLowerCase()}`).Revert({ ...(reason !== undefined ? { reason } : {}), writer })).pipe(
                Effect.map(fromWire)
              ) as any
          ),
        // the addition is planned on the row as read and written only if nobody wrote the record since (never a
        // read-modify-write by the caller: api.incrementField)
        increment: ({ workspace, id, field, by, writer }) =>
          update({ workspace, id, input: { data: {}, increments: { [field]: by } }, writer }),
        upsert: ({ workspace, structureId, match, data, writer, idempotencyKey }) => {
          const hash = Crypto.createHash("sha256").update(canonicalJson(match)).digest("hex")
          const throughActor = () =>
            orDie(
              key(`${workspace}/${structureId}/${hash}`).Upsert({
                structureId,
                match: match as Record<string, Schema.Json>,
                data: data as Record<string, Schema.Json>,
                writer,
                ...(idempotencyKey !== undefined ? { idempotencyKey } : {})
              })
            ) as unknown as Effect.Effect<{ status: number; body: unknown; replayed: boolean }, RecordError>
          // a match on a unique property shares the node's group commit with other keys' upserts (no actor to wake
          // per key); a replayable one (Idempotency-Key), or one whose batch failed, goes through the key's actor
          if (idempotencyKey !== undefined) return throughActor()
          return Effect.flatMap(structures.resolve(workspace, structureId), (structure) =>
            engine.upsertGrouped({ structure, match, data, writer })
          ).pipe(Effect.flatMap((done) => (done === undefined ? throughActor() : Effect.succeed({ ...done, replayed: false }))))
        },
        bulkCreate: Effect.fn("RecordWriter.bulkCreate")(bulk.bulkCreate),
        bulkUpdate: Effect.fn("RecordWriter.bulkUpdate")(bulk.bulkUpdate),
        bulkRemove: Effect.fn("RecordWriter.bulkRemove")(bulk.bulkRemove),
        fileDeleted: engine.fileDeleted
      })
    })
  )
}
