// The hot read `GET /workspace/:ws/api/v1/records/:id` (no query string) as a fast route (platform/FastRoutes.ts):
// the same authentication (permission read:records, rate class reads), the same RecordService.get and the same
// rendering as the ordinary handler. Any other form of the request (query options, no bearer token) is left to it.
import { Effect, Layer } from "effect"
import { Authenticator } from "../identity/Authenticate.ts"
import { bearerOf, FastRoutes } from "../platform/FastRoutes.ts"
import { applyVirtual } from "../structures/Validator.ts"
import { maskData, toRecordB } from "./model.ts"
import { RecordService } from "./RecordService.ts"

const getById = /^\/workspace\/([a-z0-9-]{1,100})\/api\/v1\/records\/([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})$/

export const FastReadLayer: Layer.Layer<FastRoutes, never, Authenticator | RecordService> = Layer.effect(
  FastRoutes,
  Effect.gen(function*() {
    const authenticator = yield* Authenticator
    const records = yield* RecordService
    return [{
      method: "GET",
      pattern: getById,
      run: (match, headers) => {
        const token = bearerOf(headers.authorization)
        if (token === undefined) return Effect.undefined
        const workspace = match[1]!
        return Effect.flatMap(
          authenticator.authenticate(token, { workspace, permission: "read:records", rateClass: "reads" }),
          () =>
            Effect.map(records.get(workspace, match[2]!), ({ row, structure }) => ({
              status: 200,
              body: toRecordB(row, applyVirtual(structure, maskData(structure, row.data), new Date()))
            }))
        )
      }
    }]
  })
)
