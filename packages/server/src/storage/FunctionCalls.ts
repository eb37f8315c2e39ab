// `api.storage.*` in functions (compute/ApiBridge.ts, docs/storage.md "Functions"): list, get (metadata), read,
// write, remove, as the run's principal (read:storage / write:storage), counted as reads and writes of the
// workspace's limits. Bytes cross the sandbox boundary as text (UTF-8) or base64, so `read` refuses files larger
// than a quarter of the function's memory limit (TROUPE_FUNCTION_MEMORY_MB) and `write` is bound by the same.
import { can, type Permission, type Principal } from "@troupe/api/Authorization"
import { badRequest, details, forbidden } from "@troupe/api/Errors"
import { Effect } from "effect"
import { RateLimiter } from "../identity/RateLimiter.ts"
import { AppConfig } from "../platform/AppConfig.ts"
import { StorageService } from "./StorageService.ts"
import { isObject } from "../lib/JsonPath.ts"

export interface CallContext {
  readonly workspace: string
  readonly principal: Principal
}

const invalid = (field: string, problem: string) =>
  badRequest({ message: `Invalid ${field}: ${field} ${problem}`, code: "VALIDATION_ERROR", details: details([[field, problem]]) })

const optionalText = (field: string, v: unknown) =>
  v === undefined || v === null
    ? Effect.succeed(undefined)
    : typeof v === "string"
      ? Effect.succeed(v)
      : Effect.fail(invalid(field, "must be a string"))

export const makeStorageCalls = Effect.gen(function* () {
  const storage = yield* StorageService
  const limiter = yield* RateLimiter
  const config = yield* AppConfig
  const maxInSandbox = Math.floor((config.functionMemoryMb * 1024 * 1024) / 4)

  return (ctx: CallContext) => {
    const need = (permission: Permission, rate: "reads" | "writes") =>
      Effect.gen(function* () {
        if (!can(ctx.principal, permission)) {
          return yield* forbidden(`This function acts as ${ctx.principal.name}, who lacks the permission "${permission}"`)
        }
        yield* limiter.hit(ctx.workspace, rate)
      })
    const idOf = (id: unknown) => (typeof id === "string" ? Effect.succeed(id) : Effect.fail(invalid("id", "must be a file id (a string)")))

    return {
      storageList: (options: unknown) =>
        Effect.gen(function* () {
          yield* need("read:storage", "reads")
          const o = isObject(options) ? options : {}
          const page = o.page ?? 1
          const limit = o.limit ?? 50
          if (typeof page !== "number" || !Number.isInteger(page) || page < 1)
            return yield* invalid("page", "must be a whole number from 1")
          if (typeof limit !== "number" || !Number.isInteger(limit) || limit < 1 || limit > 1000) {
            return yield* invalid("limit", "must be a whole number between 1 and 1000")
          }
          return yield* storage.list(ctx.workspace, {
            folder: yield* optionalText("folder", o.folder),
            prefix: yield* optionalText("prefix", o.prefix),
            contentType: yield* optionalText("contentType", o.contentType),
            search: yield* optionalText("search", o.search),
            page,
            limit
          })
        }),
      storageGet: (id: unknown) =>
        Effect.gen(function* () {
          yield* need("read:storage", "reads")
          return yield* storage.get(ctx.workspace, yield* idOf(id))
        }),
      storageRead: (id: unknown, options: unknown) =>
        Effect.gen(function* () {
          yield* need("read:storage", "reads")
          const encoding = isObject(options) ? options.encoding : undefined
          if (encoding !== undefined && encoding !== "utf8" && encoding !== "base64")
            return yield* invalid("encoding", 'must be "utf8" or "base64"')
          const { bytes } = yield* storage.readAll(ctx.workspace, yield* idOf(id), maxInSandbox)
          return Buffer.from(bytes).toString(encoding === "base64" ? "base64" : "utf8")
        }),
      storageWrite: (input: unknown) =>
        Effect.gen(function* () {
          yield* need("write:storage", "writes")
          if (!isObject(input)) return yield* invalid("file", "must be an object {name, text | base64, folder?, contentType?, metadata?}")
          const name = input.name
          if (typeof name !== "string") return yield* invalid("name", "must be a string")
          const text = yield* optionalText("text", input.text)
          const base64 = yield* optionalText("base64", input.base64)
          if ((text === undefined) === (base64 === undefined)) return yield* invalid("text", "give exactly one of text and base64")
          if (input.metadata !== undefined && !isObject(input.metadata)) return yield* invalid("metadata", "must be an object")
          const bytes = text !== undefined ? Buffer.from(text, "utf8") : Buffer.from(base64!, "base64")
          if (bytes.byteLength > maxInSandbox) return yield* invalid("text", `must be at most ${maxInSandbox} bytes from a function`)
          return yield* storage.write(ctx.workspace, ctx.principal, {
            name,
            folder: yield* optionalText("folder", input.folder),
            contentType:
              (yield* optionalText("contentType", input.contentType)) ?? (text !== undefined ? "text/plain; charset=utf-8" : undefined),
            metadata: input.metadata as Record<string, unknown> | undefined,
            bytes
          })
        }),
      storageRemove: (id: unknown) =>
        Effect.gen(function* () {
          yield* need("write:storage", "writes")
          return yield* storage.remove(ctx.workspace, yield* idOf(id), ctx.principal)
        })
    }
  }
})
