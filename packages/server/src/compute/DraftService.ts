// Drafts (README "Drafts"): functions and triggers held for review. A draft's
// data is free-form until it is published (FunctionService / TriggerService check it then), except that a trigger
// draft's params written `{value, encrypt: true}` are encrypted as soon as the draft is saved (TriggerParams.seal),
// so their plaintext is never stored nor shown. Every route needs the permission of the draft's resource type:
// functions read:/write:functions, triggers read:/write:triggers.
import { can, type Permission, type Principal } from "@troupe/api/Authorization"
import type { Draft, DraftResourceType } from "@troupe/api/compute/Compute"
import { type BadRequest, type Forbidden, forbidden, type NotFound } from "@troupe/api/Errors"
import { Context, Effect, Layer } from "effect"
import * as Crypto from "node:crypto"
import { DraftRepo } from "./DraftRepo.ts"
import { checkId, draftNotFound } from "./model.ts"
import { TriggerParams } from "./TriggerParams.ts"

const permissionOf = (type: DraftResourceType, write: boolean): Permission =>
  type === "compute-functions" ? (write ? "write:functions" : "read:functions") : write ? "write:triggers" : "read:triggers"

const allTypes: ReadonlyArray<DraftResourceType> = ["compute-functions", "function-triggers"]

export class DraftService extends Context.Service<
  DraftService,
  {
    readonly create: (
      workspace: string,
      input: { resourceType: DraftResourceType; data: Record<string, unknown> },
      by: Principal
    ) => Effect.Effect<Draft, Forbidden | BadRequest>
    readonly list: (
      workspace: string,
      query: { page?: number | undefined; limit?: number | undefined; resourceType?: DraftResourceType | undefined },
      by: Principal
    ) => Effect.Effect<{ drafts: ReadonlyArray<Draft>; total: number; page: number; limit: number }, Forbidden>
    readonly get: (workspace: string, id: string, by: Principal) => Effect.Effect<Draft, BadRequest | NotFound | Forbidden>
    readonly update: (
      workspace: string,
      id: string,
      data: Record<string, unknown>,
      by: Principal
    ) => Effect.Effect<Draft, BadRequest | NotFound | Forbidden>
    readonly delete: (
      workspace: string,
      id: string,
      by: Principal
    ) => Effect.Effect<{ success: boolean; message: string }, BadRequest | NotFound | Forbidden>
  }
>()("@troupe/server/compute/DraftService") {
  static readonly layerNoDeps = Layer.effect(
    DraftService,
    Effect.gen(function* () {
      const repo = yield* DraftRepo
      const params = yield* TriggerParams

      /** A trigger draft's `triggerMetadata.params`, sealed as a trigger's are; any other data as it came. */
      const sealed = (workspace: string, type: DraftResourceType, data: Record<string, unknown>) =>
        Effect.gen(function* () {
          const metadata = data.triggerMetadata
          if (type !== "function-triggers" || typeof metadata !== "object" || metadata === null || Array.isArray(metadata)) return data
          const meta = metadata as Record<string, unknown>
          if (meta.params === undefined) return data
          return {
            ...data,
            triggerMetadata: { ...meta, params: yield* params.seal(workspace, meta.params, "data.triggerMetadata.params") }
          }
        })

      const allowed = (by: Principal, type: DraftResourceType, write: boolean) => {
        const permission = permissionOf(type, write)
        return can(by, permission) ? Effect.void : Effect.fail(forbidden(`Permission "${permission}" is required`))
      }

      const found = (workspace: string, id: string, by: Principal, write: boolean) =>
        Effect.gen(function* () {
          yield* checkId("draft", id)
          const draft = yield* Effect.orDie(repo.get(workspace, id))
          if (draft === undefined) return yield* draftNotFound(id)
          yield* allowed(by, draft.resourceType, write)
          return draft
        })

      return DraftService.of({
        create: Effect.fn("DraftService.create")(function* (workspace, input, by) {
          yield* allowed(by, input.resourceType, true)
          const data = yield* sealed(workspace, input.resourceType, input.data)
          return yield* Effect.orDie(repo.insert({ id: Crypto.randomUUID(), workspace, resourceType: input.resourceType, data, by: by.id }))
        }),
        list: Effect.fn("DraftService.list")(function* (workspace, query, by) {
          const page = query.page ?? 1
          const limit = query.limit ?? 100
          if (query.resourceType !== undefined) yield* allowed(by, query.resourceType, false)
          const types = (query.resourceType !== undefined ? [query.resourceType] : allTypes).filter((t) => can(by, permissionOf(t, false)))
          const { rows, total } = yield* Effect.orDie(repo.list(workspace, types, limit, (page - 1) * limit))
          return { drafts: rows, total, page, limit }
        }),
        get: Effect.fn("DraftService.get")((workspace, id, by) => found(workspace, id, by, false)),
        update: Effect.fn("DraftService.update")(function* (workspace, id, data, by) {
          const existing = yield* found(workspace, id, by, true)
          const draft = yield* Effect.orDie(repo.update(workspace, id, yield* sealed(workspace, existing.resourceType, data)))
          if (draft === undefined) return yield* draftNotFound(id)
          return draft
        }),
        delete: Effect.fn("DraftService.delete")(function* (workspace, id, by) {
          yield* found(workspace, id, by, true)
          yield* Effect.orDie(repo.delete(workspace, id))
          return { success: true, message: `Draft ${id} deleted` }
        })
      })
    })
  )

  static readonly layer = this.layerNoDeps.pipe(Layer.provide([DraftRepo.layer, TriggerParams.layer]))
}
