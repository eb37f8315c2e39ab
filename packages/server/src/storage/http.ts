// Handlers of the storage groups: the caller from CurrentPrincipal, then one service call each. Upload reads the
// raw request (its multipart body is streamed by the service, never decoded whole); downloads answer raw
// responses (bytes, ranges, 304: Download.ts, shared with the fast lane of FastDownload.ts). Signed downloads have
// no token but count as reads of their workspace.
import { Api } from "@troupe/api/Api"
import { CurrentPrincipal } from "@troupe/api/Authorization"
import { Effect } from "effect"
import { HttpServerRequest } from "effect/http"
import { HttpApiBuilder } from "effect/http-api"
import { tooManyResponse } from "../identity/AuthorizationLive.ts"
import { RateLimiter } from "../identity/RateLimiter.ts"
import { toResponse, wantsAttachment } from "./Download.ts"
import { AppConfig } from "../platform/AppConfig.ts"
import { StorageService } from "./StorageService.ts"
import { stackParts } from "./UploadParts.ts"

export const StorageHandlers = HttpApiBuilder.group(
  Api,
  "storage",
  Effect.fn(function* (handlers) {
    const storage = yield* StorageService
    const maxFile = (yield* AppConfig).storage.maxFileBytes
    return handlers
      .handleRaw("upload", ({ params }) =>
        Effect.gen(function* () {
          const principal = yield* CurrentPrincipal
          const request = yield* HttpServerRequest.HttpServerRequest
          return yield* storage.upload(params.workspace, principal, request.headers["content-type"] ?? "", stackParts(request, maxFile))
        })
      )
      .handle("listFiles", ({ params, query }) =>
        storage.list(params.workspace, {
          folder: query.folder,
          prefix: query.prefix,
          contentType: query.contentType,
          search: query.search,
          page: query.page ?? 1,
          limit: query.limit ?? 50
        })
      )
      .handle("usage", ({ params }) => storage.usage(params.workspace))
      .handle("download", ({ params, query }) =>
        Effect.flatMap(Effect.service(HttpServerRequest.HttpServerRequest), (request) =>
          Effect.map(storage.download(params.workspace, params.id, request.headers, wantsAttachment(query.download), query), toResponse)
        )
      )
      .handle("fileMetadata", ({ params }) => storage.get(params.workspace, params.id))
      .handle("updateFile", ({ params, payload }) => storage.update(params.workspace, params.id, payload))
      .handle("deleteFile", ({ params }) =>
        Effect.flatMap(Effect.service(CurrentPrincipal), (principal) => storage.remove(params.workspace, params.id, principal))
      )
      .handle("signedUrl", ({ params, payload }) =>
        Effect.flatMap(Effect.service(HttpServerRequest.HttpServerRequest), (request) =>
          storage.signedUrl(params.workspace, params.id, payload?.expiresIn ?? 3600, request)
        )
      )
  })
)

export const StorageSignedHandlers = HttpApiBuilder.group(
  Api,
  "storageSigned",
  Effect.fn(function* (handlers) {
    const storage = yield* StorageService
    const limiter = yield* RateLimiter
    return handlers.handle("signedDownload", ({ params, query }) =>
      Effect.gen(function* () {
        const request = yield* HttpServerRequest.HttpServerRequest
        yield* storage.verifySignature(params.workspace, params.id, query.expires, query.signature)
        // A valid URL counts as a read of its workspace, like a download with a token (after the check, as a token is).
        const limited = yield* limiter.hit(params.workspace, "reads").pipe(
          Effect.as(undefined),
          Effect.catch((error) => Effect.succeed(tooManyResponse(error)))
        )
        if (limited !== undefined) return limited
        return toResponse(yield* storage.download(params.workspace, params.id, request.headers, wantsAttachment(query.download), query))
      })
    )
  })
)
