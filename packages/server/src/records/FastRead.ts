// The hot reads as fast routes (platform/FastRoutes.ts), each with the same authentication (permission read:records,
// rate class reads), service calls and rendering as its ordinary handler:
//   - `GET /workspace/:ws/api/v1/records/:id` without a query string (RecordService.get);
//   - `GET /workspace/:ws/api/v1/records?...`, the generation B list (RecordViews.listB), bracket filters included.
// Any other form of these requests (query options on the read, no bearer token, a repeated parameter, a NUL or lone
// surrogate, which the edge refuses) is left to the ordinary handlers. (The query domain's fast route is query/FastQuery.ts.)
import { Effect } from "effect"
import { Authenticator } from "../identity/Authenticate.ts"
import type { FastRoute } from "../platform/FastRoutes.ts"
import { StructureService } from "../structures/StructureService.ts"
import { applyVirtual } from "../structures/Validator.ts"
import { maskData, toRecordB } from "./model.ts"
import { RecordQuery } from "./RecordQuery.ts"
import { RecordService } from "./RecordService.ts"
import { recordViews } from "./RecordViews.ts"

const getById = /^\/workspace\/([a-z0-9-]{1,100})\/api\/v1\/records\/([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})$/
const list = /^\/workspace\/([a-z0-9-]{1,100})\/api\/v1\/records$/

const read = { permission: "read:records", rateClass: "reads" } as const

/** The fast routes of record reads. */
export const fastReadRoutes: Effect.Effect<ReadonlyArray<FastRoute>, never, Authenticator | RecordService | RecordQuery | StructureService> =
  Effect.gen(function*() {
    const authenticator = yield* Authenticator
    const records = yield* RecordService
    const views = recordViews(records, yield* RecordQuery, yield* StructureService)
    return [{
      method: "GET",
      pattern: getById,
      run: ({ match, token }) => {
        const workspace = match[1]!
        return Effect.flatMap(
          authenticator.authenticate(token, { workspace, ...read }),
          () =>
            Effect.map(records.get(workspace, match[2]!), ({ row, structure }) => ({
              status: 200,
              body: toRecordB(row, applyVirtual(structure, maskData(structure, row.data), new Date()))
            }))
        )
      }
    }, {
      method: "GET",
      pattern: list,
      query: true,
      run: ({ match, token, query }) => {
        const workspace = match[1]!
        return Effect.flatMap(
          authenticator.authenticate(token, { workspace, ...read }),
          (principal) => Effect.map(views.listB(workspace, query, Object.entries(query), principal), (body) => ({ status: 200, body }))
        )
      }
    }]
  })
