// `storage.upload` (POST /storage/workspace/{ws}/api/v1/upload) in the fast lane (platform/FastRoutes.ts): the same
// service call as the ordinary handler (http.ts), its parts parsed from the node's request by the same parser under
// the same limits (UploadParts.ts `laneParts`) instead of through the Effect HTTP stack, whose per-chunk streams and
// Node streams per part cost an upload of 1 MB more CPU than storing it (docs/storage.md, "Figures"). Authentication,
// the `write:storage` permission and the `writes` count come from the endpoint, before the body is read. The lane
// takes a multipart body of declared length within the upload limit; a chunked one, one too large (413 at the edge),
// one with a query string and any other media type are left to the ordinary handler. Whatever the store: the parts
// reach BlobStore.put as they do from the stack.
import { Effect } from "effect"
import type { FastTable } from "../platform/FastRoutes.ts"
import { AppConfig } from "../platform/AppConfig.ts"
import { StorageService } from "./StorageService.ts"
import { laneParts } from "./UploadParts.ts"

/** The fast lane of uploads. */
export const fastUploadRoutes: Effect.Effect<FastTable, never, StorageService | AppConfig> = Effect.gen(function* () {
  const storage = yield* StorageService
  const maxFile = (yield* AppConfig).storage.maxFileBytes
  return {
    "storage.upload": {
      streamsBody: true,
      run: ({ params, principal, headers, body }) =>
        Effect.map(storage.upload(params.workspace, principal, headers["content-type"] ?? "", laneParts(body!, maxFile)), (file) => ({
          status: 201,
          body: file
        }))
    }
  }
})
