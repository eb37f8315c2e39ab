// `storage.download` (GET /storage/workspace/{ws}/api/v1/files/{id}) in the fast lane (platform/FastRoutes.ts): the
// same service call as the ordinary handler (http.ts), whose answer (Download.ts) the lane writes as it is, so a
// small file's bytes, its headers, the 304, 206 and 416, and every error are the stack's. Authentication, the
// `read:storage` permission and the `reads` count come from the endpoint. The lane takes the plain download and
// `?download=`; any other query parameter (an image variant's width, height, fit) is left to the ordinary handler,
// as are signed URLs (GET /signed/{id}: no bearer token) and HEAD.
import { Effect } from "effect"
import { type FastTable, onlyParameters } from "../platform/FastRoutes.ts"
import { wantsAttachment } from "./Download.ts"
import { StorageService } from "./StorageService.ts"

/** The fast lane of file downloads. */
export const fastStorageRoutes: Effect.Effect<FastTable, never, StorageService> = Effect.gen(function* () {
  const storage = yield* StorageService
  return {
    "storage.download": {
      accepts: onlyParameters("download"),
      run: ({ params, query, headers }) => storage.download(params.workspace, params.id, headers, wantsAttachment(query.download))
    }
  }
})
