// Functions (README "Functions"): create, read, list, update (every change a stored version), delete (its
// triggers stay and stop firing), versions, and publishing a function draft. Code is checked by the sandbox before
// it is stored: a syntax error, module-style code or code without `run` is a 400.
import type { ComputeFunction, FunctionCreate, FunctionSummary, FunctionUpdate, FunctionVersion } from "@troupe/api/compute/Compute"
import { FunctionCreate as FunctionCreateSchema } from "@troupe/api/compute/Compute"
import type { Principal } from "@troupe/api/Authorization"
import type { BadRequest, Conflict, NotFound } from "@troupe/api/Errors"
import { Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import * as Crypto from "node:crypto"
import { uniqueOr } from "../identity/model.ts"
import { DraftRepo } from "./DraftRepo.ts"
import { type FunctionPatch, FunctionRepo, functionSortFields } from "./FunctionRepo.ts"
import { type ListQuery, listSpecOf, publishDraft } from "./Listing.ts"
import { checkId, type FunctionRow, functionNotFound, invalid, nameTaken, sha256, toFunction, toFunctionSummary } from "./model.ts"
import { Sandbox } from "./Sandbox.ts"

export type FunctionError = BadRequest | NotFound | Conflict

export class FunctionService extends Context.Service<
  FunctionService,
  {
    readonly create: (workspace: string, input: FunctionCreate, by: Principal) => Effect.Effect<ComputeFunction, BadRequest | Conflict>
    readonly get: (workspace: string, id: string) => Effect.Effect<ComputeFunction, BadRequest | NotFound>
    /** The stored row (the run worker and triggers read the current code through it). */
    readonly find: (workspace: string, id: string) => Effect.Effect<FunctionRow | undefined>
    readonly list: (
      workspace: string,
      query: ListQuery
    ) => Effect.Effect<{ functions: ReadonlyArray<FunctionSummary>; total: number; page: number; limit: number }, BadRequest>
    readonly update: (workspace: string, id: string, input: FunctionUpdate, by: Principal) => Effect.Effect<ComputeFunction, FunctionError>
    readonly delete: (workspace: string, id: string) => Effect.Effect<{ success: boolean; message: string }, BadRequest | NotFound>
    readonly versions: (workspace: string, id: string) => Effect.Effect<{ versions: ReadonlyArray<FunctionVersion> }, BadRequest | NotFound>
    readonly publish: (workspace: string, draftId: string, by: Principal) => Effect.Effect<ComputeFunction, FunctionError>
    /** A 400 naming `field` when the code cannot run (syntax, module style, no `run`). */
    readonly checkCode: (code: string, field?: string) => Effect.Effect<void, BadRequest>
  }
>()("@troupe/server/compute/FunctionService") {
  static readonly layerNoDeps = Layer.effect(
    FunctionService,
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const repo = yield* FunctionRepo
      const drafts = yield* DraftRepo
      const sandbox = yield* Sandbox

      const checkCode = (code: string, field = "code") => {
        const problem = sandbox.check(code)
        return problem === undefined ? Effect.void : Effect.fail(invalid(field, problem))
      }

      const found = (workspace: string, id: string) =>
        Effect.gen(function* () {
          yield* checkId("function", id)
          const row = yield* Effect.orDie(repo.get(workspace, id))
          if (row === undefined) return yield* functionNotFound(id)
          return row
        })

      const insert = (workspace: string, input: FunctionCreate, by: Principal) =>
        Effect.gen(function* () {
          yield* checkCode(input.code)
          const row = yield* repo
            .insert({
              id: Crypto.randomUUID(),
              workspace,
              name: input.name.trim(),
              description: input.description ?? null,
              code: input.code,
              codeHash: sha256(input.code),
              by: by.id
            })
            .pipe(uniqueOr(() => nameTaken("Function", input.name.trim())))
          return toFunction(row)
        })

      const create = Effect.fn("FunctionService.create")(insert)

      const get = Effect.fn("FunctionService.get")(function* (workspace: string, id: string) {
        return toFunction(yield* found(workspace, id))
      })

      const find = (workspace: string, id: string) => Effect.orDie(repo.get(workspace, id))

      const list = Effect.fn("FunctionService.list")(function* (workspace: string, query: ListQuery) {
        const { page, limit, spec } = yield* listSpecOf(query, functionSortFields)
        const { rows, total } = yield* Effect.orDie(repo.list(workspace, spec))
        return { functions: rows.map(toFunctionSummary), total, page, limit }
      })

      const update = Effect.fn("FunctionService.update")(function* (workspace: string, id: string, input: FunctionUpdate, by: Principal) {
        yield* found(workspace, id)
        const patch: { -readonly [K in keyof FunctionPatch]: FunctionPatch[K] } = {}
        if (input.code !== undefined) {
          yield* checkCode(input.code)
          patch.code = input.code
          patch.codeHash = sha256(input.code)
        }
        if (input.name !== undefined) patch.name = input.name.trim()
        if (input.description !== undefined) patch.description = input.description
        const row = yield* repo.update(workspace, id, patch, by.id).pipe(uniqueOr(() => nameTaken("Function", patch.name ?? "")))
        if (row === undefined) return yield* functionNotFound(id)
        return toFunction(row)
      })

      const del = Effect.fn("FunctionService.delete")(function* (workspace: string, id: string) {
        yield* found(workspace, id)
        const deleted = yield* Effect.orDie(repo.delete(workspace, id))
        if (!deleted) return yield* functionNotFound(id)
        return { success: true, message: `Function ${id} deleted; its triggers stay and no longer fire` }
      })

      const versions = Effect.fn("FunctionService.versions")(function* (workspace: string, id: string) {
        yield* found(workspace, id)
        return { versions: yield* Effect.orDie(repo.versions(id)) }
      })

      const publish = Effect.fn("FunctionService.publish")((workspace: string, draftId: string, by: Principal) =>
        publishDraft(sql, drafts, "compute-functions", FunctionCreateSchema, (input: FunctionCreate) => insert(workspace, input, by))(
          workspace,
          draftId
        )
      )

      return FunctionService.of({ create, get, find, list, update, delete: del, versions, publish, checkCode })
    })
  )

  static readonly layer = this.layerNoDeps.pipe(Layer.provide([FunctionRepo.layer, DraftRepo.layer]))
}
